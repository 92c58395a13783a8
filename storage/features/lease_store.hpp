#pragma once

// Internal to storage/: the helpers lease_store.cpp defines for the other store
// files (each assumes a transaction is open on `db`). Private to storage/:
// included by the files that call them, never from outside storage/.

#include "core/schedule.hpp"
#include "core/task.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage::detail {

// TaskStore::lease's work, inside the caller's write transaction (`now`
// read once it holds the lock): shared by lease and apply_outcomes.
std::vector<core::Task> lease_in_tx(Db& db, const LeaseRequest& req,
                                    core::Time now);

} // namespace taskq::storage::detail
