// The per-task engine: its timers, heartbeats, and the outcomes it records.
#include "worker/per_task_runner.hpp"

namespace taskq::worker::per_task {

void Runner::on_timers(Instant now) {
  if (!m_ahead.empty() && now >= m_ahead_since + m_ahead_hold) {
    m_quick = false; // handlers this slow gain nothing from it
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
    if (r.cause == core::StopCause::none && r.deadline && now >= *r.deadline) {
      stop(r, core::StopCause::timeout);
    }
    if (r.flush_at && now >= *r.flush_at) {
      flush_output(r);
    }
    if (now >= r.next_heartbeat) {
      r.next_heartbeat = now + m_heartbeat_every;
      if (r.cause != core::StopCause::revoked) {
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
    quick = quick && Clock::now() - r.started < m_ahead_hold;
    ++it;
  }
  if (done.empty()) {
    return;
  }
  m_quick = quick;
  // Their handlers are done: what room they leave, the same transaction
  // fills.
  const int left = static_cast<int>(m_running.size() - done.size());
  const bool lease = !m_stopping && left < m_o.concurrency && !max_reached();
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
  m_looks.now();
  if (!want) {
    return;
  }
  const bool all = static_cast<int>(leased.size()) >= *want + ahead;
  start_or_keep(std::move(leased), *want);
  if (!all) {
    // As take_work: nothing more now; look when something comes due.
    m_looks.look = false;
    wake_when_due(seen);
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
  std::vector<storage::Outcome> batch;
  std::vector<const Pending*> in_batch;
  for (const Pending& p : ps) {
    if (p.outcome.verdict == core::Verdict::none) {
      record_revoked(p);
    } else {
      batch.push_back(to_outcome(p));
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
  storage::BatchResult res;
  try {
    res = m_store.apply_outcomes(batch, lease, now);
    after_own_commit();
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
  for (size_t i = 0; i < in_batch.size(); ++i) {
    const auto& o = res.outcomes[i];
    if (o.task) {
      account(*in_batch[i], *o.task);
    } else {
      // The lease went between the last check and now, or the task was
      // deleted: the task is another holder's, or will be once the
      // lease expires.
      not_recorded(*in_batch[i], o.lost);
    }
  }
  return std::move(res.leased);
}

storage::Outcome Runner::to_outcome(const Pending& p) const {
  storage::Outcome o;
  o.id = p.task->id;
  o.token = p.task->lease->token;
  if (p.r != nullptr) {
    // Kept in r too: stored apart when the outcome is not written.
    o.output = p.r->last_output;
  }
  switch (p.outcome.verdict) {
  case core::Verdict::complete:
    o.kind = storage::Outcome::Kind::complete;
    if (m_o.result_stdout && p.r != nullptr) {
      o.result = result_from_stdout(p.r->out);
    }
    break;
  case core::Verdict::release:
    // Unfinished at shutdown: due at once, for another worker. A
    // handler's own 75: after --release-delay.
    o.kind = storage::Outcome::Kind::release;
    if (p.r == nullptr || p.r->cause != core::StopCause::shutdown) {
      o.delay = m_o.release_delay;
    }
    break;
  case core::Verdict::fail:
  case core::Verdict::none:
    o.kind = storage::Outcome::Kind::fail;
    o.fail.error = p.outcome.error;
    o.fail.mode = p.mode;
    break;
  }
  return o;
}

std::string Runner::took(const Pending& p) const {
  return core::format_duration(
      std::chrono::duration_cast<core::Millis>(Clock::now() - p.started));
}

void Runner::account(const Pending& p, const core::Task& after) {
  std::string what;
  switch (p.outcome.verdict) {
  case core::Verdict::complete:
    ++m_summary.completed;
    what = "completed (after " + took(p) + ")";
    break;
  case core::Verdict::release:
    ++m_summary.released;
    what = "released (after " + took(p) + ")";
    break;
  case core::Verdict::fail:
  case core::Verdict::none:
    what = " (after " + took(p) + "): " + p.outcome.error;
    if (after.state == core::TaskState::sleeping) {
      ++m_summary.retrying;
      if (!m_summary.retry_at || after.run_at < *m_summary.retry_at) {
        m_summary.retry_at = after.run_at;
      }
      what = "will retry at " + core::format_time(after.run_at) + what;
    } else {
      // Failed (or a broadcast's delivery, which is not retried).
      ++m_summary.failed;
      what = "failed for good" + what
             + (after.reason.empty() || after.reason == p.outcome.error
                    ? ""
                    : "; " + after.reason);
    }
    break;
  }
  if (m_o.verbose) {
    say(p.task->id, what);
  }
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
  ++m_summary.revoked;
  if (m_o.verbose) {
    say(p.task->id, "revoked (after " + took(p) + "): "
                        + (p.r != nullptr && !p.r->revoked_by.empty()
                               ? "an operator's " + p.r->revoked_by
                               : "lease lost"));
  }
}

void Runner::not_recorded(const Pending& p, const std::string& why) {
  ++m_summary.revoked;
  std::fprintf(stderr,
               "taskq: task %lld: %s; its outcome was not "
               "recorded\n",
               static_cast<long long>(p.task->id), why.c_str());
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

} // namespace taskq::worker::per_task
