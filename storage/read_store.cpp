// TaskStore: an operator's reads of tasks: find, show, list, why, the
// selection of tasks by a selector that operator messages share, and the
// event stream.
#include "core/error.hpp"
#include "core/error_policy.hpp"
#include "core/suggestion.hpp"
#include "storage/db.hpp"
#include "storage/event_horizon.hpp"
#include "storage/state_writer.hpp"
#include "storage/store_detail.hpp"
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

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

namespace detail {

namespace {

// The unleased, unblocked, non-broadcast tasks in tasks_ready; the index's
// own terms, spelled as in its WHERE (SQLite uses a partial index only
// for a query that repeats them).
constexpr const char* k_in_ready_index =
    " FROM tasks INDEXED BY tasks_ready WHERE lease_token IS NULL AND state "
    "IN ('runnable', 'sleeping') AND blockers = 0 AND broadcast_until IS NULL";
constexpr const char* k_in_leased_index =
    " FROM tasks INDEXED BY tasks_leased WHERE lease_token IS NOT NULL";

} // namespace

// The SQL of one state of a selector (`state` empty: every state), in id
// order, with `?4` its limit when `limited`: one query, or for `ready`
// and `runnable` several, one per partial index holding such tasks (an OR
// would cost the planner its indexes, and a scan reads every finished
// task), whose rows the caller merges. Conditions are added only when
// given, so the planner sees plain equalities it can look up in an index.
std::vector<SelectPart> select_sqls(const Selector& sel,
                                    const std::string& state, bool limited) {
  const std::string columns = join("SELECT ", k_task_columns);
  const std::string queue = sel.queue ? " AND queue = ?1" : " AND ?1 IS NULL";
  const std::string limit = limited ? " LIMIT ?4" : "";
  const std::string desc = sel.newest ? " DESC" : "";
  std::vector<SelectPart> out;
  // A part read from a partial index is sorted by `id + 0`: the same
  // order, but one the primary key cannot give, so that PostgreSQL's
  // planner reads the partial index and sorts its rows rather than walk
  // the primary key through every finished task hoping to meet `?4`
  // unfinished ones early (2.2x at 100,000 tasks). SQLite's INDEXED BY
  // already says which index.
  const auto part = [&](const std::string& from_where, bool binds_state) {
    const bool partial = from_where.find("INDEXED BY") != std::string::npos;
    out.push_back({columns + from_where + queue
                       + (partial ? " ORDER BY id + 0" : " ORDER BY id") + desc
                       + limit,
                   binds_state});
  };
  constexpr const char* due_unblocked =
      " AND state IN ('runnable', 'sleeping') AND blockers = 0 AND "
      "broadcast_until IS NULL AND run_at <= ?2";
  if (state == "running") {
    // Running tasks are read from the index of leases, never a scan of
    // every task, with or without a queue.
    part(std::string(k_in_leased_index)
             + " AND state = 'runnable' AND lease_expires > ?2",
         false);
  } else if (state == "ready") {
    part(std::string(k_in_ready_index) + " AND run_at <= ?2", false);
    part(std::string(k_in_leased_index) + " AND lease_expires <= ?2"
             + due_unblocked,
         false);
  } else if (state == "runnable") {
    // Unleased ones are in tasks_ready, tasks_broadcast or tasks_waiting
    // by kind; leased ones in tasks_leased (a task in two is merged).
    constexpr const char* runnable =
        " AND state = 'runnable' AND ?2 IS NOT NULL";
    part(std::string(k_in_ready_index) + runnable, false);
    part(std::string(k_in_leased_index) + runnable, false);
    part(std::string(" FROM tasks INDEXED BY tasks_broadcast WHERE "
                     "broadcast_until IS NOT NULL")
             + runnable,
         false);
    part(std::string(" FROM tasks INDEXED BY tasks_waiting WHERE blockers > 0")
             + runnable,
         false);
  } else if (state == "erred") {
    // Tasks whose latest error is no older than their latest lease: their
    // last attempt failed, whatever their state (a sleeping one the error
    // policy will retry, a failed one, one killed since); not one that
    // completed or is running again. Read from the tasks with errors.
    part(" FROM tasks WHERE id IN (SELECT task_id FROM task_errors) AND "
         "state <> 'completed' AND (lease_token IS NULL OR lease_expires <= "
         "?2) AND NOT EXISTS (SELECT 1 FROM events v WHERE v.task_id = "
         "tasks.id AND v.message = 'lease' AND v.time > (SELECT MAX(e.time) "
         "FROM task_errors e WHERE e.task_id = tasks.id))",
         false);
  } else if (!state.empty()) {
    // The literal term lets the planner use the partial tasks_settled.
    part(" FROM tasks WHERE state = ?3 AND state <> 'runnable' AND ?2 IS NOT "
         "NULL",
         true);
  } else {
    part(" FROM tasks WHERE ?2 IS NOT NULL", false);
  }
  return out;
}

// One walk back through the task's lease, freeze and continue events in
// events_task per leased task.
void load_lease_starts(Db& db, std::vector<Task>& tasks) {
  std::optional<Statement> st;
  for (Task& t : tasks) {
    if (!t.lease) {
      continue;
    }
    if (!st) {
      st.emplace(db, "SELECT message, time FROM events WHERE task_id = ?1 "
                     "AND message IN ('lease', 'freeze', 'continue') ORDER "
                     "BY id DESC");
    }
    st->bind(1, t.id);
    // The continue after the freeze read next, if any (0: none).
    int64_t continued = 0;
    for (bool latest = true; st->step(); latest = false) {
      const std::string message = st->get_text(0);
      const int64_t time = st->get_int(1);
      if (message == "lease") {
        t.lease_started = core::from_unix_ms(time);
        break;
      }
      if (message == "continue") {
        continued = time;
      } else if (latest) {
        t.frozen = true; // as k_frozen_sql says
        t.frozen_since = core::from_unix_ms(time);
      } else if (continued != 0) {
        t.frozen_for += core::Millis(continued - time);
        continued = 0;
      }
    }
    st->reset();
  }
}

void check_states(const std::vector<std::string>& states, bool erred_ok) {
  for (const auto& state : states) {
    if (state == "erred" && !erred_ok) {
      throw Error(ErrorKind::usage,
                  "--state erred is for list only: name the tasks' states "
                  "(" + core::suggest({"list", "--state", "erred"})
                      + " shows which they are)");
    }
    if (!core::parse_state(state) && state != "running" && state != "ready"
        && state != "erred") {
      throw Error(ErrorKind::usage,
                  "unknown state '" + state
                      + "': expected runnable, sleeping, paused, completed, "
                        "failed, killed, running, ready"
                      + (erred_ok ? ", erred" : ""));
    }
  }
}

std::vector<Task> select_tasks(Db& db, const Selector& sel, Time now,
                               bool erred_ok) {
  check_page_only(sel); // a page's fields: TaskStore::task_page
  std::vector<Task> out;
  if (!sel.ids.empty()) {
    std::vector<int64_t> seen;
    for (int64_t id : sel.ids) {
      if (std::find(seen.begin(), seen.end(), id) == seen.end()) {
        seen.push_back(id);
        out.push_back(load_full(db, id));
      }
    }
    return out;
  }
  check_states(sel.states, erred_ok);
  // One query per state, each in id order through its own index and cut at
  // the limit, then merged: an OR of states would cost the planner its
  // indexes.
  std::vector<std::string> states = sel.states;
  std::sort(states.begin(), states.end());
  states.erase(std::unique(states.begin(), states.end()), states.end());
  if (states.empty()) {
    states.emplace_back();
  }
  const bool limit_in_sql = sel.match.empty() && sel.limit;
  size_t parts = 0;
  for (const auto& state : states) {
    for (const SelectPart& part : select_sqls(sel, state, limit_in_sql)) {
      ++parts;
      Statement st(db, part.sql);
      st.bind(1, sel.queue).bind(2, to_unix_ms(now));
      if (part.binds_state) {
        st.bind(3, state);
      }
      if (limit_in_sql) {
        st.bind(4, *sel.limit);
      }
      int64_t taken = 0;
      while (st.step()) {
        Task t = read_task(st);
        if (!core::matches(t.labels, sel.match)) {
          continue;
        }
        out.push_back(std::move(t));
        if (sel.limit && ++taken >= *sel.limit) {
          break;
        }
      }
    }
  }
  if (parts > 1) {
    std::sort(out.begin(), out.end(), [&sel](const Task& a, const Task& b) {
      return sel.newest ? a.id > b.id : a.id < b.id;
    });
    // `running` and `runnable` (or `ready` and a state, or two indexes
    // of one state) can both hold a task.
    out.erase(
        std::unique(out.begin(), out.end(),
                    [](const Task& a, const Task& b) { return a.id == b.id; }),
        out.end());
    if (sel.limit && static_cast<int64_t>(out.size()) > *sel.limit) {
      out.resize(static_cast<size_t>(*sel.limit));
    }
  }
  for (Task& t : out) {
    t.errors = load_errors(db, t.id);
  }
  load_lease_starts(db, out);
  return out;
}

} // namespace detail

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
  // Each table is read up to its horizon (storage/event_horizon.cpp): the
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
