// compile_flow: a flow document (SPEC §3 "Flows (TaskFlow)") read, checked
// and compiled into the graph the engine runs (flow_design.md, "Graph").
//
// The document is walked over its own text (core/json_text.hpp) rather than
// through a parsed tree, so that payloads keep their exact bytes (every
// digit of every number, as `add` and `tx` store them) and a field given
// twice is caught; nlohmann::json reads only the values the model holds as
// JSON (`store`, `for_each`) and escaped strings.
//
// Phases: (1) read every flow, retry and atom in document order, checking
// fields, types and names, and allocating nodes depth-first (a flow's retry
// before its content); (2) resolve `after` into orderings of sibling
// elements; (3) resolve each requirement to its provider and turn it into an
// ordering (graph), a check (linear) or an error (unordered); (4) find
// cycles; (5) compute each nested flow's entry and exit nodes, bottom up,
// and the direct edges. Everything is linear in atoms + edges, times the
// nesting depth for the walks up the flow tree.
#include "core/duration.hpp"
#include "core/flow.hpp"
#include "core/json_text.hpp"
#include "core/labels.hpp"
#include "core/text.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <unordered_map>
#include <utility>

namespace taskq::core::flow {
namespace {

// Nested flows deeper than this are refused: the reader recurses once per
// level, and no real flow comes near it.
constexpr int k_max_depth = 100;

// The one-line reason compile_flow returns, thrown inside this file only.
struct DocError {
  std::string message;
};

[[noreturn]] void fail(std::string message) {
  throw DocError{std::move(message)};
}

// User text that was not validated, made safe for a one-line message:
// control characters as '?', at most 64 bytes.
std::string shown(std::string_view text) {
  constexpr size_t k_max = 64;
  std::string out;
  for (const char c : text.substr(0, k_max)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  if (text.size() > k_max) {
    out += "...";
  }
  return to_valid_utf8(out);
}

// The value of a JSON string token (the text is valid JSON).
std::string string_value(std::string_view token) {
  if (token.find('\\') == std::string_view::npos) {
    return std::string(token.substr(1, token.size() - 2));
  }
  return nlohmann::json::parse(token).get<std::string>();
}

// `text` without the white space outside strings: the form `add` stores.
std::string minified(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\') {
        out += text[++i]; // valid JSON: an escape has its next byte
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      continue;
    }
    in_string = c == '"';
    out += c;
  }
  return out;
}

// The members of one JSON object of the document, taken by name, so that
// whatever is left over is an unknown field. `prefix` names nested objects
// in messages ("execute.queue").
class Fields {
public:
  Fields(std::string_view object, std::string where, std::string prefix = {})
      : m_where(std::move(where)), m_prefix(std::move(prefix)) {
    for (const auto& [key, value] : json_members(object)) {
      m_members.push_back({string_value(key), value, false});
    }
  }

  const std::string& where() const { return m_where; }
  void set_where(std::string where) { m_where = std::move(where); }

  std::optional<std::string_view> take(std::string_view key) {
    for (auto& m : m_members) {
      if (m.key == key) {
        m.taken = true;
        return m.value;
      }
    }
    return std::nullopt;
  }

  // Fails on a field given twice, or not one of `known`.
  void check(std::initializer_list<std::string_view> known) const {
    for (size_t i = 0; i < m_members.size(); ++i) {
      const auto& key = m_members[i].key;
      for (size_t j = 0; j < i; ++j) {
        if (m_members[j].key == key) {
          fail("field '" + shown(m_prefix + key) + "' is given twice in "
               + m_where);
        }
      }
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        fail("unknown field '" + shown(m_prefix + key) + "' in " + m_where);
      }
    }
  }

  [[noreturn]] void fail_field(std::string_view key,
                               std::string_view what) const {
    fail(m_where + ": '" + m_prefix + std::string(key) + "' "
         + std::string(what));
  }

  std::optional<std::string> string(std::string_view key) {
    const auto v = take(key);
    if (!v) {
      return std::nullopt;
    }
    if (json_kind(*v) != JsonKind::string) {
      fail_field(key, "must be a string");
    }
    return string_value(*v);
  }

