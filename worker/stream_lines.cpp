// The --stream engine: the lines its handlers write, the outcomes it
// writes (group commit), its leases watched, and how it stops.
#include "worker/stream_runner.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace taskq::worker::streaming {

void StreamRunner::read_output(Handler& h) {
  std::string data;
  const bool open = read_available(h.proc.stdout_pipe().get(), data);
  h.out_buf += data;
  size_t from = 0;
  while (true) {
    const size_t nl = h.out_buf.find('\n', from);
    if (nl == std::string::npos) {
      break;
    }
    const std::string_view line(h.out_buf.data() + from, nl - from);
    from = nl + 1;
    on_line(h, line);
    if (h.stopped_by_us) {
      h.out_buf.clear(); // being stopped: what follows is not read
      return;
    }
  }
  h.out_buf.erase(0, from);
  if (h.out_buf.size() > core::k_max_handler_line) {
    garbage(h, h.out_buf, "a line longer than 16 MiB");
    h.out_buf.clear();
  }
  if (!open) {
    h.proc.stdout_pipe().reset();
    if (h.running) {
      // No more answers can come: it is as good as dead.
      if (!h.out_buf.empty()) {
        garbage(h, h.out_buf, "a last line without its newline");
        h.out_buf.clear();
      }
      h.proc.signal_group(SIGKILL);
    }
  }
}

void StreamRunner::on_line(Handler& h, std::string_view text) {
  const auto line = core::read_handler_line(text);
  if (line.kind == core::HandlerLine::Kind::blank) {
    return;
  }
  if (!text.empty() && text.back() == '\r') {
    text.remove_suffix(1);
  }
  if (line.kind == core::HandlerLine::Kind::garbage) {
    garbage(h, text, line.why);
    return;
  }
  const int64_t id = line.id;
  Held* const found = find_held(h, id);
  if (found == nullptr) {
    if (std::find(m_finished.begin(), m_finished.end(), id)
        != m_finished.end()) {
      std::fprintf(stderr,
                   "taskq: handler %d: task %lld is no longer its own; "
                   "ignored: %s\n",
                   h.number, static_cast<long long>(id),
                   core::quote_line(text).c_str());
      return;
    }
    garbage(h, text, "task " + std::to_string(id) + " is not its own");
    return;
  }
  Held& held = *found;
  const auto m = core::read_handler_message(line.body);
  if (!m.verb) {
    malformed(h, held, text, m.error);
    return;
  }
  if (*m.verb == core::HandlerVerb::heartbeat
      || *m.verb == core::HandlerVerb::checkpoint) {
    if (held.give_up_at) {
      return; // cancelled: its lease is not ours to extend
    }
    heartbeat(h, held, m.value);
    return;
  }
  if (held.give_up_at) {
    // Cancelled, and it answered in time: the outcome was settled when
    // the cancel went out.
    if (m_o.verbose) {
      say_task(held.task.id, "its handler's answer after the cancel is "
                             "ignored");
    }
    settled(held.task.id);
    drop(h, held.task.id);
    return;
  }
  if (!m.error.empty()) {
    malformed(h, held, text, m.error);
    return;
  }
  switch (*m.verb) {
  case core::HandlerVerb::done:
    finish(h, completed(held.task, m.value));
    return;
  case core::HandlerVerb::fail: {
    storage::FailRequest req;
    req.error = *m.value;
    if (m.no_retry) {
      req.mode = storage::FailMode::no_retry;
    }
    finish(h, failed(held.task, std::move(req)));
    return;
  }
  default:
    finish(h, released(held.task, m.delay.value_or(m_o.release_delay)));
    return;
  }
}

void StreamRunner::malformed(Handler& h, Held& held, std::string_view line,
                             const std::string& why) {
  std::fprintf(stderr, "taskq: handler %d: malformed line: %s (%s)\n", h.number,
               core::quote_line(line).c_str(), why.c_str());
  if (held.give_up_at) {
    return;
  }
  storage::FailRequest req;
  req.error = "malformed handler output: " + why;
  finish(h, failed(held.task, std::move(req)));
}

void StreamRunner::settled(int64_t id) {
  m_finished.push_back(id);
  if (m_finished.size() > 256) {
    m_finished.pop_front();
  }
}

void StreamRunner::finish(Handler& h, storage::Outcome o) {
  h.restarts.answered();
  const int64_t id = o.id;
  if (h.held && h.held->task.id == id) {
    const auto took = Clock::now() - h.held->sent;
    m_queue.set_quick(m_queue.within(took));
    m_answer_took = std::chrono::duration_cast<core::Millis>(took);
  }
  settled(id);
  outcome(std::move(o));
  drop(h, id);
}

void StreamRunner::garbage(Handler& h, std::string_view line,
                           const std::string& why) {
  std::fprintf(stderr, "taskq: handler %d: malformed line (%s): %s\n", h.number,
               why.c_str(), core::quote_line(line).c_str());
  if (h.held && !h.held->give_up_at) {
    storage::FailRequest req;
    req.error = "handler sent garbage (" + why + "): " + core::quote_line(line);
    storage::Outcome o = failed(h.held->task, std::move(req));
    h.held.reset();
    settled(o.id);
    outcome(std::move(o));
  }
  h.held.reset();
  kill_handler(h);
}

