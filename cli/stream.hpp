#pragma once

#include "cli/context.hpp"
#include "cli/runner.hpp"
#include "core/time.hpp"

namespace taskq::cli {

// What `run --stream` adds to RunOptions.
struct StreamOptions {
  // Tasks leased ahead, in one transaction, beyond those the handlers
  // hold; with more than 1, outcomes are also recorded in batches.
  int prefetch = 1;
  // With --prefetch: a batch of outcomes is written at most this long
  // after its first one.
  core::Millis flush = std::chrono::milliseconds(5);
};

// `taskq run QUEUE --stream -- CMD` (README "Persistent handlers"): starts
// CMD once per --concurrency and talks to it over a line protocol: one JSON
// task per line on its stdin, one JSON outcome per line on its stdout.
// Leases, heartbeats, the error policy, operator commands (a cancel line),
// timeouts, and handlers that die or answer garbage are taskq's business.
// Blocks on the change feed while there is nothing to do. Returns as
// run_worker does; throws Error(internal) when the handler keeps dying.
RunSummary run_stream(const RunOptions& o, const StreamOptions& s,
                      Context& ctx);

} // namespace taskq::cli
