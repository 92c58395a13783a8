// TaskStore: producing work. Adding tasks one by one, uniquely or in bulk
// (with their labels and dependencies), and retry.
#include "storage/features/add_store.hpp"

#include "core/error.hpp"
#include "core/suggestion.hpp"
#include "storage/features/select.hpp"
#include "storage/features/web_store.hpp"
#include "storage/model/followers.hpp"
#include "storage/model/locks.hpp"
#include "storage/model/rows.hpp"
#include "storage/model/state_writer.hpp"
#include "storage/seam/db.hpp"
#include "storage/seam/replay.hpp"
#include "storage/task_store.hpp"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;

namespace detail {

// A prepared INSERT of `rows` tasks at once, bound once with the
// prototype; only the payloads change from one execution to the next.
// Payload i is parameter k_first_payload + i. Inserting many rows per
// statement runs the per-statement work (cursors on the table and its
// indexes, the AUTOINCREMENT counter) once per batch instead of once per
// row: about 2.5 times fewer instructions for a bulk add.
class Inserter {
public:
  // `blockers` is how many of t.after are unfinished; `state` the state
  // the tasks start in (paused when a dependency already failed).
  // `unless_taken`: a row whose unique key an unfinished task holds is not
  // inserted (ON CONFLICT DO NOTHING; see insert_if_free()).
  Inserter(Db& db, const NewTask& t, Time now, const std::string& actor,
           int rows = 1, int64_t blockers = 0,
           TaskState state = TaskState::runnable, bool unless_taken = false)
      : m_db(&db), m_returning(!db.last_insert_id()),
        m_st(db, insert_sql(rows, m_returning, unless_taken)), m_rows(rows),
        m_count(db, count_added_sql(db)) {
    m_st.bind(1, t.queue);
    m_queue = t.queue;
    m_state = state;
    if (t.labels.empty()) {
      m_st.bind_null(3);
    } else {
      m_st.bind(3, labels_to_json(t.labels));
    }
    m_st.bind(4, t.priority)
        .bind(5, t.max_attempts)
        .bind(6, to_unix_ms(t.run_at.value_or(now)))
        .bind(7, to_unix_ms(now))
        .bind(8, opt_int64(t.policy.max_errors))
        .bind(9, opt_ms(t.policy.window))
        .bind(10, opt_ms(t.policy.retry_delay))
        .bind(11, opt_backoff(t.policy.backoff))
        .bind(12, opt_ms(t.policy.max_delay))
        .bind(13, t.retry_of)
        .bind(14, actor)
        .bind(15, t.to_worker)
        .bind(16, t.trigger)
        .bind(17, t.broadcast_ttl
                      ? std::optional(to_unix_ms(now + *t.broadcast_ttl))
                      : std::nullopt)
        .bind(18, t.root.empty() ? std::nullopt
                                 : std::optional(labels_to_json(t.root)))
        .bind(19, t.after.empty()
                      ? std::nullopt
                      : std::optional(nlohmann::json(t.after).dump()))
        .bind(20, blockers)
        .bind(21, t.unique_key)
        .bind(22, core::to_string(state))
        .bind(23, t.flow)
        .bind(24, t.command.empty()
                      ? std::nullopt
                      : std::optional(nlohmann::json(t.command).dump()));
  }

  // Inserts one task per payload (`rows` of them, or none when
  // `unless_taken` found the key taken); returns their ids, in order, as
  // the database assigned them.
  const std::vector<int64_t>& insert(const std::string* payloads) {
    m_db->wake_soon(); // work for a waiting worker
    for (int i = 0; i < m_rows; ++i) {
      m_st.bind_borrowed(k_first_payload + i, payloads[i]);
    }
    m_ids.clear();
    if (!m_returning) {
      // One statement's rows take consecutive ids, the last one known.
      m_st.run();
      const int64_t n = m_st.changes();
      m_st.reset();
      const int64_t last = n > 0 ? *m_db->last_insert_id() : 0;
      for (int64_t id = last - n + 1; id <= last; ++id) {
        m_ids.push_back(id);
      }
      count();
      return m_ids;
    }
    while (m_st.step()) {
      m_ids.push_back(m_st.get_int(0));
    }
    m_st.reset();
    count();
    // RETURNING promises no order; ids grow with each row inserted.
    std::sort(m_ids.begin(), m_ids.end());
    return m_ids;
  }

private:
  static constexpr int k_first_payload = 25;

