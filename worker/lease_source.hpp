// Where the engine's tasks come from: how long a task leased ahead of the
// handlers is held, and whether a look at the database can be spared.
#pragma once

#include "core/time.hpp"
#include "storage/task_store.hpp"
#include "worker/policy.hpp"

#include <cstdint>
#include <optional>

namespace taskq::worker {

// How long `run` holds a task leased ahead of its handlers, per-task or
// --stream: TASKQ_LEASE_AHEAD_MS, 250 by default, 0 to lease nothing
// ahead. Throws usage for anything but whole milliseconds up to an hour.
core::Millis lease_ahead_hold();
// The same of the variable's value `text` (nullptr: not set).
core::Millis lease_ahead_hold(const char* text);

// Whether another connection may have committed to `store` since `seen`
// was read (always true where the backend cannot tell); updates `seen`.
bool changed_by_others(storage::TaskStore& store, std::optional<int64_t>& seen);

// When the engine looks for tasks to lease: at its start, after the
// database changed (then only if a read finds something due), when a task
// comes due or a lease expires (wake_at), and again when a look leased all
// it asked for.
struct Looks {
  bool look = true;               // try to lease at the next turn
  bool if_due = false;            // ... if a read finds something due
  std::optional<Instant> wake_at; // a task comes due, a lease expires

  // A look begins; returns whether it was only if something is due.
  bool begin() {
    const bool only_if_due = if_due;
    look = false;
    if_due = false;
    wake_at.reset();
    return only_if_due;
  }
  // The database changed: look if something is due, unless a look is due
  // anyway.
  void changed() {
    if (!look) {
      look = true;
      if_due = true;
    }
  }
  // Look at the next turn, whatever is due.
  void now() {
    look = true;
    if_due = false;
  }
  // At `at`: look when wake_at has come.
  void wake(Instant at) {
    if (wake_at && at >= *wake_at) {
      now();
    }
  }
};

// With --prefetch, how many tasks one handler may have waiting in its
// stdin behind the one it works on: the prefetched tasks, shared among the
// --concurrency handlers, at least one each; none without --prefetch.
int lookahead(int prefetch, int concurrency);

} // namespace taskq::worker
