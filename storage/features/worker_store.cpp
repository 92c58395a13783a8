// TaskStore: a worker's writes on what it leased. Heartbeat, done, error,
// release and sleep, for a task or a broadcast delivery.
#include "storage/features/worker_store.hpp"

#include "core/error.hpp"
#include "storage/features/lease_store.hpp"
#include "storage/features/output_store.hpp"
#include "storage/features/queue_store.hpp"
#include "storage/model/locks.hpp"
#include "storage/model/rows.hpp"
#include "storage/model/state_writer.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;

// ---------------------------------------------------------------------------
// Worker writes
// ---------------------------------------------------------------------------

namespace detail {

// What a worker's token holds on task `id`: a broadcast delivery (the
// worker it was delivered to, the task unchanged by the write: a broadcast
// needs no done) or the task's live lease. Reads only: throws conflict
// ("lease lost: ...") or not_found before anything is written, so that a
// caller can skip a lost outcome and go on.
struct Held {
  Task task;
  std::optional<std::string> delivery_worker; // set for a delivery
  bool waited_for = true; // false: no task depends on it (load_full)
};

Held check_held(Db& db, int64_t id, const std::string& token, Time now) {
  // What is checked here stays true until the commit: a reclaim or an
  // operator's move of this task waits for it, or it for them.
  lock_task(db, id);
  bool waited_for = true;
  Task t = load_full(db, id, &waited_for);
  // Only a broadcast (broadcast_until is set when it is added and never
  // cleared) has deliveries: any other task is held by its lease alone.
  std::optional<std::string> worker;
  if (t.broadcast_until) {
    Statement st(db, "SELECT worker FROM deliveries WHERE task_id = ?1 "
                     "AND token = ?2");
    st.bind(1, id).bind(2, token);
    if (st.step()) {
      worker = st.get_text(0);
    }
  }
  if (!worker) {
    return {require_lease(db, std::move(t), token, now), std::nullopt,
            waited_for};
  }
  if (t.state != TaskState::runnable) {
    // Paused, killed, or ended: the delivery is over, as a revoked lease
    // is.
    throw Error(ErrorKind::conflict,
                "lease lost: broadcast " + task_ref(id) + " is "
                    + std::string(core::to_string(t.state)));
  }
  if (t.broadcast_until && *t.broadcast_until <= now) {
    throw Error(ErrorKind::conflict,
                "lease lost: broadcast " + task_ref(id) + " ended at "
                    + core::format_time(*t.broadcast_until));
  }
  return {std::move(t), std::move(worker), waited_for};
}

// A worker's write with the token of a broadcast delivery: logged as
// `message`, the task unchanged.
Task delivery_write(Db& db, const Held& held, const std::string& token,
                    Time now, std::string_view message,
                    std::string_view detail) {
  const Task& t = held.task;
  log_event(db, t.id, now, message, t.state, t.state, *held.delivery_worker,
            detail.empty() ? std::string("broadcast delivery")
                           : "broadcast delivery: " + std::string(detail));
  Task out = t;
  out.lease = core::Lease{token, *held.delivery_worker, now};
  return out;
}

} // namespace detail

HeartbeatResult TaskStore::heartbeat(int64_t id, const std::string& token,
                                     std::optional<Millis> extend,
                                     const std::optional<std::string>& cp,
                                     Time now) {
  return retrying([&]() -> HeartbeatResult {
    Transaction tx(*m_db);
    now = locked_now(now);
    const Held held = check_held(*m_db, id, token, now);
    if (held.delivery_worker) {
      delivery_write(*m_db, held, token, now, "heartbeat", "");
      tx.commit();
      return {now + extend.value_or(std::chrono::minutes(5)), false};
    }
    const Task& task = held.task;
    Statement get_for(*m_db, "SELECT lease_for_ms FROM tasks WHERE id = ?1");
    get_for.bind(1, id);
    get_for.step();
    const Millis by = extend.value_or(Millis(get_for.get_int(0)));
    const Time expires = now + by;
    Statement st(*m_db,
                 "UPDATE tasks SET lease_expires = ?2, rev = rev + 1, "
                 "updated_at = ?3, checkpoint = coalesce(?4, checkpoint), "
                 "checkpoint_req = CASE WHEN ?4 IS NULL THEN "
                 "checkpoint_req ELSE 0 END WHERE id = ?1");
    st.bind(1, id).bind(2, to_unix_ms(expires)).bind(3, to_unix_ms(now));
    st.bind(4, cp);
    st.run();
    if (cp) {
      log_event(*m_db, id, now, "checkpoint", task.state, task.state,
                task.lease->worker, "saved");
    }
    tx.commit();
    return {expires, task.checkpoint_requested && !cp};
  });
}