  std::optional<int64_t> integer(std::string_view key) {
    const auto v = take(key);
    if (!v) {
      return std::nullopt;
    }
    int64_t n = 0;
    const char* end = v->data() + v->size();
    const auto [ptr, ec] = std::from_chars(v->data(), end, n);
    if (json_kind(*v) != JsonKind::number || ec != std::errc() || ptr != end) {
      fail_field(key, "must be an integer");
    }
    return n;
  }

  // An integer in [low, high].
  std::optional<int64_t> integer_in(std::string_view key, int64_t low,
                                    int64_t high) {
    const auto n = integer(key);
    if (n && (*n < low || *n > high)) {
      fail_field(key, high == INT64_MAX
                          ? "must be " + std::to_string(low) + " or more"
                          : "must be between " + std::to_string(low) + " and "
                                + std::to_string(high));
    }
    return n;
  }

  std::optional<bool> boolean(std::string_view key) {
    const auto v = take(key);
    if (!v) {
      return std::nullopt;
    }
    if (*v != "true" && *v != "false") {
      fail_field(key, "must be true or false");
    }
    return *v == "true";
  }

  // A duration as text ("10s", "1h30m"), as `add` takes it.
  std::optional<Millis> duration(std::string_view key, bool zero_ok) {
    const auto v = take(key);
    if (!v) {
      return std::nullopt;
    }
    const auto d = json_kind(*v) == JsonKind::string
                       ? parse_duration(string_value(*v))
                       : std::nullopt;
    if (!d) {
      fail_field(key, "must be a duration such as \"90s\", \"5m\" or "
                      "\"1h30m\"");
    }
    if (!zero_ok && d->count() == 0) {
      fail_field(key, "must be longer than 0");
    }
    return d;
  }

  // A flow, atom or retry name: the rule of queue names.
  std::optional<std::string> name(std::string_view key) {
    auto s = string(key);
    if (s && !is_valid_name(*s)) {
      fail_field(key, "is not a valid name ('" + shown(*s)
                          + "'): use 1-128 letters, digits and . _ : / -");
    }
    return s;
  }

  // A data-flow symbol: a non-empty key of the store.
  std::optional<std::string> symbol(std::string_view key) {
    auto s = string(key);
    if (s) {
      check_symbol(key, *s);
    }
    return s;
  }

  // One symbol (or `noun`) or an array of them; repeats dropped, order
  // kept.
  std::vector<std::string> symbols(std::string_view key,
                                   std::string_view noun = "symbol") {
    std::vector<std::string> out;
    const auto v = take(key);
    if (!v) {
      return out;
    }
    auto add = [&](std::string_view token) {
      if (json_kind(token) != JsonKind::string) {
        fail_field(key, "must be a string or an array of strings");
      }
      std::string s = string_value(token);
      check_symbol(key, s, noun);
      if (std::find(out.begin(), out.end(), s) == out.end()) {
        out.push_back(std::move(s));
      }
    };
    if (json_kind(*v) == JsonKind::array) {
      for (const auto item : json_items(*v)) {
        add(item);
      }
    } else {
      add(*v);
    }
    return out;
  }

  std::optional<Labels> labels(std::string_view key) {
    const auto v = take(key);
    if (!v) {
      return std::nullopt;
    }
    if (json_kind(*v) != JsonKind::object) {
      fail_field(key, "must be an object of \"KEY\": \"VALUE\" strings");
    }
    Labels out;
    for (const auto& [k, value] : json_members(*v)) {
      const std::string label_key = string_value(k);
      const auto label =
          json_kind(value) == JsonKind::string
                  && label_key.find('=') == std::string::npos
              ? parse_label(label_key + "=" + string_value(value))
              : std::nullopt;
      if (!label) {
        fail_field(key, "has an invalid label '" + shown(label_key)
                            + "': KEY is 1-128 letters, digits and . _ / -, "
                              "VALUE a string without control characters");
      }
      out[label->first] = label->second;
    }
    return out;
  }

private:
  void check_symbol(std::string_view key, const std::string& s,
                    std::string_view noun = "symbol") const {
    if (s.empty() || !is_plain_text(s)) {
      fail_field(key, "has an invalid " + std::string(noun) + " '" + shown(s)
                          + "': non-empty text on one line");
    }
  }

