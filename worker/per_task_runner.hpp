// The per-task engine of `run` (one handler process per task): its state,
// shared by worker/per_task*.cpp.
#pragma once

#include "core/bytes.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/handler_env.hpp"
#include "core/json_text.hpp"
#include "core/outcome.hpp"
#include "core/text.hpp"
#include "storage/seam/server_wait.hpp"
#include "worker/child.hpp"
#include "worker/lease_ahead.hpp"
#include "worker/lease_source.hpp"
#include "worker/lease_watch.hpp"
#include "worker/loop.hpp"
#include "worker/outcome.hpp"
#include "worker/policy.hpp"
#include "worker/reconnect.hpp"
#include "worker/run.hpp"
#include "worker/supervise.hpp"
#include "worker/wait.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <list>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace taskq::worker::per_task {

// What one stream of a handler printed: the part not stored yet, and with
// --tag the start of a line not passed on yet.
struct Stream {
  core::OutputSpool spool{0};
  std::string partial_line;
};

// One task whose handler is running.
struct Running {
  core::Task task;
  Child child;
  Instant started;
  Instant next_heartbeat;
  std::optional<Instant> deadline; // --timeout
  std::optional<Instant> kill_at;  // SIGKILL, once asked to stop
  core::StopCause cause = core::StopCause::none;
  std::string revoked_by; // the operator's message, when revoked
  core::OutputTail tail;
  std::string out; // stdout, with --result-stdout
  bool out_too_big = false;
  Stream out_stream; // kept (--keep-output) and tagged (--tag) output
  Stream err_stream;
  std::optional<Instant> flush_at;  // store what the spools hold
  storage::OutputWrite last_output; // what is left, with the outcome
  std::optional<core::ChildExit> exit;
  bool checkpoint_unheard = false; // said once that it would not be sent
  // Since when an operator's `freeze` holds its process group stopped
  // (SIGSTOP); the time frozen does not count toward --timeout.
  std::optional<Instant> frozen_since;
};

// A per-task handler's environment; what is too large for one is said on
// stderr and left out.
inline std::vector<std::string> child_environment(const core::Task& t,
                                                  const std::string& db_path,
                                                  const std::string& worker) {
  auto made = core::task_environment(
      t, core::inherited_environment(environ, core::HandlerKind::per_task),
      db_path, worker);
  for (const auto& left_out : made.left_out) {
    const std::string line = core::left_out_message(t.id, left_out);
    std::fputs(line.c_str(), stderr);
  }
  return std::move(made.env);
}

// The per-task kind of handler, driven by the shared Loop.
class Runner final : private Handlers {
public:
  Runner(const RunOptions& o, Host& host)
      : m_ahead(lease_ahead_hold()), m_o(o), m_host(host),
        m_store(host.store()), m_feed(m_store.changes()),
        m_db_path(handler_db_path(host.db_path())), m_worker(host.worker()),
        m_clock(host), m_seam(m_store, m_feed, o, m_worker),
        m_loop(o, m_clock, m_seam, *this) {
    m_request = lease_request(o, m_worker);
    m_heartbeat_every = heartbeat_every(o.lease_for);
  }

  ~Runner() override {
    // Only an error leaves the loop with handlers running: unwatched, they
    // would run on while their tasks are leased again once the leases
    // expire.
    for (auto& r : m_running) {
      if (!r.exit) {
        r.child.kill_and_wait();
      }
    }
  }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  RunSummary run();

private:
  // --- Handlers: what the Loop asks of them ---
  void reap() override;
  void stop(bool signalled, Instant kill_at) override;
  void kill() override;
  void reconnected(Instant now) override;
  void changed() override;

  bool can_take() const;

  void take_work();

  // Lease ahead (worker/lease_ahead.hpp): one task more than the free
  // slots take, leased with the last outcome, started when a handler ends.

  // How many more tasks may start now: the free handler slots, within
  // --max-tasks.
  int room() const;

  int ahead_wanted() const;

  // Starts the first `now` of `tasks`, keeps the rest ahead.
  void start_or_keep(std::vector<core::Task> tasks, int now);

  // Starts what was leased ahead into the free slots, if it is still ours.
  void start_ahead();

  // Says (with -v) that `t`, leased ahead, lost its lease before it
  // started; true, for drop_if.
  bool ahead_dropped(const core::Task& t);

  // Gives back what was leased ahead and not started (its attempt too).
  void release_ahead();

  void start(core::Task t);