namespace {

// The writes of complete, fail and release once check_held has passed.
// They return the task after them, or, with `reload` false, the task as
// checked (when the caller has no use for it: one SELECT less).

Task complete_held(Db& db, const Held& held, const std::string& token,
                   const std::optional<std::string>& result, Time now,
                   const core::Labels& sync, bool reload = true) {
  const Task& task = held.task;
  const int64_t id = task.id;
  if (held.delivery_worker) {
    if (!sync.empty()) {
      throw Error(ErrorKind::conflict, "cannot store --sync: " + task_ref(id)
                                           + " is a broadcast, not a "
                                             "schedule's task");
    }
    return delivery_write(db, held, token, now, "complete", "done");
  }
  if (!core::transition(task.state, Message::complete)) {
    throw Error(ErrorKind::conflict, refusal(task, Message::complete));
  }
  if (!sync.empty() && !task.schedule) {
    throw Error(ErrorKind::conflict, "cannot store --sync: " + task_ref(id)
                                         + " was not emitted by a schedule");
  }
  // The lease ends, the result is stored and the state set in one
  // statement; the followers of its end read the checked task's labels,
  // trigger and flow, which the UPDATE does not change.
  StateChange done{id, task.state, Message::complete, task.lease->worker, ""};
  done.also.end_lease(task, std::nullopt).set("result", result);
  done.known = &task;
  done.waited_for = held.waited_for;
  if (!sync.empty()) {
    // The sync state the task reports: what it was given, updated with
    // --sync; its schedule hands it to the next task it emits.
    core::Labels merged = task.sync;
    for (const auto& [k, v] : sync) {
      merged[k] = v;
    }
    const std::string text = labels_to_json(merged);
    done.also.set("sync", text);
    Statement(db, "UPDATE schedules SET sync = ?2 WHERE name = ?1")
        .bind(1, *task.schedule)
        .bind(2, text)
        .run();
  }
  move_task(db, done, now);
  return reload ? load_full(db, id) : task;
}

Task fail_held(Db& db, const Held& held, const std::string& token,
               const FailRequest& req, Time now, bool reload = true) {
  if (held.delivery_worker) {
    return delivery_write(db, held, token, now, "error", req.error);
  }
  const Task& task = held.task;
  const int64_t id = task.id;
  const std::string& worker = task.lease->worker;
  const auto fault = core::transition(task.state, Message::error);
  if (!fault) {
    throw Error(ErrorKind::conflict, refusal(task, Message::error));
  }
  const QueueRow queue = load_queue(db, task.queue);
  const core::ErrorPolicy policy =
      core::resolve_policy(queue.policy, task.policy);
  const int64_t keep =
      std::max<int64_t>(k_error_history, policy.max_errors + 1);
  clear_lease(db, task, std::nullopt);
  append_error(db, id, now, req.error, keep);
  bump_queue_counter(db, task.queue, QueueCounter::errors);

  if (req.mode == FailMode::move_to) {
    // The dead-letter move (MassTasker DeleteOrMove): a fresh start in
    // another queue (its attempt limit counts afresh; its runs keep their
    // numbers), its error history kept.
    // Its --unique key goes along unless an unfinished task of the other
    // queue holds it already (one holder per queue and key): then it is
    // dropped, as an upgrade drops a duplicate's.
    Statement(db, "UPDATE tasks SET queue = ?2, "
                      + std::string(k_restart_attempt_count)
                      + ", run_at = ?3, rev = rev + 1, updated_at = ?3, "
                        "unique_key = "
                      + unique_key_moved_to(2) + " WHERE id = ?1")
        .bind(1, id)
        .bind(2, req.move_to)
        .bind(3, to_unix_ms(now))
        .run();
    log_event(db, id, now, "error", task.state, TaskState::runnable, worker,
              req.error + " (moved from " + task.queue + " to " + req.move_to
                  + ")");
    return reload ? load_full(db, id) : task;
  }

  record_move(db, {id, task.state, Message::error, worker, req.error}, now);
  if (req.mode == FailMode::no_retry) {
    StateChange give_up{id, *fault, core::SystemMove::give_up, k_system_actor,
                        "not retried (--no-retry)"};
    give_up.also.set("reason", req.error);
    move_task(db, give_up, now);
  } else {
    const auto decision =
        core::decide(load_errors(db, id), now, policy, req.retry_in);
    if (decision.fail) {
      append_error(db, id, now, core::k_exceeded_error_rate, keep);
      StateChange give_up{id, *fault, core::SystemMove::give_up, k_system_actor,
                          std::string(core::k_exceeded_error_rate)};
      give_up.also.set("reason", std::string(core::k_exceeded_error_rate));
      move_task(db, give_up, now);
    } else {
      StateChange retry{id, *fault, core::SystemMove::retry_later,
                        k_system_actor,
                        "retry at " + core::format_time(*decision.until)};
      retry.also.set("run_at", to_unix_ms(*decision.until));
      move_task(db, retry, now);
    }
  }
  return reload ? load_full(db, id) : task;
}

Task release_held(Db& db, const Held& held, const std::string& token,
                  std::optional<Millis> delay, Time now, bool reload = true) {
  if (held.delivery_worker) {
    return delivery_write(db, held, token, now, "release", "");
  }
  const Task& task = held.task;
  const int64_t id = task.id;
  clear_lease(db, task, std::nullopt);
  const std::string kept_output =
      "EXISTS (SELECT 1 FROM task_output o WHERE o.task_id = tasks.id AND "
      "o.attempt = tasks.attempts)";
  // Untouched: the attempt this lease used is given back to the attempt
  // limit. Its number too, unless its run left output (a handler's exit
  // 75 that printed): a number under which output is kept is never used
  // again, so the next run's output does not mix with it.
  Statement(db, "UPDATE tasks SET attempts = CASE WHEN " + kept_output
                    + " THEN attempts ELSE max(attempts - 1, 0) END, "
                      "attempts_base = CASE WHEN "
                    + kept_output
                    + " THEN min(attempts_base + 1, attempts) ELSE "
                      "attempts_base END, run_at = coalesce(?2, run_at), "
                      "rev = rev + 1, updated_at = ?3 WHERE id = ?1")
      .bind(1, id)
      .bind(2, delay ? std::optional(to_unix_ms(now + *delay)) : std::nullopt)
      .bind(3, to_unix_ms(now))
      .run();
  log_event(db, id, now, "release", task.state, task.state, task.lease->worker,
            delay ? "due " + core::format_time(now + *delay) : "");
  return reload ? load_full(db, id) : task;
}

// complete_held for outcome `o` in one statement, with the lease checked
// by the UPDATE's WHERE rather than read first: std::nullopt, nothing
// written, when the checks do not all pass (the caller then takes the
// checked path, which says why or records a broadcast's delivery). The
// checks are check_held's and complete_held's for a task that is not a
// broadcast: the token, a live lease, a state complete moves (runnable);
// only a broadcast (broadcast_until set) has deliveries, so leaving them
// out leaves no delivery to miss. The event's actor is the lease's worker,
// which the UPDATE clears and its RETURNING gives as NULL (PostgreSQL 15
// has no OLD there, SQLite none at all): the worker named in `o` is
// guarded on as well, so that the name logged is the lease's whatever a
// caller passes. `o.id`'s row must be locked by an earlier statement
// (apply_outcomes' Transaction): then whether it has dependents, which the
// UPDATE reads, includes one an `add --after` committed while this waited
// for the row (move_task_if).
std::optional<Task> complete_guarded(Db& db, const Outcome& o, Time now) {
  if (o.worker.empty()) {
    return std::nullopt;
  }
  StateChange done{o.id, TaskState::runnable, Message::complete, o.worker, ""};
  done.also.end_lease().set("result", o.result);
  Guard guard;
  guard.equals("lease_token", o.token)
      .equals("lease_worker", o.worker)
      .greater("lease_expires", to_unix_ms(now))
      .is_null("broadcast_until");
  auto moved = move_task_if(db, done, guard, now);
  if (!moved) {
    return std::nullopt;
  }
  return std::move(moved->task);
}

} // namespace

