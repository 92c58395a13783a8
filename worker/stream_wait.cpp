// The --stream engine: its wait, and its timers.
#include "worker/stream_runner.hpp"

namespace taskq::worker::streaming {

void StreamRunner::wait_and_handle() {
  Wait wait(m_signals.fd(), m_feed, m_loop.may_relisten());
  // A task that waits for its lease's sync goes out when the sync ends.
  const int synced_fd = !m_queue.empty() && !m_store.durable(front_commit())
                            ? m_store.durable_fd()
                            : -1;
  const size_t synced =
      synced_fd >= 0 ? wait.add(synced_fd, POLLIN) : wait.size();
  for (auto& h : m_handlers) {
    if (h.proc.stdout_pipe()) {
      wait.on(h.proc.stdout_pipe().get(), POLLIN, [this, &h] {
        if (h.proc.stdout_pipe()) {
          read_output(h);
        }
      });
    }
    if (h.proc.stdin_pipe() && !h.in_buf.empty()) {
      wait.on(h.proc.stdin_pipe().get(), POLLOUT,
              [this, &h] { write_some(h); });
    }
  }
  if (!m_loop.stopping() && wants_more()) {
    wait.until(m_loop.looks().wake_at);
    wait.feed_fallback();
  }
  if (!m_pending.empty() && !m_loop.down()) {
    wait.until(m_flush_at);
  }
  wait.until(m_loop.next_try());
  wait.until(m_check_at);
  if (!idle()) {
    wait.until(m_next_heartbeat);
  }
  wait.until(m_queue.until());
  m_queue_waited = m_queue_waited || !m_queue.empty();
  if (m_loop.stopping()) {
    wait.until(m_stop_kill_at);
    if (!m_pending.empty()) {
      wait.until(m_loop.write_until());
    }
  }
  for (const auto& h : m_handlers) {
    wait.until(h.restart_at);
    if (h.held) {
      wait.until(h.held->deadline);
      wait.until(h.held->give_up_at);
    }
  }
  wait.until(m_store.wake_due());
  wait.poll();
  m_store.wake_owed();
  if (wait.signalled()) {
    for (const int sig : m_signals.take()) {
      m_loop.on_signal(sig);
    }
  }
  if (synced_fd >= 0 && (wait.revents(synced) & POLLIN) != 0) {
    uint64_t syncs = 0;
    [[maybe_unused]] const ssize_t n = ::read(synced_fd, &syncs, sizeof syncs);
  }
  wait.ready();
  const Instant now = Clock::now();
  const bool db_changed = wait.db_changed(m_feed, now);
  if (db_changed) {
    m_loop.looks().changed();
  }
  // Woken by quiet commits alone (other workers' outcomes and leases), no
  // lease can have been taken away: the leases are not checked for them.
  if (db_changed && m_feed.take_loud()) {
    check_leases(false);
  } else if (m_check_at && now >= *m_check_at) {
    check_leases(true);
  }
  m_loop.looks().wake(now);
  on_timers(now);
}

void StreamRunner::on_timers(Instant now) {
  if (m_queue.over(now)) {
    give_back_ahead();
  }
  for (auto& h : m_handlers) {
    if (h.held && h.held->deadline && now >= *h.held->deadline) {
      Held& held = *h.held;
      const std::string why =
          "timed out after " + core::format_duration(*m_o.timeout);
      storage::FailRequest req;
      req.error = why;
      settled(held.task.id);
      outcome(failed(held.task, std::move(req)));
      std::fprintf(stderr,
                   "taskq: task %lld: %s; cancelling it in handler "
                   "%d\n",
                   static_cast<long long>(held.task.id), why.c_str(), h.number);
      cancel(h, held, why);
    }
    if (h.held && h.held->give_up_at && now >= *h.held->give_up_at) {
      std::fprintf(stderr,
                   "taskq: handler %d did not answer the cancel of task "
                   "%lld within %s; stopping it\n",
                   h.number, static_cast<long long>(h.held->task.id),
                   core::format_duration(m_o.grace).c_str());
      h.held->give_up_at = Instant::max();
      kill_handler(h);
    }
    if (h.restart_at && now >= *h.restart_at && !h.running
        && !m_loop.stopping()) {
      start(h);
    }
  }
  if (m_loop.stopping() && m_stop_kill_at && now >= *m_stop_kill_at) {
    m_stop_kill_at.reset();
    for (auto& h : m_handlers) {
      kill_handler(h);
    }
  }
  if (now >= m_next_heartbeat) {
    m_next_heartbeat = now + m_heartbeat_every;
    if (!m_loop.down()) { // else sent once the server is back
      heartbeat_all();
    }
  }
}

void StreamRunner::say(const std::string& what) {
  std::fprintf(stderr, "%s taskq: %s\n",
               core::format_time(m_host.live_now()).c_str(), what.c_str());
}

void StreamRunner::say_task(int64_t id, const std::string& what) {
  say("task " + std::to_string(id) + ": " + what);
}

} // namespace taskq::worker::streaming
