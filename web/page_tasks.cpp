// The tasks page: filters in the URL, keyset pages, bulk actions on the
// ticked tasks or on every task that matches.

#include "core/error.hpp"
#include "core/handler_env.hpp"
#include "core/labels.hpp"
#include "core/state.hpp"
#include "core/task_json.hpp"
#include "core/time.hpp"

#include "web/filters.hpp"
#include "web/view.hpp"

namespace taskq::web {

namespace {

// A row's "what it runs", on one line, as list shows it.
std::string runs_text(const core::Task& t) {
  std::string s;
  if (t.command.empty()) {
    s = t.payload;
  } else if (t.command.size() == 3 && t.command[0] == "/bin/sh"
             && t.command[1] == "-c") {
    s = "sh: " + t.command[2];
  } else {
    s = "$ " + core::command_line(t.command);
  }
  for (char& c : s) {
    if (c == '\n' || c == '\t' || c == '\r') {
      c = ' ';
    }
  }
  if (s.size() > 120) {
    size_t cut = 117;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) {
      --cut; // not inside a UTF-8 character
    }
    s = s.substr(0, cut) + "...";
  }
  return s;
}

Html filter_form(const View& view, const Filters& f) {
  Html h;
  h.put("<form class=\"filters\" method=\"get\" action=\"{}\">"
        "<label>queue <input name=\"queue\" value=\"{}\" size=\"10\"></label>"
        "<label>state <input name=\"state\" value=\"{}\" size=\"14\" "
        "placeholder=\"running,failed\"></label>"
        "<label>labels <input name=\"match\" value=\"{}\" size=\"14\" "
        "placeholder=\"env=prod\"></label>"
        "<label>text <input name=\"q\" value=\"{}\" size=\"14\"></label>"
        "<label>created from <input name=\"from\" value=\"{}\" size=\"20\" "
        "placeholder=\"2026-12-06T00:00:00Z\"></label>"
        "<label>to <input name=\"to\" value=\"{}\" size=\"20\"></label>"
        "<label><input type=\"checkbox\" name=\"oldest\" value=\"1\"{}> "
        "oldest first</label>"
        "<button type=\"submit\">Filter</button></form>",
        view.link("/tasks"), f.queue, f.state, f.match, f.text, f.from, f.to,
        Raw{f.oldest ? " checked" : ""});
  return h;
}

} // namespace

Response tasks_page(View& view) {
  const Filters f = read_filters(view.request.query);
  storage::Selector sel = selector_of(f);
  const storage::TaskPage result = view.store.task_page(sel, view.now);
  if (view.json) {
    // list -o json: one task a line; here one JSON array of them, with the
    // page's cursor.
    std::string out = "{\"tasks\":[";
    for (size_t i = 0; i < result.tasks.size(); ++i) {
      out += i == 0 ? "" : ",";
      out += core::task_json(result.tasks[i], view.now);
    }
    out += "],\"next\":";
    out += result.next_cursor ? std::to_string(*result.next_cursor) : "null";
    out += ",\"text_bounded\":";
    out += result.text_bounded ? "true" : "false";
    out += "}";
    return json_answer(std::move(out));
  }
  Html body;
  body.put("<h1>Tasks</h1>").add(filter_form(view, f));
  if (result.text_bounded) {
    body.put("<p class=\"note\">The text search looked at the newest {} "
             "tasks that match the other filters; older ones were not "
             "searched.</p>",
             storage::k_text_candidates);
  }
  const bool act = view.options.rights.operate || view.options.rights.bulk;
  if (act) {
    body.put("<form method=\"post\" action=\"{}\" id=\"ticked\">",
             view.link("/tasks/bulk"));
  }
  body.put("<div class=\"scroll\"><table class=\"tasks\"><thead><tr>{}"
           "<th>id</th><th>queue</th><th>state</th><th>runs</th>"
           "<th>attempts</th><th>updated</th></tr></thead><tbody>",
           Raw{act ? "<th><span class=\"sr\">pick</span></th>" : ""});
  for (const core::Task& t : result.tasks) {
    const std::string state = display_state(t, view.now);
    body.put("<tr data-id=\"{}\">", t.id);
    if (act) {
      body.put("<td><input type=\"checkbox\" name=\"id\" value=\"{}\" "
               "aria-label=\"pick task {}\"></td>",
               t.id, t.id);
    }
    body.put("<td><a href=\"{}\">{}</a></td><td>{}</td>"
             "<td><span class=\"state s-{}\">{}</span></td>"
             "<td class=\"runs\">{}</td><td>{}</td><td>{}</td></tr>",
             view.link("/tasks/" + std::to_string(t.id)), t.id, t.queue, state,
             state, runs_text(t), t.attempts,
             time_html(t.updated_at, view.now));
  }
  body.put("</tbody></table></div>");
  if (result.tasks.empty()) {
    body.put("<p class=\"empty\">No task matches.</p>");
  }
  if (act && !result.tasks.empty()) {
    body.put("<p class=\"bulk\"><label>With the ticked tasks: "
             "<select name=\"action\">{}</select></label> "
             "<button type=\"submit\">Apply</button></p></form>",
             Raw{k_action_options});
  } else if (act) {
    body.put("</form>");
  }
  if (view.options.rights.bulk && !result.tasks.empty()) {
    body.put("<form method=\"get\" action=\"{}\" class=\"bulk\">{}"
             "<label>With every task that matches: <select name=\"bulk\">{}"
             "</select></label> <button type=\"submit\">Count them"
             "</button></form>",
             view.link("/tasks/bulk"), hidden_fields(f), Raw{k_action_options});
  }
  if (result.next_cursor) {
    Filters next = f;
    next.cursor = std::to_string(*result.next_cursor);
    body.put("<p class=\"pages\"><a rel=\"next\" href=\"{}\">Next page</a>"
             "</p>",
             view.link("/tasks?" + query_of(next)));
  }
  return page(view, "Tasks", "tasks", body);
}

} // namespace taskq::web
