// Tasks leased ahead of the handlers: held a short while, checked again
// before they start, given back when the hold ends or `run` stops. Both
// engines of `run` keep here what they leased and have not started yet.
#pragma once

#include "core/task.hpp"
#include "core/time.hpp"
#include "storage/task_store.hpp"
#include "worker/policy.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

namespace taskq::worker {

// Lease ahead: with handlers that end within the hold (lease_ahead_hold),
// the task that follows the one a handler works on is leased in the
// transaction that writes an outcome, so that the next handler starts (or
// the next task goes out) at once, and the commit of that outcome (its
// fsync) runs while it works. What is leased ahead is held at most the
// hold after its lease (then given back, its attempt too), checked again
// just before it starts (an operator's kill or pause in between: not
// started), and given back when `run` stops. Never with --max-tasks (it
// counts what starts), nor with a hold of 0 (TASKQ_LEASE_AHEAD_MS=0), nor
// with a lease shorter than three holds.
class LeaseAhead {
public:
  // A task leased and not started yet.
  struct Entry {
    core::Task task;
    Instant leased;      // when its lease was taken
    uint64_t commit = 0; // the store's commit that leased it, when it counts
  };

  explicit LeaseAhead(core::Millis hold) : m_hold(hold) {}

  core::Millis hold() const { return m_hold; }

  // Whether to lease ahead now: the last handlers ended within the hold,
  // `run` is not stopping, there is no --max-tasks, the hold is not 0 and
  // the lease lasts at least three holds.
  bool wanted(bool stopping, bool max_tasks, core::Millis lease_for) const;
  // Whether a handler that took `took` ended within the hold.
  bool within(Clock::duration took) const { return took < m_hold; }
  // Whether the last handlers ended within the hold.
  void set_quick(bool quick) { m_quick = quick; }

  bool empty() const { return m_tasks.empty(); }
  size_t size() const { return m_tasks.size(); }
  const Entry& front() const { return m_tasks.front(); }
  const std::deque<Entry>& entries() const { return m_tasks; }

  // Keeps `t`, leased at `leased` by `commit`, to start later.
  void keep(core::Task t, Instant leased, uint64_t commit = 0);
  // What is kept is leased ahead: held from the lease of the first.
  void hold_kept() {
    if (!m_tasks.empty()) {
      m_holding = true;
    }
  }
  // The first task kept, to start now: the hold then runs from the lease
  // of the next.
  core::Task take();

  // When the hold ends: the lease of the first kept and the hold after,
  // none when nothing kept is leased ahead.
  std::optional<Instant> until() const;
  // Whether the hold has ended at `now`: what is kept goes back.
  bool over(Instant now) const;

  // Whether the lease of `t` has expired at `now`: another worker may
  // hold it.
  static bool expired(const core::Task& t, core::Time now);
  // Whether an operator took the lease of `t` (a read); a database that
  // does not answer is no answer: false, it is checked again later.
  static bool revoked(storage::TaskStore& store, const core::Task& t,
                      core::Time now);
  // Whether `t` is still ours at `now`: not expired, and when another
  // connection may have committed since it was leased (`others`), not
  // revoked.
  static bool still_ours(storage::TaskStore& store, const core::Task& t,
                         core::Time now, bool others);

  // Drops each kept task for which `lost` is true, one at a time: a throw
  // from `lost` leaves the rest as they are.
  template <class Lost> void drop_if(Lost lost) {
    for (auto it = m_tasks.begin(); it != m_tasks.end();) {
      if (lost(std::as_const(*it))) {
        it = m_tasks.erase(it);
      } else {
        ++it;
      }
    }
    settle();
  }

  // Gives back every task kept: its release, due at once and its attempt
  // given back too, as an outcome to write; nothing is kept after.
  std::vector<storage::Outcome> give_back();

private:
  // Nothing kept: nothing is held.
  void settle() {
    if (m_tasks.empty()) {
      m_holding = false;
    }
  }

  const core::Millis m_hold;
  std::deque<Entry> m_tasks; // leased, not started, in lease order
  bool m_holding = false;    // what is kept is leased ahead
  bool m_quick = false;      // the last handlers ended within m_hold
};

} // namespace taskq::worker
