// `taskq run`, one handler process per task: leasing, starting handlers,
// their output, and the run loop (worker/per_task_runner.hpp).
#include "worker/per_task_runner.hpp"

namespace taskq::worker::per_task {

RunSummary Runner::run() {
  while (true) {
    try {
      m_loop.check_connection();
      if (m_loop.stopping()) {
        release_ahead();
      }
      if (!m_loop.down()) {
        write_unwritten();
        start_ahead();
        // Until it is full or finds nothing: no wake-up of its own
        // commits comes to say "look again" (a task that could not start
        // is recorded without one).
        while (m_loop.looks().look && can_take()) {
          take_work();
        }
      }
    } catch (const ConnectionLost& e) {
      m_loop.lost(e);
    }
    if (m_running.empty()) {
      // Outcomes kept for a server that is away are waited for, unless
      // `run` is stopping: then until the handlers' grace is over (a
      // signal's stop), and then they are said not recorded.
      const bool done =
          m_loop.stopping() || m_loop.max_reached()
          || (m_o.until_empty && !m_loop.looks().look && !m_loop.down());
      const bool write_on = m_loop.writes_on(Clock::now());
      if (done && (m_unwritten.empty() || (m_loop.stopping() && !write_on))) {
        break;
      }
    }
    try {
      wait_and_handle();
      finish_exited();
      look_if_changed_elsewhere();
    } catch (const ConnectionLost& e) {
      m_loop.lost(e);
    }
  }
  release_ahead();
  for (const Unwritten& u : m_unwritten) {
    worker::not_recorded(m_loop.summary(), u.task.id,
                         "the database server is out of reach");
  }
  m_unwritten.clear();
  return m_loop.summary();
}

bool Runner::can_take() const {
  return !m_loop.stopping() && !m_loop.down()
         && static_cast<int>(m_running.size()) < m_o.concurrency
         && !m_loop.max_reached();
}

void Runner::take_work() {
  const auto at = m_loop.begin_look(false);
  if (!at) {
    return;
  }
  const core::Time now = *at;
  const int want = room();
  m_request.count = want + ahead_wanted();
  // A task whose handler is still being stopped (an operator released
  // it, and the grace period runs) must not start a second handler.
  m_request.skip.clear();
  for (const auto& r : m_running) {
    m_request.skip.push_back(r.task.id);
  }
  std::vector<core::Task> tasks;
  try {
    tasks = m_store.lease(m_request, now);
  } catch (const ConnectionLost&) {
    // A lease whose commit is unknown is abandoned: if it was written,
    // it expires as a crashed worker's would.
    throw;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::unavailable) {
      throw;
    }
    // Locked past the busy timeout: say so, and try again shortly.
    std::fprintf(stderr, "taskq: run: %s; trying again in 1s\n", e.what());
    m_loop.looks().wake_at = Clock::now() + std::chrono::seconds(1);
    return;
  }
  const bool all = static_cast<int>(tasks.size()) >= want + ahead_wanted();
  start_or_keep(std::move(tasks), want);
  if (all) {
    m_loop.looks().look = true; // there may be more
    return;
  }
  m_loop.wake_when_due(now);
}

int Runner::room() const {
  int want = m_o.concurrency - static_cast<int>(m_running.size());
  if (m_o.max_tasks) {
    want = static_cast<int>(
        std::min<int64_t>(want, *m_o.max_tasks - m_loop.summary().leased));
  }
  return want;
}

int Runner::ahead_wanted() const {
  if (!m_ahead.wanted(m_loop.stopping(), m_o.max_tasks.has_value(),
                      m_o.lease_for)) {
    return 0;
  }
  return std::max(0, 1 - static_cast<int>(m_ahead.size()));
}

void Runner::start_or_keep(std::vector<core::Task> tasks, int now) {
  for (auto& t : tasks) {
    if (now > 0) {
      --now;
      start(std::move(t));
    } else {
      m_ahead.keep(std::move(t), Clock::now());
      m_ahead.hold_kept();
    }
  }
}