void StreamRunner::outcome(storage::Outcome o, bool counted) {
  if (m_pending.empty()) {
    m_flush_at = Clock::now() + m_s.flush;
  }
  m_pending.add(std::move(o), counted);
}

void StreamRunner::flush() {
  const bool lease = !m_loop.stopping() && m_loop.looks().look && wants_more();
  if (lease) {
    m_loop.looks().begin();
  }
  write_batch(lease);
}

void StreamRunner::write_batch(bool lease) {
  m_flush_at.reset();
  if (m_loop.down()) {
    return; // written when the server is back (reconnect)
  }
  std::optional<storage::LeaseRequest> next;
  int want = 0;
  const bool ahead = lease && ahead_wanted() > 0;
  if (lease) {
    want = wanted();
    m_request.count = want;
    // A task an operator took back while its handler still works on it
    // must not reach a second handler.
    m_request.skip.clear();
    for (const auto& h : m_handlers) {
      if (h.held) {
        m_request.skip.push_back(h.held->task.id);
      }
      for (const auto& held : h.ahead) {
        m_request.skip.push_back(held.task.id);
      }
    }
    next = m_request;
  }
  const core::Time now = m_host.live_now();
  std::vector<core::Task> leased_now;
  try {
    leased_now = m_pending.write(
        m_store, next, now,
        [this](const storage::Outcome& o, const storage::OutcomeResult& r) {
          counted(o, r);
        });
  } catch (const ConnectionLost& e) {
    // The outcomes wait for the server (a repeat of one that had
    // committed is refused by its lease token); a lease asked for in the
    // same transaction is abandoned: if it committed, it expires.
    m_loop.lost(e);
    return;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::unavailable) {
      m_pending.clear(); // not to be tried again with what goes back
      throw;
    }
    // Locked past the busy timeout: nothing was written, the outcomes
    // still wait; again shortly.
    std::fprintf(stderr, "taskq: run: %s; trying again in 1s\n", e.what());
    m_flush_at = Clock::now() + std::chrono::seconds(1);
    m_loop.looks().wake_at = Clock::now() + std::chrono::seconds(1);
    return;
  }
  // Only now, once the lease is committed, does a handler see the task:
  // a task written to a handler before the commit would run even if the
  // commit never happened (`run` killed meanwhile), beside the worker
  // that leases it next, without a lease of its own.
  m_loop.summary().leased += static_cast<int64_t>(leased_now.size());
  const bool full = static_cast<int>(leased_now.size()) == want;
  if (m_queue.empty()) {
    m_queue_waited = false;
  }
  const uint64_t commit = m_store.commit_seq();
  const Instant leased = Clock::now();
  for (auto& t : leased_now) {
    m_queue.keep(std::move(t), leased, commit);
  }
  if (ahead && !leased_now.empty()) {
    m_queue.hold_kept();
  }
  if (!lease || full) {
    m_loop.looks().look = true; // there may be more
    return;
  }
  m_loop.wake_when_due(now);
}

void StreamRunner::counted(const storage::Outcome& o,
                           const storage::OutcomeResult& r) {
  std::optional<core::Task> after = r.task;
  if (!after) {
    // Written already, the answer lost with the connection?
    after = recorded_before(m_store, o, m_worker);
  }
  if (!after) {
    not_recorded(m_loop.summary(), o.id, r.lost);
    return;
  }
  const Tally t = tally(m_loop.summary(), o.kind, *after);
  if (m_o.verbose) {
    say_task(o.id, tally_words(t, *after, o.fail.error, "", false));
  }
}

void StreamRunner::heartbeat(Handler& h, Held& held,
                             const std::optional<std::string>& checkpoint) {
  if (worker::heartbeat(m_store, held.task, m_o.lease_for, checkpoint,
                        m_host.live_now())
          .kind
      == Beat::Kind::lost) {
    revoke(h, held);
  }
}

void StreamRunner::heartbeat_all() {
  for (auto& h : m_handlers) {
    if (h.held && !h.held->give_up_at) {
      heartbeat(h, *h.held, std::nullopt);
    }
    for (auto& held : h.ahead) {
      if (!held.give_up_at) {
        heartbeat(h, held, std::nullopt);
      }
    }
  }
  const core::Time now = m_host.live_now();
  m_queue.drop_if([&](const LeaseAhead::Entry& e) {
    try {
      m_store.heartbeat(e.task.id, e.task.lease->token, m_o.lease_for,
                        std::nullopt, now);
    } catch (const Error& err) {
      if (err.kind() == ErrorKind::conflict
          || err.kind() == ErrorKind::not_found) {
        ++m_loop.summary().revoked;
        return true;
      }
      if (err.kind() != ErrorKind::unavailable) {
        throw;
      }
    }
    return false;
  });
}