  struct Member {
    std::string key;
    std::string_view value;
    bool taken = false;
  };
  std::vector<Member> m_members;
  std::string m_where;
  std::string m_prefix;
};

// A JSON value the model keeps as nlohmann::json.
nlohmann::json json_value(const Fields& f, std::string_view key,
                          std::string_view text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    // json_error accepted it: only a number beyond a double's range is left.
    f.fail_field(key, "holds a number too large to read");
  }
}

// One element of a flow: a task atom or a nested flow.
struct Element {
  int owner = 0; // the flow it is an element of
  int index = 0; // its position there
  int node = -1; // the task atom, or
  int sub = -1;  // the nested flow
  std::vector<std::string> after;
};

// What compile needs of a flow beyond SubFlow.
struct FlowInfo {
  std::vector<int> elements;
  int element = -1; // its element in its parent; -1 for flows[0]
  int depth = 0;
  // Orderings of its elements, by position: (a, b) means a runs first.
  std::vector<std::pair<int, int>> order;
  // Its nodes that run first and last, as an element of its parent.
  std::vector<int> entry;
  std::vector<int> exit;
};

enum class NameKind { node, flow };
struct NameRef {
  NameKind kind = NameKind::node;
  int id = 0;
};

class Compiler {
public:
  FlowModel compile(std::string_view text) {
    if (json_kind(text) != JsonKind::object) {
      fail("a flow document must be a JSON object");
    }
    read_flow(text, -1, -1, "flow");
    m_model.name = m_model.flows[0].name;
    resolve_after();
    resolve_data_flow();
    add_linear_order();
    for (size_t f = 0; f < m_info.size(); ++f) {
      auto& order = m_info[f].order;
      std::sort(order.begin(), order.end());
      order.erase(std::unique(order.begin(), order.end()), order.end());
      if (m_model.flows[f].pattern == Pattern::graph) {
        check_cycles(static_cast<int>(f));
      }
    }
    build_edges();
    for (size_t n = 0; n < m_model.nodes.size(); ++n) {
      m_model.by_name.emplace(m_model.nodes[n].name, static_cast<int>(n));
    }
    return std::move(m_model);
  }

private:
  // ---- Phase 1: reading ------------------------------------------------

  void claim_name(const std::string& name, NameRef ref) {
    if (!m_names.emplace(name, ref).second) {
      fail("duplicate name '" + name + "'");
    }
  }

