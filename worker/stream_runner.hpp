// The `run --stream` engine (persistent handlers): its state, shared by
// worker/stream*.cpp.
#pragma once

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/handler_env.hpp"
#include "core/json_text.hpp"
#include "core/outcome.hpp"
#include "core/stream_protocol.hpp"
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
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace taskq::worker::streaming {

// A task written to a handler, until its outcome.
struct Held {
  core::Task task;
  Instant sent;
  std::optional<Instant> deadline; // --timeout
  // Cancelled (timed out, revoked): its outcome is settled, and the
  // handler is stopped unless it answers by then.
  std::optional<Instant> give_up_at;
};

struct Handler {
  int number = 0;
  Child proc;
  bool running = false;      // started and not reaped
  bool stdin_closed = false; // told to finish (EOF)
  bool stopped_by_us = false;
  std::string in_buf;       // not yet written to its stdin
  std::string out_buf;      // read from its stdout, not yet a whole line
  std::optional<Held> held; // the task it works on
  // With --prefetch: tasks written after `held`, waiting in its stdin, so
  // that it never waits for taskq between two tasks. Empty while `held`
  // is, except for a handler being stopped.
  std::deque<Held> ahead;
  Instant started;
  std::optional<Instant> restart_at;
  Restarts restarts; // its deaths in a row and restart back-off
};

// The persistent kind of handler, driven by the shared Loop.
class StreamRunner final : private Handlers {
public:
  StreamRunner(const RunOptions& o, const StreamOptions& s, Host& host)
      : m_queue(lease_ahead_hold()), m_o(o), m_s(s), m_host(host),
        m_store(host.store()), m_feed(m_store.changes()),
        m_worker(host.worker()), m_clock(host),
        m_seam(m_store, m_feed, o, m_worker),
        m_loop(o, m_clock, m_seam, *this) {
    m_request = lease_request(o, m_worker);
    m_heartbeat_every = heartbeat_every(o.lease_for);
    m_inherited =
        core::inherited_environment(environ, core::HandlerKind::stream);
    m_db_path = handler_db_path(host.db_path());
    m_handlers.resize(static_cast<size_t>(o.concurrency));
    // Group commit: a commit no longer waits for the disk; a task leased
    // in one waits for it before its handler sees it. With --prefetch too:
    // one worker gains little (its commits are batches already), but
    // SQLite's writers take turns on the WAL, and a commit that syncs
    // holds the turn through its sync (bench/stream's four workers).
    m_deferred = m_store.defer_sync();
  }

  ~StreamRunner() override {
    for (auto& h : m_handlers) {
      if (h.running) {
        h.proc.kill_and_wait();
      }
    }
  }
  StreamRunner(const StreamRunner&) = delete;
  StreamRunner& operator=(const StreamRunner&) = delete;

  RunSummary run();

private:
  void loop();

  // --- Handlers: what the Loop asks of them ---------------------------
  void reap() override;
  void stop(bool signalled, Instant kill_at) override;
  void kill() override;
  void reconnected(Instant now) override;
  void changed() override;

  // --- state -----------------------------------------------------------

  int free_handlers() const;

  // Nothing leased, nothing written to a handler, nothing to record.
  bool idle() const;

  static bool busy(const Handler& h);

  // How many tasks one handler may have waiting in its stdin behind the
  // one it works on: the prefetched tasks, shared among the handlers.
  int lookahead() const;

  int ahead_total() const;

  bool none_running() const;

  bool wants_more() const;

  bool flush_now() const;

  // --- leasing -----------------------------------------------------------

  // Leases what the handlers and the prefetch queue can take, with the
  // outcomes that wait when there are any (one transaction).
  void take_work();

  // Lease ahead (worker/lease_ahead.hpp), without --prefetch (it has its
  // own look-ahead): one task more than the free handlers take, written
  // to the handler that answers next the moment it answers, so that the
  // commit of that answer runs while the handler works.
  //
  // With group commit (SQLite), as many as keep the handler from waiting
  // for a sync (m_ahead_depth): the task written next was leased some
  // commits ago, and its sync ended while the handler worked on the ones
  // before it; a sync that takes longer than a task makes the next one
  // cover the commits made meanwhile, and the depth grow.
  int ahead_wanted() const;

  // How many tasks to lease now.
  int wanted() const;

  // --- handlers ------------------------------------------------------------

  void start(Handler& h);

  // Hands the leased tasks to the handlers: first one to each that has
  // none, then, with --prefetch, the rest in turn up to lookahead() each,
  // written behind the one it works on. One write per handler.
  void dispatch();

  // Drops from m_queue what lost its lease while it waited there (an
  // operator's kill or pause, an expiry): it must not reach a handler.
  // No read when no other connection has committed since the last look.
  void drop_revoked_ahead();

  // What was leased ahead and waited its hold goes back (its attempt too):
  // the handlers are slower than lease-ahead is for.
  void give_back_ahead();

  // What is leased and was never written to a handler goes back (its
  // attempt too), due at once. The summary counts it neither as leased
  // nor as released, as per-task `run` does what it leased ahead.
  void give_back_unsent();

  // The commit that leased m_queue's front (group commit); the last one
  // when there is none, which is never too early.
  uint64_t front_commit() const;

  // Whether m_queue's front may go to a handler now: its lease is on disk.
  // A task leased ahead that is not there yet makes lease-ahead deeper (see
  // ahead_wanted); the poll wakes when the sync ends (durable_fd).
  bool next_ready();

  // The next leased task, its line added to what `h` is to read.
  Held hand(Handler& h);

  // The task `id` of `h` is over: the next one written to it becomes the
  // one it works on; its --timeout (and a cancel's grace) starts now.
  void drop(Handler& h, int64_t id);

  // The task `id` written to `h` and not answered yet, or null.
  static Held* find_held(Handler& h, int64_t id);

  void send(Handler& h, const std::string& line);

  void write_some(Handler& h);

  void close_stdin(Handler& h);

  void cancel(Handler& h, Held& held, const std::string& reason);

  // Stops the handler's process group; its end is handled when reaped.
  void kill_handler(Handler& h);

  void ended(Handler& h, int status);

  // --- the handler's lines ---------------------------------------------

  void read_output(Handler& h);

  void on_line(Handler& h, std::string_view text);

  // A line about task `held` of `h` that is no outcome (`why`): the task
  // fails with the reason, unless it was cancelled.
  void malformed(Handler& h, Held& held, std::string_view line,
                 const std::string& why);

  // Task `id` is settled: a later line about it is ignored, not garbage.
  void settled(int64_t id);

  // The handler ended its task with `o`.
  void finish(Handler& h, storage::Outcome o);

  // A line that is not an outcome of the handler's task: the handler is
  // stopped, its task fails with the reason, and it is started again.
  void garbage(Handler& h, std::string_view line, const std::string& why);

  // --- the database ------------------------------------------------------

  // An outcome to write (OutcomeBatch::add).
  void outcome(storage::Outcome o, bool counted = true);

  // Writes the outcomes that wait, each checked against its lease.
  void flush();

  // One transaction: the outcomes that wait, then (with `lease`) the next
  // tasks.
  void write_batch(bool lease);

  // Counts an outcome written (`r`: what it did).
  void counted(const storage::Outcome& o, const storage::OutcomeResult& r);

  void heartbeat(Handler& h, Held& held,
                 const std::optional<std::string>& checkpoint);

  // Every lease this worker holds, extended; lost ones are revoked.
  void heartbeat_all();

  // After a change to the database: has an operator taken a lease?
  void check_leases(bool force);

  void revoke(Handler& h, Held& held);

  // Everything leased and not recorded goes back, due at once: at the end
  // of a run that stops, or when it fails.
  void give_back_all();

  // --- the loop's waits ----------------------------------------------------

  void wait_and_handle();

  void on_timers(Instant now);

  void say(const std::string& what);
  void say_task(int64_t id, const std::string& what);

  // Leased, not yet sent: leased ahead, or with --prefetch the tasks the
  // handlers' stdin takes next; each with the commit that leased it.
  LeaseAhead m_queue;
  const RunOptions& m_o;
  const StreamOptions& m_s;
  Host& m_host;
  SignalFeed m_signals; // before the store, as in worker/per_task.cpp
  storage::TaskStore& m_store;
  storage::ChangeFeed m_feed;
  std::string m_worker;
  HostClock m_clock;
  StoreSeam m_seam;
  // The connection, signals, stop, looks and summary (worker/loop.hpp):
  // while the server is away, handlers keep working, and their outcomes
  // wait in m_pending.
  Loop m_loop;
  std::vector<std::string> m_inherited; // of every handler's environment
  std::string m_db_path;                // TASKQ_DB
  storage::LeaseRequest m_request;
  core::Millis m_heartbeat_every{};
  std::vector<Handler> m_handlers;
  bool m_deferred = false;        // group commit (TaskStore::defer_sync)
  int m_ahead_depth = 2;          // ahead_wanted() with group commit
  int m_ahead_unwaited = 0;       // tasks handed since the depth last changed
  int64_t m_waited_for = 0;       // the last task that waited for its sync
  core::Millis m_answer_took{0};  // how long the last answer took
  OutcomeBatch m_pending;         // outcomes not yet written
  std::deque<int64_t> m_finished; // ids lately settled, for late lines
  std::optional<Instant> m_flush_at; // write m_pending by then
  Instant m_next_heartbeat;
  Instant m_last_check;
  Instant m_last_queue_check;
  std::optional<Instant> m_check_at;
  std::optional<Instant> m_stop_kill_at;
  bool m_queue_waited = false;      // m_queue was held across a poll
  std::optional<int64_t> m_version; // changed_by_others' last look
};

} // namespace taskq::worker::streaming