  // A -v line: "TIME taskq: task ID: WHAT", TIME as RFC 3339 UTC.
  // One line whatever `what` holds (an error's stderr tail, a command's
  // words): control characters are written escaped, \n, \t, \r or \xNN.
  void say(int64_t id, const std::string& what);

  void stop(Running& r, core::StopCause cause);

  void wait_and_handle();

  // Whether another process has committed since the last look (always
  // true where the store cannot tell); if so, this look counts as made.
  bool foreign_change() { return changed_by_others(m_store, m_version); }

  // After our own commit: the feed's wake-up for it is taken now, and
  // what another process committed meanwhile is looked at all the same.
  // A feed that leaves out our own commits (PostgreSQL's) tells that
  // itself; another process's commit whose notification is still on its
  // way wakes the poll when it comes.
  void after_own_commit();

  // What after_own_commit found (or `changed`, a change known
  // otherwise): as a wake-up of the feed would.
  void look_if_changed_elsewhere(bool changed = false);

  // After any change to the database: has an operator taken a lease?
  void check_leases();

  void revoke(Running& r);

  void read_pipe(Running& r, bool is_stdout);

  // Writes what a handler printed to the worker's stdout or stderr; with
  // --tag, whole lines only, each after its task id (`last`: the handler
  // is done, so an unfinished line is ended).
  void pass_on(Running& r, bool is_stdout, std::string_view data, bool last);

  // What the spools of `r` hold, taken from them, as a write.
  storage::OutputWrite take_output(Running& r);

  // Stores what the spools of `r` hold. A database that stays locked keeps
  // it for the next flush (still bounded); any other error is the run's.
  void flush_output(Running& r);

  void on_timers(Instant now);

  void heartbeat(Running& r);
  // Stops (SIGSTOP) or continues (SIGCONT) the handler of `r` when an
  // operator's freeze or continue says so (`frozen`), once.
  void set_frozen(Running& r, bool frozen);

  void finish_exited();

  // A handler's outcome to write: how it ended, and, when it ran (not a
  // task that could not start), its Running.
  struct Pending {
    const core::Task* task;
    core::Outcome outcome;
    Instant started;
    Running* r = nullptr;
    storage::FailMode mode = storage::FailMode::policy;
  };

  // Writes a handler's outcome and counts it. A failure goes to the error
  // policy unless `mode` says otherwise; what the policy decided comes back
  // with the task `fail` returns (sleeping: a retry at its run_at).
  void record(const core::Task& t, const core::Outcome& outcome,
              Instant started, Running* r = nullptr,
              storage::FailMode mode = storage::FailMode::policy);

  // Writes the outcomes of `ps`, and leases per `next` when set, in one
  // transaction (OutcomeBatch): the done of the last task and the lease
  // of the next cost one commit. Returns what it leased.
  std::vector<core::Task> record_all(const std::vector<Pending>& ps,
                                     const std::optional<int>& next);

  storage::Outcome to_outcome(const Pending& p) const;

  std::string took(const Pending& p) const;

  // A handler stopped because its lease was taken: only its output is
  // stored.
  void record_revoked(const Pending& p);

  // An outcome that could not be written (`why`): nothing was, but its
  // attempt's output.
  void not_recorded(const Pending& p, const std::string& why);

  // --- a lost connection to the database server (worker/reconnect.hpp) ---
  // An outcome whose write the lost connection interrupted: kept, written
  // again once the server is back (the lease token makes a repeat of one
  // that had committed harmless: refused as "lease lost").
  struct Unwritten {
    core::Task task;
    storage::Outcome outcome;
    std::string error; // the handler's, for -v
    Instant started;
  };
  void write_unwritten();

  LeaseAhead m_ahead; // leased ahead, not started
  const RunOptions& m_o;
  Host& m_host;
  // Before the store: opening it may wait (a PostgreSQL server's connect,
  // LISTEN), and a SIGTERM meanwhile must end the run as it would later,
  // not kill it.
  SignalFeed m_signals;
  storage::TaskStore& m_store;
  storage::ChangeFeed m_feed;
  std::string m_db_path;
  std::string m_worker;
  HostClock m_clock;
  StoreSeam m_seam;
  // The connection, signals, stop, looks and summary (worker/loop.hpp).
  Loop m_loop;
  storage::LeaseRequest m_request;
  core::Millis m_heartbeat_every{};
  std::list<Running> m_running; // stable addresses for the poll owners
  // The store's others_version at the last look: a wake-up that finds it
  // unchanged was caused by our own commit.
  std::optional<int64_t> m_version;
  bool m_changed_elsewhere = false; // seen by after_own_commit
  std::vector<Unwritten> m_unwritten;
};

} // namespace taskq::worker::per_task
