// TaskStore: leasing. Reclaiming expired leases, delivering broadcasts,
// picking tasks in lease order (on PostgreSQL a worker's plain lease of
// one task in one statement, lease_plain), and when a worker should look
// again (next_due, anything_due).
#include "storage/features/lease_store.hpp"

#include "storage/features/add_store.hpp"
#include "storage/features/candidates.hpp"
#include "storage/features/schedule_store.hpp"
#include "storage/model/lease_expiry.hpp"
#include "storage/model/locks.hpp"
#include "storage/model/rows.hpp"
#include "storage/model/state_writer.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;

// ---------------------------------------------------------------------------
// Leasing
// ---------------------------------------------------------------------------

namespace detail {

// Task `id`'s state, its row locked (lock_task); std::nullopt: it is gone.
std::optional<TaskState> locked_state(Db& db, int64_t id) {
  Statement st(db, join("SELECT state FROM tasks WHERE id = ?1",
                        row_lock(db, " FOR UPDATE")));
  st.bind(1, id);
  if (!st.step()) {
    return std::nullopt;
  }
  return core::parse_state(st.get_text(0));
}

// Hands `worker` the broadcasts of `queue` it has not had yet, up to
// `room` of them, each with a token of its own; ends those past their ttl.
void deliver_broadcasts(Db& db, const std::string& queue,
                        const LeaseRequest& req, size_t room, Time now,
                        std::vector<Task>& out) {
  std::vector<Task> live;
  {
    Statement st(db, join(join("SELECT ", k_task_columns),
                          " FROM tasks INDEXED BY tasks_broadcast "
                          "WHERE queue = ?1 AND broadcast_until IS NOT NULL "
                          "AND state = 'runnable' ORDER BY id"));
    st.bind(1, queue);
    while (st.step()) {
      live.push_back(read_task(st));
    }
  }
  Statement deliver(db, "INSERT INTO deliveries (task_id, worker, token, "
                        "time) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING");
  for (Task& t : live) {
    if (*t.broadcast_until <= now) {
      // Another leaser may have ended it since it was read (PostgreSQL):
      // it is ended by whoever holds its row first.
      if (locked_state(db, t.id) != TaskState::runnable) {
        continue;
      }
      StateChange end{t.id, TaskState::runnable,
                      core::SystemMove::broadcast_ended, k_system_actor,
                      "broadcast ended at "
                          + core::format_time(*t.broadcast_until)};
      end.also.set("reason", std::string("broadcast ended"));
      move_task(db, end, now);
      // Every other worker's delivery of it ends: they are told at once
      // (a worker's lease is otherwise a quiet commit, Db::wake_later).
      db.wake_soon();
      continue;
    }
    if (room == 0 || !core::matches(t.labels, req.match)) {
      continue;
    }
    const std::string token = random_token();
    deliver.bind(1, t.id)
        .bind(2, req.worker)
        .bind(3, token)
        .bind(4, to_unix_ms(now));
    deliver.run();
    deliver.reset();
    if (deliver.changes() == 0) {
      continue; // this worker has had it
    }
    log_event(db, t.id, now, "lease", TaskState::runnable, TaskState::runnable,
              req.worker, "broadcast delivery");
    Task copy = load_full(db, t.id);
    copy.lease = core::Lease{token, req.worker, now + req.lease_for};
    copy.lease_started = now;
    out.push_back(std::move(copy));
    --room;
  }
}

bool lease_order_before(const Task& a, const Task& b) {
  if (a.priority != b.priority) {
    return a.priority > b.priority;
  }
  if (a.run_at != b.run_at) {
    return a.run_at < b.run_at;
  }
  return a.id < b.id;
}

} // namespace detail

std::vector<Task> TaskStore::lease(const LeaseRequest& req, Time now) {
  return retrying([&]() -> std::vector<Task> {
    Transaction tx(*m_db);
    now = locked_now(now);
    std::vector<Task> leased = lease_in_tx(*m_db, req, now);
    tx.commit();
    return leased;
  });
}

