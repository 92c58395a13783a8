// TaskStore: what an operator does to selected tasks: messages (pause,
// run, sleep, kill, ...) and purge. Its reads of tasks are in
// read_store.cpp; what it does to a queue as a whole, in queue_store.cpp.
#include "core/error.hpp"
#include "core/suggestion.hpp"
#include "storage/features/queue_store.hpp"
#include "storage/features/select.hpp"
#include "storage/features/web_store.hpp"
#include "storage/model/locks.hpp"
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

// ---------------------------------------------------------------------------
// Operator messages
// ---------------------------------------------------------------------------

namespace {

void check_send(const Selector& sel, Message msg,
                const std::optional<Time>& until) {
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
  check_page_only(sel);
  check_expect_rev(sel);
}

// The bulk send of `msg` to the tasks `sel`'s filters select (no ids, no
// limit): keyset batches by id, each changed with one UPDATE and logged
// with one INSERT ... SELECT, followers settled only for finished tasks
// that have any (labels, a trigger, a flow, dependents). Returns how many
// changed; their ids go to `ids` when given.
int64_t bulk_send(Db& db, const Selector& sel, Message msg,
                  const std::optional<Time>& until, const std::string& actor,
                  Time now, std::vector<int64_t>* ids) {
  check_states(sel.states);
  std::vector<TaskState> from; // the stored states that accept msg
  for (const TaskState s :
       {TaskState::runnable, TaskState::sleeping, TaskState::paused}) {
    if (core::transition(s, msg)) {
      from.push_back(s);
    }
  }
  std::string in_from;
  for (const TaskState s : from) {
    in_from +=
        (in_from.empty() ? "'" : ", '") + std::string(core::to_string(s)) + "'";
  }
  // The selector's states, as one condition.
  std::string chosen;
  for (const std::string& state : sel.states) {
    std::string term;
    if (state == "running") {
      term = "state = 'runnable' AND lease_token IS NOT NULL AND "
             "lease_expires > ?2";
    } else if (state == "ready") {
      term = "state IN ('runnable', 'sleeping') AND blockers = 0 AND "
             "broadcast_until IS NULL AND run_at <= ?2 AND "
             "(lease_token IS NULL OR lease_expires <= ?2)";
    } else {
      term = "state = '" + state + "'";
    }
    chosen += (chosen.empty() ? "(" : ") OR (") + term;
  }
  const bool terminal = core::is_terminal(*core::transition(from.at(0), msg));
  Statement pick(
      db,
      "SELECT id, labels, queue, lease_token IS NOT NULL AND "
      "lease_expires <= ?2, "
          + std::string(terminal ? "labels IS NOT NULL OR trigger_key IS NOT "
                                   "NULL OR flow IS NOT NULL OR EXISTS (SELECT "
                                   "1 FROM task_deps d WHERE d.dep_id = "
                                   "tasks.id)"
                                 : "0")
          + " FROM tasks WHERE id > ?3"
          + (sel.queue ? " AND queue = ?1" : " AND ?1 IS NULL")
          + " AND state IN (" + in_from + ")"
          + (chosen.empty() ? " AND ?2 IS NOT NULL" : " AND (" + chosen + "))")
          + " ORDER BY id LIMIT ?4" + std::string(row_lock(db, " FOR UPDATE")));
  const std::string name(core::to_string(msg));
  std::string detail;
  if (msg == Message::pause || msg == Message::kill) {
    detail = (msg == Message::pause ? "paused by " : "killed by ") + actor;
  } else if (msg == Message::sleep) {
    detail = "until " + core::format_time(*until);
  }
  // What the message sets beside the state: ?1 the ids, ?2 now, then its
  // values.
  std::string set;
  int param = 2;
  const bool revokes = msg == Message::pause || msg == Message::sleep
                       || msg == Message::kill || msg == Message::release;
  if (revokes) {
    const std::string live = "lease_token IS NOT NULL AND lease_expires > ?2";
    set += ", revoked_token = CASE WHEN " + live
           + " THEN lease_token ELSE revoked_token END, revoked_reason = CASE "
             "WHEN "
           + live + " THEN ?" + std::to_string(++param)
           + " ELSE revoked_reason END, lease_token = NULL, lease_worker = "
             "NULL, lease_expires = NULL";
  }
  if (msg == Message::pause || msg == Message::kill) {
    set += ", reason = ?" + std::to_string(++param);
  } else if (msg == Message::sleep) {
    set += ", run_at = ?" + std::to_string(++param);
  } else if (msg == Message::run) {
    // Resuming a paused task starts its attempt limit's count afresh
    // (rescue's Cycles) while its runs keep their numbers, and a sleeper
    // is due at once.
    set += ", reason = NULL, attempts_base = CASE WHEN state = 'paused' THEN "
           "attempts ELSE attempts_base END, run_at = CASE WHEN state = "
           "'sleeping' THEN min(run_at, ?2) ELSE run_at END";
  } else if (msg == Message::checkpoint) {
    set += ", checkpoint_req = 1";
  }
  BulkMove move(db, from, msg, set);
  const auto bind_set = [&](Statement& update) {
    int p = 2;
    if (revokes) {
      update.bind(++p, name + " by " + actor);
    }
    if (msg == Message::pause || msg == Message::kill) {
      update.bind(++p, detail);
    } else if (msg == Message::sleep) {
      update.bind(++p, to_unix_ms(*until));
    }
  };
  const int64_t now_ms = to_unix_ms(now);
  int64_t changed = 0;
  int64_t last = 0;
  std::vector<int64_t> settle;
  std::map<std::string, int64_t> lapsed; // leases that ran out, by queue
  for (bool more = true; more;) {
    pick.bind(1, sel.queue).bind(2, now_ms).bind(3, last).bind(4, k_bulk_batch);
    std::string batch;
    int64_t rows = 0;
    settle.clear();
    lapsed.clear();
    while (pick.step()) {
      ++rows;
      last = pick.get_int(0);
      if (!sel.match.empty()
          && !core::matches(labels_from_json(pick.get_opt_text(1)),
                            sel.match)) {
        continue;
      }
      batch += (batch.empty() ? "[" : ",") + std::to_string(last);
      if (ids != nullptr) {
        ids->push_back(last);
      }
      if (revokes && pick.get_int(3) != 0) {
        ++lapsed[pick.get_text(2)];
      }
      if (pick.get_int(4) != 0) {
        settle.push_back(last);
      }
      ++changed;
    }
    pick.reset();
    more = rows == k_bulk_batch;
    if (batch.empty()) {
      continue;
    }
    batch += "]";
    for (const auto& [queue, n] : lapsed) {
      // Leases that ran out, cleared before any lease reclaimed them.
      bump_queue_counter(db, queue, QueueCounter::leases_expired, n);
    }
    move.run(batch, now, actor, detail, bind_set, settle);
  }
  return changed;
}

// The tasks `sel` chooses, each read again once their rows are locked
// (lock_tasks), in the order chosen: a task that a concurrent writer
// finished or leased meanwhile is seen as it is now. One that was deleted
// meanwhile is left out of a filter's choice (as it is of the next read)
// and not found when named.
std::vector<Task> chosen_locked(Db& db, const Selector& sel, Time now) {
  std::vector<Task> tasks = select_tasks(db, sel, now);
  if (!takes_row_locks(db) || tasks.empty()) {
    return tasks;
  }
  std::vector<int64_t> ids;
  for (const Task& t : tasks) {
    ids.push_back(t.id);
  }
  lock_tasks(db, ids);
  std::vector<Task> out;
  for (const int64_t id : ids) {
    if (sel.has_filters() && !load_task(db, id)) {
      continue;
    }
    out.push_back(load_full(db, id));
  }
  return out;
}

} // namespace

