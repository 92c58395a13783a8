// The part of `run`'s loop that both kinds of handler share (a process a
// task, worker/per_task_runner.hpp; persistent handlers,
// worker/stream_runner.hpp): the connection to the database server (a
// loss, the tries to connect again, the give-up past --reconnect-for), the
// signals that reach `run`, the stop and its grace, when to look for tasks
// (Looks, wake-when-due), and the summary. Written once here, driven by
// each runner's turn, and tested with a fake clock, a fake store and fake
// handlers (tests/worker/test_worker_loop.cpp).
#pragma once

#include "core/error.hpp"
#include "core/time.hpp"
#include "worker/lease_source.hpp"
#include "worker/policy.hpp"
#include "worker/reconnect.hpp"
#include "worker/run.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace taskq::worker {

// The loop's two clocks: the steady one its timers run on, and the wall
// clock the store's questions take (frozen by TASKQ_NOW).
class LoopClock {
public:
  virtual ~LoopClock() = default;
  virtual Instant steady() = 0;
  virtual core::Time wall() = 0;
};

// The store calls the loop makes itself; the handlers' kinds make their
// own (lease, outcomes, heartbeats) on the TaskStore.
class LoopStore {
public:
  virtual ~LoopStore() = default;
  // Whether a task of `run`'s queues is due at `now`: the read that tries
  // a lost server again. Throws ConnectionLost while it is away.
  virtual bool anything_due(core::Time now) = 0;
  // When the next task of `run`'s queues is due after `seen`, if any.
  virtual std::optional<core::Time> next_due(core::Time seen) = 0;
  // TaskStore::connection_losses and last_connection_loss.
  virtual uint64_t connection_losses() = 0;
  virtual std::string last_connection_loss() = 0;
  // Drains the change feed (a feed whose connection was lost LISTENs again
  // if its back-off allows); whether it had woken for a change that may
  // have taken a lease away (ChangeFeed::take_loud: on PostgreSQL, not
  // for quiet commits' wake-ups alone).
  virtual bool drain_feed() = 0;
  // No wait for the server goes on past `at` (storage::set_wait_limit).
  virtual void limit_waits(std::optional<Instant> at) = 0;
};

// What differs between the kinds of handler, as the loop asks it.
class Handlers {
public:
  virtual ~Handlers() = default;
  // Collects the handlers that ended (before a signal is acted on, so that
  // one that ended first is judged by how it ended).
  virtual void reap() = 0;
  // `run` stops (`signalled`: by a signal or a give-up, which say so on
  // stderr when handlers work; else --until-empty or --max-tasks): what
  // works gets until `kill_at` to finish, nothing new starts.
  virtual void stop(bool signalled, Instant kill_at) = 0;
  // A signal again while stopping: every handler is killed now.
  virtual void kill() = 0;
  // The server answers again at `now`: heartbeats due at once (a lease may
  // be near its end), outcomes kept written soon, leases checked.
  virtual void reconnected(Instant now) = 0;
  // The database changed before a look (an operator's message to a
  // running handler, say, that the wait will no longer report): leases
  // are checked.
  virtual void changed() = 0;
};