namespace detail {

Task complete_leased(Db& db, int64_t id, const std::string& token,
                     const std::optional<std::string>& result, Time now,
                     const core::Labels& sync, bool reload) {
  return complete_held(db, check_held(db, id, token, now), token, result, now,
                       sync, reload);
}

} // namespace detail

Task TaskStore::complete(int64_t id, const std::string& token,
                         const std::optional<std::string>& result, Time now,
                         const core::Labels& sync, const OutputWrite& output) {
  return retrying([&]() -> Task {
    Transaction tx(*m_db);
    now = locked_now(now);
    // The lease checked (and the row locked) before the output is
    // written, as apply_outcomes does.
    const Held held = check_held(*m_db, id, token, now);
    write_output(*m_db, output.chunks, output.keep);
    Task out = complete_held(*m_db, held, token, result, now, sync);
    tx.commit();
    return out;
  });
}

void TaskStore::complete_only(int64_t id, const std::string& token,
                              const std::optional<std::string>& result,
                              Time now, const core::Labels& sync) {
  retrying([&] {
    Transaction tx(*m_db);
    now = locked_now(now);
    complete_leased(*m_db, id, token, result, now, sync, false);
    tx.commit();
  });
}

Task TaskStore::fail(int64_t id, const std::string& token,
                     const FailRequest& req, Time now,
                     const OutputWrite& output) {
  return retrying([&]() -> Task {
    Transaction tx(*m_db);
    now = locked_now(now);
    const Held held = check_held(*m_db, id, token, now);
    write_output(*m_db, output.chunks, output.keep);
    Task out = fail_held(*m_db, held, token, req, now);
    tx.commit();
    return out;
  });
}