int64_t TaskStore::send_bulk(const Selector& sel, Message msg,
                             std::optional<Time> until,
                             const std::string& actor, Time now,
                             std::vector<int64_t>* ids) {
  check_send(sel, msg, until);
  if (!sel.ids.empty() || sel.limit || sel.newest) {
    // Ids (all or nothing, each checked), or a cut of the selection.
    const auto changed = send(sel, msg, until, actor, now);
    if (ids != nullptr) {
      for (const Task& t : changed) {
        ids->push_back(t.id);
      }
    }
    return static_cast<int64_t>(changed.size());
  }
  const size_t given = ids != nullptr ? ids->size() : 0;
  return retrying([&]() -> int64_t {
    if (ids != nullptr) {
      ids->resize(given); // a try again reports its own
    }
    Transaction tx(*m_db);
    now = locked_now(now);
    const int64_t n = bulk_send(*m_db, sel, msg, until, actor, now, ids);
    check_count(sel.expect_count, n);
    tx.commit();
    return n;
  });
}

std::vector<Task> TaskStore::send(const Selector& sel, Message msg,
                                  std::optional<Time> until,
                                  const std::string& actor, Time now) {
  check_send(sel, msg, until);
  return retrying([&]() -> std::vector<Task> {
    Transaction tx(*m_db);
    now = locked_now(now);
    std::vector<Task> changed;
    if (sel.ids.empty() && !sel.limit && !sel.newest) {
      std::vector<int64_t> ids;
      bulk_send(*m_db, sel, msg, until, actor, now, &ids);
      changed.reserve(ids.size());
      for (const int64_t id : ids) {
        changed.push_back(load_full(*m_db, id));
      }
      tx.commit();
      return changed;
    }
    for (const Task& task : chosen_locked(*m_db, sel, now)) {
      check_rev(sel.expect_rev, task);
      const auto next = core::transition(task.state, msg);
      if (!next) {
        if (sel.has_filters()) {
          continue;
        }
        throw Error(ErrorKind::conflict, refusal(task, msg));
      }
      const std::string name(core::to_string(msg));
      StateChange change(task.id, task.state, msg, actor);
      const bool revokes = msg == Message::pause || msg == Message::sleep
                           || msg == Message::kill || msg == Message::release;
      if (revokes && task.lease) {
        if (!task.leased(now)) {
          // A lease that ran out, cleared before any lease reclaimed it.
          bump_queue_counter(*m_db, task.queue, QueueCounter::leases_expired);
        }
        change.also.end_lease(task, task.leased(now)
                                        ? std::optional(name + " by " + actor)
                                        : std::nullopt);
      }
      switch (msg) {
      case Message::pause:
      case Message::kill:
        change.detail =
            (msg == Message::pause ? "paused by " : "killed by ") + actor;
        change.also.set("reason", change.detail);
        break;
      case Message::sleep:
        change.detail = "until " + core::format_time(*until);
        change.also.set("run_at", to_unix_ms(*until));
        break;
      case Message::run:
        // Resuming a paused task starts its attempt limit's count afresh
        // (rescue's Cycles) while its runs keep their numbers, and a
        // sleeper is due at once.
        change.also.set_null("reason");
        if (task.state == TaskState::paused) {
          change.also.add(std::string(k_restart_attempt_count));
        }
        if (task.state == TaskState::sleeping) {
          change.also.add("run_at = min(run_at, ?3)");
        }
        break;
      case Message::checkpoint:
        change.also.add("checkpoint_req = 1");
        break;
      default:
        break;
      }
      move_task(*m_db, change, now);
      changed.push_back(load_full(*m_db, task.id));
    }
    tx.commit();
    return changed;
  });
}

