#pragma once

// Internal to storage/: the helpers queue_store.cpp defines for the other store
// files (each assumes a transaction is open on `db`). Private to storage/:
// included by the files that call them, never from outside storage/.

#include "core/time.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage::detail {

// The per-queue counts of `stats` (of `queue`, or of all when null).
std::vector<QueueStats>
read_stats(Db& db, const std::optional<std::string>& queue, core::Time now);

// The assignment that starts the attempt limit's count afresh, keeping
// `attempts` (each run's number) as it is.
inline constexpr std::string_view k_restart_attempt_count =
    "attempts_base = attempts";

} // namespace taskq::storage::detail
