#pragma once

// Internal to storage/: the helpers flow_store.cpp defines for the other store
// files (each assumes a transaction is open on `db`). Private to storage/:
// included by the files that call them, never from outside storage/.

#include "core/flow.hpp"
#include "core/schedule.hpp"
#include "core/task.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage::detail {

// "flow N", as messages name a flow.
std::string flow_ref(int64_t id);

// Flow `id`'s compiled document (`compiled`, when the caller has it). A
// document never changes once submitted, so the model is compiled once per
// process and flow (a `run` process steps the same flow for each of its
// atoms' tasks); internal when a stored document no longer compiles.
std::shared_ptr<const core::flow::FlowModel>
model_of(int64_t id, const std::string& document,
         std::optional<core::flow::FlowModel> compiled = std::nullopt);

// An atom's task ended (completed, failed or killed): its flow takes its
// step. Runs just before the transaction commits (Db::defer), once every
// row of the task's end is written.
void flow_task_ended(Db& db, int64_t task_id, const std::string& flow,
                     core::TaskState state, core::Time now);

} // namespace taskq::storage::detail
