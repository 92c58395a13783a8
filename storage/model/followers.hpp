#pragma once

// Internal to storage/: the helpers followers.cpp defines for the other store
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
#include <utility>
#include <vector>

namespace taskq::storage::detail {

// What follows a task's end: its dependents, gates, the label index
// (followers.cpp).
void settle_finished(Db& db, int64_t id, core::TaskState state, core::Time now);

// The same for a task whose labels, trigger and flow the caller has read,
// and, with `waited_for` false, that it has no dependents (load_full says).
void settle_finished(Db& db, int64_t id, const core::Labels& labels,
                     const std::optional<std::string>& trigger,
                     std::optional<std::string> flow, core::TaskState state,
                     core::Time now, bool waited_for = true);

// Where a new task's `after` list stands, read while adding it: the
// unfinished tasks it waits for, and the first one that already ended
// failed or killed (followers.cpp). On PostgreSQL each of them stays
// locked (shared) until the add commits, so that its end waits and then
// sees the new dependent.
struct Deps {
  std::vector<int64_t> unfinished;
  std::optional<std::pair<int64_t, core::TaskState>> broken;
};
Deps check_deps(Db& db, const std::vector<int64_t>& after);

} // namespace taskq::storage::detail