  // With RETURNING only where the database does not keep the last id:
  // SQLite's RETURNING buffers the rows it reports, a third more CPU for
  // a bulk add (bench/run (b): 338k tasks/s with it, 444k/s without).
  static std::string insert_sql(int rows, bool returning, bool unless_taken) {
    std::string sql = "INSERT INTO tasks (queue, state, payload, labels, "
                      "priority, max_attempts, run_at, created_at, "
                      "updated_at, max_errors, error_window_ms, "
                      "retry_delay_ms, backoff, max_delay_ms, retry_of, "
                      "created_by, to_worker, trigger_key, broadcast_until, "
                      "root, after_ids, blockers, unique_key, flow, command) "
                      "VALUES ";
    for (int i = 0; i < rows; ++i) {
      sql += i == 0 ? "(" : ", (";
      sql += "?1, ?22, ?" + std::to_string(k_first_payload + i)
             + ", ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
               "?15, ?16, ?17, ?18, ?19, ?20, ?21, ?23, ?24)";
    }
    if (unless_taken) {
      sql += " ON CONFLICT DO NOTHING";
    }
    return returning ? sql + " RETURNING id" : sql;
  }

  Db* m_db;
  bool m_returning; // ids come back from RETURNING, not last_insert_id()
  Statement m_st;
  int m_rows;
  // The rows of one statement counted in queue_counts (count_added()'s
  // statement, prepared once).
  Statement m_count;
  std::vector<int64_t> m_ids;

  std::string m_queue;
  TaskState m_state = TaskState::runnable;

  void count() {
    if (m_ids.empty()) {
      return;
    }
    m_count.bind(1, m_queue)
        .bind(2, core::to_string(m_state))
        .bind(3, static_cast<int64_t>(m_ids.size()));
    m_count.run();
    m_count.reset();
  }
};

// Refuses combinations that mean nothing (usage).
void check_new_task(const NewTask& t) {
  if (t.broadcast_ttl
      && (t.to_worker || !t.after.empty() || !t.root.empty() || t.unique_key)) {
    throw Error(ErrorKind::usage, "a broadcast goes to every worker: it takes "
                                  "no --to, --after, --root or --unique");
  }
  if (t.broadcast_ttl && t.broadcast_ttl->count() <= 0) {
    throw Error(ErrorKind::usage, "a broadcast's ttl must be positive");
  }
  for (const int64_t dep : t.after) {
    if (dep <= 0) {
      throw Error(ErrorKind::usage, "--after takes task ids (positive)");
    }
  }
}

std::string broken_dep_reason(int64_t dep, TaskState state) {
  return "dependency " + std::to_string(dep)
         + (state == TaskState::killed ? " was killed" : " failed");
}

// The rows beside a new task: its labels in task_labels, its unfinished
// dependencies in task_deps, and the reason when it starts paused.
class Companions {
public:
  // The inserts are prepared when first needed: most tasks have neither
  // labels nor dependencies.
  Companions(const NewTask& t, const Deps& deps) : m_task(t), m_info(deps) {}

  void add(Db& db, int64_t id, Time now) {
    if (!m_task.labels.empty() && !m_labels) {
      m_labels.emplace(db, "INSERT OR IGNORE INTO task_labels (key, value, "
                           "task_id) VALUES (?1, ?2, ?3)");
    }
    for (const auto& [key, value] : m_task.labels) {
      m_labels->bind(1, key).bind(2, value).bind(3, id);
      m_labels->run();
      m_labels->reset();
    }
    if (m_info.broken) {
      const auto [dep, state] = *m_info.broken;
      set_reason(db, id, broken_dep_reason(dep, state));
      record_move(db,
                  {id, TaskState::runnable, core::SystemMove::dependency_broken,
                   k_system_actor, broken_dep_reason(dep, state)},
                  now);
      return;
    }
    if (!m_info.unfinished.empty() && !m_deps) {
      m_deps.emplace(db, "INSERT OR IGNORE INTO task_deps (dep_id, task_id) "
                         "VALUES (?1, ?2)");
    }
    for (const int64_t dep : m_info.unfinished) {
      m_deps->bind(1, dep).bind(2, id);
      m_deps->run();
      m_deps->reset();
    }
  }