namespace detail {

// A lease event's detail after its attempt's number ("attempt N"): both
// paths of a lease write it.
std::string lease_until(Time expires) {
  return ", until " + core::format_time(expires);
}

// A worker's turn on PostgreSQL leases one task of one queue, with no
// labels to match: then the queue's probe, its first due
// task at the highest priority, that task's lease and the lease's event go
// in one statement, the events rows kept riding it (Db::k_kept_events_here),
// where lease_in_tx's own path takes two (the probe with the page, then
// the UPDATE). It leases only a task that path would lease as it stands:
// runnable (a sleeping one wakes up first, a change of state), with no
// root to make it obsolete, for any worker or this one, not skipped, below
// its attempts limit; and only when the probe is plain(). A paused queue
// leases nothing (an empty list, as that path). Else it leases nothing and
// returns std::nullopt, `candidates` primed with the probe for that path
// (its row, if it read one, stays locked for it).
bool fits_plain_lease(const Db& db, const LeaseRequest& req,
                      const std::vector<std::string>& queues) {
  return takes_row_locks(db) && req.count == 1 && queues.size() == 1
         && req.match.empty();
}

std::optional<std::vector<Task>> lease_plain(Db& db, Candidates& candidates,
                                             const LeaseRequest& req,
                                             const std::string& queue,
                                             Time now) {
  // PostgreSQL's alone (fits_plain_lease), so made once.
  static const std::string sql =
      "WITH p AS MATERIALIZED (" + probe_sql("?3")
      + "), c AS MATERIALIZED (SELECT t.* FROM p, LATERAL ("
      + due_sql(db, k_top_priority,
                " AND p.paused = 0 AND p.max_running IS NULL "
                "AND p.expired = 0 AND p.schedules_due = 0 "
                "AND p.broadcasts = 0")
      + ") AS t), u AS (UPDATE tasks SET lease_token = ?7, "
        "lease_worker = ?8, lease_expires = ?9, lease_for_ms = ?10, "
        "attempts = tasks.attempts + 1, rev = tasks.rev + 1, "
        "updated_at = ?3 FROM c, p WHERE tasks.id = c.id "
        "AND c.state = 'runnable' AND c.root IS NULL "
        "AND (c.to_worker IS NULL OR c.to_worker = ?8) "
        "AND c.id NOT IN (SELECT CAST(value AS BIGINT) FROM "
      + db.dialect().json_array_rows("?12")
      + ") AND (coalesce(c.max_attempts, p.max_attempts) IS NULL "
        "OR CASE WHEN c.attempts > c.attempts_base "
        "THEN c.attempts - c.attempts_base ELSE 0 END "
        "< coalesce(c.max_attempts, p.max_attempts)) RETURNING tasks.id), "
        "e AS (INSERT INTO events (task_id, time, message, from_state, "
        "to_state, actor, detail) "
      + std::string(Db::k_kept_events_here)
      + " SELECT u.id, ?3, 'lease', 'runnable', 'runnable', ?8, "
        "'attempt ' || (c.attempts + 1) || ?11 FROM u, c) "
        "SELECT c.*, u.id, p.* FROM p LEFT JOIN c ON true "
        "LEFT JOIN u ON true";
  constexpr int k_leased = k_task_column_count + 1; // u.id
  const Time expires = now + req.lease_for;
  const std::string token = random_token();
  Statement st(db, sql);
  st.bind(1, queue)
      .bind(2, std::numeric_limits<int64_t>::max())
      .bind(3, to_unix_ms(now))
      .bind(4, std::numeric_limits<int64_t>::min())
      .bind(5, 0)
      .bind(6, 1)
      .bind(7, token)
      .bind(8, req.worker)
      .bind(9, to_unix_ms(expires))
      .bind(10, req.lease_for.count())
      .bind(11, lease_until(expires))
      .bind(12, nlohmann::json(req.skip).dump());
  if (!st.step()) {
    return std::nullopt; // the probe's row always comes
  }
  const QueueProbe probe = read_probe(st, k_leased + 1);
  const bool found = !st.is_null(0);
  std::optional<Task> t;
  bool errors = false;
  if (!st.is_null(k_leased)) {
    t = read_task(st);
    errors = st.get_int(k_task_column_count) != 0;
  }
  st.reset();
  if (probe.settings.paused) {
    return std::vector<Task>{};
  }
  if (!t) {
    candidates.prime(queue, probe, probe.plain() && !found);
    return std::nullopt;
  }
  db.wrote();
  // As lease_in_tx's own path leaves it: the row as read, with what the
  // UPDATE wrote.
  t->lease =
      core::Lease{token, req.worker, core::from_unix_ms(to_unix_ms(expires))};
  ++t->attempts;
  ++t->rev;
  t->updated_at = core::from_unix_ms(to_unix_ms(now));
  t->lease_started = now;
  if (errors) {
    t->errors = load_errors(db, t->id); // whole, as load_full
  }
  std::vector<Task> out;
  out.push_back(std::move(*t));
  return out;
}

std::vector<Task> lease_in_tx(Db& db, const LeaseRequest& req, Time now) {
  struct Source {
    std::string queue;
    QueueRow settings;
    int64_t capacity; // how many more it may lease (max-running)
  };
  std::vector<Source> sources;
  std::vector<std::string> queues = req.queues;
  std::sort(queues.begin(), queues.end());
  queues.erase(std::unique(queues.begin(), queues.end()), queues.end());
  std::vector<Task> leased;
  Candidates candidates(db);
  if (fits_plain_lease(db, req, queues)) {
    if (auto plain = lease_plain(db, candidates, req, queues.front(), now)) {
      return std::move(*plain);
    }
  }
  for (const auto& q : queues) {
    QueueProbe probe = candidates.probe(q, req.match, req.worker, req.skip, now,
                                        static_cast<size_t>(req.count));
    QueueRow& row = probe.settings;
    if (row.paused) {
      continue;
    }
    if (probe.expired) {
      reclaim_expired(db, q, now);
    }
    if (probe.schedules_due) {
      emit_schedules(db, &q, now);
    }
    if (probe.broadcasts) {
      const size_t room =
          static_cast<size_t>(std::max(req.count, 0)) - leased.size();
      deliver_broadcasts(db, q, req, room, now, leased);
    }
    int64_t capacity = req.count;
    if (row.max_running) {
      // The leasers of a queue with a limit take turns on its settings
      // row (PostgreSQL), so that each counts the leases the others
      // committed; a queue without one takes no such lock.
      Statement(db, join("SELECT 1 FROM queues WHERE name = ?1",
                         row_lock(db, " FOR UPDATE")))
          .bind(1, q)
          .run();
      capacity =
          std::max<int64_t>(0, *row.max_running - count_running(db, q, now));
    }
    sources.push_back({q, std::move(row), capacity});
  }

  while (static_cast<int>(leased.size()) < req.count) {
    const Task* best = nullptr;
    Source* from = nullptr;
    const size_t want = static_cast<size_t>(req.count) - leased.size();
    for (auto& s : sources) {
      if (s.capacity <= 0) {
        continue;
      }
      const Task* c =
          candidates.first(s.queue, req.match, req.worker, req.skip, now,
                           std::min(want, static_cast<size_t>(s.capacity)));
      if (c && (!best || lease_order_before(*c, *best))) {
        best = c;
        from = &s;
      }
    }
    if (!best) {
      break;
    }
    Task t = candidates.take(from->queue);
    if (const auto by = obsoleted_by(db, t.root, t.id)) {
      // rescue's root: a live task with its root labels made it obsolete.
      const std::string reason = "obsoleted by " + task_ref(*by);
      StateChange kill{t.id, t.state, core::SystemMove::obsoleted,
                       k_system_actor, reason};
      kill.also.set("reason", reason);
      move_task(db, kill, now);
      continue;
    }
    const auto limit =
        t.max_attempts ? t.max_attempts : from->settings.max_attempts;
    // What the limit counts: the attempts since its count started afresh
    // (core::Task::attempts_counted, read with the row).
    if (limit && t.attempts_counted() >= *limit) {
      // rescue's circuit breaker: park it for an operator instead.
      const std::string reason =
          "reached max attempts (" + std::to_string(*limit) + ")";
      StateChange park{t.id, t.state, core::SystemMove::max_attempts,
                       k_system_actor, reason};
      park.also.set("reason", reason);
      move_task(db, park, now);
      continue;
    }
    const Time expires = now + req.lease_for;
    std::string token = random_token();
    const auto log_lease = [&] {
      log_event(db, t.id, now, "lease", TaskState::runnable,
                TaskState::runnable, req.worker,
                "attempt " + std::to_string(t.attempts + 1)
                    + lease_until(expires));
    };
    if (t.state == TaskState::runnable) {
      // Logged first: on PostgreSQL the events rows kept (this one, and a
      // worker's done before it) ride the UPDATE, in its statement
      // (pg::WriteBehind::riding).
      log_lease();
      // The state is named only when it changes (a sleeping task wakes
      // up): naming it fires tasks_count_update, whose program costs as
      // much as the rest of the UPDATE.
      Statement(db, "UPDATE tasks SET lease_token = ?2, lease_worker = ?3, "
                    "lease_expires = ?4, lease_for_ms = ?5, "
                    "attempts = attempts + 1, rev = rev + 1, "
                    "updated_at = ?6 WHERE id = ?1")
          .bind(1, t.id)
          .bind(2, token)
          .bind(3, req.worker)
          .bind(4, to_unix_ms(expires))
          .bind(5, req.lease_for.count())
          .bind(6, to_unix_ms(now))
          .run();
    } else {
      StateChange wake{t.id, t.state, core::SystemMove::wake_up, k_system_actor,
                       "woke up"};
      wake.also.set("lease_token", token)
          .set("lease_worker", req.worker)
          .set("lease_expires", to_unix_ms(expires))
          .set("lease_for_ms", int64_t{req.lease_for.count()})
          .add("attempts = attempts + 1");
      move_task(db, wake, now);
      log_lease(); // after the wake-up's own event
    }
    // The candidate as read in this transaction, with what the UPDATE
    // wrote (no trigger changes a task's columns): not read again.
    t.state = TaskState::runnable;
    t.lease = core::Lease{std::move(token), req.worker,
                          core::from_unix_ms(to_unix_ms(expires))};
    ++t.attempts;
    ++t.rev;
    t.updated_at = core::from_unix_ms(to_unix_ms(now));
    t.lease_started = now;
    leased.push_back(std::move(t));
    --from->capacity;
  }
  return leased;
}

} // namespace detail

