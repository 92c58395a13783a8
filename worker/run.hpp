// The engine of `taskq run`: its settings, what it needs of the command
// that runs it (Host), and its two modes: one handler process per task
// (run_worker, worker/per_task.cpp) and persistent handlers fed one task
// per line (run_stream, worker/stream.cpp).
#pragma once

#include "core/labels.hpp"
#include "core/task.hpp"
#include "core/time.hpp"
#include "storage/task_store.hpp"

#include <csignal>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskq::worker {

// What the engine needs of the command that runs it.
class Host {
public:
  virtual ~Host() = default;
  // The store, opened for updates at the first call (it may wait: a
  // PostgreSQL server's connect).
  virtual storage::TaskStore& store() = 0;
  // This worker's name (--worker, $TASKQ_WORKER, else HOSTNAME:PID).
  virtual std::string worker() const = 0;
  // The database as the user named it: a file path or a postgresql:// URL.
  virtual std::string db_path() const = 0;
  // Now, read afresh at each call unless frozen (TASKQ_NOW).
  virtual core::Time live_now() = 0;
  // A task as a `run --stream` handler reads it (its JSON form, as
  // `show -o json` prints it), without the newline.
  virtual std::string task_json(const core::Task& task, core::Time now) = 0;
};

// TASKQ_DB as a handler gets it: a file path made absolute, since the
// handler may change its directory; a URL as it is.
std::string handler_db_path(const std::string& db_path);

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
  // How long `run` keeps connecting again to a database server it lost
  // (--reconnect-for; std::nullopt: for ever; zero: not at all). Handlers
  // keep running meanwhile; past it, `run` stops as on SIGTERM and exits 5.
  std::optional<core::Millis> reconnect_for = core::Millis{5 * 60 * 1000};
};

// Which outcomes of the tasks a run ran make it exit k_exit_task_failed
// (`run --fail-on`).
enum class FailOn {
  failed, // a task failed for good
  retry,  // a handler failed at all: failed for good, or will retry (the
          // default: a cron job hears of the first error, not the eighth)
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
  // The ids of the failed and retrying ones, in the order they ended.
  std::vector<int64_t> failed_ids;
  std::vector<int64_t> retrying_ids;
  // Set when `run` stopped because the database server stayed out of
  // reach past --reconnect-for: why (the command then exits 5).
  std::optional<std::string> unreachable;
};

// Whether `s` counts as a failure under `fail_on`.
bool run_failed(const RunSummary& s, FailOn fail_on);

// The worker loop: leases from `o.queues`, runs the
// command once per task with up to `o.concurrency` at a time, heartbeats
// while they run, records how each ended, and stops a handler whose lease
// an operator revoked. Blocks on the database's change feed, never polls,
// while there is nothing to do. Returns when --until-empty finds nothing,
// --max-tasks is reached, or a signal asked it to stop: SIGTERM always,
// SIGINT and SIGHUP unless they were ignored when it started (a shell's
// background job, nohup).
RunSummary run_worker(const RunOptions& o, Host& host);

// What `run --stream` adds to RunOptions.
struct StreamOptions {
  // Tasks leased ahead, in one transaction, beyond those the handlers
  // hold; with more than 1, outcomes are also recorded in batches.
  int prefetch = 1;
  // With --prefetch: a batch of outcomes is written at most this long
  // after its first one.
  core::Millis flush = std::chrono::milliseconds(5);
};

// `taskq run QUEUE --stream -- CMD` (README "Persistent handlers"): starts
// CMD once per --concurrency and talks to it over a line protocol: one JSON
// task per line on its stdin, one JSON outcome per line on its stdout.
// Leases, heartbeats, the error policy, operator commands (a cancel line),
// timeouts, and handlers that die or answer garbage are taskq's business.
// Blocks on the change feed while there is nothing to do. Returns as
// run_worker does; throws Error(internal) when the handler keeps dying.
RunSummary run_stream(const RunOptions& o, const StreamOptions& s, Host& host);

} // namespace taskq::worker
