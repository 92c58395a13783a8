// TaskStore: an operator's reads of tasks: find, show, list, why, and the
// event stream. The selection of tasks by a selector: select.cpp.
#include "core/error.hpp"
#include "core/error_policy.hpp"
#include "core/suggestion.hpp"
#include "storage/features/add_store.hpp"
#include "storage/features/select.hpp"
#include "storage/features/web_store.hpp"
#include "storage/model/event_horizon.hpp"
#include "storage/model/lease_expiry.hpp"
#include "storage/model/rows.hpp"
#include "storage/model/state_writer.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;

std::optional<Task> TaskStore::find(int64_t id) {
  Transaction tx(*m_db, Transaction::Kind::read);
  auto task = load_task(*m_db, id);
  if (task) {
    task->errors = load_errors(*m_db, id);
  }
  return task;
}

TaskDetail TaskStore::show(int64_t id) {
  Transaction tx(*m_db, Transaction::Kind::read);
  TaskDetail out{load_full(*m_db, id), {}};
  {
    std::vector<Task> one{out.task};
    load_lease_starts(*m_db, one);
    out.task = std::move(one.front());
  }
  {
    Statement by(*m_db, "SELECT created_by FROM tasks WHERE id = ?1");
    by.bind(1, id);
    by.step();
    out.events.push_back(creation_event(id, out.task.created_at, by.get_text(0),
                                        out.task.retry_of));
  }
  Statement st(*m_db, join(join("SELECT ", k_event_columns),
                           " FROM events WHERE task_id = ?1 ORDER BY id"));
  st.bind(1, id);
  while (st.step()) {
    out.events.push_back(read_event(st));
  }
  return out;
}

std::optional<core::Event> TaskStore::last_event_by(int64_t id,
                                                    const std::string& actor) {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, join(join("SELECT ", k_event_columns),
                           " FROM events WHERE task_id = ?1 AND actor = ?2 "
                           "ORDER BY id DESC LIMIT 1"));
  st.bind(1, id).bind(2, actor);
  if (!st.step()) {
    return std::nullopt;
  }
  return read_event(st);
}

std::vector<Task> TaskStore::list(const Selector& sel, Time now) {
  Transaction tx(*m_db, Transaction::Kind::read);
  std::vector<Task> tasks = select_tasks(*m_db, sel, now, true);
  // A finished command's last attempt, and that of a task with errors:
  // when it began (its latest lease), for how long it ran, and whether
  // it failed (an error since).
  std::optional<Statement> st;
  for (Task& t : tasks) {
    const bool ended =
        core::is_terminal(t.state) && !t.command.empty() && t.attempts > 0;
    if (t.lease_started || (!ended && t.errors.empty())) {
      continue;
    }
    if (!st) {
      st.emplace(*m_db, "SELECT time FROM events WHERE task_id = ?1 AND "
                        "message = 'lease' ORDER BY id DESC LIMIT 1");
    }
    st->bind(1, t.id);
    if (st->step()) {
      t.lease_started = core::from_unix_ms(st->get_int(0));
    }
    st->reset();
  }
  return tasks;
}