  // Reads a flow (flows[0] when parent is -1), its retry and its elements.
  // `element`: its element in the parent (-1 for flows[0]).
  void read_flow(std::string_view text, int parent, int element,
                 std::string default_name) {
    const bool top = parent < 0;
    const int f = static_cast<int>(m_model.flows.size());
    m_model.flows.emplace_back();
    m_info.emplace_back();
    m_model.flows[f].parent = parent;
    m_info[f].element = element;
    m_info[f].depth = top ? 0 : m_info[parent].depth + 1;

    Fields doc(text, "flow '" + default_name + "'");
    const auto given = doc.name("name");
    const std::string name = given ? *given : std::move(default_name);
    doc.set_where("flow '" + name + "'");
    if (top) {
      doc.check({"name", "pattern", "retry", "atoms", "store"});
    } else {
      doc.check({"name", "pattern", "retry", "atoms", "after"});
    }
    if (m_info[f].depth > k_max_depth) {
      fail(doc.where() + " is nested more than " + std::to_string(k_max_depth)
           + " flows deep");
    }
    claim_name(name, {NameKind::flow, f});
    m_model.flows[f].name = name;

    if (const auto p = doc.string("pattern")) {
      if (*p == "linear") {
        m_model.flows[f].pattern = Pattern::linear;
      } else if (*p == "unordered") {
        m_model.flows[f].pattern = Pattern::unordered;
      } else if (*p == "graph") {
        m_model.flows[f].pattern = Pattern::graph;
      } else {
        doc.fail_field("pattern", "must be linear, unordered or graph, not '"
                                      + shown(*p) + "'");
      }
    }
    if (top) {
      if (const auto s = doc.take("store")) {
        if (json_kind(*s) != JsonKind::object) {
          doc.fail_field("store", "must be an object of symbol: value");
        }
        m_model.store = json_value(doc, "store", *s);
      }
    } else {
      m_elements[static_cast<size_t>(element)].sub = f;
      m_elements[static_cast<size_t>(element)].after =
          after_list(doc, m_model.flows[parent].pattern, parent);
    }
    if (const auto r = doc.take("retry")) {
      read_retry(*r, f);
    }

    const auto atoms = doc.take("atoms");
    if (!atoms) {
      doc.fail_field("atoms", "is required: an array of atoms and "
                              "{\"flow\": {...}} elements");
    }
    if (json_kind(*atoms) != JsonKind::array) {
      doc.fail_field("atoms", "must be an array of atoms and "
                              "{\"flow\": {...}} elements");
    }
    const auto items = json_items(*atoms);
    if (items.empty() && !m_model.flows[f].retry) {
      doc.fail_field("atoms", "is empty: a flow needs an atom, a nested "
                              "flow or a retry");
    }
    const size_t first = m_model.nodes.size();
    for (size_t i = 0; i < items.size(); ++i) {
      read_element(items[i], f, static_cast<int>(i));
    }
    auto& nodes = m_model.flows[f].nodes;
    nodes.reserve(m_model.nodes.size() - first);
    for (size_t n = first; n < m_model.nodes.size(); ++n) {
      nodes.push_back(static_cast<int>(n));
    }
  }

  // `after` of an element of a flow with `pattern`.
  std::vector<std::string> after_list(Fields& fields, Pattern pattern,
                                      int owner) {
    if (!fields.take("after")) {
      return {};
    }
    if (pattern != Pattern::graph) {
      fail(fields.where() + " has 'after', but flow '"
           + m_model.flows[owner].name + "' is "
           + (pattern == Pattern::linear ? "linear" : "unordered")
           + ": 'after' orders the elements of a graph flow");
    }
    return fields.symbols("after", "name");
  }

  int new_element(int owner, int index) {
    const int e = static_cast<int>(m_elements.size());
    m_elements.push_back({owner, index, -1, -1, {}});
    m_info[owner].elements.push_back(e);
    return e;
  }

  void read_element(std::string_view text, int f, int index) {
    const std::string where = "element " + std::to_string(index + 1)
                              + " of flow '" + m_model.flows[f].name + "'";
    if (json_kind(text) != JsonKind::object) {
      fail(where + " must be an object: an atom or {\"flow\": {...}}");
    }
    const int e = new_element(f, index);
    Fields fields(text, where);
    if (const auto sub = fields.take("flow")) {
      fields.check({"flow"});
      if (json_kind(*sub) != JsonKind::object) {
        fields.fail_field("flow", "must be an object: the nested flow");
      }
      read_flow(*sub, f, e,
                m_model.flows[f].name + "." + std::to_string(index + 1));
      return;
    }
    read_atom(fields, f, e);
  }

  TaskTarget read_target(std::string_view text, const std::string& where,
                         const std::string& key, const TaskTarget* defaults) {
    Fields t(text, where, key + ".");
    t.check({"queue", "payload"});
    TaskTarget target;
    if (const auto q = t.string("queue")) {
      if (!is_valid_name(*q)) {
        t.fail_field("queue", "is not a valid queue name ('" + shown(*q)
                                  + "'): use 1-128 letters, digits and "
                                    ". _ : / -");
      }
      target.queue = *q;
    } else if (defaults != nullptr) {
      target.queue = defaults->queue;
    } else {
      t.fail_field("queue", "is required");
    }
    if (const auto p = t.take("payload")) {
      target.payload = minified(*p);
    } else if (defaults != nullptr) {
      target.payload = defaults->payload;
    }
    return target;
  }

