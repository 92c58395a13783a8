#pragma once

// What a task is given and gives back: adding, leasing, failing, an
// operator's selection, outcomes, purge and tx requests.
// Part of the TaskStore's interface (storage/task_store.hpp).

#include "core/schedule.hpp"
#include "core/task.hpp"
#include "storage/log_types.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

// What `add` creates. payload/labels etc. are validated by the caller.
struct NewTask {
  std::string queue;
  std::string payload = "null"; // JSON text
  core::Labels labels;
  int64_t priority = 0;
  std::optional<core::Time> run_at; // default: now
  std::optional<int64_t> max_attempts;
  core::PolicyOverrides policy;
  std::optional<int64_t> retry_of;
  // While an unfinished task of the same queue has this key, adding creates
  // nothing (`add --unique KEY`).
  std::optional<std::string> unique_key;
  // Waits until each of these tasks is completed; when one ends failed or
  // killed, it is paused with that reason instead. Each must exist.
  std::vector<int64_t> after;
  // While an unfinished task with all these labels exists, this task is
  // obsolete: not added, or killed instead of leased (rescue Root).
  core::Labels root;
  std::optional<std::string> to_worker; // only this worker leases it
  // Delivered once to every worker that leases from the queue, without a
  // lease to complete, until now + this; then it ends `completed`.
  std::optional<core::Millis> broadcast_ttl;
  std::optional<std::string> trigger; // a gate key it covers on completion
  std::optional<std::string> flow;    // an atom's task: see core::Task::flow
  // The argv it runs (core::Task::command): empty, or valid UTF-8 strings
  // (checked by the caller), the first not empty.
  std::vector<std::string> command;
};

// What add_unique did: a new task, the unfinished one with the same key
// (existed), or nothing because a live task made it obsolete (id 0,
// obsoleted_by that task).
struct Added {
  int64_t id = 0;
  bool existed = false;
  std::optional<int64_t> obsoleted_by;
};

struct LeaseRequest {
  std::vector<std::string> queues;
  std::vector<core::LabelPattern> match;
  core::Millis lease_for = std::chrono::minutes(5);
  int count = 1;
  std::string worker;
  // Tasks not to lease even when eligible: `run` names those whose
  // handlers it is still stopping, so that a task an operator released
  // never runs twice at once in one worker.
  std::vector<int64_t> skip;
};

// Which tasks a bulk operator command applies to. Either ids, or filters.
struct Selector {
  std::vector<int64_t> ids;
  std::optional<std::string> queue;
  // Any of these: state names, `running` or `ready` (none: every state).
  std::vector<std::string> states;
  std::vector<core::LabelPattern> match;
  std::optional<int64_t> limit;
  bool newest = false; // by id, newest first (else oldest first)
  // Read by task_page only (other commands refuse a selector with them):
  // ids greater than after_id, less than before_id (keyset pages: a page
  // goes on from the last id of the one before, so page 1,000 costs what
  // page 1 does); created in [created_from, created_to); `text` found in
  // the task's command or payload (as their JSON text, case and all),
  // among the newest k_text_candidates tasks of the queue and states.
  std::optional<int64_t> after_id;
  std::optional<int64_t> before_id;
  std::optional<core::Time> created_from;
  std::optional<core::Time> created_to;
  std::optional<std::string> text;
  // The revision (core::Task::rev) the operator saw: with exactly one id,
  // send, freeze and retry refuse (conflict, changing nothing) a task
  // that has changed since; with anything else, a usage error.
  std::optional<int64_t> expect_rev;
  // With filters, the number of tasks send_bulk changes (or retry_many
  // selects) as the operator counted them: another number is refused
  // (conflict) in the action's own transaction, and nothing changes.
  std::optional<int64_t> expect_count;
  bool has_filters() const {
    return queue || !states.empty() || !match.empty();
  }
};

// What `retry` does with a task that already has a live retry (a task whose
// retry_of is it, not finished).
enum class LiveRetry {
  refuse, // conflict, naming the live retry (ids), or skip it (filters)
  again,  // retry it anyway (`--again`)
};

// One retried task: the old id, the new id; or, in a bulk retry, a task
// skipped (retry 0) and why.
struct Retried {
  int64_t task = 0;
  int64_t retry = 0;
  std::string skipped; // why it was skipped, when retry is 0
};

enum class FailMode { policy, no_retry, move_to };

struct FailRequest {
  std::string error;
  FailMode mode = FailMode::policy;
  std::string move_to;                  // with FailMode::move_to
  std::optional<core::Millis> retry_in; // with FailMode::policy
};

struct HeartbeatResult {
  core::Time expires_at;
  bool checkpoint_requested = false;
};

// Which finished tasks `purge` deletes.
struct PurgeRequest {
  std::optional<std::string> queue;
  std::vector<core::TaskState> states;    // empty: every terminal state
  std::optional<core::Millis> older_than; // finished at least this long ago
  bool force = false;   // also unfinished tasks (only those in `states`)
  bool dry_run = false; // count, delete nothing
};

// One `taskq tx` document (MassTasker's Update), applied by apply_tx in one
// transaction. Each operation is named in errors by its list and index,
// e.g. `update[1]`.
struct TxRequire { // a predicate: task `id` exists at `rev`
  int64_t id = 0;
  int64_t rev = 0;
};
struct TxDelete { // with the live lease token when the task is leased
  int64_t id = 0;
  std::optional<std::string> lease;
};
struct TxUpdate { // the given fields replace the task's, at `rev`
  int64_t id = 0;
  int64_t rev = 0;
  std::optional<std::string> payload; // JSON text
  std::optional<core::Labels> labels;
  std::optional<std::string> queue;
  std::optional<core::Time> run_at;
  std::optional<int64_t> priority;
};
struct TxComplete { // `done` by the lease holder
  int64_t id = 0;
  std::string lease;
  std::optional<std::string> result; // JSON text
};
struct TxRequest {
  std::vector<TxRequire> require;
  std::vector<TxDelete> remove;
  std::vector<TxUpdate> update;
  std::vector<NewTask> create;
  std::vector<TxComplete> complete;
};
struct TxResult {
  std::vector<int64_t> created;                     // in request order
  std::vector<std::pair<int64_t, int64_t>> updated; // (id, new rev)
};

// One worker outcome for apply_outcomes (run, run --stream).
struct Outcome {
  enum class Kind { complete, fail, release } kind = Kind::complete;
  int64_t id = 0;
  std::string token;
  // The lease holder's name (the lease's worker): a complete whose lease
  // is this worker's is recorded in one statement (empty: the lease is
  // read first, as complete() does).
  std::string worker;
  std::optional<std::string> result; // complete: JSON text
  FailRequest fail;                  // fail
  std::optional<core::Millis> delay; // release
  OutputWrite output;
};
struct OutcomeResult {
  int64_t id = 0;
  // The task after it (none: lease lost). After a complete, the task as
  // its write returned it, or as checked with its new state, lease and
  // result (a broadcast's delivery: the task unchanged), not read again.
  std::optional<core::Task> task;
  // Why, when the lease was lost (the conflict message, as complete()
  // would say).
  std::string lost;
};
struct BatchResult {
  std::vector<OutcomeResult> outcomes; // in request order
  std::vector<core::Task> leased;      // by `next`, empty when none
};

struct TaskDetail {
  core::Task task;
  std::vector<core::Event> events; // oldest first
};

} // namespace taskq::storage
