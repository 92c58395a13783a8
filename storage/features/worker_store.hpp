#pragma once

// Internal to storage/: the helpers worker_store.cpp defines for the other
// store files (each assumes a transaction is open on `db`). Private to
// storage/: included by the files that call them, never from outside storage/.

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

// `done`: completes task `id` for the holder of `token` (or logs a
// broadcast delivery's done); `sync` goes to the task's schedule. Returns
// the task as written, or, with `reload` false, as it was checked.
core::Task complete_leased(Db& db, int64_t id, const std::string& token,
                           const std::optional<std::string>& result,
                           core::Time now, const core::Labels& sync,
                           bool reload = true);

} // namespace taskq::storage::detail
