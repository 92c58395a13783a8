// Flows: the list, and a flow drawn as its graph (inline SVG drawn here,
// each atom a box coloured by its state and linked to its task, an arrow
// for each dependency), its revert path, its retry controllers' history,
// its events, and suspend/resume with their CLI twins. JSON: `flow list
// -o json` (one array of its objects), `flow show -o json`, and `flow
// suspend|resume -o json`.

#include "core/error.hpp"
#include "core/flow.hpp"
#include "core/task_json.hpp"
#include "core/time.hpp"

#include <algorithm>
#include <map>

#include "web/view.hpp"

namespace taskq::web {

namespace {

// `flow list -o json`'s object (cli/cmd_flow.cpp).
std::string summary_json(const storage::FlowSummary& f) {
  return core::ObjectWriter()
      .field("id", f.id)
      .field("name", f.name)
      .field("state", f.state)
      .field("created_at", core::format_time(f.created_at))
      .field("updated_at", core::format_time(f.updated_at))
      .finish();
}

// `flow show -o json`'s object (cli/cmd_flow.cpp).
std::string detail_json(const storage::FlowDetail& d) {
  using core::Json;
  Json atoms = Json::array();
  for (const auto& a : d.atoms) {
    Json j = {{"name", a.name},
              {"kind", a.kind},
              {"flow", a.flow},
              {"state", a.state},
              {"intention", a.intention},
              {"task", a.task ? Json(*a.task) : Json(nullptr)}};
    if (a.result) {
      j["result"] = Json::parse(*a.result);
    }
    if (a.failure) {
      j["failure"] = *a.failure;
    }
    if (a.history) {
      j["history"] = Json::parse(*a.history);
    }
    atoms.push_back(std::move(j));
  }
  Json events = Json::array();
  for (const auto& e : d.events) {
    Json j = {{"time", core::format_time(e.time)},
              {"name", e.name},
              {"kind", e.kind},
              {"state", e.state}};
    if (e.result) {
      j["result"] = Json::parse(*e.result);
    }
    events.push_back(std::move(j));
  }
  return core::ObjectWriter()
      .field("id", d.flow.id)
      .field("name", d.flow.name)
      .field("state", d.flow.state)
      .raw("store", d.store)
      .field("created_at", core::format_time(d.flow.created_at))
      .field("updated_at", core::format_time(d.flow.updated_at))
      .field("atoms", atoms)
      .field("events", events)
      .finish();
}

// A state as a CSS class: lower case, letters and _ only.
std::string state_class(std::string_view prefix, std::string_view state) {
  std::string out(prefix);
  for (const char c : state) {
    if (c >= 'A' && c <= 'Z') {
      out += static_cast<char>(c - 'A' + 'a');
    } else if ((c >= 'a' && c <= 'z') || c == '_') {
      out += c;
    }
  }
  return out;
}

// At most `n` bytes of `s`, cut at a character boundary, with … when cut.
std::string shorten(std::string_view s, size_t n) {
  if (s.size() <= n) {
    return std::string(s);
  }
  size_t end = n;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) {
    --end;
  }
  return std::string(s.substr(0, end)) + "…";
}

// JSON text as one short line: a string bare, the rest compact.
std::string json_cell(const std::string& text, size_t n = 200) {
  try {
    const core::Json v = core::Json::parse(text);
    return shorten(v.is_string() ? v.get<std::string>() : core::dump_json(v),
                   n);
  } catch (const std::exception&) {
    return shorten(text, n);
  }
}

std::string pretty(const std::string& text, size_t limit = 20000) {
  std::string out;
  try {
    out = core::Json::parse(text).dump(2, ' ', false,
                                       core::Json::error_handler_t::replace);
  } catch (const std::exception&) {
    out = text;
  }
  return shorten(out, limit);
}

bool reverting_state(std::string_view s) {
  return s == "REVERTING" || s == "REVERTED" || s == "REVERT_FAILURE";
}

// --- the graph ----------------------------------------------------------

constexpr int k_box_w = 176;
constexpr int k_box_h = 52;
constexpr int k_gap_x = 20;
constexpr int k_gap_y = 44;
constexpr int k_margin = 12;

struct Placed {
  int layer = 0;
  int slot = 0;
  double order = 0; // for sorting within a layer
};

int box_x(const Placed& p) {
  return k_margin + p.slot * (k_box_w + k_gap_x);
}
int box_y(const Placed& p) {
  return k_margin + p.layer * (k_box_h + k_gap_y);
}

// Top to bottom: an atom's row is the longest chain of predecessors above
// it; within a row, atoms sit under the mean place of their predecessors
// (one pass), which keeps most arrows short and uncrossed.
std::vector<Placed> place(const std::vector<std::vector<size_t>>& preds) {
  const size_t n = preds.size();
  std::vector<Placed> at(n);
  // Longest path by relaxation in index order, repeated until stable; a
  // compiled flow has no cycle, and n rounds bound it whatever is stored.
  for (size_t round = 0; round < n; ++round) {
    bool changed = false;
    for (size_t i = 0; i < n; ++i) {
      for (const size_t p : preds[i]) {
        if (at[p].layer + 1 > at[i].layer) {
          at[i].layer = at[p].layer + 1;
          changed = true;
        }
      }
    }
    if (!changed) {
      break;
    }
  }
  int layers = 0;
  for (const auto& p : at) {
    layers = std::max(layers, p.layer + 1);
  }
  for (int l = 0; l < layers; ++l) {
    std::vector<size_t> row;
    for (size_t i = 0; i < n; ++i) {
      if (at[i].layer == l) {
        row.push_back(i);
        double sum = 0;
        for (const size_t p : preds[i]) {
          sum += at[p].slot;
        }
        at[i].order = preds[i].empty()
                          ? static_cast<double>(i)
                          : sum / static_cast<double>(preds[i].size());
      }
    }
    std::stable_sort(row.begin(), row.end(), [&](size_t a, size_t b) {
      return at[a].order < at[b].order;
    });
    for (size_t s = 0; s < row.size(); ++s) {
      at[row[s]].slot = static_cast<int>(s);
    }
  }
  return at;
}

Html graph_svg(const View& view, const storage::FlowDetail& d,
               const std::map<std::string, int>& revert_step) {
  const auto& atoms = d.atoms;
  std::map<std::string_view, size_t> index;
  for (size_t i = 0; i < atoms.size(); ++i) {
    index.emplace(atoms[i].name, i);
  }
  std::vector<std::vector<size_t>> preds(atoms.size());
  for (size_t i = 0; i < atoms.size(); ++i) {
    for (const auto& p : atoms[i].preds) {
      if (const auto it = index.find(p); it != index.end() && it->second != i) {
        preds[i].push_back(it->second);
      }
    }
  }
  const auto at = place(preds);
  int slots = 1;
  int layers = 1;
  for (const auto& p : at) {
    slots = std::max(slots, p.slot + 1);
    layers = std::max(layers, p.layer + 1);
  }
  const int width = 2 * k_margin + slots * k_box_w + (slots - 1) * k_gap_x;
  const int height = 2 * k_margin + layers * k_box_h + (layers - 1) * k_gap_y;

  Html svg;
  svg.put("<svg class=\"flowgraph\" xmlns=\"http://www.w3.org/2000/svg\" "
          "width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"group\" "
          "aria-labelledby=\"graph-title\" aria-describedby=\"graph-desc\">"
          "<title id=\"graph-title\">Graph of flow {} ({})</title>"
          "<desc id=\"graph-desc\">{} atoms; each box is an atom coloured by "
          "its state, linked to its task when it has one; an arrow goes from "
          "an atom to each atom that waits for it. The table of atoms below "
          "says the same in words.</desc>"
          "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" "
          "refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" "
          "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\"/>"
          "</marker></defs><g class=\"edges\" aria-hidden=\"true\">",
          width, height, width, height, d.flow.id, d.flow.name, atoms.size());
  for (size_t i = 0; i < atoms.size(); ++i) {
    const int x2 = box_x(at[i]) + k_box_w / 2;
    const int y2 = box_y(at[i]);
    for (const size_t p : preds[i]) {
      const int x1 = box_x(at[p]) + k_box_w / 2;
      const int y1 = box_y(at[p]) + k_box_h;
      const int mid = (y1 + y2) / 2;
      svg.put("<path class=\"{}\" d=\"M{},{} C{},{} {},{} {},{}\" "
              "marker-end=\"url(#arrow)\"/>",
              reverting_state(atoms[i].state) && reverting_state(atoms[p].state)
                  ? "edge rv"
                  : "edge",
              x1, y1, x1, mid, x2, mid, x2, y2);
    }
  }
  svg.put("</g><g class=\"atoms\">");
  for (size_t i = 0; i < atoms.size(); ++i) {
    const auto& a = atoms[i];
    const int x = box_x(at[i]);
    const int y = box_y(at[i]);
    const bool retry = a.kind == "retry";
    std::string cls = state_class("atom a-", a.state);
    if (retry) {
      cls += " k-retry";
    }
    if (reverting_state(a.state) || a.intention == "REVERT") {
      cls += " rv";
    }
    std::string label = (retry ? "retry controller " : "atom ") + a.name + ", "
                        + a.state + ", intention " + a.intention;
    if (a.flow != d.flow.name) {
      label += ", in " + a.flow;
    }
    if (a.task) {
      label += ", task " + std::to_string(*a.task);
    }
    const auto step = revert_step.find(a.name);
    if (step != revert_step.end()) {
      label += ", revert step " + std::to_string(step->second);
    }
    Html box;
    box.put("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"{}\"/>"
            "<text x=\"{}\" y=\"{}\" class=\"name\">{}{}</text>"
            "<text x=\"{}\" y=\"{}\" class=\"sub\">{}{}</text>",
            x, y, k_box_w, k_box_h, retry ? 14 : 4, x + 8, y + 20,
            retry ? "↻ " : "", shorten(a.name, 22), x + 8, y + 40,
            shorten(a.state, 14),
            a.task ? " · task " + std::to_string(*a.task) : std::string());
    if (a.flow != d.flow.name) {
      box.put("<text x=\"{}\" y=\"{}\" class=\"in\" "
              "text-anchor=\"end\">{}</text>",
              x + k_box_w - 6, y + 12, shorten(a.flow, 14));
    }
    if (step != revert_step.end()) {
      box.put("<circle cx=\"{}\" cy=\"{}\" r=\"10\" class=\"step\"/>"
              "<text x=\"{}\" y=\"{}\" class=\"step\" "
              "text-anchor=\"middle\">{}</text>",
              x + k_box_w - 12, y + k_box_h - 14, x + k_box_w - 12,
              y + k_box_h - 10, step->second);
    }
    if (a.task) {
      svg.put("<a class=\"{}\" href=\"{}\" aria-label=\"{}\">{}</a>", cls,
              view.link("/tasks/" + std::to_string(*a.task)), label, box);
    } else {
      svg.put("<g class=\"{}\" role=\"img\" aria-label=\"{}\">{}</g>", cls,
              label, box);
    }
  }
  svg.put("</g></svg>");
  return svg;
}

struct Toggle {
  std::string_view name;
  std::string_view label;
};

// What a flow in `state` can be asked without being ignored or refused
// (doc/flows.md#suspend-and-resume).
std::optional<Toggle> offered(std::string_view state) {
  if (state == "RUNNING") {
    return Toggle{"suspend", "Suspend"};
  }
  if (state == "SUSPENDED" || state == "PENDING") {
    return Toggle{"resume", "Resume"};
  }
  return std::nullopt;
}

} // namespace