void Runner::start_ahead() {
  const auto can_start = [this] {
    return !m_ahead.empty() && !m_loop.stopping() && !m_loop.down()
           && static_cast<int>(m_running.size()) < m_o.concurrency;
  };
  if (!can_start()) {
    return;
  }
  // Another connection may have committed since these were leased (on
  // PostgreSQL that cannot be told without asking): the running tasks'
  // leases and these are checked in one read, which drops what lost its
  // lease, as after a wake-up (the next look included).
  if (m_changed_elsewhere || foreign_change()) {
    look_if_changed_elsewhere(true);
  }
  while (can_start()) {
    core::Task t = m_ahead.take();
    if (!LeaseAhead::expired(t, m_host.live_now())) {
      start(std::move(t));
    } // else another worker may hold it now
  }
}

bool Runner::ahead_dropped(const core::Task& t) {
  if (m_o.verbose) {
    say(t.id, "lease revoked before its handler started; not started");
  }
  return true;
}

void Runner::release_ahead() {
  if (m_ahead.empty()) {
    return;
  }
  // Never counted as leased: no result to count (one lost already is
  // another's).
  OutcomeBatch back;
  for (auto& o : m_ahead.give_back()) {
    back.add(std::move(o), false);
  }
  try {
    back.write(m_store, std::nullopt, m_host.live_now(), {});
    after_own_commit();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::conflict && e.kind() != ErrorKind::not_found
        && e.kind() != ErrorKind::unavailable) {
      throw;
    }
    // Locked (or deleted): its lease expires as a crashed worker's would.
  }
}

void Runner::start(core::Task t) {
  ++m_loop.summary().leased;
  const Instant now = Clock::now();
  const bool own = m_o.command.empty(); // the task's own command
  if (own && t.command.empty()) {
    // Not the task's fault that this run has nothing to run: but every
    // run like this one would fail it the same way.
    record(t,
           core::Outcome{core::Verdict::fail,
                         "task has no command and run was given no -- CMD"},
           now, nullptr, storage::FailMode::no_retry);
    return;
  }
  try {
    ChildSpec spec;
    spec.argv = own ? t.command : m_o.command;
    if (own) {
      const auto path = resolve_command(spec.argv.front());
      if (!path) {
        // Not found on this worker: every attempt here would fail the
        // same way, so it fails for good at once, not after the policy's
        // retries.
        record(t,
               core::Outcome{
                   core::Verdict::fail,
                   "cannot run " + spec.argv.front()
                       + ": no such executable file"
                       + (spec.argv.front().find('/') == std::string::npos
                              ? " on $PATH"
                              : "")},
               now, nullptr, storage::FailMode::no_retry);
        return;
      }
      spec.path = *path;
    } else {
      spec.path = m_o.command_path;
    }
    spec.env = child_environment(t, m_db_path, m_worker);
    spec.stdin_data = core::payload_text(t.payload);
    spec.capture_stdout = m_o.result_stdout || m_o.keep_output > 0 || m_o.tag;
    Running r;
    r.child = Child::spawn(spec);
    r.task = std::move(t);
    r.out_stream.spool = core::OutputSpool(m_o.keep_output);
    r.err_stream.spool = core::OutputSpool(m_o.keep_output);
    r.started = now;
    r.next_heartbeat = now + m_heartbeat_every;
    if (m_o.timeout) {
      r.deadline = now + *m_o.timeout;
    }
    if (m_o.verbose) {
      say(r.task.id,
          "started (attempt " + std::to_string(r.task.attempts) + ")"
              + (own ? ": " + core::command_line(r.task.command) : ""));
    }
    m_running.push_back(std::move(r));
  } catch (const Error& e) {
    // Could not even start: an error like any other, for the policy.
    record(t, core::Outcome{core::Verdict::fail, e.what()}, now);
  }
}

void Runner::say(int64_t id, const std::string& what) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string line;
  for (const char c : what) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\t' || c == '\r') {
      line += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
    } else if (byte < 0x20 || byte == 0x7f) {
      line += "\\x";
      line += k_hex[byte >> 4];
      line += k_hex[byte & 0xf];
    } else {
      line += c;
    }
  }
  std::fprintf(stderr, "%s taskq: task %lld: %s\n",
               core::format_time(m_host.live_now()).c_str(),
               static_cast<long long>(id), line.c_str());
}

