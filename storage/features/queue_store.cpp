// TaskStore: operating a queue as a whole. Its settings, pause and
// resume, its stats and metrics, requeue, redrive from a dead-letter
// queue, and the workers seen on the queues.
#include "storage/features/queue_store.hpp"

#include "core/error.hpp"
#include "storage/model/locks.hpp"
#include "storage/model/rows.hpp"
#include "storage/model/state_writer.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;

void TaskStore::set_queue(const std::string& queue, const QueueSettings& s) {
  retrying([&] {
    Transaction tx(*m_db);
    Statement(
        *m_db,
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
  });
}

void TaskStore::set_queue_paused(const std::string& queue, bool paused) {
  retrying([&] {
    Transaction tx(*m_db);
    Statement(*m_db, "INSERT INTO queues (name, paused) VALUES (?1, ?2) "
                     "ON CONFLICT (name) DO UPDATE SET paused = ?2")
        .bind(1, queue)
        .bind(2, paused ? 1 : 0)
        .run();
    tx.commit();
  });
}

namespace {

// Every row of `queues` (`name` set: that one), by name, with zero counts.
std::vector<QueueInfo> queue_rows(Db& db, const std::optional<std::string>& q) {
  Statement st(db, "SELECT name, paused, max_running, max_attempts, "
                   "max_errors, error_window_ms, retry_delay_ms, backoff, "
                   "max_delay_ms FROM queues WHERE ?1 IS NULL OR name = ?1 "
                   "ORDER BY name");
  st.bind(1, q);
  std::vector<QueueInfo> out;
  while (st.step()) {
    QueueRow row = read_queue_row(st, 1);
    QueueInfo i;
    i.name = st.get_text(0);
    i.paused = row.paused;
    i.max_running = row.max_running;
    i.max_attempts = row.max_attempts;
    i.policy = std::move(row.policy);
    i.stats.queue = i.name;
    out.push_back(std::move(i));
  }
  return out;
}

// The settings rows and the stats of `q` (all when null), merged by name.
std::vector<QueueInfo> read_queues(Db& db, const std::optional<std::string>& q,
                                   Time now) {
  std::map<std::string, QueueInfo> by_name;
  for (QueueInfo& i : queue_rows(db, q)) {
    std::string name = i.name;
    by_name.emplace(std::move(name), std::move(i));
  }
  for (QueueStats& s : read_stats(db, q, now)) {
    QueueInfo& i = by_name[s.queue];
    i.name = s.queue;
    i.stats = std::move(s);
  }
  std::vector<QueueInfo> out;
  out.reserve(by_name.size());
  for (auto& [name, info] : by_name) {
    out.push_back(std::move(info));
  }
  return out;
}

} // namespace

std::vector<QueueInfo> TaskStore::queues(Time now) {
  Transaction tx(*m_db, Transaction::Kind::read);
  return read_queues(*m_db, std::nullopt, now);
}

QueueInfo TaskStore::queue(const std::string& name, Time now) {
  Transaction tx(*m_db, Transaction::Kind::read);
  auto found = read_queues(*m_db, name, now);
  if (found.empty()) {
    throw Error(ErrorKind::not_found,
                "no queue " + name + ": it has no tasks and no settings");
  }
  QueueInfo q = std::move(found.front());
  Statement st(*m_db, "SELECT max(e.time) FROM tasks t JOIN events e ON "
                      "e.task_id = t.id WHERE t.queue = ?1 AND e.message = "
                      "'lease'");
  st.bind(1, name);
  if (st.step()) {
    if (const auto at = st.get_opt_int(0)) {
      q.last_lease = core::from_unix_ms(*at);
    }
  }
  return q;
}

std::vector<std::string> TaskStore::queue_names() {
  Transaction tx(*m_db, Transaction::Kind::read);
  // queue_counts keeps a row per queue and state once a task of that queue
  // was in that state, at zero when none is left.
  Statement st(*m_db, "SELECT queue FROM queue_counts UNION "
                      "SELECT name FROM queues");
  std::vector<std::string> names;
  while (st.step()) {
    names.push_back(st.get_text(0));
  }
  // Sorted by bytes here: PostgreSQL's ORDER BY follows the database's
  // collation, and callers binary-search the list.
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<WorkerInfo> TaskStore::workers(Time since, Time now) {
  Transaction tx(*m_db, Transaction::Kind::read);
  std::map<std::string, WorkerInfo> by_name;
  const auto seen = [&by_name](const std::string& name, Time at) {
    auto [it, added] = by_name.try_emplace(name);
    WorkerInfo& w = it->second;
    if (added) {
      w.name = name;
      w.last_seen = at;
    } else {
      w.last_seen = std::max(w.last_seen, at);
    }
    return &w;
  };
  {
    // Live leases: a heartbeat or the lease itself last set updated_at.
    // Each with its start, its latest lease event, in the same statement
    // (one round trip, not one a running task: 10,000 running tasks cost
    // 150 ms on PostgreSQL asked one by one).
    Statement st(*m_db, "SELECT id, queue, lease_worker, updated_at, "
                        "lease_expires, (SELECT e.time FROM events e WHERE "
                        "e.task_id = tasks.id AND e.message = 'lease' ORDER "
                        "BY e.id DESC LIMIT 1) FROM tasks INDEXED BY "
                        "tasks_leased WHERE lease_token IS NOT NULL AND "
                        "lease_expires > ?1 ORDER BY id");
    st.bind(1, to_unix_ms(now));
    while (st.step()) {
      const Time beat = core::from_unix_ms(st.get_int(3));
      WorkerInfo* w = seen(st.get_text(2), beat);
      w->last_heartbeat =
          w->last_heartbeat ? std::max(*w->last_heartbeat, beat) : beat;
      const auto started = st.get_opt_int(5);
      w->running.push_back(
          {st.get_int(0), st.get_text(1),
           started ? std::optional(core::from_unix_ms(*started)) : std::nullopt,
           core::from_unix_ms(st.get_int(4))});
    }
  }
  {
    // What only a worker logs (an operator's release or sleep looks like
    // a worker's, so those are left out).
    Statement st(*m_db, "SELECT actor, max(time) FROM events "
                        "WHERE time >= ?1 AND message IN ('lease', "
                        "'complete', 'error') AND actor <> ?2 "
                        "GROUP BY actor");
    st.bind(1, to_unix_ms(since)).bind(2, k_system_actor);
    while (st.step()) {
      seen(st.get_text(0), core::from_unix_ms(st.get_int(1)));
    }
  }
  std::vector<WorkerInfo> out;
  for (auto& [name, w] : by_name) {
    out.push_back(std::move(w));
  }
  return out;
}

int64_t TaskStore::redrive(const std::string& from, const std::string& to,
                           const std::string& actor, Time now) {
  if (from == to) {
    throw Error(ErrorKind::usage, "redrive needs two different queues");
  }
  return retrying([&]() -> int64_t {
    Transaction tx(*m_db);
    now = locked_now(now);
    const int64_t now_ms = to_unix_ms(now);
    // Unleased (or with a lapsed lease), not waiting for dependencies, not
    // a broadcast: what a worker of `from` would have leased. In keyset
    // batches by id, as bulk_send goes, so memory stays bounded: each batch
    // logged with one INSERT ... SELECT and moved with one UPDATE.
    // Their rows locked (PostgreSQL): a lease taken meanwhile is seen, and
    // that task left where it is.
    Statement pick(*m_db, "SELECT id, lease_token IS NOT NULL FROM tasks "
                          "WHERE id > ?3 AND queue = ?1 "
                          "AND state IN ('runnable', 'sleeping') "
                          "AND blockers = 0 AND broadcast_until IS NULL "
                          "AND (lease_token IS NULL OR lease_expires <= ?2) "
                          "ORDER BY id LIMIT ?4"
                              + std::string(row_lock(*m_db, " FOR UPDATE")));
    // Logged first, while the rows still hold the state they leave.
    BulkMove move(
        *m_db, {TaskState::runnable, TaskState::sleeping},
        core::SystemMove::redrive,
        ", queue = ?3, " + std::string(k_restart_attempt_count)
            + ", run_at = ?2, lease_token = NULL, "
              "lease_worker = NULL, lease_expires = NULL, unique_key = "
            + unique_key_moved_to(3));
    const std::string detail = "from " + from + " to " + to;
    int64_t moved = 0;
    int64_t lapsed = 0; // moved with a lease that ran out: counted as expired
    int64_t last = 0;
    for (bool more = true; more;) {
      pick.bind(1, from).bind(2, now_ms).bind(3, last).bind(4, k_bulk_batch);
      std::string batch;
      int64_t rows = 0;
      while (pick.step()) {
        ++rows;
        last = pick.get_int(0);
        lapsed += pick.get_int(1);
        batch += (batch.empty() ? "[" : ",") + std::to_string(last);
      }
      pick.reset();
      more = rows == k_bulk_batch;
      if (batch.empty()) {
        continue;
      }
      batch += "]";
      moved += rows;
      move.run(batch, now, actor, detail,
               [&](Statement& st) { st.bind(3, to); }, {});
    }
    if (lapsed > 0) {
      bump_queue_counter(*m_db, from, QueueCounter::leases_expired, lapsed);
    }
    tx.commit();
    return moved;
  });
}

std::vector<QueueMetrics> TaskStore::metrics(Time now) {
  // One snapshot for the counts and the counters.
  Transaction tx(*m_db, Transaction::Kind::read);
  std::map<std::string, QueueMetrics> by_queue;
  for (auto& s : read_stats(*m_db, std::nullopt, now)) {
    const std::string name = s.queue;
    by_queue[name].stats = std::move(s);
  }
  Statement names(*m_db, "SELECT name FROM queues");
  while (names.step()) {
    by_queue[names.get_text(0)].stats.queue = names.get_text(0);
  }
  // The counters, summed over their slots (0010_count_slots.sql).
  Statement counters(*m_db, "SELECT queue, counter, CAST(sum(n) AS BIGINT) "
                            "FROM queue_counters GROUP BY queue, counter");
  while (counters.step()) {
    QueueMetrics& m = by_queue[counters.get_text(0)];
    m.stats.queue = counters.get_text(0);
    (counters.get_text(1) == "errors" ? m.errors_total
                                      : m.leases_expired_total) +=
        counters.get_int(2);
  }
  // A lease that ran out counts at once, before a lease reclaims it.
  Statement lapsed(*m_db, "SELECT queue, count(*) FROM tasks "
                          "INDEXED BY tasks_leased "
                          "WHERE lease_token IS NOT NULL "
                          "AND lease_expires <= ?1 GROUP BY queue");
  lapsed.bind(1, to_unix_ms(now));
  while (lapsed.step()) {
    QueueMetrics& m = by_queue[lapsed.get_text(0)];
    m.stats.queue = lapsed.get_text(0);
    m.leases_expired_total += lapsed.get_int(1);
  }
  std::vector<QueueMetrics> out;
  out.reserve(by_queue.size());
  for (auto& [name, m] : by_queue) {
    out.push_back(std::move(m));
  }
  return out;
}

namespace detail {

namespace {

// The unfinished tasks of the time-dependent counts, each kind read from
// the partial index that holds it (hence no `?1 IS NULL OR`: a queue
// filter is added only when given), so that stats reads unfinished tasks
// only. The kinds are disjoint: unleased and due-able (tasks_ready),
// leased (tasks_leased), unleased broadcasts (tasks_broadcast), unleased
// runnable ones waiting for dependencies (tasks_waiting). Columns: queue,
// running, ready, oldest ready run_at, delayed (summed over the rows).
constexpr const char* k_ready_part =
    " AND state IN ('runnable', 'sleeping') AND blockers = 0 AND "
    "broadcast_until IS NULL AND run_at <= ?2";
const std::vector<std::string>& time_count_sqls() {
  static const std::vector<std::string> k_sqls = {
      // tasks_ready's columns only, so SQLite reads its index and no row
      // (five times cheaper at 100,000 unfinished tasks): its due tasks,
      // and all its tasks not due, sleeping ones too ...
      std::string("SELECT queue, 0, count(*) FILTER (WHERE run_at <= ?2), "
                  "min(run_at) FILTER (WHERE run_at <= ?2), "
                  "count(*) FILTER (WHERE run_at > ?2) "
                  "FROM tasks INDEXED BY tasks_ready WHERE lease_token IS NULL "
                  "AND state IN ('runnable', 'sleeping') AND blockers = 0 "
                  "AND broadcast_until IS NULL"),
      // ... less its sleeping tasks not due, which are not delayed ones
      // (from tasks_settled: `state <> 'runnable'` lets SQLite see that the
      // partial index holds them).
      std::string("SELECT queue, 0, 0, NULL, -count(*) FROM tasks INDEXED BY "
                  "tasks_settled WHERE state = 'sleeping' AND state <> "
                  "'runnable' AND run_at > ?2 AND lease_token IS NULL AND "
                  "blockers = 0 AND broadcast_until IS NULL"),
      std::string("SELECT queue, count(*) FILTER (WHERE state = 'runnable' "
                  "AND lease_expires > ?2), count(*) FILTER (WHERE "
                  "lease_expires <= ?2")
          + k_ready_part + "), min(run_at) FILTER (WHERE lease_expires <= ?2"
          + k_ready_part
          + "), count(*) FILTER (WHERE state = 'runnable' AND run_at > ?2) "
            "FROM tasks INDEXED BY tasks_leased WHERE lease_token IS NOT NULL",
      std::string("SELECT queue, 0, 0, NULL, count(*) FILTER (WHERE run_at > "
                  "?2) FROM tasks INDEXED BY tasks_broadcast WHERE "
                  "broadcast_until IS NOT NULL AND state = 'runnable' AND "
                  "lease_token IS NULL"),
      std::string("SELECT queue, 0, 0, NULL, count(*) FILTER (WHERE run_at > "
                  "?2) FROM tasks INDEXED BY tasks_waiting WHERE blockers > 0 "
                  "AND state = 'runnable' AND lease_token IS NULL AND "
                  "broadcast_until IS NULL"),
  };
  return k_sqls;
}

} // namespace

std::vector<QueueStats> read_stats(Db& db, const std::optional<std::string>& q,
                                   Time now) {
  const int64_t now_ms = to_unix_ms(now);
  const std::string only_q = q ? " AND queue = ?1" : " AND ?1 IS NULL";
  std::map<std::string, QueueStats> by_queue;
  {
    // Per state, the counters the triggers of tasks keep (0008_counts.sql),
    // summed over their slots (0010_count_slots.sql).
    Statement st(db, "SELECT queue, state, CAST(sum(n) AS BIGINT) FROM "
                     "queue_counts WHERE true"
                         + only_q
                         + " GROUP BY queue, state HAVING sum(n) <> 0");
    st.bind(1, q);
    while (st.step()) {
      QueueStats& s = by_queue[st.get_text(0)];
      const int64_t n = st.get_int(2);
      switch (core::parse_state(st.get_text(1)).value_or(TaskState::fault)) {
      case TaskState::runnable:
        s.runnable += n;
        break;
      case TaskState::sleeping:
        s.sleeping += n;
        break;
      case TaskState::paused:
        s.paused += n;
        break;
      case TaskState::completed:
        s.completed += n;
        break;
      case TaskState::failed:
        s.failed += n;
        break;
      case TaskState::killed:
        s.killed += n;
        break;
      case TaskState::fault:
        break;
      }
    }
  }
  std::map<std::string, int64_t> oldest;
  for (const std::string& sql : time_count_sqls()) {
    Statement st(db, sql + only_q + " GROUP BY queue");
    st.bind(1, q).bind(2, now_ms);
    while (st.step()) {
      QueueStats& s = by_queue[st.get_text(0)];
      s.running += st.get_int(1);
      s.ready += st.get_int(2);
      if (auto at = st.get_opt_int(3)) {
        auto [it, added] = oldest.try_emplace(st.get_text(0), *at);
        if (!added) {
          it->second = std::min(it->second, *at);
        }
      }
      s.delayed += st.get_int(4);
    }
  }
  // Completions of the last hour: a range of tasks_completed per queue.
  Statement recent(db, "SELECT count(*) FILTER (WHERE updated_at > ?2 - "
                       "60000), count(*) FROM tasks INDEXED BY "
                       "tasks_completed WHERE queue = ?1 AND state = "
                       "'completed' AND updated_at > ?2 - 3600000");
  std::vector<QueueStats> out;
  for (auto& [name, s] : by_queue) {
    if (s.runnable + s.sleeping + s.paused + s.completed + s.failed + s.killed
        == 0) {
      continue; // every task purged: no longer a queue with tasks
    }
    s.queue = name;
    if (const auto it = oldest.find(name); it != oldest.end()) {
      s.oldest_ready_age = Millis(now_ms - it->second);
    }
    if (s.completed > 0) {
      recent.bind(1, name).bind(2, now_ms);
      recent.step();
      s.completed_last_minute = recent.get_int(0);
      s.completed_last_hour = recent.get_int(1);
      recent.reset();
    }
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace detail

std::vector<QueueStats> TaskStore::stats(const std::optional<std::string>& q,
                                         Time now) {
  Transaction tx(*m_db, Transaction::Kind::read);
  return read_stats(*m_db, q, now);
}

std::vector<Task> TaskStore::requeue(const std::string& queue,
                                     const std::string& actor, Time now) {
  return retrying([&]() -> std::vector<Task> {
    Transaction tx(*m_db);
    now = locked_now(now);
    std::vector<std::tuple<int64_t, TaskState, int64_t>> due_later;
    {
      Statement st(*m_db,
                   "SELECT id, state, run_at FROM tasks "
                   "INDEXED BY tasks_ready WHERE queue = ?1 "
                   "AND lease_token IS NULL "
                   "AND state IN ('runnable', 'sleeping') AND blockers = "
                   "0 AND broadcast_until IS NULL "
                   "AND run_at > ?2 ORDER BY id"
                       + std::string(row_lock(*m_db, " FOR UPDATE")));
      st.bind(1, queue).bind(2, to_unix_ms(now));
      while (st.step()) {
        const auto state = core::parse_state(st.get_text(1));
        due_later.emplace_back(
            st.get_int(0), state.value_or(TaskState::runnable), st.get_int(2));
      }
    }
    Statement update(*m_db, "UPDATE tasks SET run_at = ?2, rev = rev + 1, "
                            "updated_at = ?2 WHERE id = ?1");
    std::vector<Task> changed;
    for (const auto& [id, state, run_at] : due_later) {
      update.bind(1, id).bind(2, to_unix_ms(now));
      update.run();
      update.reset();
      log_event(*m_db, id, now, "requeue", state, state, actor,
                "due now (was " + core::format_time(core::from_unix_ms(run_at))
                    + ")");
      changed.push_back(load_full(*m_db, id));
    }
    tx.commit();
    return changed;
  });
}

} // namespace taskq::storage
