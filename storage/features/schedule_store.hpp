#pragma once

// Internal to storage/: the helpers schedule_store.cpp defines for the other
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

// The stored form of a schedule, parsed back.
core::Schedule stored_schedule(const std::optional<std::string>& every,
                               const std::optional<std::string>& cron);

// Emits the due schedules of `queue` (of every queue when null); returns
// the new task ids.
std::vector<int64_t> emit_schedules(Db& db, const std::string* queue,
                                    core::Time now);

} // namespace taskq::storage::detail
