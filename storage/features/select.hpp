#pragma once

// Internal to storage/: the helpers select.cpp defines for the other store
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

// The tasks a selector names: ids (each must exist, not_found otherwise),
// or filters (select.cpp). Usage error for an unknown state, and for
// `erred` (last attempt failed, `list` only) unless `erred_ok`.
std::vector<core::Task> select_tasks(Db& db, const Selector& sel,
                                     core::Time now, bool erred_ok = false);

// One query of a selector's state (select.cpp): `?1` the queue,
// `?2` now, `?3` the state when `binds_state`, `?4` the limit.
struct SelectPart {
  std::string sql;
  bool binds_state = false;
};

std::vector<SelectPart> select_sqls(const Selector& sel,
                                    const std::string& state, bool limited);

// Loads, for each task among `tasks` with a lease (live or not), when that
// lease was taken (its latest `lease` event: lease_started) and its freezes
// since: whether an operator froze its command (frozen), since when
// (frozen_since), and for how long it was frozen before (frozen_for).
void load_lease_starts(Db& db, std::vector<core::Task>& tasks);

// Usage error for a name in `states` that is not a task state, `running`,
// `ready` or (when `erred_ok`: list's own) `erred`.
void check_states(const std::vector<std::string>& states,
                  bool erred_ok = false);

} // namespace taskq::storage::detail
