#pragma once

// Schedules and gates: what is asked for and what is read back.
// Part of the TaskStore's interface (storage/task_store.hpp).

#include "core/schedule.hpp"
#include "core/task.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

// A recurring schedule (`schedule add`), and the task it emits.
struct ScheduleSpec {
  std::string name;
  std::string queue;
  core::Schedule when;
  std::string payload = "null"; // JSON text
  core::Labels labels;
  int64_t priority = 0;
  // The gate keys each task it emits covers once completed: sorted, each
  // once, comma-joined (`add --trigger`'s stored form).
  std::optional<std::string> trigger;
};

struct ScheduleInfo {
  ScheduleSpec spec;
  bool paused = false;
  core::Labels sync; // carried to the next emitted task
  std::optional<int64_t> last_task;
  core::Time due_at; // the stored tick the next emission waits for
  core::Time created_at;
};

// A recurring barrier (`gate add`): once completed tasks with
// `--trigger K` (added, or emitted by a schedule) have covered each key, it
// emits its task and re-arms.
struct GateSpec {
  std::string name;
  std::string queue;
  std::vector<std::string> keys; // sorted, unique, not empty
  std::string payload = "null";  // JSON text
  core::Labels labels;
  int64_t priority = 0;
};

struct GateInfo {
  GateSpec spec;
  std::vector<std::string> covered; // keys covered since it last emitted
  int64_t emitted = 0;
  std::optional<int64_t> last_task;
  core::Time created_at;
};

} // namespace taskq::storage