  int64_t blockers() const {
    return m_info.broken ? 0 : static_cast<int64_t>(m_info.unfinished.size());
  }
  TaskState state() const {
    return m_info.broken ? TaskState::paused : TaskState::runnable;
  }

private:
  std::optional<Statement> m_labels;
  std::optional<Statement> m_deps;
  const NewTask& m_task;
  const Deps& m_info;
};

// Adds one task with everything beside it; returns its id. With
// `unless_taken`, a task whose unique key an unfinished task of its queue
// holds is not added (std::nullopt): the unique index decides, so two
// writers adding one key at once add one task.
std::optional<int64_t> insert_task(Db& db, const NewTask& t, Time now,
                                   const std::string& actor,
                                   bool unless_taken) {
  check_new_task(t);
  const Deps deps = check_deps(db, t.after);
  Companions companions(t, deps);
  Inserter ins(db, t, now, actor, 1, companions.blockers(), companions.state(),
               unless_taken);
  const std::vector<int64_t>& ids = ins.insert(&t.payload);
  if (ids.empty()) {
    return std::nullopt;
  }
  companions.add(db, ids[0], now);
  return ids[0];
}

int64_t insert_task(Db& db, const NewTask& t, Time now,
                    const std::string& actor) {
  return *insert_task(db, t, now, actor, false);
}

// The unfinished task of `queue` that holds unique key `key`, if any.
std::optional<int64_t> key_holder(Db& db, const std::string& queue,
                                  const std::string& key) {
  Statement st(db, "SELECT id FROM tasks INDEXED BY tasks_unique_key "
                   "WHERE queue = ?1 AND unique_key = ?2 "
                   "AND unique_key IS NOT NULL AND state NOT IN "
                       + terminal_states_sql() + " ORDER BY id LIMIT 1");
  st.bind(1, queue).bind(2, key);
  if (st.step()) {
    return st.get_int(0);
  }
  return std::nullopt;
}

// The first unfinished task other than `self` that has every label of
// `root`, if any: the task that makes a `--root` task obsolete.
std::optional<int64_t> obsoleted_by(Db& db, const core::Labels& root,
                                    int64_t self) {
  if (root.empty()) {
    return std::nullopt;
  }
  const auto& [key, value] = *root.begin();
  Statement first(db, "SELECT task_id FROM task_labels WHERE key = ?1 "
                      "AND value = ?2 AND task_id <> ?3 ORDER BY task_id");
  Statement has(db, "SELECT 1 FROM task_labels WHERE key = ?1 AND value = ?2 "
                    "AND task_id = ?3");
  first.bind(1, key).bind(2, value).bind(3, self);
  while (first.step()) {
    const int64_t other = first.get_int(0);
    bool all = true;
    for (auto it = std::next(root.begin()); all && it != root.end(); ++it) {
      has.bind(1, it->first).bind(2, it->second).bind(3, other);
      all = has.step();
      has.reset();
    }
    if (all) {
      return other;
    }
  }
  return std::nullopt;
}

} // namespace detail

int64_t TaskStore::add(const NewTask& task, Time now,
                       const std::string& actor) {
  return add_unique(task, now, actor).id;
}

Added TaskStore::add_unique(const NewTask& task, Time now,
                            const std::string& actor) {
  check_new_task(task);
  return retrying([&]() -> Added {
    Transaction tx(*m_db);
    now = locked_now(now);
    if (task.unique_key) {
      if (const auto holder = key_holder(*m_db, task.queue, *task.unique_key)) {
        return {*holder, true, std::nullopt};
      }
    }
    if (const auto by = obsoleted_by(*m_db, task.root, 0)) {
      return {0, false, by};
    }
    // The unique index decides: a writer that inserted the key meanwhile
    // makes this insert do nothing (on PostgreSQL, once that writer has
    // committed), and its task is then the answer. Should that task have
    // ended before the look, the key is free again: the whole add again.
    if (const auto id =
            insert_task(*m_db, task, now, actor, task.unique_key.has_value())) {
      tx.commit();
      return {*id, false, std::nullopt};
    }
    if (const auto holder = key_holder(*m_db, task.queue, *task.unique_key)) {
      return {*holder, true, std::nullopt};
    }
    throw TxConflict(ErrorKind::unavailable,
                     "cannot add: the holder of unique key " + *task.unique_key
                         + " ended as it was taken (database " + m_db->path()
                         + ")");
  });
}

