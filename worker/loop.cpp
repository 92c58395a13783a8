// The shared part of `run`'s loop (worker/loop.hpp).
#include "worker/loop.hpp"

#include "core/reconnect.hpp"
#include "storage/seam/server_wait.hpp"
#include "worker/supervise.hpp"

#include <algorithm>
#include <cstdio>

namespace taskq::worker {

void Loop::check_connection() {
  if (m_conn.unheard_loss(m_store.connection_losses())) {
    lost(ConnectionLost(m_store.last_connection_loss()));
  }
  if (m_conn.down()) {
    reconnect();
  }
}

void Loop::lost(const ConnectionLost& e) {
  const Instant now = m_clock.steady();
  // Said once; a call that finds the server still away counts as a try:
  // the next one backs off further (a call that waits out a signal's
  // allowance must not be followed at once by another).
  m_conn.lost(e, now);
  if (m_conn.gave_up(now)) {
    give_up();
  }
}

void Loop::reconnect() {
  const Instant now = m_clock.steady();
  if (m_conn.gave_up(now)) {
    give_up();
    return;
  }
  if (!m_conn.try_due(now)) {
    return;
  }
  try {
    m_store.anything_due(m_clock.wall()); // connects the store again first
  } catch (const ConnectionLost& e) {
    m_conn.lost(e, m_clock.steady());
    return;
  }
  m_conn.ok(m_clock.steady());
  m_store.drain_feed();
  m_looks.changed();
  m_handlers.reconnected(now);
}

void Loop::give_up() {
  if (m_summary.unreachable) {
    return;
  }
  m_summary.unreachable = m_conn.why();
  if (m_write_until) {
    return; // stopped by a signal already: its grace bounds the rest
  }
  if (m_conn.retries()) {
    std::fprintf(stderr,
                 "taskq: run: the database server stayed out of reach past "
                 "--reconnect-for; stopping\n");
  }
  m_handlers.reap();
  begin_stop(true);
}

void Loop::on_signal(int sig) {
  m_handlers.reap();
  switch (signal_asks(sig, m_stopping)) {
  case SignalAsks::reap:
    return;
  case SignalAsks::stop:
    begin_stop(true);
    return;
  case SignalAsks::kill:
    m_handlers.kill();
    return;
  }
}

void Loop::begin_stop(bool signalled) {
  const Instant kill_at = m_clock.steady() + m_o.grace;
  if (m_stopping) {
    if (signalled && !m_write_until) {
      // Already stopping (--until-empty, --max-tasks): the signal still
      // bounds the waits for the server by the grace.
      m_write_until = kill_at;
      m_store.limit_waits(m_write_until);
    }
    return;
  }
  m_stopping = true;
  if (signalled) {
    // Whatever the network does: no wait for the server goes on past the
    // handlers' grace (storage/seam/server_wait.hpp); until then outcomes the
    // server did not take are tried again.
    m_write_until = kill_at;
    m_store.limit_waits(m_write_until);
  }
  m_handlers.stop(signalled, kill_at);
}

std::optional<core::Time> Loop::begin_look(bool always) {
  const bool only_if_due = m_looks.begin();
  if (m_store.drain_feed()) {
    m_handlers.changed();
  }
  const core::Time now = m_clock.wall();
  if (!always && only_if_due && !m_store.anything_due(now)) {
    wake_when_due(now);
    return std::nullopt;
  }
  return now;
}

void Loop::wake_when_due(core::Time seen) {
  // While the server is away it is asked nothing but the back-off's tries
  // (reconnect, whose success owes a look anyway): a read here would be a
  // try outside the back-off, and with a stop signal pending it would
  // spend one more k_stop_allowance before the signal is acted on (an
  // outcome lost to a silence, then this read: run's SIGTERM took --grace
  // + 0.75 s, not + 0.5 s).
  if (m_conn.down()) {
    return;
  }
  if (const auto due = m_store.next_due(seen)) {
    const auto in = *due - m_clock.wall();
    m_looks.wake_at = m_clock.steady() + std::max(core::Millis{0}, in);
  }
}

storage::LeaseRequest lease_request(const RunOptions& o,
                                    const std::string& worker) {
  storage::LeaseRequest r;
  r.queues = o.queues;
  r.match = o.match;
  r.lease_for = o.lease_for;
  r.worker = worker;
  return r;
}

bool StoreSeam::anything_due(core::Time now) {
  return m_store.anything_due(m_o.queues, now, m_worker);
}

std::optional<core::Time> StoreSeam::next_due(core::Time seen) {
  return m_store.next_due(m_o.queues, seen);
}

uint64_t StoreSeam::connection_losses() {
  return m_store.connection_losses();
}

std::string StoreSeam::last_connection_loss() {
  return m_store.last_connection_loss();
}

bool StoreSeam::drain_feed() {
  return m_feed.drain() && m_feed.take_loud();
}

void StoreSeam::limit_waits(std::optional<Instant> at) {
  storage::set_wait_limit(at);
}

} // namespace taskq::worker