namespace {

// For a task the error policy put to sleep (its latest move into sleeping
// is taskq's retry), the line that says so: "attempt 1 failed (exit status
// 1: disk full); retry 2 of 8 at TIME". Nothing for any other sleeper.
std::optional<std::string> retry_line(Db& db, const Task& t) {
  if (t.errors.empty()
      || t.errors.back().message == core::k_exceeded_error_rate) {
    return std::nullopt;
  }
  Statement st(db, "SELECT actor, detail FROM events WHERE task_id = ?1 AND "
                   "to_state = 'sleeping' ORDER BY id DESC LIMIT 1");
  st.bind(1, t.id);
  if (!st.step() || st.get_opt_text(0).value_or("") != k_system_actor
      || st.get_opt_text(1).value_or("").rfind("retry at ", 0) != 0) {
    return std::nullopt;
  }
  const core::ErrorPolicy policy =
      core::resolve_policy(load_queue(db, t.queue).policy, t.policy);
  const core::ErrorEntry& last = t.errors.back();
  // The errors the policy counted when it decided, as core::decide does.
  const auto counted = std::count_if(
      t.errors.begin(), t.errors.end(), [&](const core::ErrorEntry& e) {
        return e.time > last.time - policy.window
               && e.message != core::k_exceeded_error_rate;
      });
  std::string cause = last.message;
  std::replace(cause.begin(), cause.end(), '\n', ' ');
  return "attempt " + std::to_string(t.attempts) + " failed (" + cause
         + "); retry " + std::to_string(counted + 1) + " of "
         + std::to_string(policy.max_errors) + " at "
         + core::format_time(t.run_at) + " ("
         + core::suggest({"retry", std::to_string(t.id)}) + " runs it now)";
}

} // namespace

std::vector<std::string> TaskStore::why(int64_t id, Time now,
                                        const std::string& worker) {
  Transaction tx(*m_db, Transaction::Kind::read);
  const Task t = load_full(*m_db, id);
  std::vector<std::string> reasons;
  const std::string state(core::to_string(t.state));
  if (core::is_terminal(t.state)) {
    reasons.push_back("it is " + state + " (final)"
                      + (t.reason.empty() || t.state == TaskState::completed
                             ? ""
                             : ": " + t.reason));
    return reasons;
  }
  if (t.broadcast_until) {
    if (*t.broadcast_until <= now) {
      reasons.push_back("it is a broadcast that ended at "
                        + core::format_time(*t.broadcast_until)
                        + ": the next lease from " + t.queue + " completes it");
      return reasons;
    }
    Statement st(*m_db, "SELECT count(*), count(*) FILTER (WHERE worker = ?2) "
                        "FROM deliveries WHERE task_id = ?1");
    st.bind(1, id).bind(2, worker);
    st.step();
    const int64_t n = st.get_int(0);
    reasons.push_back(
        "it is a broadcast: each worker leasing from " + t.queue
        + " receives it once, until " + core::format_time(*t.broadcast_until)
        + " (delivered to " + std::to_string(n)
        + (n == 1 ? " worker" : " workers") + "; " + worker
        + (st.get_int(1) > 0 ? " has had it)" : " has not had it yet)"));
    return reasons;
  }
  if (t.waiting) {
    std::vector<int64_t> open;
    Statement st(*m_db, "SELECT d.dep_id FROM task_deps d JOIN tasks t "
                        "ON t.id = d.dep_id WHERE d.task_id = ?1 "
                        "AND t.state <> 'completed' ORDER BY d.dep_id");
    st.bind(1, id);
    while (st.step()) {
      open.push_back(st.get_int(0));
    }
    std::string list;
    for (size_t i = 0; i < open.size(); ++i) {
      list += i == 0 ? "" : i + 1 == open.size() ? " and " : ", ";
      list += std::to_string(open[i]);
    }
    reasons.push_back(std::string("it is waiting for task")
                      + (open.size() == 1 ? " " : "s ") + list
                      + " to complete");
  }
  if (const auto by = obsoleted_by(*m_db, t.root, t.id)) {
    reasons.push_back("it is obsolete: " + task_ref(*by)
                      + " is unfinished and has its root labels ("
                      + core::format_labels(t.root)
                      + "); the next lease kills it");
  }
  if (t.to_worker && *t.to_worker != worker) {
    reasons.push_back("it is addressed to worker " + *t.to_worker);
  }
  if (t.state == TaskState::paused) {
    reasons.push_back("it is paused" + (t.reason.empty() ? "" : ": " + t.reason)
                      + " (" + core::suggest({"resume", std::to_string(id)})
                      + ")");
  }
  if (t.state == TaskState::sleeping && t.run_at > now) {
    reasons.push_back(retry_line(*m_db, t).value_or(
        "it is sleeping until " + core::format_time(t.run_at)));
  }
  if (t.state == TaskState::runnable && t.run_at > now) {
    reasons.push_back("it is not due until " + core::format_time(t.run_at));
  }
  if (t.leased(now)) {
    // Frozen (as frozen_now tells): its command is stopped where it is
    // until an operator continues it; the worker keeps the lease meanwhile.
    Statement st(*m_db, "SELECT message, actor FROM events WHERE task_id = ?1 "
                        "AND message IN ('lease', 'freeze', 'continue') "
                        "ORDER BY id DESC LIMIT 1");
    st.bind(1, id);
    const std::string leased = "leased by " + t.lease->worker + " until "
                               + core::format_time(t.lease->expires_at);
    if (st.step() && st.get_text(0) == "freeze") {
      reasons.push_back(
          "it is frozen: frozen by " + st.get_opt_text(1).value_or("?")
          + ", its command stopped where it is, " + leased + " ("
          + core::suggest({"continue", std::to_string(id)}) + ")");
    } else {
      reasons.push_back("it is " + leased);
    }
  }
  const QueueRow q = load_queue(*m_db, t.queue);
  if (q.paused) {
    reasons.push_back("queue " + t.queue + " is paused");
  }
  if (q.max_running && !t.leased(now)
      && count_running(*m_db, t.queue, now) >= *q.max_running) {
    reasons.push_back("queue " + t.queue + " is at its running limit ("
                      + std::to_string(*q.max_running) + ")");
  }
  const auto limit = t.max_attempts ? t.max_attempts : q.max_attempts;
  if (limit && t.state != TaskState::paused && t.attempts_counted() >= *limit) {
    reasons.push_back("it has used its " + std::to_string(*limit)
                      + " attempts: the next lease pauses it");
  }
  return reasons;
}

