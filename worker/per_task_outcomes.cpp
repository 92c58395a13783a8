// The per-task engine: its timers, heartbeats, the output it stores, the
// outcomes it records, and riding out a lost connection to the server.
#include "worker/per_task_runner.hpp"

namespace taskq::worker::per_task {

void Runner::on_timers(Instant now) {
  if (m_ahead.over(now)) {
    m_ahead.set_quick(false); // handlers this slow gain nothing from it
    release_ahead();
  }
  for (auto& r : m_running) {
    if (r.exit) {
      continue;
    }
    if (r.kill_at && now >= *r.kill_at) {
      r.child.signal_group(SIGKILL);
      r.kill_at.reset();
    }
    if (r.cause == core::StopCause::none && r.deadline && !r.frozen_since
        && now >= *r.deadline) {
      stop(r, core::StopCause::timeout);
    }
    if (r.flush_at && now >= *r.flush_at) {
      flush_output(r);
    }
    if (now >= r.next_heartbeat) {
      r.next_heartbeat = now + m_heartbeat_every;
      // While the server is away, the heartbeat is sent once it is back.
      if (r.cause != core::StopCause::revoked && !m_loop.down()) {
        heartbeat(r);
      }
    }
  }
}

void Runner::heartbeat(Running& r) {
  const auto beat = worker::heartbeat(m_store, r.task, m_o.lease_for,
                                      std::nullopt, m_host.live_now());
  if (beat.kind == Beat::Kind::lost) {
    revoke(r);
    return;
  }
  if (beat.kind == Beat::Kind::extended) {
    // A freeze or continue whose change this worker did not see.
    try {
      if (const auto frozen = m_store.lease_frozen(
              r.task.id, r.task.lease->token, m_host.live_now())) {
        set_frozen(r, *frozen);
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::unavailable) {
        throw;
      }
    }
  }
  if (beat.kind == Beat::Kind::extended && beat.result.checkpoint_requested) {
    if (catches_signal(r.child.pid(), m_o.checkpoint_signal)) {
      r.child.signal_leader(m_o.checkpoint_signal);
    } else if (!r.checkpoint_unheard) {
      r.checkpoint_unheard = true;
      std::fprintf(stderr,
                   "taskq: task %lld: a checkpoint was requested, but "
                   "its handler does not catch %s; not sent\n",
                   static_cast<long long>(r.task.id),
                   core::signal_name(m_o.checkpoint_signal).c_str());
    }
  }
}

void Runner::set_frozen(Running& r, bool frozen) {
  if (frozen == r.frozen_since.has_value() || r.exit
      || r.cause != core::StopCause::none) {
    return; // as asked already, or ending: a stopping handler is not frozen
  }
  r.child.signal_group(frozen ? SIGSTOP : SIGCONT);
  const Instant now = Clock::now();
  if (frozen) {
    r.frozen_since = now;
  } else {
    if (r.deadline) {
      *r.deadline += now - *r.frozen_since; // frozen time is not run time
    }
    r.frozen_since.reset();
  }
  if (m_o.verbose) {
    say(r.task.id,
        frozen ? "frozen (SIGSTOP), lease kept" : "continued (SIGCONT)");
  }
}

void Runner::finish_exited() {
  std::vector<Pending> done;
  bool quick = true;
  for (auto it = m_running.begin(); it != m_running.end();) {
    if (!it->exit) {
      ++it;
      continue;
    }
    Running& r = *it;
    // What the handler wrote before it exited is in the pipes; a
    // background process it left may hold them open, so do not wait
    // for end of file.
    if (r.child.stderr_pipe()) {
      read_pipe(r, false);
    }
    if (r.child.stdout_pipe()) {
      read_pipe(r, true);
    }
    if (m_o.tag) {
      pass_on(r, true, "", true);
      pass_on(r, false, "", true);
    }
    // Stored with the outcome, in its transaction: one write per task,
    // and whoever sees the attempt end (logs --follow) finds all of it.
    r.flush_at.reset();
    r.last_output = take_output(r);
    if (r.cause != core::StopCause::none) {
      // Whatever the stopped handler started goes with it.
      r.child.signal_group(SIGKILL);
    }
    core::Outcome outcome =
        core::judge(*r.exit, r.cause, m_o.timeout, r.tail.text());
    if (outcome.verdict == core::Verdict::complete && r.out_too_big) {
      outcome = {core::Verdict::fail,
                 "stdout exceeds the 16 MiB a result may hold"};
    }
    done.push_back(Pending{&r.task, outcome, r.started, &r});
    quick = quick && m_ahead.within(Clock::now() - r.started);
    ++it;
  }
  if (done.empty()) {
    return;
  }
  m_ahead.set_quick(quick);
  // Their handlers are done: what room they leave, the same transaction
  // fills.
  const int left = static_cast<int>(m_running.size() - done.size());
  const bool lease = !m_loop.stopping() && !m_loop.down()
                     && left < m_o.concurrency && !m_loop.max_reached();
  // Those still running are skipped by the lease: the finished ones are
  // not, they are written first.
  std::vector<Running*> ended;
  for (const Pending& p : done) {
    ended.push_back(p.r);
  }
  std::list<Running> finished;
  for (auto e = m_running.begin(); e != m_running.end();) {
    auto next = std::next(e);
    if (std::find(ended.begin(), ended.end(), &*e) != ended.end()) {
      finished.splice(finished.end(), m_running, e);
    }
    e = next;
  }
  // What was leased ahead starts first: its handler runs while the
  // outcomes are written.
  start_ahead();
  std::optional<int> want;
  if (lease) {
    want = std::max(0, room());
  }
  const int ahead = want ? ahead_wanted() : 0;
  const core::Time seen = m_host.live_now();
  std::vector<core::Task> leased =
      record_all(done, want && *want + ahead > 0 ? std::optional(*want + ahead)
                                                 : std::nullopt);
  finished.clear();
  m_loop.looks().now();
  if (!want) {
    return;
  }
  const bool all = static_cast<int>(leased.size()) >= *want + ahead;
  start_or_keep(std::move(leased), *want);
  if (!all) {
    // As take_work: nothing more now; look when something comes due.
    m_loop.looks().look = false;
    m_loop.wake_when_due(seen);
  }
}

void Runner::record(const core::Task& t, const core::Outcome& outcome,
                    Instant started, Running* r, storage::FailMode mode) {
  std::vector<Pending> one{Pending{&t, outcome, started, r, mode}};
  record_all(one, std::nullopt);
}

std::vector<core::Task> Runner::record_all(const std::vector<Pending>& ps,
                                           const std::optional<int>& next) {
  const core::Time now = m_host.live_now();
  OutcomeBatch batch;
  std::vector<const Pending*> in_batch;
  for (const Pending& p : ps) {
    if (p.outcome.verdict == core::Verdict::none) {
      record_revoked(p);
    } else {
      batch.add(to_outcome(p));
      in_batch.push_back(&p);
    }
  }
  std::optional<storage::LeaseRequest> lease;
  if (next) {
    m_request.count = *next;
    m_request.skip.clear();
    for (const auto& r : m_running) {
      m_request.skip.push_back(r.task.id);
    }
    lease = m_request;
  }
  size_t i = 0;
  std::vector<core::Task> leased;
  try {
    if (m_loop.down()) {
      throw ConnectionLost(m_loop.why_down());
    }
    leased = batch.write(
        m_store, lease, now,
        [&](const storage::Outcome& o, const storage::OutcomeResult& r) {
          const Pending& p = *in_batch[i++];
          const std::optional<core::Task> after =
              r.task ? r.task : recorded_before(m_store, o, m_worker);
          if (!after) {
            // The lease went between the last check and now, or the task
            // was deleted: the task is another holder's, or will be once
            // the lease expires.
            not_recorded(p, r.lost);
            return;
          }
          const Tally t = tally(m_loop.summary(), o.kind, *after);
          if (m_o.verbose) {
            say(p.task->id, tally_words(t, *after, p.outcome.error,
                                        " (after " + took(p) + ")", true));
          }
        });
    after_own_commit();
  } catch (const ConnectionLost& e) {
    // Kept, and written again once the server is back; a lease asked for
    // in the same transaction is abandoned (if it committed, it expires).
    for (const Pending* p : in_batch) {
      m_unwritten.push_back(
          Unwritten{*p->task, to_outcome(*p), p->outcome.error, p->started});
    }
    if (!m_loop.down()) {
      m_loop.lost(e);
    }
    return {};
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::conflict && e.kind() != ErrorKind::not_found
        && e.kind() != ErrorKind::unavailable) {
      throw;
    }
    // The database stayed locked (or the task was deleted): nothing
    // was written.
    for (const Pending* p : in_batch) {
      not_recorded(*p, e.what());
    }
    return {};
  }
  return leased;
}