void Runner::stop(Running& r, core::StopCause cause) {
  if (r.cause != core::StopCause::none && cause != core::StopCause::revoked) {
    return; // already stopping; a revocation still wins (nothing to write)
  }
  if (r.exit && cause != core::StopCause::revoked) {
    return; // it ended by itself: its exit decides
  }
  const bool first = r.cause == core::StopCause::none;
  r.cause = cause;
  if (first && !r.exit) {
    r.child.signal_group(SIGTERM);
    if (r.frozen_since) {
      r.child.signal_group(SIGCONT); // a stopped process cannot exit
    }
    r.kill_at = Clock::now() + m_o.grace;
  }
}

void Runner::wait_and_handle() {
  Wait wait(m_signals.fd(), m_feed, m_loop.may_relisten());
  for (auto& r : m_running) {
    for (const bool is_stdout : {false, true}) {
      if (const Fd& fd =
              is_stdout ? r.child.stdout_pipe() : r.child.stderr_pipe()) {
        wait.on(fd.get(), POLLIN,
                [this, &r, is_stdout] { read_pipe(r, is_stdout); });
      }
    }
  }

  if (can_take()) {
    wait.until(m_loop.looks().wake_at);
    wait.feed_fallback();
  }
  wait.until(m_loop.next_try());
  if (!m_unwritten.empty()) {
    wait.until(m_loop.write_until());
  }
  for (const auto& r : m_running) {
    if (!r.exit) {
      wait.until(r.next_heartbeat);
      if (r.cause == core::StopCause::none) {
        wait.until(r.deadline);
      }
      wait.until(r.kill_at);
    }
    wait.until(r.flush_at);
  }
  wait.until(m_ahead.until());
  wait.until(m_store.wake_due());
  wait.poll();
  m_store.wake_owed();
  const Instant now = Clock::now();

  if (wait.signalled()) {
    for (const int sig : m_signals.take()) {
      m_loop.on_signal(sig);
    }
  }
  bool db_changed = wait.db_changed(m_feed, now);
  if (db_changed && !foreign_change()) {
    db_changed = false; // our own commit: nothing new to see
  }
  if (db_changed) {
    m_loop.looks().changed();
    if (m_feed.take_loud()) { // quiet commits alone take no lease away
      check_leases();
    }
  }
  m_loop.looks().wake(now);
  wait.ready();
  on_timers(now);
}

void Runner::stop(bool signalled, Instant) {
  if (signalled && !m_running.empty()) {
    std::fprintf(stderr,
                 "taskq: run: stopping; %zu running task(s) get %s to "
                 "finish (signal again to kill them now)\n",
                 m_running.size(), core::format_duration(m_o.grace).c_str());
  }
  for (auto& r : m_running) {
    stop(r, core::StopCause::shutdown);
  }
}

void Runner::kill() {
  for (auto& r : m_running) {
    if (!r.exit) {
      r.child.signal_group(SIGKILL);
    }
  }
}

void Runner::reap() {
  reap_ended([this](pid_t pid, int status) {
    for (auto& r : m_running) {
      if (r.child.pid() == pid) {
        r.exit = exit_of(status);
      }
    }
  });
}

void Runner::after_own_commit() {
  if (m_feed.polling()) {
    return;
  }
  const bool woke = m_feed.drain();
  if (m_feed.skips_own() ? woke : foreign_change()) {
    m_changed_elsewhere = true;
  }
}

void Runner::look_if_changed_elsewhere(bool changed) {
  if (!m_changed_elsewhere && !changed) {
    return;
  }
  m_changed_elsewhere = false;
  m_loop.looks().changed();
  if (changed || m_feed.take_loud()) { // quiet commits take no lease away
    check_leases();
  }
}

void Runner::check_leases() {
  if (m_loop.down()) {
    return; // looked at when the server is back
  }
  // The running tasks' leases and those leased ahead, in one read.
  std::vector<Running*> running;
  std::vector<std::pair<int64_t, std::string>> leases;
  for (auto& r : m_running) {
    if (!r.exit && r.cause != core::StopCause::revoked) {
      running.push_back(&r);
      leases.emplace_back(r.task.id, r.task.lease->token);
    }
  }
  for (const auto& e : m_ahead.entries()) {
    leases.emplace_back(e.task.id, e.task.lease->token);
  }
  if (leases.empty()) {
    return;
  }
  std::vector<std::optional<bool>> frozen;
  try {
    frozen = m_store.leases_frozen(leases, m_host.live_now());
  } catch (const ConnectionLost& e) {
    m_loop.lost(e);
    return;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::unavailable) {
      throw;
    }
    m_feed.assume_loud(); // no answer: checked again on the next change
    return;
  }
  size_t i = 0;
  for (Running* r : running) {
    if (const auto& f = frozen[i++]) {
      set_frozen(*r, *f);
    } else {
      revoke(*r);
    }
  }
  // What was leased ahead and revoked since is dropped: never started.
  m_ahead.drop_if([&](const LeaseAhead::Entry& e) {
    return !frozen[i++] && ahead_dropped(e.task);
  });
}