int64_t TaskStore::add_many(const NewTask& proto,
                            const std::function<bool(std::string&)>& next,
                            const std::function<void(int64_t)>& on_id, Time now,
                            const std::string& actor) {
  check_new_task(proto);
  if (proto.unique_key || !proto.root.empty() || proto.broadcast_ttl) {
    throw Error(ErrorKind::usage, "a bulk add takes no --unique, --root or "
                                  "--broadcast: add those one by one");
  }
  // Each try reads the same payloads (kept in a temporary file on
  // PostgreSQL, where a conflict runs the transaction again), and the ids
  // reach `on_id` once, those of the try that committed: runs of
  // consecutive ids, so that memory does not grow with the input.
  Replay<std::string> input(next, m_db->dialect().tries_again());
  std::vector<std::pair<int64_t, int64_t>> runs; // [first, last]
  const int64_t count = retrying_with(input, [&]() -> int64_t {
    runs.clear();
    Transaction tx(*m_db);
    now = locked_now(now);
    const Deps deps = check_deps(*m_db, proto.after);
    Companions companions(proto, deps);
    // Labels and dependencies take rows of their own; without them a bulk
    // add writes nothing but its tasks.
    const bool companion_rows =
        !proto.labels.empty() || !deps.unfinished.empty() || deps.broken;
    // The payloads of one batch; their buffers are reused batch after
    // batch.
    const int batch_rows = m_db->dialect().bulk_rows();
    std::vector<std::string> batch(static_cast<size_t>(batch_rows));
    std::optional<Inserter> many;
    int64_t added = 0;
    const auto report = [&](const std::vector<int64_t>& ids) {
      for (const int64_t id : ids) {
        if (companion_rows) {
          companions.add(*m_db, id, now);
        }
        if (!runs.empty() && runs.back().second + 1 == id) {
          runs.back().second = id;
        } else {
          runs.emplace_back(id, id);
        }
      }
      added += static_cast<int64_t>(ids.size());
    };
    int filled = 0;
    while (input.next(batch[static_cast<size_t>(filled)])) {
      if (++filled == batch_rows) {
        if (!many) {
          many.emplace(*m_db, proto, now, actor, batch_rows,
                       companions.blockers(), companions.state());
        }
        report(many->insert(batch.data()));
        filled = 0;
      }
    }
    if (filled > 0) {
      Inserter one(*m_db, proto, now, actor, 1, companions.blockers(),
                   companions.state());
      for (int i = 0; i < filled; ++i) {
        report(one.insert(&batch[static_cast<size_t>(i)]));
      }
    }
    tx.commit();
    return added;
  });
  if (on_id) {
    for (const auto& [first, last] : runs) {
      for (int64_t id = first; id <= last; ++id) {
        on_id(id);
      }
    }
  }
  return count;
}

namespace {

constexpr const char* k_unfinished_states =
    "('runnable', 'sleeping', 'paused', 'fault')";

// The live retry of each task from `from_id` on that has one: task id ->
// its first unfinished retry. A task's retries have larger ids, so one
// scan from `from_id` finds them (there is no index on retry_of).
std::map<int64_t, int64_t> live_retries(Db& db, int64_t from_id) {
  Statement st(db, std::string("SELECT retry_of, min(id) FROM tasks WHERE "
                               "id > ?1 AND retry_of IS NOT NULL AND state IN ")
                       + k_unfinished_states + " GROUP BY retry_of");
  st.bind(1, from_id);
  std::map<int64_t, int64_t> out;
  while (st.step()) {
    out.emplace(st.get_int(0), st.get_int(1));
  }
  return out;
}

// Why task `old` cannot be retried; empty when it can. `live` is its live
// retry (0: none, or it does not count).
std::string retry_refusal(const Task& old, int64_t live) {
  if (!core::is_terminal(old.state)) {
    return "cannot retry " + task_ref(old.id) + ": it is "
           + std::string(core::to_string(old.state))
           + " (only failed, killed or completed tasks are retried)";
  }
  if (old.flow) {
    // A copy would run without its flow; the flow decides what runs again.
    const auto flow_id = nlohmann::json::parse(*old.flow).at("id").dump();
    return "cannot retry " + task_ref(old.id) + ": it is an atom's task of "
           + "flow " + flow_id + ", whose controllers decide what "
           + "runs again (" + core::suggest({"flow", "rerun", flow_id}) + ")";
  }
  if (live != 0) {
    return task_ref(old.id) + " already has a live retry: " + task_ref(live)
           + " (use --again)";
  }
  return "";
}

int64_t insert_retry(Db& db, const Task& old, Time now,
                     const std::string& actor) {
  NewTask spec;
  spec.queue = old.queue;
  spec.payload = old.payload;
  spec.labels = old.labels;
  spec.priority = old.priority;
  spec.max_attempts = old.max_attempts;
  spec.policy = old.policy;
  spec.retry_of = old.id;
  spec.root = old.root;
  spec.to_worker = old.to_worker;
  spec.trigger = old.trigger;
  spec.command = old.command;
  return insert_task(db, spec, now, actor);
}

} // namespace

