#pragma once

// Flows as they are read and the requests an operator makes of them.
// Part of the TaskStore's interface (storage/task_store.hpp).

#include "core/schedule.hpp"
#include "core/task.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

// Flows (doc/flows.md). Times as stored; JSON values as their text.
struct FlowSummary {
  int64_t id = 0;
  std::string name;
  std::string state; // PENDING, RUNNING, ...
  core::Time created_at;
  core::Time updated_at;
};
struct FlowAtomInfo {
  std::string name;
  std::string kind; // task, retry
  std::string flow; // the (nested) flow that holds it
  std::string state;
  std::string intention;
  std::optional<int64_t> task;       // the task working for it now
  std::optional<std::string> result; // JSON text
  std::optional<std::string> failure;
  std::optional<std::string> history; // JSON text: a retry's history
  // The atoms (by name) that must finish before it runs: its direct
  // predecessors in the compiled graph, a subflow's controller among them.
  std::vector<std::string> preds;
};
struct FlowEventInfo {
  core::Time time;
  std::string name;
  std::string kind; // flow, task, retry
  std::string state;
  std::optional<std::string> result; // JSON text
};
struct FlowDetail {
  FlowSummary flow;
  std::string store; // JSON text
  std::vector<FlowAtomInfo> atoms;
  std::vector<FlowEventInfo> events; // oldest first
};
enum class FlowRequest { suspend, resume, rerun, rerun_reset };
// What became of a request: done, or ignored (changed nothing; `note`
// says why). A refused request throws conflict instead.
struct FlowReply {
  bool ignored = false;
  std::string note;
  std::string state; // the flow's state after it
};

} // namespace taskq::storage
