// TaskStore: what an operator does to tasks and reads of them. Messages
// (pause, run, sleep, kill, ...), find, show, list, why, queue settings.
#include "core/error.hpp"
#include "storage/db.hpp"
#include "storage/store_detail.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskq::storage {

using namespace detail;

// ---------------------------------------------------------------------------
// Operator messages
// ---------------------------------------------------------------------------

std::vector<Task> TaskStore::send(const Selector& sel, Message msg,
                                  std::optional<Time> until,
                                  const std::string& actor, Time now) {
  if (!core::is_operator_message(msg)) {
    throw Error(ErrorKind::usage,
                "an operator cannot send " + std::string(core::to_string(msg)));
  }
  if (msg == Message::sleep && !until) {
    throw Error(ErrorKind::usage, "sleep needs --until TIME or --for DUR");
  }
  if (sel.ids.empty() && !sel.has_filters()) {
    throw Error(ErrorKind::usage, "which tasks? name ids or filters");
  }
  Transaction tx(*m_db);
  now = locked_now(now);
  std::vector<Task> changed;
  for (const Task& task : select_tasks(*m_db, sel, now)) {
    const auto next = core::transition(task.state, msg);
    if (!next) {
      if (sel.has_filters()) {
        continue;
      }
      throw Error(ErrorKind::conflict, refusal(task, msg));
    }
    const std::string name(core::to_string(msg));
    const bool revokes = msg == Message::pause || msg == Message::sleep
                         || msg == Message::kill || msg == Message::release;
    if (revokes && task.lease) {
      if (!task.leased(now)) {
        // A lease that ran out, cleared before any lease reclaimed it.
        bump_queue_counter(*m_db, task.queue, QueueCounter::leases_expired);
      }
      clear_lease(*m_db, task,
                  task.leased(now) ? std::optional(name + " by " + actor)
                                   : std::nullopt);
    }
    set_state(*m_db, task.id, *next, now);
    std::string detail;
    switch (msg) {
    case Message::pause:
    case Message::kill:
      detail = (msg == Message::pause ? "paused by " : "killed by ") + actor;
      set_reason(*m_db, task.id, detail);
      break;
    case Message::sleep:
      detail = "until " + core::format_time(*until);
      set_run_at(*m_db, task.id, *until);
      break;
    case Message::run:
      // Resuming starts afresh: attempts reset (rescue's Cycles), and a
      // sleeper is due at once.
      Statement(*m_db,
                "UPDATE tasks SET reason = NULL, attempts = CASE WHEN ?2 = 1 "
                "THEN 0 ELSE attempts END, run_at = CASE WHEN ?3 = 1 THEN "
                "min(run_at, ?4) ELSE run_at END WHERE id = ?1")
          .bind(1, task.id)
          .bind(2, int64_t{task.state == TaskState::paused})
          .bind(3, int64_t{task.state == TaskState::sleeping})
          .bind(4, to_unix_ms(now))
          .run();
      break;
    case Message::checkpoint:
      Statement(*m_db, "UPDATE tasks SET checkpoint_req = 1 WHERE id = ?1")
          .bind(1, task.id)
          .run();
      break;
    default:
      break;
    }
    log_event(*m_db, task.id, now, name, task.state, *next, actor, detail);
    changed.push_back(load_full(*m_db, task.id));
  }
  tx.commit();
  return changed;
}

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

