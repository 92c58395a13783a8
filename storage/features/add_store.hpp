#pragma once

// Internal to storage/: the helpers add_store.cpp defines for the other store
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

// Adds one task with everything beside it (labels, dependencies); returns
// its id. Checks the combination of options (usage) and the dependencies
// (not_found).
int64_t insert_task(Db& db, const NewTask& t, core::Time now,
                    const std::string& actor);

// Why a dependent of `dep` is paused: "dependency N failed" (or "was
// killed").
std::string broken_dep_reason(int64_t dep, core::TaskState state);

// The first unfinished task other than `self` that has every label of
// `root`, if any: the task that makes a `--root` task obsolete.
std::optional<int64_t> obsoleted_by(Db& db, const core::Labels& root,
                                    int64_t self);

} // namespace taskq::storage::detail
