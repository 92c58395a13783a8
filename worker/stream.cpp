// `taskq run --stream`: long-lived handlers fed one task per line; leasing
// and handing tasks to them, starting and reaping them
// (worker/stream_runner.hpp).
#include "worker/stream_runner.hpp"

namespace taskq::worker::streaming {

RunSummary StreamRunner::run() {
  for (size_t i = 0; i < m_handlers.size(); ++i) {
    m_handlers[i].number = static_cast<int>(i) + 1;
    start(m_handlers[i]);
  }
  m_next_heartbeat = Clock::now() + m_heartbeat_every;
  try {
    loop();
  } catch (...) {
    // Whatever this worker holds goes back at once rather than when the
    // leases expire.
    give_back_all();
    throw;
  }
  if (!m_loop.down()) {
    flush();
  }
  if (m_loop.down()) {
    // Stopping without the server (or it went away as the last outcomes
    // were written): what waits is not recorded. A task
    // given back that was never counted as leased (leased ahead, never
    // started) is not reported: its lease just expires.
    for (size_t i = 0; i < m_pending.size(); ++i) {
      if (m_pending.counted(i)) {
        worker::not_recorded(m_loop.summary(), m_pending.outcomes()[i].id,
                             "the database server is out of reach");
      }
    }
    m_pending.clear();
    return m_loop.summary();
  }
  // What this run committed is on disk before it says it is done.
  m_store.wait_durable(m_store.commit_seq());
  return m_loop.summary();
}

void StreamRunner::loop() {
  while (true) {
    try {
      m_loop.check_connection();
      // What was leased ahead goes to the handler that just answered
      // before the commit of that answer: the handler works while it
      // commits.
      dispatch();
      if (!m_loop.stopping() && !m_loop.down() && m_loop.looks().look
          && wants_more()) {
        take_work();
      }
      dispatch();
      if (!m_loop.stopping() && idle() && !m_loop.looks().look && !m_loop.down()
          && (m_o.until_empty || m_loop.max_reached())) {
        m_loop.begin_stop(false);
      }
      if (!m_loop.stopping() && m_loop.max_reached() && idle()
          && !m_loop.down()) {
        m_loop.begin_stop(false);
      }
      // Stopped by a signal, outcomes the server did not take are tried
      // again until the handlers' grace is over.
      if (m_loop.stopping() && none_running()
          && (m_pending.empty() || !m_loop.down()
              || !m_loop.writes_on(Clock::now()))) {
        return;
      }
      if (!m_pending.empty() && !m_loop.down() && flush_now()) {
        flush();
        continue;
      }
      wait_and_handle();
    } catch (const ConnectionLost& e) {
      m_loop.lost(e);
    }
  }
}

void StreamRunner::reconnected(Instant now) {
  m_next_heartbeat = now; // a lease may be near its end by now
  if (!m_pending.empty()) {
    m_flush_at = now;
  }
  check_leases(true);
}

void StreamRunner::changed() {
  check_leases(true);
}

int StreamRunner::free_handlers() const {
  int n = 0;
  for (const auto& h : m_handlers) {
    n += !h.held && !h.stdin_closed ? 1 : 0;
  }
  return n;
}

bool StreamRunner::idle() const {
  if (!m_queue.empty() || !m_pending.empty()) {
    return false;
  }
  return std::none_of(m_handlers.begin(), m_handlers.end(),
                      [](const Handler& h) { return busy(h); });
}

bool StreamRunner::busy(const Handler& h) {
  return h.held.has_value() || !h.ahead.empty();
}

int StreamRunner::lookahead() const {
  return worker::lookahead(m_s.prefetch, m_o.concurrency);
}

int StreamRunner::ahead_total() const {
  size_t n = 0;
  for (const auto& h : m_handlers) {
    n += h.ahead.size();
  }
  return static_cast<int>(n);
}

bool StreamRunner::none_running() const {
  return std::none_of(m_handlers.begin(), m_handlers.end(),
                      [](const Handler& h) { return h.running; });
}

bool StreamRunner::wants_more() const {
  if (m_loop.max_reached()) {
    return false;
  }
  const auto queued = static_cast<int>(m_queue.size());
  if (queued < free_handlers() + ahead_wanted()) {
    return true;
  }
  return m_s.prefetch > 1
         && queued + ahead_total() < std::max(1, m_s.prefetch / 2);
}

bool StreamRunner::flush_now() const {
  FlushState f;
  f.prefetch = m_s.prefetch;
  f.stopping = m_loop.stopping();
  f.pending = m_pending.size();
  f.flush_at = m_flush_at;
  f.idle = m_queue.empty() && free_handlers() == m_o.concurrency;
  return flush_due(f, Clock::now());
}

void StreamRunner::take_work() {
  // Outcomes that wait are written with the lease, whatever is due.
  if (!m_loop.begin_look(!m_pending.empty())) {
    return;
  }
  write_batch(true);
}

int StreamRunner::ahead_wanted() const {
  if (m_s.prefetch > 1
      || !m_queue.wanted(m_loop.stopping(), m_o.max_tasks.has_value(),
                         m_o.lease_for)) {
    return 0;
  }
  if (!m_deferred) {
    return 1;
  }
  // No more than the handler gets through in half the hold.
  const auto half = m_queue.hold() / 2;
  const int fit = static_cast<int>(std::clamp<int64_t>(
      half.count() / std::max<int64_t>(1, m_answer_took.count()), 1,
      k_max_ahead));
  return std::min(m_ahead_depth, fit);
}

int StreamRunner::wanted() const {
  const auto queued = static_cast<int>(m_queue.size());
  int want = std::max(1, free_handlers() + ahead_wanted() - queued);
  if (m_s.prefetch > 1) {
    want = std::max(want, free_handlers() + m_s.prefetch - 1 - queued
                              - ahead_total());
  }
  if (m_o.max_tasks) {
    want = static_cast<int>(
        std::min<int64_t>(want, *m_o.max_tasks - m_loop.summary().leased));
  }
  return want;
}

void StreamRunner::start(Handler& h) {
  h.restart_at.reset();
  ChildSpec spec;
  spec.path = m_o.command_path;
  spec.argv = m_o.command;
  spec.env =
      core::stream_environment(m_inherited, m_db_path, m_worker, h.number);
  spec.stdin_pipe = true;
  spec.capture_stdout = true;
  spec.capture_stderr = false; // the worker's, as the protocol says
  h.proc = Child::spawn(spec);
  h.running = true;
  h.stdin_closed = false;
  h.stopped_by_us = false;
  h.in_buf.clear();
  h.out_buf.clear();
  h.started = Clock::now();
  if (m_o.verbose) {
    say("handler " + std::to_string(h.number) + " started (pid "
        + std::to_string(h.proc.pid()) + ")");
  }
}

void StreamRunner::dispatch() {
  if (m_s.prefetch <= 1 && m_queue_waited && !m_queue.empty()
      && std::any_of(m_handlers.begin(), m_handlers.end(),
                     [](const Handler& h) { return !h.held; })) {
    drop_revoked_ahead();
  }
  for (auto& h : m_handlers) {
    if (!h.running || h.stdin_closed || h.stopped_by_us) {
      continue;
    }
    if (m_loop.stopping()) {
      if (!busy(h)) {
        close_stdin(h);
      }
      continue;
    }
    if (!h.held && next_ready()) {
      h.held = hand(h);
    }
  }
  const auto ahead_max = static_cast<size_t>(lookahead());
  for (bool more = ahead_max > 0; more && next_ready();) {
    more = false;
    for (auto& h : m_handlers) {
      if (!next_ready()) {
        break;
      }
      if (h.running && !h.stdin_closed && !h.stopped_by_us && h.held
          && !h.held->give_up_at && h.ahead.size() < ahead_max) {
        h.ahead.push_back(hand(h));
        more = true;
      }
    }
  }
  for (auto& h : m_handlers) {
    if (!h.in_buf.empty()) {
      write_some(h);
    }
  }
}

void StreamRunner::drop_revoked_ahead() {
  m_queue_waited = false;
  const core::Time now = m_host.live_now();
  const Instant now_i = Clock::now();
  // Asked once, and only for a lease that is not fresh (below).
  std::optional<bool> others;
  // A database that does not answer: a lease lost meanwhile is found by
  // check_leases, and its handler told. So is one lost within
  // k_lease_check_every of its taking: a lease that fresh is not read
  // again (a round trip a task), its handler gets a cancel line as for a
  // task already sent.
  m_queue.drop_if([&](const LeaseAhead::Entry& e) {
    const bool fresh = now_i < e.leased + k_lease_check_every;
    if (!fresh && !others) {
      others = changed_by_others(m_store, m_version);
    }
    if (LeaseAhead::still_ours(m_store, e.task, now, !fresh && *others)) {
      return false;
    }
    ++m_loop.summary().revoked;
    if (m_o.verbose) {
      say_task(e.task.id, "lease lost before it was sent; dropped");
    }
    return true;
  });
}

void StreamRunner::give_back_ahead() {
  m_queue.set_quick(false);
  m_ahead_depth = 2;
  if (m_o.verbose) {
    for (const auto& e : m_queue.entries()) {
      say_task(e.task.id, "leased ahead and not sent within "
                              + core::format_duration(m_queue.hold())
                              + "; given back");
    }
  }
  give_back_unsent();
}

void StreamRunner::give_back_unsent() {
  for (auto& o : m_queue.give_back()) {
    --m_loop.summary().leased;
    outcome(std::move(o), false);
  }
}

uint64_t StreamRunner::front_commit() const {
  if (!m_queue.empty()) {
    return m_queue.front().commit;
  }
  return m_store.commit_seq();
}

bool StreamRunner::next_ready() {
  if (m_queue.empty()) {
    return false;
  }
  if (!m_deferred) {
    return true;
  }
  const uint64_t commit = front_commit();
  if (m_store.durable(commit)) {
    return true;
  }
  if (commit < m_store.commit_seq()
      && m_waited_for != m_queue.front().task.id) {
    m_waited_for = m_queue.front().task.id;
    m_ahead_depth = std::min(m_ahead_depth + 1, k_max_ahead);
    m_ahead_unwaited = 0;
  }
  return false;
}

Held StreamRunner::hand(Handler& h) {
  const uint64_t commit = front_commit();
  // Its lease is on disk before its handler sees it (group commit):
  // dispatch() waits for that without blocking; this makes sure. (Still
  // in m_queue if the sync failed: given back as run ends.)
  m_store.wait_durable(commit);
  core::Task t = m_queue.take();
  if (commit < m_store.commit_seq() && m_waited_for != t.id
      && ++m_ahead_unwaited >= k_ahead_settle && m_ahead_depth > 2) {
    // k_ahead_settle tasks leased ahead in a row were on disk by the
    // time they were wanted: one fewer is enough.
    --m_ahead_depth;
    m_ahead_unwaited = 0;
  }
  const Instant now = Clock::now();
  if (h.proc.stdin_pipe()) {
    h.in_buf += "{\"task\":";
    h.in_buf += m_host.task_json(t, m_host.live_now());
    h.in_buf += "}\n";
  }
  Held held{std::move(t), now, std::nullopt, std::nullopt};
  if (m_o.timeout && !h.held) {
    held.deadline = now + *m_o.timeout;
  }
  if (m_o.verbose) {
    say_task(held.task.id, "sent to handler " + std::to_string(h.number)
                               + " (attempt "
                               + std::to_string(held.task.attempts) + ")");
  }
  return held;
}

void StreamRunner::drop(Handler& h, int64_t id) {
  if (!h.held || h.held->task.id != id) {
    const auto it =
        std::find_if(h.ahead.begin(), h.ahead.end(),
                     [id](const Held& x) { return x.task.id == id; });
    if (it != h.ahead.end()) {
      h.ahead.erase(it);
    }
    return;
  }
  h.held.reset();
  if (h.ahead.empty()) {
    return;
  }
  h.held = std::move(h.ahead.front());
  h.ahead.pop_front();
  const Instant now = Clock::now();
  if (m_o.timeout && !h.held->give_up_at) {
    h.held->deadline = now + *m_o.timeout;
  }
  if (h.held->give_up_at) {
    h.held->give_up_at = now + m_o.grace;
  }
}

Held* StreamRunner::find_held(Handler& h, int64_t id) {
  if (h.held && h.held->task.id == id) {
    return &*h.held;
  }
  for (auto& x : h.ahead) {
    if (x.task.id == id) {
      return &x;
    }
  }
  return nullptr;
}

void StreamRunner::send(Handler& h, const std::string& line) {
  if (!h.proc.stdin_pipe()) {
    return;
  }
  h.in_buf += line;
  write_some(h);
}

void StreamRunner::write_some(Handler& h) {
  while (!h.in_buf.empty() && h.proc.stdin_pipe()) {
    const ssize_t n =
        ::write(h.proc.stdin_pipe().get(), h.in_buf.data(), h.in_buf.size());
    if (n > 0) {
      h.in_buf.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return; // the poll waits until it can take more
    }
    // EPIPE: it closed its stdin or died; its end is handled when it is
    // reaped.
    h.in_buf.clear();
    h.proc.stdin_pipe().reset();
    return;
  }
  if (h.in_buf.empty() && h.stdin_closed) {
    h.proc.stdin_pipe().reset();
  }
}

void StreamRunner::close_stdin(Handler& h) {
  if (h.stdin_closed) {
    return;
  }
  h.stdin_closed = true;
  if (h.in_buf.empty()) {
    h.proc.stdin_pipe().reset();
  }
}

void StreamRunner::cancel(Handler& h, Held& held, const std::string& reason) {
  held.give_up_at = Clock::now() + m_o.grace;
  held.deadline.reset();
  send(h,
       nlohmann::json{{"cancel", {{"id", held.task.id}, {"reason", reason}}}}
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
           + "\n");
}

void StreamRunner::kill_handler(Handler& h) {
  if (h.running && !h.stopped_by_us) {
    h.stopped_by_us = true;
    h.proc.signal_group(SIGKILL);
  }
}

void StreamRunner::reap() {
  reap_ended([this](pid_t pid, int status) {
    for (auto& h : m_handlers) {
      if (h.running && h.proc.pid() == pid) {
        ended(h, status);
      }
    }
  });
}

void StreamRunner::ended(Handler& h, int status) {
  // What it wrote before it ended still counts.
  if (h.proc.stdout_pipe()) {
    read_output(h);
  }
  // Whatever it started goes with it.
  h.proc.signal_group(SIGKILL);
  h.running = false;
  h.proc.stdin_pipe().reset();
  h.proc.stdout_pipe().reset();
  const bool asked = h.stopped_by_us || m_loop.stopping() || h.stdin_closed;
  const std::string how =
      WIFSIGNALED(status)
          ? "was killed by " + core::signal_name(WTERMSIG(status))
          : "exited " + std::to_string(WEXITSTATUS(status));
  if (busy(h)) {
    if (h.held && !h.held->give_up_at) {
      std::fprintf(stderr,
                   "taskq: handler %d %s while working on task %lld; the "
                   "task is released\n",
                   h.number, how.c_str(),
                   static_cast<long long>(h.held->task.id));
    }
    // The tasks written behind it go back too, unseen or not.
    std::deque<Held> gone = std::move(h.ahead);
    h.ahead.clear();
    if (h.held) {
      gone.push_front(std::move(*h.held));
      h.held.reset();
    }
    for (auto& held : gone) {
      if (!held.give_up_at) {
        outcome(released(held.task, std::nullopt));
      }
    }
  } else if (!asked) {
    std::fprintf(stderr, "taskq: handler %d %s\n", h.number, how.c_str());
  }
  if (m_loop.stopping()) {
    return;
  }
  const Instant now = Clock::now();
  if (h.stopped_by_us) {
    h.restart_at = now; // it ignored a cancel: a new one at once
    return;
  }
  const auto restart_at = h.restarts.died(h.started, now);
  if (!restart_at) {
    const auto& r = h.restarts;
    throw Error(
        ErrorKind::internal,
        "handler keeps dying (" + std::to_string(r.deaths) + " times in "
            + core::format_duration(
                std::chrono::duration_cast<core::Millis>(now - r.first_death))
            + " without an outcome): " + core::command_line(m_o.command));
  }
  h.restart_at = *restart_at;
}

} // namespace taskq::worker::streaming

namespace taskq::worker {

RunSummary run_stream(const RunOptions& o, const StreamOptions& s, Host& host) {
  storage::set_answer_timeout(answer_timeout_for(o.lease_for));
  storage::set_idle_transactions_ended(true);
  streaming::StreamRunner runner(o, s, host);
  RunSummary summary = runner.run();
  storage::set_wait_limit(std::nullopt);
  return summary;
}

} // namespace taskq::worker
