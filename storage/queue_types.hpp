#pragma once

// Queues and workers as they are read: settings, stats, metrics, what
// `workers` and `top` show.
// Part of the TaskStore's interface (storage/task_store.hpp).

#include "core/schedule.hpp"
#include "core/task.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

// Per-queue settings (`queue set`); unset fields keep their value.
struct QueueSettings {
  std::optional<int64_t> max_running;
  std::optional<int64_t> max_attempts;
  core::PolicyOverrides policy;
};

struct QueueStats {
  std::string queue;
  int64_t runnable = 0, sleeping = 0, paused = 0, completed = 0, failed = 0,
          killed = 0;
  int64_t running = 0; // runnable with a live lease
  int64_t ready = 0;   // runnable or due sleeping, due, not leased
  int64_t delayed = 0; // runnable, not yet due
  std::optional<core::Millis> oldest_ready_age;
  int64_t completed_last_minute = 0, completed_last_hour = 0;
};

// What `metrics` reports of a queue: its stats, and its counters.
struct QueueMetrics {
  QueueStats stats;
  int64_t errors_total = 0;         // errors workers reported (fail)
  int64_t leases_expired_total = 0; // leases that ran out on their worker
};

// A queue's settings (`queue set`, `queue pause`) and its counts.
struct QueueInfo {
  std::string name;
  bool paused = false;
  std::optional<int64_t> max_running;
  std::optional<int64_t> max_attempts;
  core::PolicyOverrides policy;
  QueueStats stats; // zero counts when it has no tasks
  // When a worker last leased one of its tasks (their lease events; none
  // logged, or all purged: unset). Filled by TaskStore::queue only.
  std::optional<core::Time> last_lease;
};

// A worker seen recently (`taskq workers`), derived from its live leases
// and the events it logged (lease, complete, error): no worker row is
// kept, so a worker that only waits on an empty queue is not seen.
struct WorkerTask {
  int64_t id = 0;
  std::string queue;
  std::optional<core::Time> started_at; // its lease event
  core::Time expires_at;
};
struct WorkerInfo {
  std::string name;
  std::vector<WorkerTask> running; // live leases, by id
  core::Time last_seen;            // its latest event or heartbeat
  // The latest lease or heartbeat of its live leases (none: idle).
  std::optional<core::Time> last_heartbeat;
};

// What `taskq top` shows at one moment (TaskStore::top_view).
struct TopQueue {
  QueueStats stats;
  bool paused = false; // `queue pause`: it leases nothing
};
struct TopTask {
  core::Task task; // with its error history only among the failures
  // When its live lease began (its latest `lease` event); running only.
  std::optional<core::Time> leased_at;
  std::optional<std::string> last_error; // its latest error, if any
};
struct TopView {
  // Every queue with tasks or a row of settings, by name.
  std::vector<TopQueue> queues;
  // Unfinished tasks: the running ones by id, then the others newest first.
  std::vector<TopTask> tasks;
  std::vector<TopTask> failures; // failed tasks, the latest to fail first
};

} // namespace taskq::storage
