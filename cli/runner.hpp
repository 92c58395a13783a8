#pragma once

#include "cli/context.hpp"
#include "core/labels.hpp"
#include "core/time.hpp"

#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskq::cli {

// `taskq run`'s settings, parsed and checked.
struct RunOptions {
  std::vector<std::string> queues;
  core::Millis lease_for = std::chrono::minutes(5);
  int concurrency = 1;
  std::optional<int64_t> max_tasks;
  bool until_empty = false;
  std::optional<core::Millis> timeout;
  core::Millis grace = std::chrono::seconds(10);
  // A task whose handler exits 75 is due again after this long, so that
  // `run` does not hand it straight back to the same busy handler.
  core::Millis release_delay = std::chrono::seconds(10);
  bool result_stdout = false;
  // Each attempt's stdout and stderr are stored, the last this many bytes
  // of each (0: none), flushed while the handler runs (`taskq logs`).
  int64_t keep_output = 1024 * 1024;
  // Prefix each line the handler prints (stdout passed through, stderr)
  // with its task id and a tab, as `parallel --tag`; stored output is not.
  bool tag = false;
  std::vector<core::LabelPattern> match;
  int checkpoint_signal = SIGUSR1;
  bool verbose = false;
  // `-- CMD [ARG...]`: the program run for every task. Empty: each task's
  // own command (`add QUEUE -- CMD`), looked up on $PATH when it starts; a
  // task without one fails for good.
  std::string command_path;         // the resolved executable
  std::vector<std::string> command; // argv, as the user gave it
};

// Which outcomes of the tasks a run ran make it exit k_exit_task_failed
// (`run --fail-on`).
enum class FailOn {
  failed, // a task failed for good (the default)
  retry,  // a handler failed at all: failed for good, or will retry
  never,  // exit 0 whatever the handlers did
};

struct RunSummary {
  int64_t leased = 0;
  int64_t completed = 0;
  int64_t failed = 0;   // failed for good: the error policy gave up
  int64_t retrying = 0; // failed, and sleeping until a retry
  std::optional<core::Time> retry_at; // the first of those retries
  int64_t released = 0; // given back: exit 75, or unfinished at shutdown
  int64_t revoked = 0;  // an operator took the lease, or it was lost
};

// Whether `s` counts as a failure under `fail_on`.
bool run_failed(const RunSummary& s, FailOn fail_on);

// The summary line `run` prints, e.g. "leased 4: 2 completed, 1 failed for
// good, 1 will retry at 2026-11-24T11:00:00Z, 0 released, 0 revoked" (with
// several retries: "3 will retry (first at TIME)").
std::string summary_line(const RunSummary& s);

// The worker loop (SPEC §3 "Working"): leases from `o.queues`, runs the
// command once per task with up to `o.concurrency` at a time, heartbeats
// while they run, records how each ended, and stops a handler whose lease
// an operator revoked. Blocks on the database's change feed, never polls,
// while there is nothing to do. Returns when --until-empty finds nothing,
// --max-tasks is reached, or a signal asked it to stop: SIGTERM always,
// SIGINT and SIGHUP unless they were ignored when it started (a shell's
// background job, nohup).
RunSummary run_worker(const RunOptions& o, Context& ctx);

} // namespace taskq::cli