Task TaskStore::release(int64_t id, const std::string& token,
                        std::optional<Millis> delay, Time now,
                        const OutputWrite& output) {
  return retrying([&]() -> Task {
    Transaction tx(*m_db);
    now = locked_now(now);
    const Held held = check_held(*m_db, id, token, now);
    write_output(*m_db, output.chunks, output.keep);
    Task out = release_held(*m_db, held, token, delay, now);
    tx.commit();
    return out;
  });
}

BatchResult TaskStore::apply_outcomes(const std::vector<Outcome>& outcomes,
                                      const std::optional<LeaseRequest>& next,
                                      Time now) {
  std::vector<int64_t> ids;
  ids.reserve(outcomes.size());
  for (const Outcome& o : outcomes) {
    ids.push_back(o.id);
  }
  return retrying([&]() -> BatchResult {
    // Each outcome's task locked as the transaction begins (check_held
    // would lock each in turn): a statement less a task on PostgreSQL.
    // It is also what lets complete_guarded read whether a task has
    // dependents in its own UPDATE: that statement starts after the lock
    // is held, so after any `add --after` that held the row meanwhile
    // committed its task_deps row (READ COMMITTED: a fresh snapshot per
    // statement), and sees it.
    Transaction tx(*m_db, ids);
    now = locked_now(now);
    // A worker's outcomes and its next lease concern those watching; what
    // gives a waiting worker work (a retry, a release, a dependent ready,
    // a lease reclaimed, a task added) says so itself.
    m_db->wake_later();
    BatchResult out;
    out.outcomes.reserve(outcomes.size());
    for (const Outcome& o : outcomes) {
      OutcomeResult& r = out.outcomes.emplace_back();
      r.id = o.id;
      // A done under a live lease: checked and written in one statement
      // (its row locked since the begin, as complete_guarded needs), its
      // output after it. Else, as the other outcomes, the checked path.
      if (o.kind == Outcome::Kind::complete) {
        if (auto done = complete_guarded(*m_db, o, now)) {
          write_output(*m_db, o.output.chunks, o.output.keep);
          r.task = std::move(done);
          continue;
        }
      }
      // The token is checked first, writing nothing: a lost lease skips
      // this outcome only. Past the check, an error ends the whole batch.
      std::optional<Held> held;
      try {
        held = check_held(*m_db, o.id, o.token, now);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::conflict
            && e.kind() != ErrorKind::not_found) {
          throw;
        }
        r.lost = e.what();
        continue;
      }
      write_output(*m_db, o.output.chunks, o.output.keep);
      switch (o.kind) {
      case Outcome::Kind::complete:
        // Not read again: the callers want only whether it was recorded.
        r.task = complete_held(*m_db, *held, o.token, o.result, now, {}, false);
        if (!held->delivery_worker) {
          r.task->state = TaskState::completed;
          r.task->lease.reset();
          r.task->result = o.result;
        }
        break;
      case Outcome::Kind::fail: // retried, moved, or failed for good
        m_db->wake_soon();
        r.task = fail_held(*m_db, *held, o.token, o.fail, now);
        break;
      case Outcome::Kind::release:
        m_db->wake_soon();
        r.task = release_held(*m_db, *held, o.token, o.delay, now);
        break;
      }
    }
    if (next) {
      // What the outcomes left for the end of the transaction (a flow's
      // next step, which may add the task to lease) runs before the lease.
      m_db->run_deferred();
      out.leased = lease_in_tx(*m_db, *next, now);
    }
    tx.commit();
    return out;
  });
}