  void read_atom(Fields& a, int f, int e) {
    const Pattern pattern = m_model.flows[f].pattern;
    const auto name_token = a.take("name");
    if (name_token && json_kind(*name_token) == JsonKind::string) {
      if (std::string n = string_value(*name_token); is_valid_name(n)) {
        a.set_where("atom '" + n + "'");
      }
    }
    a.check({"name", "execute", "revert", "provides", "requires", "after",
             "priority", "labels", "max_errors", "error_window", "retry_delay",
             "max_attempts"});
    if (!name_token) {
      fail(a.where()
           + " has no 'name' (an atom needs one; a nested flow "
             "is {\"flow\": {...}})");
    }
    Node node;
    node.name = *a.name("name");
    node.kind = NodeKind::task;
    node.flow = f;

    const auto execute = a.take("execute");
    if (!execute) {
      a.fail_field("execute", "is required: {\"queue\": ..., \"payload\": "
                              "...}");
    }
    if (json_kind(*execute) != JsonKind::object) {
      a.fail_field("execute", "must be an object: {\"queue\": ..., "
                              "\"payload\": ...}");
    }
    node.execute = read_target(*execute, a.where(), "execute", nullptr);
    if (const auto revert = a.take("revert")) {
      if (json_kind(*revert) != JsonKind::object) {
        a.fail_field("revert", "must be an object: {\"queue\": ..., "
                               "\"payload\": ...}");
      }
      node.revert = read_target(*revert, a.where(), "revert", &node.execute);
    }
    node.provides = a.symbol("provides");
    node.requirements = a.symbols("requires");
    m_elements[e].after = after_list(a, pattern, f);
    node.priority = a.integer("priority").value_or(0);
    node.labels = a.labels("labels").value_or(Labels{});
    if (const auto n = a.integer_in("max_errors", 1, 1000000)) {
      node.policy.max_errors = static_cast<int>(*n);
    }
    node.policy.window = a.duration("error_window", false);
    node.policy.retry_delay = a.duration("retry_delay", true);
    node.max_attempts = a.integer_in("max_attempts", 1, INT64_MAX);

    const int n = add_node(std::move(node));
    m_elements[e].node = n;
    m_element_of_node[static_cast<size_t>(n)] = e;
  }

  void read_retry(std::string_view text, int f) {
    const std::string& flow_name = m_model.flows[f].name;
    if (json_kind(text) != JsonKind::object) {
      fail("flow '" + flow_name + "': 'retry' must be an object such as "
           + "{\"times\": 3}");
    }
    Fields r(text, "the retry of flow '" + flow_name + "'");
    const auto given = r.name("name");
    Node node;
    node.name = given ? *given : flow_name + "_retry";
    node.kind = NodeKind::retry;
    node.flow = f;
    r.set_where("retry '" + node.name + "'");
    r.check({"name", "provides", "revert_all", "times", "for_each",
             "for_each_from", "always_revert", "always_revert_all"});

    static constexpr std::pair<std::string_view, RetryKind> k_kinds[] = {
        {"times", RetryKind::times},
        {"for_each", RetryKind::for_each},
        {"for_each_from", RetryKind::for_each_from},
        {"always_revert", RetryKind::always_revert},
        {"always_revert_all", RetryKind::always_revert_all},
    };
    std::optional<std::string_view> kind_key;
    for (const auto& [key, kind] : k_kinds) {
      if (!r.take(key)) {
        continue;
      }
      if (kind_key) {
        fail(r.where() + " gives both '" + std::string(*kind_key) + "' and '"
             + std::string(key) + "': give one kind");
      }
      kind_key = key;
      node.retry.kind = kind;
    }
    if (!kind_key) {
      fail(r.where()
           + " needs one of 'times', 'for_each', 'for_each_from', "
             "'always_revert' or 'always_revert_all'");
    }
    switch (node.retry.kind) {
    case RetryKind::times:
      node.retry.times = *r.integer_in("times", 1, INT64_MAX);
      break;
    case RetryKind::for_each: {
      const auto values = *r.take("for_each");
      if (json_kind(values) != JsonKind::array) {
        r.fail_field("for_each", "must be an array of values");
      }
      node.retry.values = json_value(r, "for_each", values);
      break;
    }
    case RetryKind::for_each_from:
      node.retry.from_symbol = *r.symbol("for_each_from");
      node.requirements.push_back(node.retry.from_symbol);
      break;
    case RetryKind::always_revert:
    case RetryKind::always_revert_all:
      if (*r.take(*kind_key) != "true") {
        r.fail_field(*kind_key, "must be true");
      }
      break;
    }
    node.retry.revert_all = r.boolean("revert_all").value_or(false);
    node.provides = r.symbol("provides");
    m_model.flows[f].retry = add_node(std::move(node));
  }

