// TaskStore: operating a queue as a whole. Queue pause and resume, redrive
// from a dead-letter queue, purge of finished tasks, the event stream.
#include "core/error.hpp"
#include "storage/state_writer.hpp"
#include "storage/store_detail.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;

void TaskStore::set_queue_paused(const std::string& queue, bool paused) {
  Transaction tx(*m_db);
  Statement(*m_db, "INSERT INTO queues (name, paused) VALUES (?1, ?2) "
                   "ON CONFLICT (name) DO UPDATE SET paused = ?2")
      .bind(1, queue)
      .bind(2, paused ? 1 : 0)
      .run();
  tx.commit();
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
  return std::move(found.front());
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
    Statement st(*m_db, "SELECT id, queue, lease_worker, updated_at, "
                        "lease_expires FROM tasks INDEXED BY tasks_leased "
                        "WHERE lease_token IS NOT NULL AND lease_expires > ?1 "
                        "ORDER BY id");
    st.bind(1, to_unix_ms(now));
    while (st.step()) {
      const Time beat = core::from_unix_ms(st.get_int(3));
      WorkerInfo* w = seen(st.get_text(2), beat);
      w->last_heartbeat =
          w->last_heartbeat ? std::max(*w->last_heartbeat, beat) : beat;
      w->running.push_back({st.get_int(0), st.get_text(1), std::nullopt,
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
  Statement start(*m_db, "SELECT time FROM events WHERE task_id = ?1 AND "
                         "message = 'lease' ORDER BY id DESC LIMIT 1");
  std::vector<WorkerInfo> out;
  for (auto& [name, w] : by_name) {
    for (WorkerTask& t : w.running) {
      start.bind(1, t.id);
      if (start.step()) {
        t.started_at = core::from_unix_ms(start.get_int(0));
      }
      start.reset();
    }
    out.push_back(std::move(w));
  }
  return out;
}

int64_t TaskStore::redrive(const std::string& from, const std::string& to,
                           const std::string& actor, Time now) {
  if (from == to) {
    throw Error(ErrorKind::usage, "redrive needs two different queues");
  }
  Transaction tx(*m_db);
  now = locked_now(now);
  const int64_t now_ms = to_unix_ms(now);
  // Unleased (or with a lapsed lease), not waiting for dependencies, not
  // a broadcast: what a worker of `from` would have leased. In keyset
  // batches by id, as bulk_send goes, so memory stays bounded: each batch
  // logged with one INSERT ... SELECT and moved with one UPDATE.
  Statement pick(*m_db, "SELECT id, lease_token IS NOT NULL FROM tasks "
                        "WHERE id > ?3 AND queue = ?1 "
                        "AND state IN ('runnable', 'sleeping') "
                        "AND blockers = 0 AND broadcast_until IS NULL "
                        "AND (lease_token IS NULL OR lease_expires <= ?2) "
                        "ORDER BY id LIMIT ?4");
  // Logged first, while the rows still hold the state they leave.
  BulkMove move(*m_db, {TaskState::runnable, TaskState::sleeping},
                core::SystemMove::redrive,
                ", queue = ?3, attempts = 0, run_at = ?2, lease_token = NULL, "
                "lease_worker = NULL, lease_expires = NULL");
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
    move.run(batch, now, actor, detail, [&](Statement& st) { st.bind(3, to); },
             {});
  }
  if (lapsed > 0) {
    bump_queue_counter(*m_db, from, QueueCounter::leases_expired, lapsed);
  }
  tx.commit();
  return moved;
}

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
                        "('completed', 'failed', 'killed') "
                        "AND t.lease_token IS NOT NULL "
                        "AND t.lease_expires <= ?1 GROUP BY t.queue");
    st.bind(1, to_unix_ms(now));
    while (st.step()) {
      lapsed.emplace_back(st.get_text(0), st.get_int(1));
    }
  }
  for (const auto& [queue, n] : lapsed) {
    bump_queue_counter(*m_db, queue, QueueCounter::leases_expired, n);
  }
  Statement pick(*m_db, "SELECT p.id, t.state FROM purge_ids p JOIN tasks t "
                        "ON t.id = p.id WHERE p.id > ?1 AND p.state NOT IN "
                        "('completed', 'failed', 'killed') "
                        "AND (t.labels IS NOT NULL OR t.trigger_key IS NOT "
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
                       "AND (CAST(?2 AS BIGINT) IS NULL OR updated_at <= ?2)");
  pick.bind(1, req.queue);
  pick.bind(2, req.older_than ? std::optional(to_unix_ms(now - *req.older_than))
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
}

