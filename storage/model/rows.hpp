#pragma once

// Internal to storage/: the helpers rows.cpp defines for the other store
// files (each assumes a transaction is open on `db`). Private to storage/:
// included by the files that call them, never from outside storage/.

#include "core/schedule.hpp"
#include "core/state.hpp"
#include "core/task.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage::detail {

// The states core::is_terminal names (completed, failed, killed) as a SQL
// list in parentheses, for `state NOT IN ...` (an unfinished task). The one
// spelling of them in storage/'s SQL (tests/source/written_once fails on
// another); the released migrations keep their own, as they never change.
inline const std::string& terminal_states_sql() {
  static const std::string list = [] {
    std::string out;
    for (const core::TaskState s : core::k_all_states) {
      if (core::is_terminal(s)) {
        out += (out.empty() ? "('" : ", '") + std::string(core::to_string(s))
               + "'";
      }
    }
    return out + ")";
  }();
  return list;
}

// The core names the store files use unqualified, through their `using
// namespace detail`.
using core::Message;
using core::Millis;
using core::Task;
using core::TaskState;
using core::Time;
using core::to_unix_ms;

// Tasks a bulk command (a bulk send, redrive, purge --force) reads and
// changes at a time, so its memory stays bounded however many it changes.
constexpr int64_t k_bulk_batch = 1000;

// The error history keeps at least this many of the latest errors.
inline constexpr int64_t k_error_history = 100;

// taskq's own decisions (error policy, attempt limit, expiry) are logged
// under this actor.
inline constexpr std::string_view k_system_actor = "taskq";

// The columns read_task reads, in its order.
inline constexpr std::string_view k_task_columns =
    "id, rev, queue, state, payload, labels, priority, attempts, "
    "max_attempts, run_at, created_at, updated_at, lease_token, "
    "lease_worker, lease_expires, checkpoint, checkpoint_req, result, "
    "reason, max_errors, error_window_ms, retry_delay_ms, backoff, "
    "max_delay_ms, retry_of, unique_key, after_ids, blockers, root, "
    "to_worker, broadcast_until, trigger_key, schedule, gate, sync, flow, "
    "command, attempts_base";
// How many they are: a column selected after them is this one.
inline constexpr int k_task_column_count = 38;
// Two flags selected after them (from `tasks`), at k_task_column_count
// and the next: whether the task has errors (1 or 0), and whether a
// task_deps row names it as a dependency (whether any task waits, or
// waited, for it).
inline constexpr std::string_view k_task_flags =
    ", CASE WHEN EXISTS (SELECT 1 FROM task_errors e WHERE e.task_id = "
    "tasks.id) THEN 1 ELSE 0 END, CASE WHEN EXISTS (SELECT 1 FROM task_deps "
    "d WHERE d.dep_id = tasks.id) THEN 1 ELSE 0 END";

// The new unique_key of a task an UPDATE moves to the queue in parameter
// `param` (a dead-letter move, a redrive): its own, unless an unfinished
// task of that queue holds the key already (one holder per queue and key,
// migrations/0011_unique_index.sql); then none, as an upgrade leaves a
// duplicate's.
inline std::string unique_key_moved_to(int param) {
  return "CASE WHEN EXISTS (SELECT 1 FROM tasks AS holder WHERE "
         "holder.queue = ?"
         + std::to_string(param)
         + " AND holder.unique_key = tasks.unique_key AND holder.state NOT IN "
         + terminal_states_sql() + ") THEN NULL ELSE unique_key END";
}

std::string join(std::string_view a, std::string_view b);

std::string labels_to_json(const core::Labels& labels);

core::Labels labels_from_json(const std::optional<std::string>& text);

std::vector<std::string> strings_from_json(const std::string& text);

std::string task_ref(int64_t id); // "task N"

// Nullable columns to and from their core types (NULL is std::nullopt).
std::optional<core::Millis> opt_millis(const std::optional<int64_t>& ms);

std::optional<int64_t> opt_ms(const std::optional<core::Millis>& d);

std::optional<int> opt_int(const std::optional<int64_t>& v);

std::optional<int64_t> opt_int64(const std::optional<int>& v);

std::optional<std::string> opt_backoff(const std::optional<core::Backoff>& b);

// A new lease or delivery token: 32 random hex digits.
std::string random_token();

// Reads a row selected with k_task_columns (errors are loaded separately).
core::Task read_task(const Statement& st);