class Loop {
public:
  Loop(const RunOptions& o, LoopClock& clock, LoopStore& store,
       Handlers& handlers)
      : m_o(o), m_clock(clock), m_store(store), m_handlers(handlers),
        m_conn("run", o.reconnect_for) {}
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // At the head of each turn: a loss the store swallowed (a read whose
  // failure changed nothing) is handled as any; while the server is away,
  // it is tried again when the back-off says, and given up past
  // --reconnect-for.
  void check_connection();
  // The connection broke (`e`), or a call found it still broken: said
  // once, the next try backs off; past --reconnect-for, give_up.
  void lost(const ConnectionLost& e);
  // A signal reached `run` (worker::signal_asks): the handlers are reaped,
  // then it stops, or, when it stops already, kills them.
  void on_signal(int sig);
  // Stops (`signalled`: by a signal or a give-up, whose outcomes the
  // server did not take are tried again until the handlers' grace is
  // over, and no wait for the server goes on past it). Once only; a signal
  // after a stop of --until-empty still bounds the waits by the grace.
  void begin_stop(bool signalled);
  // A look for tasks to lease begins (Looks::begin): what changed before
  // it is looked at (Handlers::changed); what changes after it wakes the
  // next wait. Returns the one "now" of every question of this look, read
  // before them, so that a task is either due (the lease decides on the
  // time it takes the lock, no earlier than this) or due later (the
  // timer), never neither. std::nullopt when the look was only for what is
  // due (the database changed) and a read finds nothing due: then the
  // timer is set. A commit anywhere wakes every idle worker: the read
  // keeps them from all queueing for the write lock for nothing. `always`:
  // a look whatever is due (outcomes wait to be written with it).
  std::optional<core::Time> begin_look(bool always);
  // Sets the timer for the next time after `seen` that a task can become
  // eligible with no write to the database (a delay ending, a lease
  // expiring). Nothing while the server is away: the try that finds it
  // back makes a look.
  void wake_when_due(core::Time seen);

  // --max-tasks leased.
  bool max_reached() const {
    return m_o.max_tasks && m_summary.leased >= *m_o.max_tasks;
  }
  // Stopped by a signal (or a give-up) with outcomes the server did not
  // take: whether they are still tried at `now` (within the grace, and not
  // once --reconnect-for is over).
  bool writes_on(Instant now) const {
    return m_stopping && m_write_until && !m_summary.unreachable
           && now < *m_write_until;
  }
  bool stopping() const { return m_stopping; }
  bool down() const { return m_conn.down(); }
  // Whether a wait may connect the change feed's broken listener again
  // (worker/wait.hpp): not while the server is away, whose tries the
  // back-off decides, nor while stopping.
  bool may_relisten() const { return !m_stopping && !down(); }
  const std::optional<Instant>& write_until() const { return m_write_until; }
  // When the loop's wait ends at the latest for the connection's sake:
  // the next try, none once --reconnect-for is over.
  std::optional<Instant> next_try() const {
    return m_summary.unreachable ? std::nullopt : m_conn.next_try();
  }
  const std::string& why_down() const { return m_conn.why(); }

  Looks& looks() { return m_looks; }
  RunSummary& summary() { return m_summary; }
  const RunSummary& summary() const { return m_summary; }

private:
  void reconnect();
  // Past --reconnect-for: stops as on SIGTERM, to exit 5.
  void give_up();

  const RunOptions& m_o;
  LoopClock& m_clock;
  LoopStore& m_store;
  Handlers& m_handlers;
  Reconnect m_conn;
  Looks m_looks; // when to look for tasks to lease
  RunSummary m_summary;
  bool m_stopping = false;
  // Stopped by a signal: outcomes the server did not take are tried again
  // until then (the handlers' --grace).
  std::optional<Instant> m_write_until;
};

// What a look asks the store for: `run`'s queues, --match, --lease-for,
// as `worker`; the count and the tasks to skip are the look's.
storage::LeaseRequest lease_request(const RunOptions& o,
                                    const std::string& worker);

// The production seams: the steady clock and the host's wall clock; the
// TaskStore, its change feed and the run's queues.
class HostClock final : public LoopClock {
public:
  explicit HostClock(Host& host) : m_host(host) {}
  Instant steady() override { return Clock::now(); }
  core::Time wall() override { return m_host.live_now(); }

private:
  Host& m_host;
};

class StoreSeam final : public LoopStore {
public:
  StoreSeam(storage::TaskStore& store, storage::ChangeFeed& feed,
            const RunOptions& o, std::string worker)
      : m_store(store), m_feed(feed), m_o(o), m_worker(std::move(worker)) {}
  bool anything_due(core::Time now) override;
  std::optional<core::Time> next_due(core::Time seen) override;
  uint64_t connection_losses() override;
  std::string last_connection_loss() override;
  bool drain_feed() override;
  void limit_waits(std::optional<Instant> at) override;

private:
  storage::TaskStore& m_store;
  storage::ChangeFeed& m_feed;
  const RunOptions& m_o;
  std::string m_worker;
};

} // namespace taskq::worker
