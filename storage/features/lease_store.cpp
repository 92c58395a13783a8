// TaskStore: leasing. Reclaiming expired leases, delivering broadcasts,
// picking tasks in lease order, and when a worker should look again
// (next_due, anything_due).
#include "storage/features/lease_store.hpp"

#include "storage/features/add_store.hpp"
#include "storage/features/schedule_store.hpp"
#include "storage/model/lease_expiry.hpp"
#include "storage/model/locks.hpp"
#include "storage/model/rows.hpp"
#include "storage/model/state_writer.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

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

// The eligibility test shared by leasing, `list --state ready` and stats;
// its first terms are the tasks_ready partial index's WHERE clause, so the
// planner can use that index.
constexpr std::string_view k_ready_where =
    "lease_token IS NULL AND state IN ('runnable', 'sleeping') AND blockers = "
    "0 AND broadcast_until IS NULL "
    "AND run_at <= ?2";

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

// The distinct priorities among a queue's unleased runnable and sleeping
// tasks, highest first, one tasks_ready seek each. next_due and
// anything_due look at each priority's run_at range separately, since a
// plain range on run_at, the index's second key, would scan every task.
class PriorityWalk {
public:
  explicit PriorityWalk(Db& db)
      : m_st(db, "SELECT priority FROM tasks INDEXED BY tasks_ready "
                 "WHERE queue = ?1 AND lease_token IS NULL "
                 "AND state IN ('runnable', 'sleeping') AND blockers = 0 AND "
                 "broadcast_until IS NULL AND priority <= ?2 "
                 "ORDER BY priority DESC LIMIT 1") {}

  // Starts over on `queue`.
  void start(const std::string& queue) {
    m_queue = &queue;
    m_below = std::numeric_limits<int64_t>::max();
    m_done = false;
  }

  // The next lower priority, or std::nullopt after the lowest.
  std::optional<int64_t> next() {
    if (m_done) {
      return std::nullopt;
    }
    m_st.bind(1, *m_queue).bind(2, m_below);
    std::optional<int64_t> priority;
    if (m_st.step()) {
      priority = m_st.get_int(0);
    }
    m_st.reset();
    if (!priority || *priority == std::numeric_limits<int64_t>::min()) {
      m_done = true;
    } else {
      m_below = *priority - 1;
    }
    return priority;
  }

private:
  Statement m_st;
  const std::string* m_queue = nullptr;
  int64_t m_below = 0;
  bool m_done = true;
};

// The first task of `queue` in lease order that `worker` may lease now:
// due, unleased, not waiting for dependencies, addressed to any worker or
// to this one, its labels matching `m`. One index seek per distinct
// priority above it, however many tasks wait for a later time.
// The due tasks of queue ?1 at `priority` (SQL: a parameter or a
// subquery) in lease order, after (?4, ?5) in (run_at, id), ?6 of them at
// most, each with whether it has errors; each locked, and a locked one
// passed over, on PostgreSQL.
// What a lease reads of a queue before its candidates, in one statement
// (one round trip on PostgreSQL): its settings, and whether it has expired
// leases to reclaim, schedules due or live broadcasts, so that the work
// for each is done only when there is some.
struct QueueProbe {
  QueueRow settings;
  bool expired = false;
  bool schedules_due = false;
  bool broadcasts = false;

  // Nothing to do but lease, as many as asked: no pause, no limit on
  // running tasks, nothing to reclaim, emit or deliver first.
  bool plain() const {
    return !settings.paused && !settings.max_running && !expired
           && !schedules_due && !broadcasts;
  }
};

// The probe's SELECT, its time in parameter `now` (its queue is ?1), its
// columns named for Candidates::probe, which reads them after a page's.
std::string probe_sql(std::string_view now) {
  const std::string n(now);
  return "SELECT coalesce(q.paused, 0) AS paused, q.max_running, "
         "q.max_attempts, q.max_errors, q.error_window_ms, q.retry_delay_ms, "
         "q.backoff, q.max_delay_ms, "
         "CASE WHEN EXISTS (SELECT 1 FROM tasks WHERE queue = ?1 "
         "AND lease_token IS NOT NULL AND lease_expires <= "
         + n
         + ") THEN 1 ELSE 0 END AS expired, "
           "CASE WHEN EXISTS (SELECT 1 FROM schedules WHERE paused = 0 "
           "AND due_at <= "
         + n
         + " AND queue = ?1) THEN 1 ELSE 0 END AS schedules_due, "
           "CASE WHEN EXISTS (SELECT 1 FROM tasks WHERE queue = ?1 "
           "AND broadcast_until IS NOT NULL AND state = 'runnable') "
           "THEN 1 ELSE 0 END AS broadcasts "
           "FROM (SELECT 1 AS one) AS d LEFT JOIN queues q ON q.name = ?1";
}