void StreamRunner::check_leases(bool force) {
  if (m_loop.down()) {
    m_check_at.reset(); // looked at when the server is back
    return;
  }
  const Instant now_i = Clock::now();
  if (!force && now_i < m_last_check + k_lease_check_every) {
    m_check_at = m_last_check + k_lease_check_every;
    return;
  }
  m_check_at.reset();
  m_last_check = now_i;
  const core::Time now = m_host.live_now();
  // The tasks waiting behind the ones in hand, and those not yet written,
  // are checked less often: there may be many.
  const bool queue_due = now_i >= m_last_queue_check + k_queue_check_every;
  try {
    // Every lease to check, read in one statement (a lease_held each was
    // most of the statements of 32 --prefetch 64 workers).
    std::vector<std::pair<int64_t, std::string>> asked;
    const auto ask = [&](const Held& held) {
      if (!held.give_up_at) {
        asked.emplace_back(held.task.id, held.task.lease->token);
      }
    };
    for (const auto& h : m_handlers) {
      if (h.held) {
        ask(*h.held);
      }
      if (queue_due) {
        std::for_each(h.ahead.begin(), h.ahead.end(), ask);
      }
    }
    if (queue_due) {
      for (const auto& e : m_queue.entries()) {
        asked.emplace_back(e.task.id, e.task.lease->token);
      }
    }
    const auto live = m_store.leases_frozen(asked, now);
    std::set<std::pair<int64_t, std::string>> gone;
    for (size_t i = 0; i < asked.size(); ++i) {
      if (!live[i]) {
        gone.insert(std::move(asked[i]));
      }
    }
    const auto lost = [&](const Held& held) {
      return !held.give_up_at
             && gone.count({held.task.id, held.task.lease->token}) > 0;
    };
    for (auto& h : m_handlers) {
      if (h.held && lost(*h.held)) {
        revoke(h, *h.held);
      }
    }
    if (!queue_due) {
      if (!m_queue.empty() || ahead_total() > 0) {
        m_check_at = m_last_queue_check + k_queue_check_every;
      }
      return;
    }
    m_last_queue_check = now_i;
    for (auto& h : m_handlers) {
      for (auto& held : h.ahead) {
        if (lost(held)) {
          revoke(h, held);
        }
      }
    }
    m_queue.drop_if([&](const LeaseAhead::Entry& e) {
      if (gone.count({e.task.id, e.task.lease->token}) == 0) {
        return false;
      }
      ++m_loop.summary().revoked;
      if (m_o.verbose) {
        say_task(e.task.id, "lease lost before it was sent; dropped");
      }
      return true;
    });
  } catch (const ConnectionLost& e) {
    m_loop.lost(e);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::unavailable) {
      throw;
    }
    m_feed.assume_loud(); // no answer: checked again on the next change
  }
}

void StreamRunner::revoke(Handler& h, Held& held) {
  std::string by;
  try {
    by = m_store.revoked_reason(held.task.id, held.task.lease->token)
             .value_or("");
  } catch (const Error&) {
    by.clear();
  }
  ++m_loop.summary().revoked;
  settled(held.task.id);
  const std::string reason = by.empty() ? "lease lost" : by;
  if (m_o.verbose || by.empty()) {
    std::fprintf(stderr,
                 "taskq: task %lld: lease %s; cancelling it in handler %d\n",
                 static_cast<long long>(held.task.id),
                 by.empty() ? "lost" : ("revoked by " + by).c_str(), h.number);
  }
  cancel(h, held, reason);
}

void StreamRunner::give_back_all() {
  for (auto& h : m_handlers) {
    if (h.held) {
      h.ahead.push_front(std::move(*h.held));
      h.held.reset();
    }
    for (auto& held : h.ahead) {
      if (!held.give_up_at) {
        m_pending.add(released(held.task, std::nullopt));
      }
    }
    h.ahead.clear();
  }
  give_back_unsent();
  try {
    write_batch(false);
  } catch (const Error& e) {
    std::fprintf(stderr, "taskq: run: giving back its tasks: %s\n", e.what());
  }
}

void StreamRunner::stop(bool signalled, Instant kill_at) {
  m_stop_kill_at = kill_at;
  int working = 0;
  for (const auto& h : m_handlers) {
    working += h.held ? 1 : 0;
  }
  if (signalled && working > 0) {
    std::fprintf(stderr,
                 "taskq: run: stopping; %d handler(s) get %s to finish their "
                 "task (signal again to stop them now)\n",
                 working, core::format_duration(m_o.grace).c_str());
  }
  // Prefetched tasks no handler has seen go back at once.
  give_back_unsent();
  for (auto& h : m_handlers) {
    h.restart_at.reset();
    if (!busy(h)) {
      close_stdin(h);
    }
  }
}

void StreamRunner::kill() {
  for (auto& h : m_handlers) {
    kill_handler(h);
  }
}

} // namespace taskq::worker::streaming
