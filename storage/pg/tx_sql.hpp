// The fixed SQL of a PostgreSQL connection's transactions: how a write
// begins (its lock and its "now"), how a read begins, and how a write
// commits and wakes the waiting processes.
#pragma once

#include "core/time.hpp"
#include "storage/model/locks.hpp"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace taskq::storage::pg {

// Every write transaction holds this transaction-scoped advisory lock
// (k_writers_key, storage/model/locks.hpp) in SHARED mode: writers never
// wait for each other on it (each rule that reads and then writes holds by row
// locks or a constraint of its own). It stays as a barrier: a follower of
// the event stream takes the same key exclusively, which waits only until
// the write transactions in flight have ended.
// The server's time once the lock is held comes back in the same
// statement: the "now" of the transaction (server_now()). The inner
// SELECT (kept whole by OFFSET 0) takes the lock before the outer one
// reads the clock; with_schema_write() puts the transaction's settings in
// it too, so that a write begins with two statements, BEGIN and this.
inline const std::string k_begin_write =
    "BEGIN; SELECT CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) "
    "AS BIGINT) FROM (SELECT pg_advisory_xact_lock_shared("
    + std::to_string(detail::k_writers_key) + ") OFFSET 0) AS l";
// The server's clock alone, in the same milliseconds.
constexpr const char* k_clock_query =
    "SELECT CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS "
    "BIGINT)";
// What either query's clock reads, as a time.
inline core::Time parse_clock(std::string_view s) {
  int64_t ms = 0;
  std::from_chars(s.data(), s.data() + s.size(), ms);
  return core::Time(core::Millis(ms));
}
// Readers see one snapshot (export, list) and take no locks.
constexpr const char* k_begin_read = "BEGIN ISOLATION LEVEL REPEATABLE READ";
// A committed write that changed rows wakes the waiting processes
// (ChangeFeed). One that changed nothing (a lease that found no task)
// sends none: idle workers would otherwise wake each other for ever.
// A connection that woke them less than core::k_wake_every ago owes the
// wake-up instead (core/wake_throttle.hpp), sent alone by k_wake.
// The NOTIFY goes in a transaction of its own, in the same round trip
// right after the commit, not in the write's: PostgreSQL makes the
// commits of notifying transactions take turns (a database-wide lock held
// until the commit has been flushed to disk), which would have every
// writer of the fleet wait for each other's flush. The notifying
// transaction writes nothing to wait for (synchronous_commit off: losing
// a wake-up in a crash costs nothing, the waiters look again when they
// reconnect), so the turn it takes is short. The commit's own status is
// still read first (commit()). It is one statement, in the implicit
// transaction that a statement outside BEGIN gets: set_config(..., true)
// is that transaction's SET LOCAL (BEGIN, SET LOCAL, NOTIFY and COMMIT
// were four statements where this is one).
// A quiet write's wake-up (core::k_quiet_wake_every: a worker's outcomes
// and its next lease, and nothing that gives a waiting worker work or can
// take a lease away) says so in its payload, k_quiet_payload: a worker
// woken by quiet ones alone does not check its leases
// (ChangeFeed::take_loud). Every other write is loud, even one that takes
// nothing away (a heartbeat). A wake-up is quiet only when every commit
// that owed it was: a loud one still owed makes the next commit's loud.
inline constexpr char k_quiet_payload[] = "q";
constexpr const char* k_wake =
    "SELECT set_config('synchronous_commit', 'off', true), "
    "pg_notify('taskq', '')";
constexpr const char* k_wake_quiet =
    "SELECT set_config('synchronous_commit', 'off', true), "
    "pg_notify('taskq', 'q')";
constexpr const char* k_commit_write =
    "COMMIT; SELECT set_config('synchronous_commit', 'off', true), "
    "pg_notify('taskq', '')";
constexpr const char* k_commit_write_quiet =
    "COMMIT; SELECT set_config('synchronous_commit', 'off', true), "
    "pg_notify('taskq', 'q')";

} // namespace taskq::storage::pg
