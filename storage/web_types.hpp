#pragma once

// What the web view reads: pages of tasks, the history of a queue, the
// errors grouped. Each read is bounded, so that a page costs what it shows
// however many tasks and events the database holds; each result says when
// a bound cut it.
// Part of the TaskStore's interface (storage/task_store.hpp).

#include "core/task.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskq::storage {

// A text search (Selector::text) looks at no more than this many tasks:
// the newest that match the selector's queue and states.
inline constexpr int64_t k_text_candidates = 20000;

// A page (task_page) examines at most this many rows for the filters
// applied after the SQL (labels, the created range) before it stops: a
// page that stopped there holds fewer rows than asked, and its
// next_cursor goes on from where it stopped.
inline constexpr int64_t k_page_scan = 5000;

// Rows per page when the selector gives no limit, and the most a page
// holds whatever it asks.
inline constexpr int64_t k_page_rows = 50;
inline constexpr int64_t k_page_rows_max = 1000;

// What a page row holds of the task's payload, result and checkpoint: at
// most this many characters of their JSON text (a preview; show and find
// give the whole).
inline constexpr int64_t k_page_value_chars = 200;

// history() counts at most this many events of its day, the latest, and
// takes its percentiles' samples from the latest k_history_sample_events
// of them, at most k_history_samples of each kind (leases; workers' ends).
inline constexpr int64_t k_history_events = 20000;
inline constexpr int64_t k_history_sample_events = 4000;
inline constexpr int64_t k_history_samples = 1000;

// error_groups() reads at most this many errors, the latest.
inline constexpr int64_t k_error_rows = 5000;

// One page of tasks (TaskStore::task_page). Each task as list gives it,
// except that payload, result and checkpoint are cut to
// k_page_value_chars characters, and errors holds its latest error only.
struct TaskPage {
  std::vector<core::Task> tasks;
  // The text search met k_text_candidates: older tasks were not searched.
  bool text_bounded = false;
  // The id to pass as after_id (oldest first) or before_id (newest first)
  // for the next page; none: this is the last page.
  std::optional<int64_t> next_cursor;
};

// Per bucket of time: the tasks that completed, the tasks that failed
// (moved to `failed`), and the errors workers reported (failed attempts,
// retried or not).
struct HistoryBucket {
  core::Time start;
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t errors = 0;
};

// The 50th and 95th percentiles of a window's samples (none without
// samples), from at most k_history_samples of them, the latest.
struct Percentiles {
  std::optional<core::Millis> p50;
  std::optional<core::Millis> p95;
  int64_t samples = 0;
};

struct HistoryWindow {
  core::Time from;                    // the window is [from, now)
  core::Millis bucket{0};             // each bucket's length
  std::vector<HistoryBucket> buckets; // oldest first
  // Wait: from when a leased task became ready to its lease. Run: from a
  // lease to the worker's done or error.
  Percentiles wait;
  Percentiles run;
  // The window held more than k_history_events events: the counts start
  // at counted_from, and the buckets before it are undercounted.
  bool bounded = false;
  core::Time counted_from;
};

// A queue's (or every queue's) recent history, from the event log.
struct History {
  HistoryWindow hour; // 60 buckets of a minute
  HistoryWindow day;  // 48 buckets of half an hour
};

// The errors workers reported with one message (error_groups).
struct ErrorGroup {
  std::string message;
  int64_t count = 0;
  std::vector<std::string> queues; // sorted
  core::Time latest;
  std::vector<int64_t> sample_ids; // at most 10 tasks, the latest first
};

} // namespace taskq::storage