int64_t TaskStore::retry(int64_t id, const std::string& actor, Time now) {
  Selector sel;
  sel.ids = {id};
  return retry_many(sel, LiveRetry::refuse, actor, now).at(0).retry;
}

std::vector<Retried> TaskStore::retry_many(const Selector& sel, LiveRetry live,
                                           const std::string& actor, Time now) {
  if (sel.ids.empty() == !sel.has_filters()) {
    throw Error(ErrorKind::usage, "which tasks? give ids or filters");
  }
  check_page_only(sel);
  check_expect_rev(sel);
  for (const auto& s : sel.states) {
    if (s != "failed" && s != "killed" && s != "completed") {
      throw Error(ErrorKind::usage,
                  "invalid --state '" + s
                      + "' for retry: expected failed, killed or completed "
                        "(or several: failed,killed)");
    }
  }
  if (sel.has_filters() && sel.states.empty()) {
    throw Error(ErrorKind::usage,
                "a bulk retry needs --state: failed, killed, completed or "
                "several (failed,killed)");
  }
  return retrying([&]() -> std::vector<Retried> {
    Transaction tx(*m_db);
    now = locked_now(now);
    // The tasks' rows locked (PostgreSQL): two retries of one task take
    // turns, and the second sees the first's live retry.
    std::vector<Task> olds;
    if (!sel.ids.empty()) {
      lock_tasks(*m_db, sel.ids);
      for (const int64_t id : sel.ids) {
        if (std::none_of(olds.begin(), olds.end(),
                         [id](const Task& t) { return t.id == id; })) {
          olds.push_back(load_full(*m_db, id));
          check_rev(sel.expect_rev, olds.back());
        }
      }
    } else {
      olds = select_tasks(*m_db, sel, now); // finished: they stay so
      check_count(sel.expect_count, static_cast<int64_t>(olds.size()));
      std::vector<int64_t> ids;
      for (const Task& t : olds) {
        ids.push_back(t.id);
      }
      lock_tasks(*m_db, ids);
    }
    // Phase 1: every refusal, before anything is written.
    std::map<int64_t, int64_t> open_retries;
    if (live == LiveRetry::refuse && !olds.empty()) {
      open_retries = live_retries(
          *m_db, std::min_element(
                     olds.begin(), olds.end(),
                     [](const Task& a, const Task& b) { return a.id < b.id; })
                     ->id);
    }
    std::vector<Retried> out;
    std::vector<const Task*> go;
    std::vector<const Task*> wake;
    for (const Task& old : olds) {
      if (!sel.ids.empty() && old.state == TaskState::sleeping
          && !old.errors.empty()) {
        // Sleeping after an error until the policy's retry: it runs now,
        // itself (its id is the answer), not a copy.
        wake.push_back(&old);
        out.push_back({old.id, old.id, ""});
        continue;
      }
      const auto found = open_retries.find(old.id);
      std::string why =
          retry_refusal(old, found == open_retries.end() ? 0 : found->second);
      if (why.empty()) {
        go.push_back(&old);
        out.push_back({old.id, 0, ""});
      } else if (!sel.ids.empty()) {
        throw Error(ErrorKind::conflict, why);
      } else {
        out.push_back({old.id, 0, std::move(why)});
      }
    }
    // Phase 2: the sleepers woken, the new tasks.
    for (const Task* t : wake) {
      StateChange change(t->id, t->state, Message::run, actor,
                         "retried now, not at " + core::format_time(t->run_at));
      change.also.set_null("reason");
      change.also.add("run_at = min(run_at, ?3)");
      move_task(*m_db, change, now);
    }
    size_t next = 0;
    for (Retried& r : out) {
      if (r.skipped.empty() && r.retry == 0) {
        r.retry = insert_retry(*m_db, *go[next++], now, actor);
      }
    }
    tx.commit();
    return out;
  });
}

} // namespace taskq::storage
