#pragma once

// Internal to storage/: the row helpers the TaskStore's source files share.
// Each assumes a transaction is open on `db`. Nothing outside storage/
// includes this header.

#include "core/schedule.hpp"
#include "core/state.hpp"
#include "core/task.hpp"
#include "storage/db.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage::detail {

// The states core::is_terminal names (completed, failed, killed) as a SQL
// list in parentheses, for `state NOT IN ...` (an unfinished task). The one
// spelling of them in storage/'s SQL (tests/source/written_once fails on
// another); the released migrations keep their own, as they never change.
inline const std::string& terminal_states_sql() {
  static const std::string list = [] {
    std::string out;
    for (const core::TaskState s : core::k_all_states) {
      if (core::is_terminal(s)) {
        out += (out.empty() ? "('" : ", '") + std::string(core::to_string(s))
               + "'";
      }
    }
    return out + ")";
  }();
  return list;
}

// The core names the store files use unqualified, through their `using
// namespace detail`.
using core::Message;
using core::Millis;
using core::Task;
using core::TaskState;
using core::Time;
using core::to_unix_ms;

// Tasks a bulk command (a bulk send, redrive, purge --force) reads and
// changes at a time, so its memory stays bounded however many it changes.
constexpr int64_t k_bulk_batch = 1000;

// The error history keeps at least this many of the latest errors.
inline constexpr int64_t k_error_history = 100;

// taskq's own decisions (error policy, attempt limit, expiry) are logged
// under this actor.
inline constexpr std::string_view k_system_actor = "taskq";

// The columns read_task reads, in its order.
inline constexpr std::string_view k_task_columns =
    "id, rev, queue, state, payload, labels, priority, attempts, "
    "max_attempts, run_at, created_at, updated_at, lease_token, "
    "lease_worker, lease_expires, checkpoint, checkpoint_req, result, "
    "reason, max_errors, error_window_ms, retry_delay_ms, backoff, "
    "max_delay_ms, retry_of, unique_key, after_ids, blockers, root, "
    "to_worker, broadcast_until, trigger_key, schedule, gate, sync, flow, "
    "command, attempts_base";
// How many they are: a column selected after them is this one.
inline constexpr int k_task_column_count = 38;

// The new unique_key of a task an UPDATE moves to the queue in parameter
// `param` (a dead-letter move, a redrive): its own, unless an unfinished
// task of that queue holds the key already (one holder per queue and key,
// migrations/0011_unique_index.sql); then none, as an upgrade leaves a
// duplicate's.
inline std::string unique_key_moved_to(int param) {
  return "CASE WHEN EXISTS (SELECT 1 FROM tasks AS holder WHERE "
         "holder.queue = ?"
         + std::to_string(param)
         + " AND holder.unique_key = tasks.unique_key AND holder.state NOT IN "
         + terminal_states_sql() + ") THEN NULL ELSE unique_key END";
}

} // namespace taskq::storage::detail

// The helpers, each declared beside the file that defines it.
#include "storage/add_store.hpp"
#include "storage/check_store.hpp"
#include "storage/flow_store.hpp"
#include "storage/followers.hpp"
#include "storage/lease_store.hpp"
#include "storage/open_store.hpp"
#include "storage/ops_store.hpp"
#include "storage/output_store.hpp"
#include "storage/read_store.hpp"
#include "storage/rows.hpp"
#include "storage/schedule_store.hpp"
#include "storage/tx_store.hpp"
#include "storage/web_store.hpp"
#include "storage/worker_store.hpp"