std::optional<core::Task> load_task(Db& db, int64_t id);

// With its errors; not_found when missing. `waited_for`, when given, is
// set to whether a task_deps row names it as a dependency.
core::Task load_full(Db& db, int64_t id, bool* waited_for = nullptr);

// A task's error history, oldest first.
std::vector<core::ErrorEntry> load_errors(Db& db, int64_t id);

// A task's creation as the first event of its log; it lives on the task's
// row, so that a bulk add writes one row per task.
core::Event creation_event(int64_t task_id, core::Time created_at,
                           std::string actor, std::optional<int64_t> retry_of);

// The columns read_event reads, in its order (from `events`).
inline constexpr std::string_view k_event_columns =
    "id, task_id, time, message, from_state, to_state, actor, detail";

core::Event read_event(const Statement& st);

struct QueueRow {
  bool paused = false;
  std::optional<int64_t> max_running;
  std::optional<int64_t> max_attempts;
  core::PolicyOverrides policy;
};

// The settings of a `queues` row: columns paused, max_running,
// max_attempts, max_errors, error_window_ms, retry_delay_ms, backoff and
// max_delay_ms of `st`, from column `first` on.
QueueRow read_queue_row(const Statement& st, int first);

QueueRow load_queue(Db& db, const std::string& name);

// The counters `metrics` reports, kept per queue.
enum class QueueCounter { errors, leases_expired };

// Adds `by` to a counter of `queue`.
void bump_queue_counter(Db& db, const std::string& queue, QueueCounter c,
                        int64_t by = 1);

// Each (queue, state) count of queue_counts is the sum of its rows, one
// per slot: a transaction writes its deltas to the rows of its slot, so
// that writers of one queue do not wait for each other's commits. The
// slot, as an SQL expression: on PostgreSQL the transaction's id modulo
// 64 (as its triggers compute it), 0 on SQLite.
std::string_view count_slot_sql(const Db& db);

// count_added()'s statement: ?1 queue, ?2 state, ?3 n.
std::string count_added_sql(const Db& db);

// Counts `n` new tasks of `queue` in `state` in queue_counts (updates and
// deletes are counted by the triggers of migrations 8 and 11; inserts
// here).
void count_added(Db& db, const std::string& queue, core::TaskState state,
                 int64_t n);

// The same for task `id`, just inserted (import).
void count_added_task(Db& db, int64_t id);

void log_event(Db& db, int64_t task_id, core::Time now,
               std::string_view message, std::optional<core::TaskState> from,
               std::optional<core::TaskState> to, std::string_view actor,
               std::string_view detail);

// Adds an error to a task's history, keeping the latest `keep` of them.
void append_error(Db& db, int64_t task_id, core::Time now,
                  std::string_view message, int64_t keep);

// Whether the task's running command is frozen: the latest of its
// `lease`, `freeze` and `continue` events is a freeze (each lease starts
// unfrozen). Meant only while the task holds a live lease.
bool frozen_now(Db& db, int64_t task_id);

// The query frozen_now runs (?1: the task's id), for those that prepare
// it once.
inline constexpr std::string_view k_frozen_sql =
    "SELECT CASE WHEN message = 'freeze' THEN 1 ELSE 0 END FROM events "
    "WHERE task_id = ?1 AND message IN ('lease', 'freeze', 'continue') "
    "ORDER BY id DESC LIMIT 1";

// Clears the task's lease; when `revoked_by` is set, remembers the token and
// why it was revoked so the worker can be told.
void clear_lease(Db& db, const core::Task& task,
                 const std::optional<std::string>& revoked_by);

void set_reason(Db& db, int64_t id, std::string_view reason);

// "<message> by <actor>" when an operator revoked `token` on task `id`.
std::optional<std::string> find_revoked(Db& db, int64_t id,
                                        const std::string& token);

// Why `msg` is refused: "cannot <msg> task N: it is <state>".
std::string refusal(const core::Task& task, core::Message msg);

// Loads a task for a worker write: it must exist (not_found) and `token`
// must be its live lease (conflict, naming who revoked it when known).
core::Task require_lease(Db& db, int64_t id, const std::string& token,
                         core::Time now);

// The same check on `task`, already loaded in this transaction.
core::Task require_lease(Db& db, core::Task task, const std::string& token,
                         core::Time now);

} // namespace taskq::storage::detail
