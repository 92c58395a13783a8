// Schedules (with their next runs; pause and resume) and gates (with the
// keys they still wait for). JSON: `schedule list -o json` and `gate list
// -o json`, one array of their objects.

#include "core/error.hpp"
#include "core/labels.hpp"
#include "core/schedule.hpp"
#include "core/task_json.hpp"
#include "core/time.hpp"

#include <algorithm>
#include <variant>

#include "web/view.hpp"

namespace taskq::web {

namespace {

const char* schedule_kind(const core::Schedule& when) {
  return std::holds_alternative<core::Cron>(when) ? "cron" : "every";
}

// As `schedule list` says: an emission is pending when the stored tick has
// come and the schedule is not paused.
bool schedule_due(const storage::ScheduleInfo& s, core::Time now) {
  return !s.paused && s.due_at <= now;
}

core::Json optional_id(const std::optional<int64_t>& id) {
  return id ? core::Json(*id) : core::Json(nullptr);
}

// `schedule list -o json`'s object (cli/cmd_schedule.cpp), field by field.
std::string schedule_json(const storage::ScheduleInfo& s, core::Time now) {
  const core::Ticks t = core::ticks(s.spec.when, now);
  return core::ObjectWriter()
      .field("name", s.spec.name)
      .field("queue", s.spec.queue)
      .field(schedule_kind(s.spec.when), core::to_string(s.spec.when))
      .field("prev_tick", core::format_time(t.prev))
      .field("next_tick", core::format_time(t.next))
      .field("paused", s.paused)
      .field("sync", core::Json(s.sync))
      .field("last_task", optional_id(s.last_task))
      .raw("payload", s.spec.payload)
      .field("labels", core::Json(s.spec.labels))
      .field("priority", s.spec.priority)
      .field("trigger",
             s.spec.trigger ? core::Json(*s.spec.trigger) : core::Json(nullptr))
      .field("due", schedule_due(s, now))
      .field("created_at", core::format_time(s.created_at))
      .finish();
}

std::vector<std::string> waiting_keys(const storage::GateInfo& g) {
  std::vector<std::string> waiting;
  for (const auto& k : g.spec.keys) {
    if (std::find(g.covered.begin(), g.covered.end(), k) == g.covered.end()) {
      waiting.push_back(k);
    }
  }
  return waiting;
}

// `gate list -o json`'s object (cli/cmd_schedule.cpp), field by field.
std::string gate_json(const storage::GateInfo& g) {
  return core::ObjectWriter()
      .field("name", g.spec.name)
      .field("queue", g.spec.queue)
      .field("keys", core::Json(g.spec.keys))
      .field("covered", core::Json(g.covered))
      .field("waiting", core::Json(waiting_keys(g)))
      .field("emitted", g.emitted)
      .field("last_task", optional_id(g.last_task))
      .raw("payload", g.spec.payload)
      .field("labels", core::Json(g.spec.labels))
      .field("priority", g.spec.priority)
      .field("created_at", core::format_time(g.created_at))
      .finish();
}

Html task_link(const View& view, const std::optional<int64_t>& id) {
  Html h;
  if (id) {
    h.put("<a href=\"{}\">{}</a>", view.link("/tasks/" + std::to_string(*id)),
          *id);
  } else {
    h.put("-");
  }
  return h;
}

Html labels_html(const View& view, const core::Labels& labels) {
  Html h;
  for (const auto& [k, v] : labels) {
    h.put("<a class=\"label\" href=\"{}\">{}={}</a> ",
          view.link("/tasks?match=" + url_encode(k + "=" + v)), k, v);
  }
  return h;
}

// The tick after `next`, and the one after that: the runs a schedule has
// coming if nothing pauses it.
Html next_runs(const storage::ScheduleInfo& s, core::Time now) {
  core::Time at = core::ticks(s.spec.when, now).next;
  Html h;
  h.put("<ol class=\"runs\">");
  for (int i = 0; i < 3 && at != core::Time::max(); ++i) {
    h.put("<li>{}</li>", time_html(at, now));
    at = core::ticks(s.spec.when, at).next;
  }
  h.put("</ol>");
  return h;
}

} // namespace

Response schedules_page(View& view) {
  const auto schedules = view.store.schedules();
  if (view.json) {
    std::string out = "[";
    for (const auto& s : schedules) {
      out += out.size() == 1 ? "" : ",";
      out += schedule_json(s, view.now);
    }
    out += "]";
    return json_answer(std::move(out));
  }
  Html b;
  b.put("<h1>Schedules</h1>");
  if (schedules.empty()) {
    b.put("<p class=\"empty\">No schedules. <code class=\"cli\">taskq "
          "schedule add nightly reports --every 'day at 02:00'</code> adds "
          "one.</p>");
    return page(view, "Schedules", "schedules", b);
  }
  b.put("<div class=\"scroll\"><table class=\"schedules\">"
        "<thead><tr><th scope=\"col\">schedule</th><th scope=\"col\">queue"
        "</th><th scope=\"col\">when</th><th scope=\"col\">next runs</th>"
        "<th scope=\"col\">last tick</th><th scope=\"col\">state</th>"
        "<th scope=\"col\">last task</th><th scope=\"col\">emits</th>"
        "<th scope=\"col\">action</th></tr></thead><tbody>");
  for (const auto& s : schedules) {
    const core::Ticks t = core::ticks(s.spec.when, view.now);
    const std::string act = s.paused ? "resume" : "pause";
    Html action;
    if (view.options.rights.queues) {
      action.put("<form method=\"post\" action=\"{}\"><button type=\"submit\" "
                 "aria-label=\"{} schedule {}\">{}</button></form>",
                 view.link("/schedules/" + url_encode(s.spec.name) + "/" + act),
                 act, s.spec.name, act);
    }
    action.put("<code class=\"cli\">taskq schedule {} {}</code>", act,
               s.spec.name);
    Html emits;
    emits.put("priority {}", s.spec.priority);
    if (!s.spec.labels.empty()) {
      emits.put("<br>").add(labels_html(view, s.spec.labels));
    }
    if (s.spec.trigger) {
      emits.put("<br>trigger {}", *s.spec.trigger);
    }
    b.put("<tr><th scope=\"row\">{}</th><td><a href=\"{}\">{}</a></td>"
          "<td><code>{} {}</code></td><td>{}</td><td>{}</td>"
          "<td><span class=\"state {}\">{}</span>{}</td><td>{}</td><td>{}</td>"
          "<td>{}</td></tr>",
          s.spec.name, view.link("/tasks?queue=" + url_encode(s.spec.queue)),
          s.spec.queue, schedule_kind(s.spec.when),
          core::to_string(s.spec.when),
          s.paused ? Html().put("<span class=\"note\">none while paused</span>")
                   : next_runs(s, view.now),
          time_html(t.prev, view.now), s.paused ? "s-paused" : "s-active",
          s.paused ? "paused" : "active",
          schedule_due(s, view.now) ? Raw{" (due)"} : Raw{""},
          task_link(view, s.last_task), emits, action);
  }
  b.put("</tbody></table></div>");
  return page(view, "Schedules", "schedules", b);
}

Response schedule_action(View& view, const std::string& name,
                         std::string_view action) {
  if (action != "pause" && action != "resume") {
    return error_answer(&view, 404, "no such action: " + std::string(action));
  }
  // not_found for an unknown name, as `taskq schedule pause` says.
  view.store.set_schedule_paused(name, action == "pause", view.now);
  if (view.json) {
    return json_answer(schedule_json(view.store.schedule(name), view.now));
  }
  return see_other(view, "/schedules");
}

Response gates_page(View& view) {
  const auto gates = view.store.gates();
  if (view.json) {
    std::string out = "[";
    for (const auto& g : gates) {
      out += out.size() == 1 ? "" : ",";
      out += gate_json(g);
    }
    out += "]";
    return json_answer(std::move(out));
  }
  Html b;
  b.put("<h1>Gates</h1>");
  if (gates.empty()) {
    b.put("<p class=\"empty\">No gates. <code class=\"cli\">taskq gate add "
          "publish site --keys docs,assets</code> adds one.</p>");
    return page(view, "Gates", "gates", b);
  }
  b.put("<p class=\"note\">A gate emits its task once a completed task "
        "added with <code>--trigger K</code> has covered each of its keys, "
        "then waits for all of them again.</p>"
        "<div class=\"scroll\"><table class=\"gates\">"
        "<thead><tr><th scope=\"col\">gate</th><th scope=\"col\">queue</th>"
        "<th scope=\"col\">waits for</th><th scope=\"col\">covered</th>"
        "<th scope=\"col\">emitted</th><th scope=\"col\">last task</th>"
        "<th scope=\"col\">emits</th><th scope=\"col\">created</th>"
        "</tr></thead><tbody>");
  for (const auto& g : gates) {
    const auto waiting = waiting_keys(g);
    Html wait;
    Html covered;
    for (const auto& k : waiting) {
      wait.put("<span class=\"key\">{}</span> ", k);
    }
    for (const auto& k : g.covered) {
      covered.put("<span class=\"key done\">{}</span> ", k);
    }
    Html emits;
    emits.put("priority {}", g.spec.priority);
    if (!g.spec.labels.empty()) {
      emits.put("<br>").add(labels_html(view, g.spec.labels));
    }
    b.put("<tr><th scope=\"row\">{}</th><td><a href=\"{}\">{}</a></td>"
          "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
          "</tr>",
          g.spec.name, view.link("/tasks?queue=" + url_encode(g.spec.queue)),
          g.spec.queue,
          waiting.empty() ? Html().put("<span class=\"note\">nothing (it "
                                       "emits)</span>")
                          : wait,
          covered.empty() ? Html().put("-") : covered, g.emitted,
          task_link(view, g.last_task), emits,
          time_html(g.created_at, view.now));
  }
  b.put("</tbody></table></div>");
  return page(view, "Gates", "gates", b);
}

} // namespace taskq::web
