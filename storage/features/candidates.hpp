// Private to storage/features/lease_store.cpp: what a lease reads before
// it writes. A queue's probe (its settings and what it owes first), the
// walk over its priorities, and the candidates of a lease in lease order,
// with the probe and the first page in one statement on PostgreSQL (and a
// probe a plain lease read already, prime()).
#pragma once

#include "core/labels.hpp"
#include "core/task.hpp"
#include "storage/model/locks.hpp"
#include "storage/model/rows.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace taskq::storage::detail {

using core::Task;
using core::Time;

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
inline std::string probe_sql(std::string_view now) {
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
inline QueueProbe read_probe(const Statement& st, int first) {
  QueueProbe out;
  out.settings = read_queue_row(st, first);
  out.expired = st.get_int(first + 8) != 0;
  out.schedules_due = st.get_int(first + 9) != 0;
  out.broadcasts = st.get_int(first + 10) != 0;
  return out;
}

inline QueueProbe probe_queue(Db& db, const std::string& queue, Time now) {
  Statement st(db, probe_sql("?2"));
  st.bind(1, queue).bind(2, to_unix_ms(now));
  return st.step() ? read_probe(st, 0) : QueueProbe{};
}

inline std::string due_sql(const Db& db, std::string_view priority,
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
    if (const auto primed = m_primed.find(queue); primed != m_primed.end()) {
      QueueProbe out = primed->second;
      m_primed.erase(primed);
      return out;
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

  // `queue`'s probe, read already in this transaction (a plain lease's
  // statement, lease_store.cpp): the next probe() of it returns it without
  // a statement. `top_read`: that statement found no due task at the
  // highest priority, so the next read of its candidates goes straight to
  // the walk over the priorities.
  void prime(const std::string& queue, const QueueProbe& probe, bool top_read) {
    m_primed[queue] = probe;
    if (top_read) {
      m_top_read.insert(queue);
    }
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
    bool top = m_locks && m_top_read.erase(queue) == 0;
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
  std::map<std::string, QueueProbe, std::less<>> m_primed; // prime()
  std::set<std::string, std::less<>> m_top_read;           // prime()
};

} // namespace taskq::storage::detail
