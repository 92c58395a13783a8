#pragma once

#include "core/error_policy.hpp"
#include "core/labels.hpp"
#include "core/state.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskq::core {

// A live or expired lease; `live(now)` says which.
struct Lease {
  std::string token;
  std::string worker;
  Time expires_at;
  bool live(Time now) const { return expires_at > now; }
};

// One row of a task's event log: a message applied (or a system action such
// as a lease expiring), the states before and after, and who sent it.
struct Event {
  int64_t id = 0;
  int64_t task_id = 0;
  Time time;
  std::string message; // a Message name, or `add`, `lease`, `expire`, ...
  std::string from;    // state name, empty when none
  std::string to;
  std::string actor;
  std::string detail; // free text: reason, error, queue moved to
};

// A task as stored. JSON values (payload, checkpoint, result) are kept as
// their JSON text so they round-trip exactly.
struct Task {
  int64_t id = 0;
  int64_t rev = 0;
  std::string queue;
  TaskState state = TaskState::runnable;
  std::string payload = "null";
  Labels labels;
  int64_t priority = 0;
  int64_t attempts = 0;
  // The value of `attempts` when the attempt limit's count last started
  // afresh (a resume from paused, a move to another queue), plus the
  // leases a worker gave back since (doc/reference/task.md#attempt-limit).
  int64_t attempts_base = 0;
  std::optional<int64_t> max_attempts;
  Time run_at; // due time; for `sleeping`, the time it wakes
  Time created_at;
  Time updated_at;
  std::optional<Lease> lease; // as stored, possibly expired
  // When that lease was taken (its `lease` event), when the reader loaded
  // it (list, show, lease).
  std::optional<Time> lease_started;
  // An operator froze its running command (`freeze`: SIGSTOP, the lease
  // kept) and has not continued it since this lease was taken; loaded
  // with lease_started, and meant only while the lease is live.
  bool frozen = false;
  // Loaded with it: when the freeze in force began, and how long the
  // command was frozen before that since the lease was taken (freezes
  // continued since), so that its running time leaves them out.
  std::optional<Time> frozen_since;
  Millis frozen_for{0};
  std::vector<ErrorEntry> errors;        // oldest first
  std::optional<std::string> checkpoint; // JSON text
  std::optional<std::string> result;     // JSON text
  bool checkpoint_requested = false;
  std::string reason; // why it is paused/failed/killed, when known
  PolicyOverrides policy;
  std::optional<int64_t> retry_of;
  std::optional<std::string> unique_key; // `add --unique KEY`
  std::vector<int64_t> after;            // `--after`: the tasks it waits for
  bool waiting = false; // some task in `after` has not completed yet
  Labels root;          // `--root`: obsolete while a task with these exists
  std::optional<std::string> to_worker; // `--to`: only this worker leases it
  // `--broadcast`: delivered once to each worker, until this time.
  std::optional<Time> broadcast_until;
  std::optional<std::string> trigger;  // `--trigger K`: counts toward gates
  std::optional<std::string> schedule; // the schedule that emitted it
  std::optional<std::string> gate;     // the gate that emitted it
  Labels sync; // the schedule's sync state when it was emitted
  // An atom's task: {"id","atom","action","args"} of the flow it works for
  // (JSON text, as `lease -o json` shows it).
  std::optional<std::string> flow;
  // `add QUEUE -- CMD [ARG...]`: the argv `run` executes for it when given
  // no `-- CMD` of its own; empty when none.
  std::vector<std::string> command;

  // The attempts the attempt limit counts: those since its count last
  // started afresh (never below 0).
  int64_t attempts_counted() const {
    return attempts > attempts_base ? attempts - attempts_base : 0;
  }
  // A lease that has not expired at `now`.
  bool leased(Time now) const { return lease && lease->live(now); }
};

} // namespace taskq::core