std::optional<Time> TaskStore::next_due(const std::vector<std::string>& queues,
                                        Time now) {
  PriorityWalk priorities(*m_db);
  Statement first_future(*m_db,
                         "SELECT min(run_at) FROM tasks INDEXED BY tasks_ready "
                         "WHERE queue = ?1 AND lease_token IS NULL "
                         "AND state IN ('runnable', 'sleeping') AND blockers = "
                         "0 AND broadcast_until IS NULL AND priority = ?2 "
                         "AND run_at > ?3");
  Statement first_expiry(
      *m_db, "SELECT min(lease_expires) FROM tasks INDEXED BY tasks_leased "
             "WHERE queue = ?1 AND lease_token IS NOT NULL "
             "AND lease_expires > ?2");
  Statement first_tick(*m_db, "SELECT min(due_at) FROM schedules "
                              "WHERE queue = ?1 AND paused = 0 "
                              "AND due_at > ?2");
  const int64_t now_ms = to_unix_ms(now);
  std::optional<int64_t> best;
  const auto consider = [&](Statement& st) {
    if (st.step() && !st.is_null(0)) {
      const int64_t t = st.get_int(0);
      best = best ? std::min(*best, t) : t;
    }
    st.reset();
  };
  Transaction tx(*m_db, Transaction::Kind::read);
  for (const auto& queue : queues) {
    priorities.start(queue);
    while (const auto priority = priorities.next()) {
      first_future.bind(1, queue).bind(2, *priority).bind(3, now_ms);
      consider(first_future);
    }
    first_expiry.bind(1, queue).bind(2, now_ms);
    consider(first_expiry);
    first_tick.bind(1, queue).bind(2, now_ms);
    consider(first_tick);
  }
  tx.commit();
  if (!best) {
    return std::nullopt;
  }
  return core::from_unix_ms(*best);
}