  int add_node(Node node) {
    const int n = static_cast<int>(m_model.nodes.size());
    claim_name(node.name, {NameKind::node, n});
    if (node.provides) {
      const auto [it, fresh] = m_providers.emplace(*node.provides, n);
      if (!fresh) {
        fail("symbol '" + *node.provides + "' is provided by both '"
             + m_model.nodes[static_cast<size_t>(it->second)].name + "' and '"
             + node.name + "'");
      }
    }
    m_model.nodes.push_back(std::move(node));
    m_element_of_node.push_back(-1);
    return n;
  }

  // ---- Phase 2: `after` -------------------------------------------------

  std::string element_name(int e) const {
    const auto& el = m_elements[static_cast<size_t>(e)];
    return el.node >= 0 ? m_model.nodes[static_cast<size_t>(el.node)].name
                        : m_model.flows[static_cast<size_t>(el.sub)].name;
  }

  std::string element_label(int e) const {
    const auto& el = m_elements[static_cast<size_t>(e)];
    return (el.node >= 0 ? "atom '" : "flow '") + element_name(e) + "'";
  }

  void resolve_after() {
    for (size_t e = 0; e < m_elements.size(); ++e) {
      const auto& el = m_elements[e];
      for (const auto& name : el.after) {
        const auto it = m_names.find(name);
        int before = -1;
        if (it != m_names.end()) {
          before = it->second.kind == NameKind::flow
                       ? m_info[static_cast<size_t>(it->second.id)].element
                       : m_element_of_node[static_cast<size_t>(it->second.id)];
        }
        if (it == m_names.end()) {
          fail(element_label(static_cast<int>(e)) + " is after '" + shown(name)
               + "', but no atom or flow has that name");
        }
        if (before == static_cast<int>(e)) {
          fail(element_label(static_cast<int>(e)) + " is after itself");
        }
        if (before < 0
            || m_elements[static_cast<size_t>(before)].owner != el.owner) {
          fail(element_label(static_cast<int>(e)) + " is after '" + name
               + "', which is not an element of flow '"
               + m_model.flows[static_cast<size_t>(el.owner)].name + "'");
        }
        m_info[el.owner].order.emplace_back(
            m_elements[static_cast<size_t>(before)].index, el.index);
      }
    }
  }

  // ---- Phase 3: data flow -----------------------------------------------

  const Node& node(int n) const {
    return m_model.nodes[static_cast<size_t>(n)];
  }

  // The flow holding node n as (part of) an element, and that element: a
  // task atom is an element of its flow; a retry is part of the element
  // that is its flow, in the parent (flow -1 for the document's retry).
  std::pair<int, int> place(int n) const {
    const Node& nd = node(n);
    if (nd.kind == NodeKind::task) {
      return {nd.flow, m_element_of_node[static_cast<size_t>(n)]};
    }
    return {m_model.flows[static_cast<size_t>(nd.flow)].parent,
            m_info[static_cast<size_t>(nd.flow)].element};
  }

  // One step up the flow tree: the parent flow, and the element there.
  std::pair<int, int> up(std::pair<int, int> p) const {
    const auto f = static_cast<size_t>(p.first);
    return {m_model.flows[f].parent, m_info[f].element};
  }

  int depth(int f) const {
    return f < 0 ? -1 : m_info[static_cast<size_t>(f)].depth;
  }

  // True when node n lies inside flow f (nested too; a retry lies inside
  // the flows around the one it controls).
  bool inside(int n, int f) const {
    auto p = place(n);
    while (depth(p.first) > depth(f)) {
      p = up(p);
    }
    return p.first == f;
  }