// ---------------------------------------------------------------------------
// Freeze and continue
// ---------------------------------------------------------------------------

std::vector<Task> TaskStore::freeze(const std::vector<int64_t>& ids,
                                    bool frozen, const std::string& actor,
                                    Time now,
                                    std::optional<int64_t> expect_rev) {
  if (ids.empty()) {
    throw Error(ErrorKind::usage, "which tasks? give their ids");
  }
  Selector named;
  named.ids = ids;
  named.expect_rev = expect_rev;
  check_expect_rev(named);
  return retrying([&]() -> std::vector<Task> {
    Transaction tx(*m_db);
    now = locked_now(now);
    std::vector<int64_t> seen;
    std::vector<Task> out;
    for (const int64_t id : ids) {
      if (std::find(seen.begin(), seen.end(), id) != seen.end()) {
        continue;
      }
      seen.push_back(id);
      lock_task(*m_db, id);
      const Task t = load_full(*m_db, id);
      check_rev(expect_rev, t);
      const std::string verb = frozen ? "frozen" : "continued";
      if (t.state != TaskState::runnable || !t.leased(now)) {
        throw Error(ErrorKind::conflict,
                    task_ref(id) + " is not running (it is "
                        + std::string(core::to_string(t.state))
                        + "): only a running command can be " + verb);
      }
      if (t.broadcast_until) {
        throw Error(ErrorKind::conflict,
                    task_ref(id)
                        + " is a broadcast, run by every worker: it cannot be "
                        + verb);
      }
      const bool was = frozen_now(*m_db, id);
      if (frozen && was) {
        throw Error(ErrorKind::conflict,
                    task_ref(id) + " is already frozen ("
                        + core::suggest({"continue", std::to_string(id)})
                        + " continues it)");
      }
      if (!frozen && !was) {
        throw Error(ErrorKind::conflict, task_ref(id) + " is not frozen");
      }
      Statement st(*m_db, "UPDATE tasks SET rev = rev + 1, updated_at = ?2 "
                          "WHERE id = ?1");
      st.bind(1, id).bind(2, to_unix_ms(now));
      st.run();
      log_event(*m_db, id, now, frozen ? "freeze" : "continue", t.state,
                t.state, actor,
                frozen ? "frozen by " + actor + " (SIGSTOP); " + t.lease->worker
                             + " keeps the lease"
                       : "continued by " + actor + " (SIGCONT)");
      Task after = load_full(*m_db, id);
      after.frozen = frozen;
      out.push_back(std::move(after));
    }
    tx.commit();
    return out;
  });
}