Response flows_page(View& view) {
  std::optional<std::string> state;
  if (const std::string* s = view.request.param("state");
      s != nullptr && !s->empty()) {
    if (!core::flow::parse_flow_state(*s)) {
      throw Error(ErrorKind::usage, "invalid state '" + *s
                                        + "': expected PENDING, RUNNING, "
                                          "SUCCESS, FAILURE, REVERTED, "
                                          "SUSPENDING, SUSPENDED or RESUMING");
    }
    state = *s;
  }
  const auto flows = view.store.flows(state);
  if (view.json) {
    std::string out = "[";
    for (const auto& f : flows) {
      out += out.size() == 1 ? "" : ",";
      out += summary_json(f);
    }
    out += "]";
    return json_answer(std::move(out));
  }
  Html b;
  b.put("<h1>Flows</h1><nav class=\"states\" aria-label=\"flows by state\">"
        "<a href=\"{}\"{}>all</a>",
        view.link("/flows"), state ? Raw{""} : Raw{" aria-current=\"page\""});
  for (const auto& [name, count] : view.store.flow_counts()) {
    b.put(" <a href=\"{}\" class=\"{}\"{}>{} ({})</a>",
          view.link("/flows?state=" + url_encode(name)),
          state_class("state f-", name),
          state && *state == name ? Raw{" aria-current=\"page\""} : Raw{""},
          name, count);
  }
  b.put("</nav>");
  if (flows.empty()) {
    b.put("<p class=\"empty\">No flows{}. <code class=\"cli\">taskq flow "
          "submit deploy.json</code> submits one.</p>",
          state ? " in " + *state : std::string());
    return page(view, "Flows", "flows", b);
  }
  b.put("<div class=\"scroll\"><table class=\"flows\"><thead><tr>"
        "<th scope=\"col\">id</th><th scope=\"col\">name</th>"
        "<th scope=\"col\">state</th><th scope=\"col\">created</th>"
        "<th scope=\"col\">updated</th></tr></thead><tbody>");
  for (const auto& f : flows) {
    b.put("<tr><th scope=\"row\"><a href=\"{}\">{}</a></th><td>{}</td>"
          "<td><span class=\"{}\">{}</span></td><td>{}</td><td>{}</td></tr>",
          view.link("/flows/" + std::to_string(f.id)), f.id, f.name,
          state_class("state f-", f.state), f.state,
          time_html(f.created_at, view.now), time_html(f.updated_at, view.now));
  }
  b.put("</tbody></table></div>");
  return page(view, "Flows", "flows", b);
}