bool TaskStore::anything_due(const std::vector<std::string>& queues, Time now,
                             const std::string& worker) {
  PriorityWalk priorities(*m_db);
  Statement due(*m_db, "SELECT 1 FROM tasks INDEXED BY tasks_ready "
                       "WHERE queue = ?1 AND lease_token IS NULL "
                       "AND state IN ('runnable', 'sleeping') AND blockers = 0 "
                       "AND broadcast_until IS NULL "
                       "AND priority = ?2 AND run_at <= ?3 LIMIT 1");
  Statement expired(*m_db, "SELECT 1 FROM tasks INDEXED BY tasks_leased "
                           "WHERE queue = ?1 AND lease_token IS NOT NULL "
                           "AND lease_expires <= ?2 LIMIT 1");
  Statement tick(*m_db, "SELECT 1 FROM schedules WHERE queue = ?1 "
                        "AND paused = 0 AND due_at <= ?2 LIMIT 1");
  Statement broadcast(*m_db,
                      "SELECT 1 FROM tasks INDEXED BY tasks_broadcast "
                      "WHERE queue = ?1 AND broadcast_until IS NOT NULL "
                      "AND state = 'runnable' AND broadcast_until > ?2 "
                      "AND NOT EXISTS (SELECT 1 FROM deliveries "
                      "WHERE task_id = tasks.id AND worker = ?3) LIMIT 1");
  const int64_t now_ms = to_unix_ms(now);
  const auto found = [](Statement& st) {
    const bool row = st.step();
    st.reset();
    return row;
  };
  Transaction tx(*m_db, Transaction::Kind::read);
  for (const auto& queue : queues) {
    expired.bind(1, queue).bind(2, now_ms);
    tick.bind(1, queue).bind(2, now_ms);
    broadcast.bind(1, queue).bind(2, now_ms).bind(3, worker);
    if (found(expired) || found(tick) || found(broadcast)) {
      return true;
    }
    priorities.start(queue);
    while (const auto priority = priorities.next()) {
      due.bind(1, queue).bind(2, *priority).bind(3, now_ms);
      if (found(due)) {
        return true;
      }
    }
  }
  tx.commit();
  return false;
}

} // namespace taskq::storage
