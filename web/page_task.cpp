// A task's page: why it is not running, what it runs, its attempts and
// errors, its output, its events, and every action an operator has at
// the shell, each with the `taskq ...` command it equals.

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/handler_env.hpp"
#include "core/labels.hpp"
#include "core/state.hpp"
#include "core/task_json.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "web/filters.hpp"
#include "web/view.hpp"

namespace taskq::web {

namespace {

// JSON text indented for reading, cut at `limit` bytes (saying so).
std::string pretty(const std::string& json, size_t limit = 20000) {
  std::string out;
  try {
    out = nlohmann::ordered_json::parse(json).dump(
        2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  } catch (const std::exception&) {
    out = json;
  }
  if (out.size() > limit) {
    out.resize(limit);
    out += "\n... (cut at " + std::to_string(limit)
           + " bytes; taskq show "
             "gives the whole)";
  }
  return out;
}

// How far a task says it is, from its checkpoint (`taskq heartbeat
// --checkpoint`): an object with "progress" between 0 and 1, or with
// "done" and "total" (total above 0). The fraction, and "done of total"
// when given so.
struct Progress {
  double fraction;
  std::string of;
};
std::optional<Progress> progress_of(const std::optional<std::string>& json) {
  if (!json) {
    return std::nullopt;
  }
  const auto j = nlohmann::json::parse(*json, nullptr, false);
  if (!j.is_object()) {
    return std::nullopt;
  }
  const auto number = [&j](const char* key) -> std::optional<double> {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number()) {
      return std::nullopt;
    }
    return it->get<double>();
  };
  if (const auto p = number("progress"); p && *p >= 0 && *p <= 1) {
    return Progress{*p, ""};
  }
  const auto done = number("done");
  const auto total = number("total");
  if (done && total && *total > 0 && *done >= 0 && *done <= *total) {
    const auto count = [](double v) {
      char text[32];
      std::snprintf(text, sizeof text, "%.15g", v);
      return std::string(text);
    };
    return Progress{*done / *total, count(*done) + " of " + count(*total)};
  }
  return std::nullopt;
}

struct Action {
  std::string_view name;
  std::string_view label;
  std::string_view cli; // the taskq command, before the id
};

constexpr Action k_actions[] = {
    {"pause", "Pause", "pause"},       {"resume", "Resume", "resume"},
    {"freeze", "Freeze", "freeze"},    {"continue", "Continue", "continue"},
    {"sleep", "Sleep", "sleep"},       {"kill", "Kill", "kill"},
    {"release", "Release", "release"}, {"retry", "Retry", "retry"},
};

// Which actions the task's state allows now (the rest would be refused).
bool offered(const core::Task& t, std::string_view a, core::Time now) {
  const bool running = t.leased(now);
  if (a == "freeze") {
    return running && !t.frozen;
  }
  if (a == "continue") {
    return running && t.frozen;
  }
  if (a == "retry") {
    return t.state == core::TaskState::failed
           || t.state == core::TaskState::killed;
  }
  if (a == "release") {
    return running;
  }
  const core::Message m = a == "pause"   ? core::Message::pause
                          : a == "sleep" ? core::Message::sleep
                          : a == "kill"  ? core::Message::kill
                                         : core::Message::run;
  return core::transition(t.state, m).has_value();
}

Html actions_html(const View& view, const core::Task& t) {
  Html h;
  h.put("<section class=\"actions\"><h2>Actions</h2><ul>");
  for (const Action& a : k_actions) {
    if (!offered(t, a.name, view.now)) {
      continue;
    }
    std::string cli =
        "taskq " + std::string(a.cli) + " " + std::to_string(t.id);
    if (a.name == "sleep") {
      cli += " --for 10m";
    }
    h.put("<li><form method=\"post\" action=\"{}\">",
          view.link("/tasks/" + std::to_string(t.id) + "/"
                    + std::string(a.name)));
    // The revision the page showed: an action from a stale page is
    // refused. Not for the actions on a running command: each heartbeat
    // moves the revision, and freeze, continue and release are refused
    // by their own rules when the lease is not as the page showed it.
    if (a.name != "freeze" && a.name != "continue" && a.name != "release") {
      h.put("<input type=\"hidden\" name=\"rev\" value=\"{}\">", t.rev);
    }
    if (a.name == "sleep") {
      h.put("<label>for <input name=\"for\" value=\"10m\" size=\"5\">"
            "</label> ");
    }
    if (view.options.rights.operate) {
      h.put("<button type=\"submit\" class=\"act-{}\">{}</button> ", a.name,
            a.label);
    }
    h.put("<code class=\"cli\">{}</code> <button type=\"button\" "
          "class=\"copy\" data-copy=\"{}\" hidden>Copy</button></form></li>",
          cli, cli);
  }
  h.put("</ul></section>");
  return h;
}

} // namespace

Response task_page(View& view, int64_t id) {
  const storage::TaskDetail d = view.store.show(id);
  const core::Task& t = d.task;
  const auto sizes = view.store.output_sizes(id);
  if (view.json) {
    // show -o json: the task, its events and which output is kept.
    std::string text = core::task_json(t, view.now, &d.events);
    text.pop_back();
    text += ",\"output\":[";
    for (const auto& o : sizes) {
      text += text.back() == '[' ? "" : ",";
      text += core::ObjectWriter()
                  .field("attempt", o.attempt)
                  .field("stream", o.stream)
                  .field("kept", o.kept)
                  .field("printed", o.total)
                  .finish();
    }
    text += "]}";
    return json_answer(std::move(text));
  }
  const std::string state = display_state(t, view.now);
  const auto why = view.store.why(id, view.now, "");
  Html b;
  b.put("<h1>Task {} <span class=\"state s-{}\">{}</span></h1>", t.id, state,
        state);
  b.put("<section class=\"why\" aria-label=\"why\">");
  if (why.empty()) {
    b.put("<p>{}</p>", state == "running" ? "It is running."
                       : t.state == core::TaskState::runnable
                           ? "It can run now: a worker of its queue will "
                             "lease it."
                           : "It has finished.");
  } else {
    b.put("<ul>");
    for (const auto& line : why) {
      b.put("<li>{}</li>", line);
    }
    b.put("</ul>");
  }
  b.put("</section>");
  b.put("<dl class=\"facts\"><dt>queue</dt><dd><a href=\"{}\">{}</a></dd>",
        view.link("/tasks?queue=" + url_encode(t.queue)), t.queue);
  if (!t.reason.empty()) {
    b.put("<dt>reason</dt><dd>{}</dd>", t.reason);
  }
  if (!t.command.empty()) {
    if (t.command.size() == 3 && t.command[0] == "/bin/sh"
        && t.command[1] == "-c") {
      b.put("<dt>command</dt><dd><code>sh: {}</code></dd>", t.command[2]);
    } else {
      b.put("<dt>command</dt><dd><code>{}</code></dd>",
            core::command_line(t.command));
    }
  }
  if (!t.labels.empty()) {
    b.put("<dt>labels</dt><dd>");
    for (const auto& [k, v] : t.labels) {
      b.put("<a class=\"label\" href=\"{}\">{}={}</a> ",
            view.link("/tasks?match=" + url_encode(k + "=" + v)), k, v);
    }
    b.put("</dd>");
  }
  b.put("<dt>priority</dt><dd>{}</dd><dt>attempts</dt><dd>{}{}</dd>",
        t.priority, t.attempts,
        t.max_attempts ? " of " + std::to_string(*t.max_attempts) : "");
  b.put("<dt>run at</dt><dd>{}</dd><dt>created</dt><dd>{}</dd>"
        "<dt>updated</dt><dd>{}</dd>",
        time_html(t.run_at, view.now), time_html(t.created_at, view.now),
        time_html(t.updated_at, view.now));
  if (t.leased(view.now)) {
    b.put("<dt>lease</dt><dd>held by {} until {}</dd>", t.lease->worker,
          time_html(t.lease->expires_at, view.now));
  }
  if (!t.after.empty()) {
    b.put("<dt>waits for</dt><dd>");
    for (const int64_t a : t.after) {
      b.put("<a href=\"{}\">{}</a> ", view.link("/tasks/" + std::to_string(a)),
            a);
    }
    b.put("</dd>");
  }
  if (t.retry_of) {
    b.put("<dt>retry of</dt><dd><a href=\"{}\">{}</a></dd>",
          view.link("/tasks/" + std::to_string(*t.retry_of)), *t.retry_of);
  }
  b.put("<dt>revision</dt><dd>{}</dd></dl>", t.rev);
  b.add(actions_html(view, t));
  if (const auto p = progress_of(t.checkpoint)) {
    const int percent = static_cast<int>(p->fraction * 100);
    b.put("<section class=\"progress\"><h2>Progress</h2><p><progress "
          "max=\"100\" value=\"{}\">{}%</progress> {}%{}</p></section>",
          percent, percent, percent, p->of.empty() ? "" : ": " + p->of);
  }
  b.put("<section><h2>Payload</h2><pre>{}</pre></section>", pretty(t.payload));
  if (t.result) {
    b.put("<section><h2>Result</h2><pre>{}</pre></section>", pretty(*t.result));
  }
  if (t.checkpoint) {
    b.put("<section><h2>Checkpoint</h2><pre>{}</pre></section>",
          pretty(*t.checkpoint));
  }
  if (!t.errors.empty()) {
    b.put("<section><h2>Errors</h2><ol class=\"errors\">");
    for (const auto& e : t.errors) {
      b.put("<li>{} <span class=\"error\">{}</span></li>",
            time_html(e.time, view.now), e.message);
    }
    b.put("</ol></section>");
  }
  // A running command's streams are followed before they print: a worker
  // run with --keep-output stores what they print while they run.
  std::vector<storage::OutputSize> streams = sizes;
  if (state == "running" && !t.command.empty() && t.attempts > 0) {
    for (const char* stream : {"stdout", "stderr"}) {
      if (std::none_of(streams.begin(), streams.end(), [&](const auto& o) {
            return o.attempt == t.attempts && o.stream == stream;
          })) {
        streams.push_back({t.attempts, stream, 0, 0});
      }
    }
  }
  if (!streams.empty()) {
    b.put("<section><h2>Output</h2>");
    for (const auto& o : streams) {
      std::string text;
      int64_t last = 0;
      bool cut = false;
      for (const auto& c : view.store.output(id, o.attempt, o.stream)) {
        text += c.data;
        last = c.id;
        if (text.size() > 64 * 1024) {
          text += "\n... (taskq logs " + std::to_string(id)
                  + " gives the "
                    "whole)";
          cut = true;
          break;
        }
      }
      b.put("<h3>attempt {}, {}{}</h3><pre class=\"output\"", o.attempt,
            o.stream, o.total == 0 ? " (nothing kept yet)" : "");
      if (state == "running" && o.attempt == t.attempts && !cut) {
        // Followed while it runs (taskq.js, every 2 s).
        b.put(" data-follow=\"{}\" data-after=\"{}\"",
              view.link("/tasks/" + std::to_string(id) + "/output?attempt="
                        + std::to_string(o.attempt) + "&stream=" + o.stream),
              last);
      }
      b.put(">{}</pre>", text);
    }
    b.put("</section>");
  }
  b.put("<section><h2>Events</h2><ol class=\"events\">");
  for (const auto& e : d.events) {
    b.put("<li>{} <b>{}</b> {}{}{} <span class=\"actor\">{}</span> {}</li>",
          time_html(e.time, view.now), e.message, e.from,
          e.from.empty() && e.to.empty() ? "" : " → ", e.to, e.actor, e.detail);
  }
  b.put("</ol></section>");
  return page(view, "Task " + std::to_string(id), "tasks", b);
}

Response task_action(View& view, int64_t id, std::string_view action) {
  const auto form = parse_form<Pairs>(view.request.body);
  std::optional<int64_t> rev;
  std::optional<core::Millis> sleep_for;
  for (const auto& [k, v] : form) {
    if (k == "rev") {
      rev = parse_id_text(v);
      if (!rev) {
        throw Error(ErrorKind::usage, "not a revision: " + v);
      }
    } else if (k == "for") {
      sleep_for = core::parse_duration(v);
      if (!sleep_for || sleep_for->count() <= 0) {
        throw Error(ErrorKind::usage, "not a duration: " + v);
      }
    }
  }
  storage::Selector sel;
  sel.ids = {id};
  sel.expect_rev = rev;
  int64_t shown = id;
  if (action == "freeze" || action == "continue") {
    view.store.freeze({id}, action == "freeze", view.actor, view.now, rev);
  } else if (action == "retry") {
    // The revision is checked in the retry's own transaction.
    shown =
        view.store
            .retry_many(sel, storage::LiveRetry::refuse, view.actor, view.now)
            .at(0)
            .retry;
  } else {
    std::optional<core::Message> msg;
    std::optional<core::Time> until;
    if (action == "pause") {
      msg = core::Message::pause;
    } else if (action == "resume") {
      msg = core::Message::run;
    } else if (action == "kill") {
      msg = core::Message::kill;
    } else if (action == "release") {
      msg = core::Message::release;
    } else if (action == "sleep") {
      msg = core::Message::sleep;
      until = view.now + sleep_for.value_or(core::Millis{10 * 60 * 1000});
    }
    if (!msg) {
      return error_answer(&view, 404, "no such action: " + std::string(action));
    }
    view.store.send(sel, *msg, until, view.actor, view.now);
  }
  if (view.json) {
    const auto t = view.store.find(shown);
    return json_answer(t ? core::task_json(*t, view.now) : "null");
  }
  return see_other(view, "/tasks/" + std::to_string(shown));
}

Response task_output(View& view, int64_t id) {
  const auto number = [&view](const char* name, int64_t least) {
    const std::string* text = view.request.param(name);
    const auto n = text == nullptr ? std::nullopt
                   : *text == "0"  ? std::optional<int64_t>(0)
                                   : parse_id_text(*text);
    if (!n || *n < least) {
      throw Error(ErrorKind::usage, std::string(name)
                                        + "= must be a whole "
                                          "number, "
                                        + std::to_string(least) + " or more");
    }
    return *n;
  };
  const int64_t attempt = number("attempt", 1);
  const int64_t after = number("after", 0);
  const std::string* stream = view.request.param("stream");
  if (stream == nullptr || (*stream != "stdout" && *stream != "stderr")) {
    throw Error(ErrorKind::usage, "stream= must be stdout or stderr");
  }
  return json_answer(view.follow->answer(
      {id, attempt, *stream, after}, [&view, id, attempt, after, stream] {
        const auto t = view.store.find(id);
        if (!t) {
          throw Error(ErrorKind::not_found, "no task " + std::to_string(id));
        }
        // At most 64 KiB an answer: the next asks after its last chunk.
        std::string data;
        int64_t last = after;
        for (const auto& c : view.store.output(id, attempt, *stream, after)) {
          data += c.data;
          last = c.id;
          if (data.size() >= 64 * 1024) {
            break;
          }
        }
        const bool running =
            display_state(*t, view.now) == "running" && t->attempts == attempt;
        return core::ObjectWriter()
            .text("data", data)
            .number("after", last)
            .raw("running", running ? "true" : "false")
            .finish();
      }));
}

} // namespace taskq::web
