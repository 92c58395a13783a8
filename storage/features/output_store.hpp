#pragma once

// Internal to storage/: the helpers output_store.cpp defines for the other
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

// TaskStore::append_output's work, in the open write transaction.
void write_output(Db& db, const std::vector<OutputChunk>& chunks, int64_t keep);

} // namespace taskq::storage::detail
