#pragma once

// Internal to storage/: the helpers open_store.cpp defines for the other store
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

// The backend's own part of `db check` (open_store.cpp): on SQLite,
// integrity_check's problems and how the schema differs from the
// migrations' go to `report`, with the schema version. False when the
// schema is not taskq's: the tables are not to be read then.
bool check_file(Db& db, CheckReport& report);

} // namespace taskq::storage::detail
