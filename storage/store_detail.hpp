#pragma once

// Internal to storage/: the row helpers the TaskStore's source files share.
// Each assumes a transaction is open on `db`. Nothing outside storage/
// includes this header.

#include "core/schedule.hpp"
#include "core/task.hpp"
#include "storage/db.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage::detail {

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
    "command";
// How many they are: a column selected after them is this one.
inline constexpr int k_task_column_count = 37;

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
// The tasks a selector names: ids (each must exist, not_found otherwise),
// or filters (operator_store.cpp). Usage error for an unknown state.
std::vector<core::Task> select_tasks(Db& db, const Selector& sel,
                                     core::Time now);
// One query of a selector's state (operator_store.cpp): `?1` the queue,
// `?2` now, `?3` the state when `binds_state`, `?4` the limit.
struct SelectPart {
  std::string sql;
  bool binds_state = false;
};
std::vector<SelectPart> select_sqls(const Selector& sel,
                                    const std::string& state, bool limited);
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

// Counts `n` new tasks of `queue` in `state` in queue_counts (updates and
// deletes are counted by the triggers of migration 8; inserts here).
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
// Clears the task's lease; when `revoked_by` is set, remembers the token and
// why it was revoked so the worker can be told.
void clear_lease(Db& db, const core::Task& task,
                 const std::optional<std::string>& revoked_by);
// What follows a task's end: its dependents, gates, the label index
// (followers.cpp).
void settle_finished(Db& db, int64_t id, core::TaskState state, core::Time now);
// The same for a task whose labels, trigger and flow the caller has read,
// and, with `waited_for` false, that it has no dependents (load_full says).
void settle_finished(Db& db, int64_t id, const core::Labels& labels,
                     const std::optional<std::string>& trigger,
                     std::optional<std::string> flow, core::TaskState state,
                     core::Time now, bool waited_for = true);
void set_reason(Db& db, int64_t id, std::string_view reason);
// Deletes a task with its errors, events, dependency links and
// deliveries; an unfinished one first ends as killed.
void delete_task(Db& db, const core::Task& t, core::Time now);
// An atom's task ended (completed, failed or killed): its flow takes its
// step. Runs just before the transaction commits (Db::defer), once every
// row of the task's end is written.
void flow_task_ended(Db& db, int64_t task_id, const std::string& flow,
                     core::TaskState state, core::Time now);
// "<message> by <actor>" when an operator revoked `token` on task `id`.
std::optional<std::string> find_revoked(Db& db, int64_t id,
                                        const std::string& token);
// Why `msg` is refused: "cannot <msg> task N: it is <state>".
std::string refusal(const core::Task& task, core::Message msg);

// Adds one task with everything beside it (labels, dependencies); returns
// its id. Checks the combination of options (usage) and the dependencies
// (not_found).
int64_t insert_task(Db& db, const NewTask& t, core::Time now,
                    const std::string& actor);
// Why a dependent of `dep` is paused: "dependency N failed" (or "was
// killed").
std::string broken_dep_reason(int64_t dep, core::TaskState state);
// The first unfinished task other than `self` that has every label of
// `root`, if any: the task that makes a `--root` task obsolete.
std::optional<int64_t> obsoleted_by(Db& db, const core::Labels& root,
                                    int64_t self);

// How many tasks of `queue` hold a live lease.
int64_t count_running(Db& db, const std::string& queue, core::Time now);

// Loads a task for a worker write: it must exist (not_found) and `token`
// must be its live lease (conflict, naming who revoked it when known).
core::Task require_lease(Db& db, int64_t id, const std::string& token,
                         core::Time now);
// The same check on `task`, already loaded in this transaction.
core::Task require_lease(Db& db, core::Task task, const std::string& token,
                         core::Time now);
// `done`: completes task `id` for the holder of `token` (or logs a
// broadcast delivery's done); `sync` goes to the task's schedule. Returns
// the task as written, or, with `reload` false, as it was checked.
core::Task complete_leased(Db& db, int64_t id, const std::string& token,
                           const std::optional<std::string>& result,
                           core::Time now, const core::Labels& sync,
                           bool reload = true);

// TaskStore::lease's work, inside the caller's write transaction (`now`
// read once it holds the lock): shared by lease and apply_outcomes.
std::vector<core::Task> lease_in_tx(Db& db, const LeaseRequest& req,
                                    core::Time now);

// The backend's own part of `db check` (open_store.cpp): on SQLite,
// integrity_check's problems and how the schema differs from the
// migrations' go to `report`, with the schema version. False when the
// schema is not taskq's: the tables are not to be read then.
bool check_file(Db& db, CheckReport& report);

// The per-queue counts of `stats` (of `queue`, or of all when null).
std::vector<QueueStats>
read_stats(Db& db, const std::optional<std::string>& queue, core::Time now);

// The stored form of a schedule, parsed back.
core::Schedule stored_schedule(const std::optional<std::string>& every,
                               const std::optional<std::string>& cron);
// Emits the due schedules of `queue` (of every queue when null); returns
// the new task ids.
std::vector<int64_t> emit_schedules(Db& db, const std::string* queue,
                                    core::Time now);

// How a schema differs from the one the migrations make, both given as
// "KIND NAME" (table, index, trigger) -> its definition: one line per
// missing, changed or foreign object, in the same words on both backends.
std::vector<std::string>
schema_differences(const std::map<std::string, std::string>& expected,
                   const std::map<std::string, std::string>& actual,
                   int version);

// The rules of the stored data that leasing and the state machine trust:
// `db check` counts what breaks them, and `import` refuses rows that do.
struct Invariant {
  std::string_view summary; // after a count, for db check
  std::string_view problem; // of one task, for import
};
// Calls `each(rule, task_id)` for every row that breaks a rule, rule by
// rule (a task may come more than once). `scope`: a JSON array of the task
// ids to look at; std::nullopt looks at every task.
void find_violations(
    Db& db, const std::optional<std::string>& scope,
    const std::function<void(const Invariant&, int64_t)>& each);
// The same for the rules of flows: `each(rule, flow_id)`; `scope`: a JSON
// array of flow ids. (Tasks whose `flow` link no atom answers are a rule
// of tasks, above.)
void find_flow_violations(
    Db& db, const std::optional<std::string>& scope,
    const std::function<void(const Invariant&, int64_t)>& each);

// TaskStore::append_output's work, in the open write transaction.
void write_output(Db& db, const std::vector<OutputChunk>& chunks, int64_t keep);

} // namespace taskq::storage::detail