  std::string node_label(int n) const {
    return (node(n).kind == NodeKind::task ? "atom '" : "retry '")
           + node(n).name + "'";
  }

  void resolve_data_flow() {
    for (size_t xi = 0; xi < m_model.nodes.size(); ++xi) {
      const int x = static_cast<int>(xi);
      for (const auto& symbol : node(x).requirements) {
        const auto it = m_providers.find(symbol);
        if (it == m_providers.end()) {
          if (m_model.store.contains(symbol)) {
            continue;
          }
          fail(node_label(x) + " requires '" + symbol
               + "', which nothing provides");
        }
        order_by_symbol(x, it->second, symbol);
      }
    }
  }

  // Node x requires `symbol`, which node p provides.
  void order_by_symbol(int x, int p, const std::string& symbol) {
    const std::string what = node_label(x) + " requires '" + symbol + "'";
    if (p == x) {
      fail(what + ", which it provides itself");
    }
    if (node(p).kind == NodeKind::retry && inside(x, node(p).flow)) {
      return; // the controller of x runs first by construction
    }
    if (node(x).kind == NodeKind::retry && inside(p, node(x).flow)) {
      fail(what + ", which '" + node(p).name
           + "' provides only inside the flow that retry controls");
    }
    // The lowest flow holding both, and their elements there. Neither is
    // inside the other's retry-controlled flow, so both places exist.
    auto a = place(p);
    auto b = place(x);
    while (depth(a.first) > depth(b.first)) {
      a = up(a);
    }
    while (depth(b.first) > depth(a.first)) {
      b = up(b);
    }
    while (a.first != b.first) {
      a = up(a);
      b = up(b);
    }
    const auto f = static_cast<size_t>(a.first);
    const Element& ep = m_elements[static_cast<size_t>(a.second)];
    const Element& ex = m_elements[static_cast<size_t>(b.second)];
    switch (m_model.flows[f].pattern) {
    case Pattern::graph:
      m_info[f].order.emplace_back(ep.index, ex.index);
      break;
    case Pattern::linear:
      if (ep.index > ex.index) {
        fail(what + ", which '" + node(p).name
             + "' provides only after it (linear flow '" + m_model.flows[f].name
             + "' runs '" + element_name(a.second) + "' after '"
             + element_name(b.second) + "')");
      }
      break;
    case Pattern::unordered:
      fail(what + " from '" + node(p).name + "', but '" + element_name(b.second)
           + "' and '" + element_name(a.second)
           + "' are elements of unordered flow '" + m_model.flows[f].name
           + "', which sets no order between them");
    }
  }

  void add_linear_order() {
    for (size_t f = 0; f < m_info.size(); ++f) {
      if (m_model.flows[f].pattern != Pattern::linear) {
        continue;
      }
      const int count = static_cast<int>(m_info[f].elements.size());
      for (int i = 0; i + 1 < count; ++i) {
        m_info[f].order.emplace_back(i, i + 1);
      }
    }
  }

  // ---- Phase 4: cycles --------------------------------------------------

  // Fails with the first cycle among flow f's elements (its `order` is
  // sorted), found by an iterative depth-first search in document order.
  void check_cycles(int f) {
    const auto& info = m_info[static_cast<size_t>(f)];
    const auto& order = info.order;
    const size_t count = info.elements.size();
    std::vector<size_t> begin(count + 1, 0); // successors of i:
    for (const auto& [a, b] : order) {       // order[begin[i], begin[i+1])
      ++begin[static_cast<size_t>(a) + 1];
    }
    for (size_t i = 0; i < count; ++i) {
      begin[i + 1] += begin[i];
    }
    enum : char { white, grey, black };
    std::vector<char> colour(count, white);
    std::vector<std::pair<size_t, size_t>> stack; // element, next successor
    for (size_t root = 0; root < count; ++root) {
      if (colour[root] != white) {
        continue;
      }
      stack.emplace_back(root, begin[root]);
      colour[root] = grey;
      while (!stack.empty()) {
        auto& [e, next] = stack.back();
        if (next == begin[e + 1]) {
          colour[e] = black;
          stack.pop_back();
          continue;
        }
        const auto s = static_cast<size_t>(order[next++].second);
        if (colour[s] == white) {
          colour[s] = grey;
          stack.emplace_back(s, begin[s]);
        } else if (colour[s] == grey) {
          std::string path;
          size_t i = stack.size();
          while (stack[i - 1].first != s) {
            --i;
          }
          for (; i <= stack.size(); ++i) {
            path += element_name(info.elements[stack[i - 1].first]) + " -> ";
          }
          fail("cycle: " + path + element_name(info.elements[s]));
        }
      }
    }
  }