// ---------------------------------------------------------------------------
// Purge
// ---------------------------------------------------------------------------

// The unfinished tasks of purge_ids, deleted by purge --force, end as if
// killed, so what waits for them does not wait forever. Only those with
// something to settle (dependents, labels, a trigger, a flow) are killed
// one by one, in keyset batches; the others just go. A lease that ran out
// and was never reclaimed is counted before it goes, so the expiry counter
// does not go back.
void TaskStore::purge_unfinished(Time now) {
  std::vector<std::pair<std::string, int64_t>> lapsed;
  {
    Statement st(*m_db, "SELECT t.queue, count(*) FROM purge_ids p "
                        "JOIN tasks t ON t.id = p.id WHERE p.state NOT IN "
                            + terminal_states_sql()
                            + " AND t.lease_token IS NOT NULL "
                              "AND t.lease_expires <= ?1 GROUP BY t.queue");
    st.bind(1, to_unix_ms(now));
    while (st.step()) {
      lapsed.emplace_back(st.get_text(0), st.get_int(1));
    }
  }
  for (const auto& [queue, n] : lapsed) {
    bump_queue_counter(*m_db, queue, QueueCounter::leases_expired, n);
  }
  Statement pick(*m_db,
                 "SELECT p.id, t.state FROM purge_ids p JOIN tasks t "
                 "ON t.id = p.id WHERE p.id > ?1 AND p.state NOT IN "
                     + terminal_states_sql()
                     + " AND (t.labels IS NOT NULL OR t.trigger_key IS NOT "
                       "NULL OR t.flow IS NOT NULL OR EXISTS (SELECT 1 FROM "
                       "task_deps d WHERE d.dep_id = t.id)) "
                       "ORDER BY p.id LIMIT ?2");
  std::vector<std::pair<int64_t, TaskState>> batch;
  int64_t last = 0;
  do {
    batch.clear();
    pick.bind(1, last).bind(2, k_bulk_batch);
    while (pick.step()) {
      batch.emplace_back(
          pick.get_int(0),
          core::parse_state(pick.get_text(1)).value_or(TaskState::runnable));
    }
    pick.reset();
    for (const auto& [id, state] : batch) {
      move_task(*m_db, {id, state, core::SystemMove::deleted, k_system_actor},
                now);
      last = id;
    }
  } while (static_cast<int64_t>(batch.size()) == k_bulk_batch);
}