namespace detail {

namespace {

// The SQL of one state of a selector (`state` empty: every state), in id
// order, with `?4` its limit when `limited`. Conditions are added only
// when given, so the planner sees plain equalities it can look up in an
// index.
std::string select_sql(const Selector& sel, const std::string& state,
                       bool limited) {
  // Running tasks are read from the index of leases, never a scan of
  // every task, with or without a queue.
  const char* from = state == "running" ? " FROM tasks INDEXED BY tasks_leased"
                                        : " FROM tasks";
  std::string sql = join(join(join("SELECT ", k_task_columns), from),
                         sel.queue ? " WHERE queue = ?1" : " WHERE ?1 IS NULL");
  if (state == "running") {
    sql += " AND state = 'runnable' AND lease_token IS NOT NULL AND "
           "lease_expires > ?2";
  } else if (state == "ready") {
    sql += " AND state IN ('runnable', 'sleeping') AND blockers = 0 AND "
           "broadcast_until IS NULL AND run_at <= ?2 AND "
           "(lease_token IS NULL OR lease_expires <= ?2)";
  } else if (state == "runnable") {
    sql += " AND state = ?3 AND ?2 IS NOT NULL";
  } else if (!state.empty()) {
    // The literal term lets the planner use the partial tasks_settled.
    sql += " AND state = ?3 AND state <> 'runnable' AND ?2 IS NOT NULL";
  } else {
    sql += " AND ?2 IS NOT NULL";
  }
  sql += sel.newest ? " ORDER BY id DESC" : " ORDER BY id";
  if (limited) {
    sql += " LIMIT ?4";
  }
  return sql;
}

// When each lease among `tasks` was taken: its latest `lease` event (one
// lookup in events_task per leased task).
void load_lease_starts(Db& db, std::vector<Task>& tasks) {
  std::optional<Statement> st;
  for (Task& t : tasks) {
    if (!t.lease) {
      continue;
    }
    if (!st) {
      st.emplace(db, "SELECT time FROM events WHERE task_id = ?1 AND "
                     "message = 'lease' ORDER BY id DESC LIMIT 1");
    }
    st->bind(1, t.id);
    if (st->step()) {
      t.lease_started = core::from_unix_ms(st->get_int(0));
    }
    st->reset();
  }
}

} // namespace

void check_states(const std::vector<std::string>& states) {
  for (const auto& state : states) {
    if (!core::parse_state(state) && state != "running" && state != "ready") {
      throw Error(ErrorKind::usage,
                  "unknown state '" + state
                      + "': expected runnable, sleeping, paused, completed, "
                        "failed, killed, running or ready");
    }
  }
}

std::vector<Task> select_tasks(Db& db, const Selector& sel, Time now) {
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
  check_states(sel.states);
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
  for (const auto& state : states) {
    Statement st(db, select_sql(sel, state, limit_in_sql));
    st.bind(1, sel.queue).bind(2, to_unix_ms(now));
    if (!state.empty() && state != "running" && state != "ready") {
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
  if (states.size() > 1) {
    std::sort(out.begin(), out.end(), [&sel](const Task& a, const Task& b) {
      return sel.newest ? a.id > b.id : a.id < b.id;
    });
    // `running` and `runnable` (or `ready` and a state) can both hold a
    // task.
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

std::vector<Task> TaskStore::list(const Selector& sel, Time now) {
  Transaction tx(*m_db, Transaction::Kind::read);
  return select_tasks(*m_db, sel, now);
}

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
                      + " (taskq resume " + std::to_string(id) + ")");
  }
  if (t.state == TaskState::sleeping && t.run_at > now) {
    reasons.push_back("it is sleeping until " + core::format_time(t.run_at));
  }
  if (t.state == TaskState::runnable && t.run_at > now) {
    reasons.push_back("it is not due until " + core::format_time(t.run_at));
  }
  if (t.leased(now)) {
    reasons.push_back("it is leased by " + t.lease->worker + " until "
                      + core::format_time(t.lease->expires_at));
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
  if (limit && t.attempts >= *limit && t.state != TaskState::paused) {
    reasons.push_back("it has used its " + std::to_string(*limit)
                      + " attempts: the next lease pauses it");
  }
  return reasons;
}

// ---------------------------------------------------------------------------
// Queue settings
// ---------------------------------------------------------------------------

void TaskStore::set_queue(const std::string& queue, const QueueSettings& s) {
  Transaction tx(*m_db);
  Statement(*m_db,
            "INSERT INTO queues (name, max_running, max_attempts, max_errors, "
            "error_window_ms, retry_delay_ms, backoff, max_delay_ms) VALUES "
            "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (name) DO UPDATE SET "
            "max_running = coalesce(?2, queues.max_running), "
            "max_attempts = coalesce(?3, queues.max_attempts), "
            "max_errors = coalesce(?4, queues.max_errors), "
            "error_window_ms = coalesce(?5, queues.error_window_ms), "
            "retry_delay_ms = coalesce(?6, queues.retry_delay_ms), "
            "backoff = coalesce(?7, queues.backoff), "
            "max_delay_ms = coalesce(?8, queues.max_delay_ms)")
      .bind(1, queue)
      .bind(2, s.max_running)
      .bind(3, s.max_attempts)
      .bind(4, opt_int64(s.policy.max_errors))
      .bind(5, opt_ms(s.policy.window))
      .bind(6, opt_ms(s.policy.retry_delay))
      .bind(7, opt_backoff(s.policy.backoff))
      .bind(8, opt_ms(s.policy.max_delay))
      .run();
  tx.commit();
}

} // namespace taskq::storage