storage::Outcome Runner::to_outcome(const Pending& p) const {
  storage::Outcome o;
  switch (p.outcome.verdict) {
  case core::Verdict::complete:
    o = completed(*p.task, m_o.result_stdout && p.r != nullptr
                               ? std::optional(result_from_stdout(p.r->out))
                               : std::nullopt);
    break;
  case core::Verdict::release:
    // Unfinished at shutdown: due at once, for another worker. A
    // handler's own 75: after --release-delay.
    o = released(*p.task,
                 p.r == nullptr || p.r->cause != core::StopCause::shutdown
                     ? std::optional(m_o.release_delay)
                     : std::nullopt);
    break;
  case core::Verdict::fail:
  case core::Verdict::none: {
    storage::FailRequest req;
    req.error = p.outcome.error;
    req.mode = p.mode;
    o = failed(*p.task, std::move(req));
    break;
  }
  }
  if (p.r != nullptr) {
    // Kept in r too: stored apart when the outcome is not written.
    o.output = p.r->last_output;
  }
  return o;
}

std::string Runner::took(const Pending& p) const {
  return core::format_duration(
      std::chrono::duration_cast<core::Millis>(Clock::now() - p.started));
}

void Runner::record_revoked(const Pending& p) {
  const storage::OutputWrite no_output;
  const storage::OutputWrite& output =
      p.r != nullptr ? p.r->last_output : no_output;
  try {
    m_store.append_output(output.chunks, output.keep);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::unavailable) {
      throw;
    }
    std::fprintf(stderr, "taskq: task %lld: storing its output: %s\n",
                 static_cast<long long>(p.task->id), e.what());
  }
  ++m_loop.summary().revoked;
  if (m_o.verbose) {
    say(p.task->id, "revoked (after " + took(p) + "): "
                        + (p.r != nullptr && !p.r->revoked_by.empty()
                               ? "an operator's " + p.r->revoked_by
                               : "lease lost"));
  }
}

