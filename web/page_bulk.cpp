// Bulk actions: on the ticked tasks (all or nothing), or on every task
// that matches the filters, counted first, in one transaction over the
// predicate; a destructive one asks the operator to type the count.

#include "core/error.hpp"
#include "core/state.hpp"

#include <algorithm>

#include "web/filters.hpp"
#include "web/view.hpp"

namespace taskq::web {

namespace {

std::optional<core::Message> message_of(std::string_view action) {
  if (action == "pause") {
    return core::Message::pause;
  }
  if (action == "resume") {
    return core::Message::run;
  }
  if (action == "kill") {
    return core::Message::kill;
  }
  if (action == "release") {
    return core::Message::release;
  }
  return std::nullopt;
}

const std::string* value(const Pairs& pairs, std::string_view name) {
  for (const auto& [k, v] : pairs) {
    if (k == name) {
      return &v;
    }
  }
  return nullptr;
}

void check_action(std::string_view action) {
  if (!message_of(action) && action != "retry") {
    throw Error(ErrorKind::usage,
                "no such action: " + std::string(action)
                    + " (pause, resume, kill, release, retry)");
  }
}

// The filter narrowed to the states the action acts on (of those it
// names; all of them when it names none), so that the count is of the
// tasks the action would change, as send_bulk changes them. A pseudo-state
// (running, ready, erred) stays when the action acts on some state it can
// hold. Retry names its states itself (failed, killed, completed). False
// when the action acts on none of the states named.
bool narrow_to_action(storage::Selector& sel, std::string_view action) {
  const auto msg = message_of(action);
  if (!msg) {
    return true;
  }
  const std::vector<core::TaskState> acted = core::states_acted_on(*msg);
  const auto acts_on = [&](core::TaskState s) {
    return std::find(acted.begin(), acted.end(), s) != acted.end();
  };
  std::vector<std::string> states;
  if (sel.states.empty()) {
    for (const core::TaskState s : acted) {
      states.emplace_back(core::to_string(s));
    }
  }
  for (const std::string& name : sel.states) {
    const auto s = core::parse_state(name);
    const bool unfinished_kind = name == "running" || name == "ready";
    if ((s && acts_on(*s)) || name == "erred"
        || (unfinished_kind
            && (acts_on(core::TaskState::runnable)
                || acts_on(core::TaskState::sleeping)))) {
      states.push_back(name);
    }
  }
  sel.states = std::move(states);
  return !sel.states.empty();
}

} // namespace

Response bulk_page(View& view) {
  const Filters f = read_filters(view.request.query);
  const std::string* action = view.request.param("bulk");
  if (action == nullptr) {
    throw Error(ErrorKind::usage, "which action? (bulk=pause, ...)");
  }
  check_action(*action);
  storage::Selector sel = selector_of(f);
  if (!sel.has_filters()) {
    throw Error(ErrorKind::usage, "a bulk action needs a filter: queue, "
                                  "state or labels");
  }
  storage::Selector acted = sel;
  const int64_t n =
      narrow_to_action(acted, *action) ? view.store.count(acted, view.now) : 0;
  Filters seen = f; // the tasks counted, to list them
  if (!acted.states.empty()) {
    seen.state.clear();
    for (const std::string& s : acted.states) {
      seen.state += (seen.state.empty() ? "" : ",") + s;
    }
  }
  if (view.json) {
    return json_answer("{\"match\":" + std::to_string(n) + "}");
  }
  Html b;
  b.put("<h1>{} every task that matches</h1><p class=\"count\"><strong>{} "
        "tasks match</strong> in the states {} acts on. <a href=\"{}\">See "
        "them</a>.</p>",
        *action, n, *action, view.link("/tasks?" + query_of(seen)));
  if (n > 0) {
    b.put("<form method=\"post\" action=\"{}\">{}"
          "<input type=\"hidden\" name=\"action\" value=\"{}\">"
          "<input type=\"hidden\" name=\"expect\" value=\"{}\">",
          view.link("/tasks/bulk"), hidden_fields(f), *action, n);
    if (destructive(*action)) {
      b.put("<label>Type {} to {} them: <input name=\"confirm\" "
            "inputmode=\"numeric\" autocomplete=\"off\" required></label> ",
            n, *action);
    }
    b.put("<button type=\"submit\">{} {} tasks</button></form>", *action, n);
  }
  return page(view, "Bulk action", "tasks", b);
}

Response bulk_action(View& view) {
  const Pairs form = parse_form<Pairs>(view.request.body);
  const std::string* action = value(form, "action");
  if (action == nullptr) {
    throw Error(ErrorKind::usage, "which action? (action=pause, ...)");
  }
  check_action(*action);
  std::vector<int64_t> ids;
  for (const auto& [k, v] : form) {
    if (k == "id") {
      const auto id = parse_id_text(v);
      if (!id) {
        throw Error(ErrorKind::usage, "not a task id: " + v);
      }
      ids.push_back(*id);
    }
  }
  int64_t changed = 0;
  if (!ids.empty()) {
    // The ticked tasks: all or nothing, as the CLI with ids.
    storage::Selector sel;
    sel.ids = ids;
    if (*action == "retry") {
      changed = static_cast<int64_t>(
          view.store
              .retry_many(sel, storage::LiveRetry::refuse, view.actor, view.now)
              .size());
    } else {
      changed =
          static_cast<int64_t>(view.store
                                   .send(sel, *message_of(*action),
                                         std::nullopt, view.actor, view.now)
                                   .size());
    }
  } else {
    const Filters f = read_filters(form);
    storage::Selector sel = selector_of(f);
    if (!sel.has_filters()) {
      throw Error(ErrorKind::usage, "tick tasks, or give a filter");
    }
    // Every match: a page's order and size do not cut it.
    sel.newest = false;
    sel.limit.reset();
    const std::string* expect = value(form, "expect");
    const auto n = expect == nullptr ? std::nullopt : parse_id_text(*expect);
    if (!n) {
      throw Error(ErrorKind::usage, "count the tasks first (expect=N)");
    }
    if (destructive(*action)) {
      const std::string* confirm = value(form, "confirm");
      if (confirm == nullptr || parse_id_text(*confirm) != n) {
        throw Error(ErrorKind::usage,
                    "type " + std::to_string(*n) + " to " + *action + " them");
      }
    }
    if (!narrow_to_action(sel, *action)) {
      throw Error(ErrorKind::conflict,
                  std::to_string(*n)
                      + " tasks matched when you looked, 0 "
                        "now: count them again");
    }
    // Counted again in the action's own transaction: another number
    // changes nothing (conflict).
    sel.expect_count = *n;
    if (*action == "retry") {
      changed = static_cast<int64_t>(
          view.store
              .retry_many(sel, storage::LiveRetry::refuse, view.actor, view.now)
              .size());
    } else {
      changed = view.store.send_bulk(sel, *message_of(*action), std::nullopt,
                                     view.actor, view.now);
    }
  }
  if (view.json) {
    return json_answer("{\"changed\":" + std::to_string(changed) + "}");
  }
  Html b;
  b.put("<h1>Done</h1><p class=\"count\" role=\"status\">{}: {} tasks "
        "changed.</p><p><a href=\"{}\">Back to the tasks</a></p>",
        *action, changed, view.link("/tasks"));
  return page(view, "Bulk action", "tasks", b);
}

} // namespace taskq::web