void Runner::revoke(Running& r) {
  try {
    r.revoked_by =
        m_store.revoked_reason(r.task.id, r.task.lease->token).value_or("");
  } catch (const Error&) {
    // Only for the message: the handler is stopped all the same.
    r.revoked_by.clear();
  }
  if (m_o.verbose || r.revoked_by.empty()) {
    std::fprintf(stderr, "taskq: task %lld: lease %s; stopping its handler\n",
                 static_cast<long long>(r.task.id),
                 r.revoked_by.empty() ? "lost"
                                      : ("revoked by " + r.revoked_by).c_str());
  }
  stop(r, core::StopCause::revoked);
}

void Runner::read_pipe(Running& r, bool is_stdout) {
  Fd& fd = is_stdout ? r.child.stdout_pipe() : r.child.stderr_pipe();
  std::string data;
  const bool open = read_available(fd.get(), data);
  if (is_stdout && m_o.result_stdout) {
    if (r.out.size() + data.size() > k_max_result_bytes) {
      r.out_too_big = true;
    } else {
      r.out += data;
    }
  } else if (!data.empty()) {
    if (!is_stdout) {
      r.tail.append(data);
    }
    // The handler's stdout and stderr are the worker's: pass them on.
    pass_on(r, is_stdout, data, false);
  }
  if (!data.empty() && m_o.keep_output > 0) {
    Stream& st = is_stdout ? r.out_stream : r.err_stream;
    st.spool.append(data);
    if (!r.flush_at) {
      r.flush_at = Clock::now() + k_output_flush_every;
    }
    if (st.spool.pending() >= k_output_flush_bytes) {
      flush_output(r);
    }
  }
  if (!open) {
    fd.reset();
  }
}

void Runner::pass_on(Running& r, bool is_stdout, std::string_view data,
                     bool last) {
  std::FILE* to = is_stdout ? stdout : stderr;
  std::string text;
  if (!m_o.tag) {
    text.assign(data);
  } else {
    std::string& partial =
        (is_stdout ? r.out_stream : r.err_stream).partial_line;
    partial += data;
    const std::string tag = std::to_string(r.task.id) + "\t";
    size_t from = 0;
    while (true) {
      size_t nl = partial.find('\n', from);
      if (nl == std::string::npos) {
        if (partial.size() - from < k_max_tagged_line && !last) {
          break;
        }
        if (from == partial.size()) {
          break;
        }
        nl = partial.size();
        partial += '\n';
      }
      text += tag;
      text.append(partial, from, nl + 1 - from);
      from = nl + 1;
    }
    partial.erase(0, from);
  }
  if (!text.empty()) {
    [[maybe_unused]] const size_t n =
        std::fwrite(text.data(), 1, text.size(), to);
    std::fflush(to);
  }
}

} // namespace taskq::worker::per_task

namespace taskq::worker {

bool run_failed(const RunSummary& s, FailOn fail_on) {
  switch (fail_on) {
  case FailOn::failed:
    return s.failed > 0;
  case FailOn::retry:
    return s.failed + s.retrying > 0;
  case FailOn::never:
    return false;
  }
  return false;
}

std::string handler_db_path(const std::string& db_path) {
  if (storage::is_postgres_url(db_path)) {
    return db_path;
  }
  return std::filesystem::absolute(db_path).lexically_normal().string();
}

RunSummary run_worker(const RunOptions& o, Host& host) {
  storage::set_answer_timeout(answer_timeout_for(o.lease_for));
  storage::set_idle_transactions_ended(true);
  per_task::Runner runner(o, host);
  RunSummary summary = runner.run();
  storage::set_wait_limit(std::nullopt);
  return summary;
}

} // namespace taskq::worker