int64_t TaskStore::purge(const PurgeRequest& req, Time now) {
  std::vector<TaskState> states = req.states;
  if (states.empty()) {
    states = {TaskState::completed, TaskState::failed, TaskState::killed};
    if (req.force) {
      states.insert(states.end(), {TaskState::runnable, TaskState::sleeping,
                                   TaskState::paused, TaskState::fault});
    }
  }
  for (const TaskState s : states) {
    if (!core::is_terminal(s) && !req.force) {
      throw Error(ErrorKind::usage,
                  "purge deletes finished tasks only; "
                      + std::string(core::to_string(s))
                      + " tasks are unfinished (--force deletes them too)");
    }
  }
  std::string in_states;
  for (const TaskState s : states) {
    in_states += in_states.empty() ? "'" : ", '";
    in_states += core::to_string(s);
    in_states += "'";
  }
  return retrying([&]() -> int64_t {
    Transaction tx(*m_db);
    now = locked_now(now);
    m_db->exec("CREATE TEMP TABLE IF NOT EXISTS purge_ids "
               "(id INTEGER PRIMARY KEY, state TEXT NOT NULL)",
               "cannot purge");
    m_db->exec("DELETE FROM purge_ids", "cannot purge");
    Statement pick(*m_db,
                   "INSERT INTO purge_ids (id, state) SELECT id, state "
                   "FROM tasks WHERE state IN ("
                       + in_states
                       + ") AND (?1 IS NULL OR queue = ?1) "
                         "AND (CAST(?2 AS BIGINT) IS NULL OR updated_at <= ?2)"
                         " ORDER BY id"
                       + std::string(row_lock(*m_db, " FOR UPDATE")));
    pick.bind(1, req.queue);
    pick.bind(2, req.older_than
                     ? std::optional(to_unix_ms(now - *req.older_than))
                     : std::nullopt);
    pick.run();
    Statement count(*m_db, "SELECT count(*) FROM purge_ids");
    count.step();
    const int64_t n = count.get_int(0);
    count.reset();
    if (req.dry_run || n == 0) {
      return n; // the transaction rolls back
    }
    if (req.force) {
      purge_unfinished(now);
    }
    for (const char* sql :
         {"DELETE FROM task_errors WHERE task_id IN (SELECT id FROM purge_ids)",
          "DELETE FROM events WHERE task_id IN (SELECT id FROM purge_ids)",
          "DELETE FROM task_deps WHERE task_id IN (SELECT id FROM purge_ids) "
          "OR dep_id IN (SELECT id FROM purge_ids)",
          "DELETE FROM deliveries WHERE task_id IN (SELECT id FROM purge_ids)",
          "DELETE FROM task_output WHERE task_id IN (SELECT id FROM purge_ids)",
          "DELETE FROM tasks WHERE id IN (SELECT id FROM purge_ids)",
          "DELETE FROM purge_ids"}) {
      m_db->exec(sql, "cannot purge");
    }
    tx.commit();
    return n;
  });
}

} // namespace taskq::storage
