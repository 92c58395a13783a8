#pragma once

// Internal to storage/: every lock taskq takes, in one place, with
// SQLite's no-ops beside PostgreSQL's locks. SQLite's one writer
// (BEGIN IMMEDIATE) already excludes every other, so on SQLite each
// function here does nothing and row_lock() spells nothing; the one
// switch on the backend for locking is takes_row_locks().
//
// The order every PostgreSQL write transaction takes them in (so that two
// writers never wait for each other in a circle; doc/postgresql-rules.md):
//  1. the writers' advisory key, shared, at BEGIN (k_writers_key, in
//     k_begin_write, storage/pg/tx_sql.hpp); a migration takes its own key
//     (k_migration_key) exclusively, in a transaction of its own;
//  2. a flow's row (lock_flow), before the tasks its step changes;
//  3. tasks' rows in id order: several at once (lock_tasks, share_tasks),
//     or one (lock_task, row_lock() on a query of one row); a query that
//     locks many rows orders them by id (gates: by name).
// The follower of the event stream takes the writers' key exclusively in
// a transaction of its own, holding nothing else (writers_barrier_sql).
// Nothing here includes more than the seam: the backends read the keys.

#include "storage/seam/db.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage::detail {

// The advisory key every write transaction holds shared ("tskq" in ASCII,
// an arbitrary key): writers never wait for each other on it; taken
// exclusively, it waits until the writers in flight have ended.
inline constexpr int64_t k_writers_key = 1953721201;
// The key one migrating process holds exclusively.
inline constexpr int64_t k_migration_key = 1953721197;

// True where rules that read and then write hold by row locks
// (PostgreSQL); false where the one writer holds them (SQLite).
bool takes_row_locks(const Db& db);

// A query's locking clause (" FOR UPDATE", " FOR UPDATE OF tasks SKIP
// LOCKED"): `clause` on PostgreSQL, empty on SQLite. See "How each rule
// holds on PostgreSQL" in doc/architecture.md.
std::string_view row_lock(const Db& db, std::string_view clause);

// Locks task `id`'s row until the transaction ends, so that what is read
// of it next stays true until the commit: the caller decides on it and
// writes it.
void lock_task(Db& db, int64_t id);

// Locks the rows of tasks `ids` until the transaction ends, in id order,
// the order every writer that holds several tasks takes them in, in one
// statement: a caller about to move tasks it chose from an earlier read
// then reads them again, seeing what a writer committed meanwhile (a done,
// a lease), never overwriting it.
void lock_tasks(Db& db, std::vector<int64_t> ids);

// Holds the rows of tasks `ids` shared (FOR SHARE) until the transaction
// ends, one at a time in id order, each once.
void share_tasks(Db& db, std::vector<int64_t> ids);

// Locks the row of the flow that `link` (a task's flow column) names, so
// that two of its tasks ending at once step it one after the other, each
// seeing the other's step.
void lock_flow(Db& db, const std::string& link);

// A transaction of its own that takes the writers' key exclusively (at
// most 1 s) and ends at once: it returns once every write transaction in
// flight has ended (PostgreSQL only).
const std::string& writers_barrier_sql();

// Takes the migration key for the rest of the transaction (PostgreSQL).
void lock_migrations(Db& db);

} // namespace taskq::storage::detail
