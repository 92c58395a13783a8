#pragma once

// Internal to storage/: the helpers check_store.cpp defines for the other store
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

// The rules of the stored data that leasing and the state machine trust:
// `db check` counts what breaks them, and `import` refuses rows that do.
struct Invariant {
  std::string_view summary; // after a count, for db check
  std::string_view problem; // of one task, for import
};

// Calls `each(rule, task_id)` for every row that breaks a rule, rule by
// rule (a task may come more than once). `scope`: a JSON array of the task
// ids to look at; std::nullopt looks at every task.
void find_violations(
    Db& db, const std::optional<std::string>& scope,
    const std::function<void(const Invariant&, int64_t)>& each);

// The same for the rules of flows: `each(rule, flow_id)`; `scope`: a JSON
// array of flow ids. (Tasks whose `flow` link no atom answers are a rule
// of tasks, above.)
void find_flow_violations(
    Db& db, const std::optional<std::string>& scope,
    const std::function<void(const Invariant&, int64_t)>& each);

} // namespace taskq::storage::detail