  // ---- Phase 5: entry and exit nodes, edges ----------------------------

  const std::vector<int>& entry_of(int e) const {
    const auto& el = m_elements[static_cast<size_t>(e)];
    return el.node >= 0 ? m_single[static_cast<size_t>(el.node)]
                        : m_info[static_cast<size_t>(el.sub)].entry;
  }

  const std::vector<int>& exit_of(int e) const {
    const auto& el = m_elements[static_cast<size_t>(e)];
    return el.node >= 0 ? m_single[static_cast<size_t>(el.node)]
                        : m_info[static_cast<size_t>(el.sub)].exit;
  }

  void build_edges() {
    const size_t node_count = m_model.nodes.size();
    m_single.resize(node_count);
    for (size_t n = 0; n < node_count; ++n) {
      m_single[n] = {static_cast<int>(n)};
    }
    std::vector<std::pair<int, int>> edges;
    // Children have higher indices than their parents: bottom up.
    for (size_t fi = m_info.size(); fi-- > 0;) {
      auto& info = m_info[fi];
      const auto& elements = info.elements;
      std::vector<char> has_pred(elements.size(), 0);
      std::vector<char> has_succ(elements.size(), 0);
      for (const auto& [a, b] : info.order) {
        has_succ[static_cast<size_t>(a)] = 1;
        has_pred[static_cast<size_t>(b)] = 1;
        for (const int x : exit_of(elements[static_cast<size_t>(a)])) {
          for (const int y : entry_of(elements[static_cast<size_t>(b)])) {
            edges.emplace_back(x, y);
          }
        }
      }
      std::vector<int> entry;
      std::vector<int> exit;
      for (size_t i = 0; i < elements.size(); ++i) {
        if (!has_pred[i]) {
          const auto& more = entry_of(elements[i]);
          entry.insert(entry.end(), more.begin(), more.end());
        }
        if (!has_succ[i]) {
          const auto& more = exit_of(elements[i]);
          exit.insert(exit.end(), more.begin(), more.end());
        }
      }
      if (const auto retry = m_model.flows[fi].retry) {
        for (const int y : entry) {
          edges.emplace_back(*retry, y);
        }
        entry = {*retry};
        if (elements.empty()) {
          exit = {*retry};
        }
      }
      info.entry = std::move(entry);
      info.exit = std::move(exit);
    }
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    // Sorted by (from, to): each succs list and each preds list come out
    // ascending.
    for (const auto& [a, b] : edges) {
      m_model.nodes[static_cast<size_t>(a)].succs.push_back(b);
      m_model.nodes[static_cast<size_t>(b)].preds.push_back(a);
    }
  }

  FlowModel m_model;
  std::vector<FlowInfo> m_info; // parallel to m_model.flows
  std::vector<Element> m_elements;
  std::vector<int> m_element_of_node;     // -1 for retries
  std::vector<std::vector<int>> m_single; // {n}, as an element's entry/exit
  std::unordered_map<std::string, NameRef> m_names;
  std::unordered_map<std::string, int> m_providers; // symbol -> node
};

} // namespace

Compiled compile_flow(std::string_view json_text) {
  if (const auto why = json_error(json_text)) {
    return {std::nullopt, "the flow document is not valid JSON: " + *why};
  }
  try {
    return {Compiler().compile(json_trim(json_text)), {}};
  } catch (const DocError& e) {
    return {std::nullopt, e.message};
  }
}

} // namespace taskq::core::flow
