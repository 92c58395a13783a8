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

// How many tasks of `queue` hold a live lease.
int64_t count_running(Db& db, const std::string& queue, core::Time now);

// TaskStore::lease's work, inside the caller's write transaction (`now`
// read once it holds the lock): shared by lease and apply_outcomes.
std::vector<core::Task> lease_in_tx(Db& db, const LeaseRequest& req,
                                    core::Time now);

} // namespace taskq::storage::detail