std::vector<QueueMetrics> TaskStore::metrics(Time now) {
  // One snapshot for the counts and the counters.
  Transaction tx(*m_db, Transaction::Kind::read);
  std::map<std::string, QueueMetrics> by_queue;
  for (auto& s : read_stats(*m_db, std::nullopt, now)) {
    const std::string name = s.queue;
    by_queue[name].stats = std::move(s);
  }
  Statement counters(*m_db, "SELECT name, errors_total, leases_expired_total "
                            "FROM queues");
  while (counters.step()) {
    QueueMetrics& m = by_queue[counters.get_text(0)];
    m.stats.queue = counters.get_text(0);
    m.errors_total = counters.get_int(1);
    m.leases_expired_total = counters.get_int(2);
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

std::vector<StreamEvent>
TaskStore::events(const std::optional<std::string>& queue,
                  std::optional<Time> since, EventCursor& cursor,
                  int64_t limit) {
  // The cursor is two ids, and each query reads the rows past one of them:
  // correct only if a row that becomes visible later never has a smaller id
  // than one already read. It holds on both backends because writers run
  // one at a time (SQLite's single writer; on PostgreSQL the advisory lock
  // every write transaction takes in PgDb::begin before it inserts): ids
  // come from identity sequences (cache 1) when a row is inserted, so every
  // id a committed writer took is smaller than any the writer in progress
  // (at most one) takes, and a snapshot always sees a prefix of the ids. A
  // rolled-back writer leaves a gap, which the cursor skips harmlessly.
  Transaction tx(*m_db, Transaction::Kind::read);
  // Unset filters bind as NULL (`?2 IS NULL OR ...`).
  const auto bind_filters = [&](Statement& st) {
    if (since) {
      st.bind(2, to_unix_ms(*since));
    } else {
      st.bind_null(2);
    }
    st.bind(3, queue).bind(4, limit);
  };
  std::vector<StreamEvent> adds;
  {
    // Creations live on the task rows (a bulk add writes no event rows).
    Statement st(*m_db, "SELECT id, created_at, created_by, queue, retry_of "
                        "FROM tasks WHERE id > ?1 "
                        "AND (CAST(?2 AS BIGINT) IS NULL OR created_at >= ?2) "
                        "AND (?3 IS NULL OR queue = ?3) ORDER BY id LIMIT ?4");
    st.bind(1, cursor.task_id);
    bind_filters(st);
    while (st.step()) {
      adds.push_back(
          {creation_event(st.get_int(0), core::from_unix_ms(st.get_int(1)),
                          st.get_opt_text(2).value_or(""), st.get_opt_int(4)),
           st.get_text(3)});
    }
  }
  std::vector<StreamEvent> logged;
  {
    Statement st(
        *m_db,
        "SELECT e.id, e.task_id, e.time, e.message, "
        "e.from_state, e.to_state, e.actor, e.detail, t.queue "
        "FROM events e JOIN tasks t ON t.id = e.task_id "
        "WHERE e.id > ?1 AND (CAST(?2 AS BIGINT) IS NULL OR e.time >= ?2) "
        "AND (?3 IS NULL OR t.queue = ?3) "
        "ORDER BY e.id LIMIT ?4");
    st.bind(1, cursor.event_id);
    bind_filters(st);
    while (st.step()) {
      logged.push_back({read_event(st), st.get_text(8)});
    }
  }
  std::vector<StreamEvent> flows;
  if (!queue) { // flows span queues: a queue's stream has none
    Statement st(*m_db, "SELECT e.id, e.flow_id, e.time, e.name, e.state "
                        "FROM flow_events e WHERE e.id > ?1 AND e.kind = "
                        "'flow' AND (CAST(?2 AS BIGINT) IS NULL OR e.time >= "
                        "?2) AND (?3 IS NULL) ORDER BY e.id LIMIT ?4");
    st.bind(1, cursor.flow_event_id);
    bind_filters(st);
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
  return out;
}

EventCursor TaskStore::events_end() {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, "SELECT (SELECT coalesce(max(id), 0) FROM events), "
                      "(SELECT coalesce(max(id), 0) FROM tasks), "
                      "(SELECT coalesce(max(id), 0) FROM flow_events)");
  st.step();
  return {st.get_int(0), st.get_int(1), st.get_int(2)};
}

} // namespace taskq::storage