// A probe's row, its columns from `first` on.
QueueProbe read_probe(const Statement& st, int first) {
  QueueProbe out;
  out.settings = read_queue_row(st, first);
  out.expired = st.get_int(first + 8) != 0;
  out.schedules_due = st.get_int(first + 9) != 0;
  out.broadcasts = st.get_int(first + 10) != 0;
  return out;
}

QueueProbe probe_queue(Db& db, const std::string& queue, Time now) {
  Statement st(db, probe_sql("?2"));
  st.bind(1, queue).bind(2, to_unix_ms(now));
  return st.step() ? read_probe(st, 0) : QueueProbe{};
}

std::string due_sql(const Db& db, std::string_view priority,
                    std::string_view also = {}) {
  return join(
      join("SELECT ", k_task_columns),
      ", CASE WHEN EXISTS (SELECT 1 FROM task_errors e "
      "WHERE e.task_id = tasks.id) THEN 1 ELSE 0 END"
      " FROM tasks INDEXED BY tasks_ready WHERE queue = ?1 "
      "AND lease_token IS NULL AND state IN ('runnable', "
      "'sleeping') AND blockers = 0 AND broadcast_until IS "
      "NULL AND priority = "
          + std::string(priority)
          + " AND run_at <= ?3 "
            "AND (run_at > ?4 OR (run_at = ?4 AND id > ?5)) "
          + std::string(also) + " ORDER BY run_at, id LIMIT ?6"
          + std::string(row_lock(db, " FOR UPDATE OF tasks SKIP LOCKED")));
}

// The due tasks at the highest priority (PostgreSQL; see Candidates).
constexpr std::string_view k_top_priority =
    "(SELECT priority FROM tasks INDEXED BY tasks_ready WHERE queue = ?1 AND "
    "lease_token IS NULL AND state IN ('runnable', 'sleeping') AND blockers = "
    "0 AND broadcast_until IS NULL AND priority <= ?2 ORDER BY priority DESC "
    "LIMIT 1)";

class Candidates {
public:
  explicit Candidates(Db& db)
      : m_db(db), m_walk(db), m_due(db, due_sql(db, "?2")),
        m_locks(takes_row_locks(db)) {
    if (m_locks) {
      m_top.emplace(db, due_sql(db, k_top_priority));
    }
  }

  // The probe of `queue` (probe_queue). On PostgreSQL, when the probe is
  // plain(), its first page at the highest priority comes in the same
  // statement (a round trip and a statement less a lease) and is kept as
  // first() keeps what it reads; no row is locked when it is not plain.
  QueueProbe probe(const std::string& queue,
                   const std::vector<core::LabelPattern>& m,
                   const std::string& worker, const std::vector<int64_t>& skip,
                   Time now, size_t want) {
    if (!m_locks) {
      return probe_queue(m_db, queue, now);
    }
    if (!m_probe_top) {
      // The page's columns first (read_task reads from the first), then
      // the probe's; a queue without a due task still has its probe row.
      m_probe_top.emplace(
          m_db, "WITH p AS MATERIALIZED (" + probe_sql("?3")
                    + ") SELECT t.*, p.* FROM p LEFT JOIN LATERAL ("
                    + due_sql(m_db, k_top_priority,
                              " AND p.paused = 0 AND p.max_running IS NULL "
                              "AND p.expired = 0 AND p.schedules_due = 0 "
                              "AND p.broadcasts = 0")
                    + ") AS t ON true");
    }
    Statement& st = *m_probe_top;
    st.bind(1, queue)
        .bind(2, std::numeric_limits<int64_t>::max())
        .bind(3, to_unix_ms(now))
        .bind(4, std::numeric_limits<int64_t>::min())
        .bind(5, 0)
        .bind(6, static_cast<int64_t>(page_for(want)));
    QueueProbe out;
    std::deque<Task>& kept = m_kept[queue];
    std::vector<size_t> with_errors;
    while (st.step()) {
      out = read_probe(st, k_task_column_count + 1);
      if (st.get_opt_int(0)) {
        keep(kept, st, m, worker, skip, with_errors);
      }
    }
    st.reset();
    load_errors_of(kept, with_errors);
    return out;
  }