void Runner::not_recorded(const Pending& p, const std::string& why) {
  worker::not_recorded(m_loop.summary(), p.task->id, why);
  if (p.r == nullptr) {
    return;
  }
  try {
    m_store.append_output(p.r->last_output.chunks,
                          p.r->last_output.keep); // still its attempt's
  } catch (const Error&) {
    // Only the output: the outcome's failure is said above.
  }
}

// --- a handler's output, stored while it runs ---------------------------

storage::OutputWrite Runner::take_output(Running& r) {
  storage::OutputWrite w;
  w.keep = m_o.keep_output;
  for (Stream* st : {&r.out_stream, &r.err_stream}) {
    if (st->spool.empty()) {
      continue;
    }
    auto [offset, data] = st->spool.take();
    storage::OutputChunk c;
    c.task = r.task.id;
    c.attempt = r.task.attempts;
    c.stream = st == &r.out_stream ? "stdout" : "stderr";
    c.offset = offset;
    c.data = std::move(data);
    w.chunks.push_back(std::move(c));
  }
  return w;
}

void Runner::flush_output(Running& r) {
  r.flush_at.reset();
  storage::OutputWrite w = take_output(r);
  std::vector<storage::OutputChunk>& chunks = w.chunks;
  if (chunks.empty()) {
    return;
  }
  try {
    if (m_loop.down()) {
      throw ConnectionLost(m_loop.why_down());
    }
    m_store.append_output(chunks, m_o.keep_output);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::unavailable) {
      throw;
    }
    if (const auto* gone = dynamic_cast<const ConnectionLost*>(&e)) {
      if (!m_loop.down()) {
        m_loop.lost(*gone); // said once, not per flush
      }
    } else {
      std::fprintf(stderr, "taskq: task %lld: storing its output: %s\n",
                   static_cast<long long>(r.task.id), e.what());
    }
    for (auto& c : chunks) {
      (c.stream == "stdout" ? r.out_stream : r.err_stream)
          .spool.put_back(c.offset, std::move(c.data));
    }
    r.flush_at = Clock::now() + std::chrono::seconds(1);
  }
}

// --- a lost connection to the database server -----------------------------

void Runner::reconnected(Instant now) {
  for (auto& r : m_running) {
    r.next_heartbeat = now; // a lease may be near its end by now
    if (r.flush_at) {
      r.flush_at = now;
    }
  }
  check_leases();
}

void Runner::changed() {
  check_leases();
}

void Runner::write_unwritten() {
  if (m_unwritten.empty()) {
    return;
  }
  OutcomeBatch batch;
  for (const Unwritten& u : m_unwritten) {
    batch.add(u.outcome);
  }
  size_t i = 0;
  try {
    batch.write(
        m_store, std::nullopt, m_host.live_now(),
        [&](const storage::Outcome& o, const storage::OutcomeResult& r) {
          const Unwritten& u = m_unwritten[i++];
          // Refused by its token: perhaps written already, its COMMIT's
          // answer lost with the connection (recorded_before).
          const std::optional<core::Task> after =
              r.task ? r.task : recorded_before(m_store, o, m_worker);
          if (!after) {
            worker::not_recorded(m_loop.summary(), u.task.id, r.lost);
            return;
          }
          const Tally t = tally(m_loop.summary(), o.kind, *after);
          if (m_o.verbose) {
            say(u.task.id,
                tally_words(t, *after, u.error,
                            " (after "
                                + core::format_duration(
                                    std::chrono::duration_cast<core::Millis>(
                                        Clock::now() - u.started))
                                + ")",
                            true));
          }
        });
    after_own_commit();
  } catch (const ConnectionLost&) {
    throw; // kept for the next time the server is back
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::conflict && e.kind() != ErrorKind::not_found
        && e.kind() != ErrorKind::unavailable) {
      throw;
    }
    for (const Unwritten& u : m_unwritten) {
      worker::not_recorded(m_loop.summary(), u.task.id, e.what());
    }
  }
  m_unwritten.clear();
}

} // namespace taskq::worker::per_task
