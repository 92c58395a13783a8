#pragma once

// Internal to storage/: the helpers web_store.cpp defines for the other
// store files: the selector fields only a page reads, and the revision an
// operator's action from the web carries. Private to storage/:
// included by the files that call them, never from outside storage/.

#include "core/task.hpp"
#include "storage/task_store.hpp"

namespace taskq::storage::detail {

// Usage error when `sel` has a field only task_page reads (after_id,
// before_id, created_from, created_to, text): a command that selects
// tasks to act on or to list them otherwise would ignore it.
void check_page_only(const Selector& sel);

// Usage error when `sel` has expect_rev but does not name exactly one id,
// or expect_count but is not a filter's whole selection (ids, a limit or
// newest).
void check_expect_rev(const Selector& sel);

// Conflict "N tasks matched when you looked, M now" when `expect_count`
// is set and is not `n`, the number the action's transaction found.
void check_count(const std::optional<int64_t>& expect_count, int64_t n);

// Conflict "task N changed since you looked (revision R, now S)" when
// `expect_rev` is set and `task` (read with its row held) is at another
// revision.
void check_rev(const std::optional<int64_t>& expect_rev,
               const core::Task& task);

} // namespace taskq::storage::detail
