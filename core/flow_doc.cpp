// compile_flow: a flow document (doc/flows.md#the-document) read, checked
// and compiled into the graph the engine runs (doc/flows.md#graph).
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
#include "core/flow_compiler.hpp"
#include "core/json_text.hpp"
#include "core/labels.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace taskq::core::flow {
namespace doc {
namespace {

// Nested flows deeper than this are refused: the reader recurses once per
// level, and no real flow comes near it.
constexpr int k_max_depth = 100;

} // namespace

FlowModel Compiler::compile(std::string_view text) {
  if (const JsonKind kind = json_kind(text); kind != JsonKind::object) {
    // Name what was given: a list of atoms, a quoted file name, ...
    std::string given;
    switch (kind) {
    case JsonKind::array:
      given = "an array (put the atoms in {\"atoms\": [...]})";
      break;
    case JsonKind::string:
      given = "a string";
      break;
    case JsonKind::number:
      given = "a number";
      break;
    case JsonKind::literal:
      given = std::string(json_trim(text));
      break;
    case JsonKind::object:
      break;
    }
    fail("a flow document must be a JSON object such as {\"atoms\": [...]}, "
         "not "
         + given);
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

// ---- Phase 1: reading ------------------------------------------------

void Compiler::claim_name(const std::string& name, NameRef ref) {
  if (!m_names.emplace(name, ref).second) {
    fail("duplicate name '" + name + "'");
  }
}

void Compiler::read_flow(std::string_view text, int parent, int element,
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

std::vector<std::string> Compiler::after_list(Fields& fields, Pattern pattern,
                                              int owner) {
  if (!fields.take("after")) {
    return {};
  }
  if (pattern != Pattern::graph) {
    fail(fields.where() + " has 'after', but flow '" + m_model.flows[owner].name
         + "' is " + (pattern == Pattern::linear ? "linear" : "unordered")
         + ": 'after' orders the elements of a graph flow");
  }
  return fields.symbols("after", "name");
}

int Compiler::new_element(int owner, int index) {
  const int e = static_cast<int>(m_elements.size());
  m_elements.push_back({owner, index, -1, -1, {}});
  m_info[owner].elements.push_back(e);
  return e;
}

void Compiler::read_element(std::string_view text, int f, int index) {
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

TaskTarget Compiler::read_target(std::string_view text,
                                 const std::string& where,
                                 const std::string& key,
                                 const TaskTarget* defaults) {
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

void Compiler::read_atom(Fields& a, int f, int e) {
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

void Compiler::read_retry(std::string_view text, int f) {
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
    // 0 is TaskFlow's Times(0): one run, no retry, as 1 is.
    node.retry.times = *r.integer_in("times", 0, INT64_MAX);
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

int Compiler::add_node(Node node) {
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

} // namespace doc

Compiled compile_flow(std::string_view json_text) {
  if (const auto why = json_error(json_text)) {
    return {std::nullopt, "the flow document is not valid JSON: " + *why};
  }
  try {
    return {doc::Compiler().compile(json_trim(json_text)), {}};
  } catch (const doc::DocError& e) {
    return {std::nullopt, e.message};
  }
}

} // namespace taskq::core::flow
