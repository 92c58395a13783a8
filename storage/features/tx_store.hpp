#pragma once

// Internal to storage/: the helpers tx_store.cpp defines for the other store
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

// Deletes a task with its errors, events, dependency links and
// deliveries; an unfinished one first ends as killed.
void delete_task(Db& db, const core::Task& t, core::Time now);

} // namespace taskq::storage::detail