Response flow_page(View& view, int64_t id) {
  const storage::FlowDetail d = view.store.flow(id);
  if (view.json) {
    return json_answer(detail_json(d));
  }
  // The revert path: each atom's or controller's REVERTED (or
  // REVERT_FAILURE), numbered in the order they happened, as the list and
  // the graph's badges show it; an atom reverted more than once (a retried
  // subflow) keeps its last number in the graph.
  std::map<std::string, int> revert_step;
  std::vector<const storage::FlowEventInfo*> reverts;
  for (const auto& e : d.events) {
    if (e.kind != "flow"
        && (e.state == "REVERTED" || e.state == "REVERT_FAILURE")) {
      reverts.push_back(&e);
      revert_step[e.name] = static_cast<int>(reverts.size());
    }
  }
  std::string reverting_now;
  for (const auto& a : d.atoms) {
    if (a.state == "REVERTING") {
      reverting_now += (reverting_now.empty() ? "" : ", ") + a.name;
    }
  }

  Html b;
  b.put("<h1>Flow {}: {} <span class=\"{}\">{}</span></h1>", d.flow.id,
        d.flow.name, state_class("state f-", d.flow.state), d.flow.state);
  b.put("<dl class=\"facts\"><dt>created</dt><dd>{}</dd><dt>updated</dt>"
        "<dd>{}</dd><dt>atoms</dt><dd>{}</dd></dl>",
        time_html(d.flow.created_at, view.now),
        time_html(d.flow.updated_at, view.now), d.atoms.size());

  b.put("<section class=\"actions\"><h2>Actions</h2>");
  if (const auto t = offered(d.flow.state)) {
    const std::string cli =
        "taskq flow " + std::string(t->name) + " " + std::to_string(id);
    b.put(
        "<ul><li><form method=\"post\" action=\"{}\">",
        view.link("/flows/" + std::to_string(id) + "/" + std::string(t->name)));
    if (view.options.rights.operate) {
      b.put("<button type=\"submit\">{}</button> ", t->label);
    }
    b.put("<code class=\"cli\">{}</code> <button type=\"button\" "
          "class=\"copy\" data-copy=\"{}\" hidden>Copy</button></form></li>"
          "</ul>",
          cli, cli);
  } else {
    b.put("<p class=\"note\">A {} flow can be neither suspended nor resumed"
          "{}.</p>",
          d.flow.state,
          core::flow::parse_flow_state(d.flow.state)
                  && core::flow::is_final(
                      *core::flow::parse_flow_state(d.flow.state))
              ? " (taskq flow rerun " + std::to_string(id) + " runs it again)"
              : std::string());
  }
  b.put("</section>");

  b.put("<section><h2 id=\"graph\">Graph</h2><div class=\"scroll\">{}</div>"
        "<p class=\"legend note\">Arrows point from an atom to the atoms "
        "that wait for it; a revert runs against them. Dashed: on the "
        "revert path (numbered in order). Rounded with ↻: a retry "
        "controller, above the subflow it controls.</p></section>",
        graph_svg(view, d, revert_step));

  b.put("<section><h2>Atoms</h2><div class=\"scroll\"><table class=\"atoms\">"
        "<thead><tr><th scope=\"col\">atom</th><th scope=\"col\">kind</th>"
        "<th scope=\"col\">flow</th><th scope=\"col\">state</th>"
        "<th scope=\"col\">intention</th><th scope=\"col\">task</th>"
        "<th scope=\"col\">waits for</th><th scope=\"col\">result or "
        "failure</th></tr></thead><tbody>");
  for (const auto& a : d.atoms) {
    Html task;
    if (a.task) {
      task.put("<a href=\"{}\">{}</a>",
               view.link("/tasks/" + std::to_string(*a.task)), *a.task);
    } else {
      task.put("-");
    }
    std::string after;
    for (const auto& p : a.preds) {
      after += (after.empty() ? "" : ", ") + p;
    }
    Html outcome;
    if (a.failure) {
      outcome.put("<span class=\"error\">{}</span>", shorten(*a.failure, 300));
    } else if (a.result) {
      outcome.put("<code>{}</code>", json_cell(*a.result));
    } else {
      outcome.put("-");
    }
    b.put("<tr><th scope=\"row\">{}</th><td>{}</td><td>{}</td>"
          "<td><span class=\"{}\">{}</span></td><td>{}</td><td>{}</td>"
          "<td>{}</td><td>{}</td></tr>",
          a.name, a.kind, a.flow, state_class("state a-", a.state), a.state,
          a.intention, task, after.empty() ? "-" : after, outcome);
  }
  b.put("</tbody></table></div></section>");

  b.put("<section><h2>Revert path</h2>");
  if (reverts.empty() && reverting_now.empty()) {
    b.put("<p class=\"note\">Nothing has been reverted.</p>");
  }
  if (!reverts.empty()) {
    b.put("<ol class=\"reverts\">");
    for (const auto* e : reverts) {
      b.put("<li>{} <b>{}</b> <span class=\"{}\">{}</span>{}</li>",
            time_html(e->time, view.now), e->name,
            state_class("state a-", e->state), e->state,
            e->result ? Html().put(" <code>{}</code>", json_cell(*e->result))
                      : Html());
    }
    b.put("</ol>");
  }
  if (!reverting_now.empty()) {
    b.put("<p>Reverting now: {}</p>", reverting_now);
  }
  b.put("</section>");

  b.put("<section><h2>Retry controllers</h2>");
  bool any_retry = false;
  for (const auto& a : d.atoms) {
    if (a.kind != "retry") {
      continue;
    }
    any_retry = true;
    b.put("<h3>{} <span class=\"{}\">{}</span></h3>", a.name,
          state_class("state a-", a.state), a.state);
    core::Json history = core::Json::array();
    if (a.history) {
      try {
        history = core::Json::parse(*a.history);
      } catch (const std::exception&) {
        b.put("<pre>{}</pre>", shorten(*a.history, 20000));
        continue;
      }
    }
    if (!history.is_array() || history.empty()) {
      b.put("<p class=\"note\">No attempt yet.</p>");
      continue;
    }
    b.put("<div class=\"scroll\"><table class=\"history\"><caption>{}'s "
          "history: one row per run of {}</caption><thead><tr>"
          "<th scope=\"col\">run</th><th scope=\"col\">value</th>"
          "<th scope=\"col\">failures</th></tr></thead><tbody>",
          a.name, a.flow);
    int run = 0;
    for (const auto& h : history) {
      ++run;
      Html failures;
      if (h.is_object() && h.contains("failures") && h["failures"].is_object()
          && !h["failures"].empty()) {
        failures.put("<ul>");
        for (const auto& [atom, why] : h["failures"].items()) {
          failures.put("<li><b>{}</b>: <span class=\"error\">{}</span></li>",
                       atom,
                       shorten(why.is_string() ? why.get<std::string>()
                                               : core::dump_json(why),
                               300));
        }
        failures.put("</ul>");
      } else {
        failures.put("-");
      }
      b.put("<tr><th scope=\"row\">{}</th><td><code>{}</code></td>"
            "<td>{}</td></tr>",
            run,
            h.is_object() && h.contains("value")
                ? shorten(core::dump_json(h["value"]), 200)
                : std::string("-"),
            failures);
    }
    b.put("</tbody></table></div>");
  }
  if (!any_retry) {
    b.put("<p class=\"note\">This flow has no retry controller.</p>");
  }
  b.put("</section>");

  b.put("<section><h2>Store</h2><pre>{}</pre></section>", pretty(d.store));

  b.put("<section><h2>Events</h2><div class=\"scroll\"><table "
        "class=\"flow-events\"><thead><tr><th scope=\"col\">time</th>"
        "<th scope=\"col\">element</th><th scope=\"col\">kind</th>"
        "<th scope=\"col\">state</th><th scope=\"col\">result</th></tr>"
        "</thead><tbody>");
  for (const auto& e : d.events) {
    b.put("<tr><td>{}</td><td>{}</td><td>{}</td><td><span class=\"{}\">{}"
          "</span></td><td>{}</td></tr>",
          time_html(e.time, view.now), e.name, e.kind,
          state_class("state a-", e.state), e.state,
          e.result ? json_cell(*e.result) : std::string("-"));
  }
  b.put("</tbody></table></div></section>");
  return page(view, "Flow " + std::to_string(id), "flows", b);
}

Response flow_action(View& view, int64_t id, std::string_view action) {
  storage::FlowRequest req{};
  if (action == "suspend") {
    req = storage::FlowRequest::suspend;
  } else if (action == "resume") {
    req = storage::FlowRequest::resume;
  } else {
    return error_answer(&view, 404, "no such action: " + std::string(action));
  }
  // not_found for an unknown flow, conflict for a refused request, as
  // `taskq flow suspend|resume` say.
  const auto reply = view.store.flow_request(id, req, view.now);
  if (view.json) {
    // `flow suspend|resume -o json` (its note on an ignored request goes
    // to stderr there, nowhere here).
    return json_answer(core::ObjectWriter()
                           .field("id", id)
                           .field("state", reply.state)
                           .field("ignored", reply.ignored)
                           .finish());
  }
  return see_other(view, "/flows/" + std::to_string(id));
}

} // namespace taskq::web