  // The first such task, or nullptr. Up to `want` of them (how many the
  // caller may still lease) are read at once and kept, in lease order:
  // later calls return the next kept one without reading again, until
  // take() has had them all. They stay valid within one lease_in_tx, which
  // makes no task of `queue` ready while it leases.
  const Task* first(const std::string& queue,
                    const std::vector<core::LabelPattern>& m,
                    const std::string& worker, const std::vector<int64_t>& skip,
                    Time now, size_t want) {
    std::deque<Task>& kept = m_kept[queue];
    if (kept.empty()) {
      read(kept, queue, m, worker, skip, now, std::max<size_t>(want, 1));
    }
    return kept.empty() ? nullptr : &kept.front();
  }

  // The task first(queue) returned, no longer kept.
  Task take(const std::string& queue) {
    std::deque<Task>& kept = m_kept[queue];
    Task t = std::move(kept.front());
    kept.pop_front();
    return t;
  }

private:
  void read(std::deque<Task>& kept, const std::string& queue,
            const std::vector<core::LabelPattern>& m, const std::string& worker,
            const std::vector<int64_t>& skip, Time now, size_t want) {
    std::vector<size_t> with_errors; // indexes into kept
    m_walk.start(queue);
    // On PostgreSQL the first page is read at the highest priority found
    // in the same statement (m_top): a round trip less. When it has no
    // match (none due there, or every one held), the walk goes over every
    // priority from the highest, as on SQLite.
    bool top = m_locks;
    while (kept.empty()) {
      const auto priority =
          top ? std::optional(std::numeric_limits<int64_t>::max())
              : m_walk.next();
      if (!priority) {
        break;
      }
      Statement& due = top ? *m_top : m_due;
      // Page by page, after the last row seen: SQLite would stop at the
      // first row taken, but PostgreSQL sends a whole result, and a lease
      // must not read every due task of a long queue. The first page with
      // a match ends the search: the rest of the queue waits for the
      // next read.
      const int page = page_for(want);
      int64_t after_run_at = std::numeric_limits<int64_t>::min();
      int64_t after_id = 0;
      for (int rows = page; rows == page && kept.empty();) {
        due.bind(1, queue)
            .bind(2, *priority)
            .bind(3, to_unix_ms(now))
            .bind(4, after_run_at)
            .bind(5, after_id)
            .bind(6, page);
        rows = 0;
        while (kept.size() < want && due.step()) {
          ++rows;
          std::tie(after_run_at, after_id) =
              keep(kept, due, m, worker, skip, with_errors);
        }
        due.reset();
        if (top) {
          top = false; // one page
          break;
        }
      }
    }
    load_errors_of(kept, with_errors);
  }

  // Rows read at a time: on PostgreSQL each row read is locked (a row
  // another leaser holds is passed over), so a page is only as long as
  // the rows wanted, and the rest stay free for the other leasers.
  int page_for(size_t want) const {
    return m_locks ? static_cast<int>(std::min<size_t>(want, k_page)) : k_page;
  }

  // The task of `st`'s row, kept when `worker` may lease it (it is
  // addressed to any worker or to this one, its labels match `m`, it is
  // not skipped); `with_errors` gets its index when it has errors to load.
  // Returns where the row is in lease order, kept or not: (run_at, id).
  static std::pair<int64_t, int64_t>
  keep(std::deque<Task>& kept, const Statement& st,
       const std::vector<core::LabelPattern>& m, const std::string& worker,
       const std::vector<int64_t>& skip, std::vector<size_t>& with_errors) {
    Task t = read_task(st);
    const std::pair<int64_t, int64_t> at{to_unix_ms(t.run_at), t.id};
    if ((!t.to_worker || *t.to_worker == worker) && core::matches(t.labels, m)
        && std::find(skip.begin(), skip.end(), t.id) == skip.end()) {
      if (st.get_int(k_task_column_count) != 0) {
        with_errors.push_back(kept.size());
      }
      kept.push_back(std::move(t));
    }
    return at;
  }

  void load_errors_of(std::deque<Task>& kept,
                      const std::vector<size_t>& with_errors) {
    for (const size_t i : with_errors) {
      kept[i].errors = load_errors(m_db, kept[i].id); // whole, as load_full
    }
  }

private:
  // Rows read at a time; the first usually matches.
  static constexpr int k_page = 16;
  Db& m_db;
  PriorityWalk m_walk;
  Statement m_due;
  std::optional<Statement> m_top; // m_due at the highest priority (PostgreSQL)
  std::optional<Statement> m_probe_top; // a probe and m_top's page (probe())
  bool m_locks;                         // rows read are locked (PostgreSQL)
  std::map<std::string, std::deque<Task>, std::less<>> m_kept;
};

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
    if (t.state == TaskState::runnable) {
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
    }
    log_event(db, t.id, now, "lease", TaskState::runnable, TaskState::runnable,
              req.worker,
              "attempt " + std::to_string(t.attempts + 1) + ", until "
                  + core::format_time(expires));
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
