// Where the engine's tasks come from: how long a task leased ahead of the
// handlers is held, and whether a look at the database can be spared.
#pragma once

#include "core/time.hpp"
#include "storage/task_store.hpp"

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

// With --prefetch, how many tasks one handler may have waiting in its
// stdin behind the one it works on: the prefetched tasks, shared among the
// --concurrency handlers, at least one each; none without --prefetch.
int lookahead(int prefetch, int concurrency);

} // namespace taskq::worker
