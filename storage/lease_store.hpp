#pragma once

// Internal to storage/: the helpers lease_store.cpp defines for the other store
// files (each assumes a transaction is open on `db`). Included through
// storage/store_detail.hpp.

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

// Row locks, which only PostgreSQL needs and spells: SQLite's one writer
// already excludes every other. `clause` (" FOR UPDATE", " FOR UPDATE OF
// tasks SKIP LOCKED") on PostgreSQL, empty on SQLite. See "How each rule
// holds on PostgreSQL" in doc/architecture.md.
std::string_view row_lock(const Db& db, std::string_view clause);

// Locks task `id`'s row until the transaction ends (PostgreSQL; nothing
// on SQLite), so that what is read of it next stays true until the
// commit: the caller decides on it and writes it.
void lock_task(Db& db, int64_t id);

// Makes the expired leases of `queue` plain unleased tasks again, back in
// the ready index, each logged and counted (storage/lease_expiry.cpp).
void reclaim_expired(Db& db, const std::string& queue, core::Time now);

// How many tasks of `queue` hold a live lease.
int64_t count_running(Db& db, const std::string& queue, core::Time now);

// TaskStore::lease's work, inside the caller's write transaction (`now`
// read once it holds the lock): shared by lease and apply_outcomes.
std::vector<core::Task> lease_in_tx(Db& db, const LeaseRequest& req,
                                    core::Time now);

} // namespace taskq::storage::detail