Task TaskStore::worker_sleep(int64_t id, const std::string& token, Time until,
                             Time now) {
  return retrying([&]() -> Task {
    Transaction tx(*m_db);
    now = locked_now(now);
    const Held held = check_held(*m_db, id, token, now);
    if (held.delivery_worker) {
      Task out = delivery_write(*m_db, held, token, now, "sleep", "");
      tx.commit();
      return out;
    }
    const Task& task = held.task;
    if (!core::transition(task.state, Message::sleep)) {
      throw Error(ErrorKind::conflict, refusal(task, Message::sleep));
    }
    StateChange sleep{id, task.state, Message::sleep, task.lease->worker,
                      "until " + core::format_time(until)};
    sleep.also.end_lease(task, std::nullopt).set("run_at", to_unix_ms(until));
    move_task(*m_db, sleep, now);
    Task out = load_full(*m_db, id);
    tx.commit();
    return out;
  });
}

std::optional<std::string> TaskStore::revoked_reason(int64_t id,
                                                     const std::string& token) {
  const auto revoked = find_revoked(*m_db, id, token);
  if (!revoked) {
    return std::nullopt;
  }
  return revoked->substr(0, revoked->find(' ')); // the message
}

bool TaskStore::lease_held(int64_t id, const std::string& token, Time now) {
  Statement st(*m_db, "SELECT 1 FROM tasks WHERE id = ?1 AND lease_token = ?2 "
                      "AND lease_expires > ?3 UNION ALL SELECT 1 FROM "
                      "deliveries d JOIN tasks t ON t.id = d.task_id "
                      "WHERE d.task_id = ?1 AND d.token = ?2 "
                      "AND t.state = 'runnable' AND t.broadcast_until > ?3");
  st.bind(1, id).bind(2, token).bind(3, to_unix_ms(now));
  return st.step();
}

std::optional<bool>
TaskStore::lease_frozen(int64_t id, const std::string& token, Time now) {
  Statement st(*m_db,
               join(join("SELECT (", k_frozen_sql),
                    ") FROM tasks WHERE id = ?1 AND lease_token = ?2 AND "
                    "lease_expires > ?3"));
  st.bind(1, id).bind(2, token).bind(3, to_unix_ms(now));
  if (st.step()) {
    return st.get_opt_int(0).value_or(0) != 0;
  }
  if (lease_held(id, token, now)) {
    return false; // a broadcast's delivery: never frozen
  }
  return std::nullopt;
}

std::vector<std::optional<bool>> TaskStore::leases_frozen(
    const std::vector<std::pair<int64_t, std::string>>& leases, Time now) {
  std::vector<std::optional<bool>> out(leases.size());
  // Each task's live lease with whether it is frozen, and each live
  // broadcast delivery (never frozen), of the tasks asked, named one by
  // one (so each is found by its key: a list from a JSON parameter was
  // planned as a scan of every task); the tokens are matched here.
  constexpr size_t k_per_statement = 100;
  std::string frozen(k_frozen_sql); // of task ?1: here of each row's
  frozen.replace(frozen.find("?1"), 2, "tasks.id");
  std::map<std::pair<int64_t, std::string>, bool> live;
  for (size_t at = 0; at < leases.size(); at += k_per_statement) {
    const size_t n = std::min(k_per_statement, leases.size() - at);
    std::string asked = "(";
    for (size_t i = 0; i < n; ++i) {
      asked += (i == 0 ? "?" : ", ?") + std::to_string(i + 2);
    }
    asked += ")";
    Statement st(*m_db, "SELECT id, lease_token, (" + frozen
                            + ") FROM tasks WHERE id IN " + asked
                            + " AND lease_expires > ?1 UNION ALL SELECT "
                              "d.task_id, d.token, 0 FROM deliveries d JOIN "
                              "tasks t ON t.id = d.task_id WHERE d.task_id IN "
                            + asked
                            + " AND t.state = 'runnable' AND "
                              "t.broadcast_until > ?1");
    st.bind(1, to_unix_ms(now));
    for (size_t i = 0; i < n; ++i) {
      st.bind(static_cast<int>(i) + 2, leases[at + i].first);
    }
    while (st.step()) {
      live[{st.get_int(0), st.get_text(1)}] =
          st.get_opt_int(2).value_or(0) != 0;
    }
  }
  for (size_t i = 0; i < leases.size(); ++i) {
    if (const auto it = live.find(leases[i]); it != live.end()) {
      out[i] = it->second;
    }
  }
  return out;
}

} // namespace taskq::storage