std::vector<StreamEvent>
TaskStore::events(const std::optional<std::string>& queue,
                  std::optional<Time> since, EventCursor& cursor,
                  int64_t limit) {
  // Each table is read up to its horizon (storage/model/event_horizon.cpp): the
  // ids that all have committed or never will, so that a cursor never
  // moves past an id a transaction still in flight holds.
  settle_horizons(*m_db, cursor);
  Transaction tx(*m_db, Transaction::Kind::read);
  cursor.more = extend_horizons(*m_db, cursor);
  // Unset filters bind as NULL (`?2 IS NULL OR ...`); ?5 is the horizon.
  const auto bind_filters = [&](Statement& st, size_t table) {
    if (since) {
      st.bind(2, to_unix_ms(*since));
    } else {
      st.bind_null(2);
    }
    st.bind(3, queue).bind(4, limit).bind(5, cursor.horizon[table].final);
  };
  std::vector<StreamEvent> adds;
  {
    // Creations live on the task rows (a bulk add writes no event rows).
    Statement st(*m_db, "SELECT id, created_at, created_by, queue, retry_of "
                        "FROM tasks WHERE id > ?1 AND id <= ?5 "
                        "AND (CAST(?2 AS BIGINT) IS NULL OR created_at >= ?2) "
                        "AND (?3 IS NULL OR queue = ?3) ORDER BY id LIMIT ?4");
    st.bind(1, cursor.task_id);
    bind_filters(st, 1);
    while (st.step()) {
      adds.push_back(
          {creation_event(st.get_int(0), core::from_unix_ms(st.get_int(1)),
                          st.get_opt_text(2).value_or(""), st.get_opt_int(4)),
           st.get_text(3)});
    }
  }
  std::vector<StreamEvent> logged;
  {
    Statement st(*m_db, "SELECT e.id, e.task_id, e.time, e.message, "
                        "e.from_state, e.to_state, e.actor, e.detail, t.queue "
                        "FROM events e JOIN tasks t ON t.id = e.task_id "
                        "WHERE e.id > ?1 AND e.id <= ?5 "
                        "AND (CAST(?2 AS BIGINT) IS NULL OR e.time >= ?2) "
                        "AND (?3 IS NULL OR t.queue = ?3) "
                        "ORDER BY e.id LIMIT ?4");
    st.bind(1, cursor.event_id);
    bind_filters(st, 0);
    while (st.step()) {
      logged.push_back({read_event(st), st.get_text(8)});
    }
  }
  std::vector<StreamEvent> flows;
  if (!queue) { // flows span queues: a queue's stream has none
    Statement st(*m_db, "SELECT e.id, e.flow_id, e.time, e.name, e.state "
                        "FROM flow_events e WHERE e.id > ?1 AND e.id <= ?5 "
                        "AND e.kind = 'flow' AND (CAST(?2 AS BIGINT) IS NULL "
                        "OR e.time >= ?2) AND (?3 IS NULL) ORDER BY e.id "
                        "LIMIT ?4");
    st.bind(1, cursor.flow_event_id);
    bind_filters(st, 2);
    while (st.step()) {
      StreamEvent e;
      e.event.id = st.get_int(0);
      e.flow = st.get_int(1);
      e.event.time = core::from_unix_ms(st.get_int(2));
      e.event.message = "flow";
      e.event.to = st.get_text(4);
      e.event.actor = std::string(k_system_actor);
      e.event.detail = st.get_text(3);
      flows.push_back(std::move(e));
    }
  }
  // Merged by time; at equal times a creation first, then a task's event,
  // then a flow's. Each source keeps its own order, so each part of the
  // cursor moves past a prefix.
  std::vector<StreamEvent> out;
  size_t a = 0;
  size_t b = 0;
  size_t c = 0;
  while (static_cast<int64_t>(out.size()) < limit
         && (a < adds.size() || b < logged.size() || c < flows.size())) {
    int pick = -1;
    Time best{};
    const auto consider = [&](int which, const std::vector<StreamEvent>& list,
                              size_t at) {
      if (at < list.size() && (pick < 0 || list[at].event.time < best)) {
        pick = which;
        best = list[at].event.time;
      }
    };
    consider(0, adds, a);
    consider(1, logged, b);
    consider(2, flows, c);
    StreamEvent& next = pick == 0   ? adds[a++]
                        : pick == 1 ? logged[b++]
                                    : flows[c++];
    if (pick == 0) {
      cursor.task_id = next.event.task_id;
    } else if (pick == 1) {
      cursor.event_id = next.event.id;
    } else {
      cursor.flow_event_id = next.event.id;
    }
    out.push_back(std::move(next));
  }
  // A source read to its horizon and printed whole moves its cursor to
  // the horizon (past rows the filters left out, so none is read again);
  // otherwise the next read goes on from its last printed row.
  const auto done = [&](int64_t& at, const std::vector<StreamEvent>& rows,
                        size_t taken, size_t table) {
    if (static_cast<int64_t>(rows.size()) < limit && taken == rows.size()) {
      at = std::max(at, cursor.horizon[table].final);
    } else {
      cursor.more = true;
    }
  };
  done(cursor.task_id, adds, a, 1);
  done(cursor.event_id, logged, b, 0);
  done(cursor.flow_event_id, flows, c, 2);
  return out;
}

EventCursor TaskStore::events_end() {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, "SELECT (SELECT coalesce(max(id), 0) FROM events), "
                      "(SELECT coalesce(max(id), 0) FROM tasks), "
                      "(SELECT coalesce(max(id), 0) FROM flow_events)");
  st.step();
  // An id below these that is still in flight is not waited for: the
  // stream starts after the largest id committed.
  EventCursor end;
  end.event_id = st.get_int(0);
  end.task_id = st.get_int(1);
  end.flow_event_id = st.get_int(2);
  end.horizon = {{{end.event_id, 0}, {end.task_id, 0}, {end.flow_event_id, 0}}};
  return end;
}

} // namespace taskq::storage
