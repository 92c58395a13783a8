// The engine's policy constants, one place for both modes of `run` (one
// process per task, and --stream's persistent handlers): how often a held
// lease is renewed and checked, how long a poll waits, when output is
// stored, and how a stream handler that keeps dying is restarted.
#pragma once

#include "core/time.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace taskq::worker {

using Clock = std::chrono::steady_clock;
using Instant = Clock::time_point;

// --- leases ----------------------------------------------------------------

// A held lease is renewed at a third of its length (at least every
// millisecond), so that two heartbeats may be lost before it expires.
inline core::Millis heartbeat_every(core::Millis lease_for) {
  return std::max(core::Millis{1}, lease_for / 3);
}

// How long `run` waits for the database server's answer before it counts
// the connection as lost (storage/seam/server_wait.hpp): within a heartbeat's
// period, so that a silent network is noticed, and a fresh connection
// made, before the lease lapses; at least a second, at most the one-shot
// commands' bound.
inline core::Millis answer_timeout_for(core::Millis lease_for) {
  return std::clamp(lease_for / 3, core::Millis{1000}, core::Millis{30 * 1000});
}

// How long a task leased ahead of the handlers is held before it goes
// back: TASKQ_LEASE_AHEAD_MS, this by default, at most k_max_lease_ahead.
inline constexpr core::Millis k_default_lease_ahead{250};
inline constexpr core::Millis k_max_lease_ahead{3'600'000};

// --stream: leases are checked against the database at most this often
// while the database changes (each of our own commits changes it too).
inline constexpr auto k_lease_check_every = std::chrono::milliseconds(20);
// Prefetched tasks (up to K of them, a read each: not yet written, or
// waiting behind the one in hand) less often: most have not started, and
// a lease lost meanwhile only makes its outcome refused.
inline constexpr auto k_queue_check_every = std::chrono::milliseconds(250);
// With group commit, how many tasks lease-ahead holds at most, and after
// how many tasks handed without waiting for their sync it holds one less.
inline constexpr int k_max_ahead = 8;
inline constexpr int k_ahead_settle = 32;

// --- polls -----------------------------------------------------------------

// The timeout of a poll(2) that waits at most until `until` (forever
// without one), in whole milliseconds rounded up, never negative.
// (Defined in wait.cpp, not inline: GCC 12 at -O1 with the sanitizers
// warned that the empty optional's time was read when it was inlined.)
int poll_timeout(Instant now, const std::optional<Instant>& until);

// --- a per-task handler's output ------------------------------------------

// The most --result-stdout keeps; a handler that prints more fails.
inline constexpr size_t k_max_result_bytes = 16 * 1024 * 1024;
// Output is stored at least this often while a handler prints, and as soon
// as this much waits, so that `logs --follow` shows it live without a
// write per line.
inline constexpr auto k_output_flush_every = std::chrono::milliseconds(200);
inline constexpr size_t k_output_flush_bytes = 256 * 1024;
// With --tag, a line longer than this is passed on in parts.
inline constexpr size_t k_max_tagged_line = 64 * 1024;

// --- a stream handler's restarts ----------------------------------------

// A handler that dies this many times in k_dying_window without an
// outcome in between ends the run.
inline constexpr int k_max_deaths = 3;
inline constexpr auto k_dying_window = std::chrono::seconds(10);
// Restart back-off: none at first, then this, doubling up to the cap; a
// handler that lived k_healthy starts again without one.
inline constexpr auto k_first_backoff = std::chrono::seconds(1);
inline constexpr auto k_max_backoff = std::chrono::seconds(60);
inline constexpr auto k_healthy = std::chrono::seconds(60);

} // namespace taskq::worker
