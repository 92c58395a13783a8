#include "worker/lease_ahead.hpp"

#include "core/error.hpp"
#include "worker/outcome.hpp"

namespace taskq::worker {

bool LeaseAhead::wanted(bool stopping, bool max_tasks,
                        core::Millis lease_for) const {
  return m_quick && !stopping && !max_tasks && m_hold.count() != 0
         && lease_for >= 3 * m_hold;
}

void LeaseAhead::keep(core::Task t, Instant leased, uint64_t commit) {
  m_tasks.push_back(Entry{std::move(t), leased, commit});
}

core::Task LeaseAhead::take() {
  core::Task t = std::move(m_tasks.front().task);
  m_tasks.pop_front();
  settle();
  return t;
}

std::optional<Instant> LeaseAhead::until() const {
  if (!m_holding || m_tasks.empty()) {
    return std::nullopt;
  }
  return m_tasks.front().leased + m_hold;
}

bool LeaseAhead::over(Instant now) const {
  const auto end = until();
  return end && now >= *end;
}

bool LeaseAhead::expired(const core::Task& t, core::Time now) {
  return t.lease->expires_at <= now;
}

bool LeaseAhead::revoked(storage::TaskStore& store, const core::Task& t,
                         core::Time now) {
  try {
    return !store.lease_held(t.id, t.lease->token, now);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::unavailable) {
      throw;
    }
    return false;
  }
}

bool LeaseAhead::still_ours(storage::TaskStore& store, const core::Task& t,
                            core::Time now, bool others) {
  if (expired(t, now)) {
    return false;
  }
  return !others || !revoked(store, t, now);
}

std::vector<storage::Outcome> LeaseAhead::give_back() {
  std::vector<storage::Outcome> out;
  out.reserve(m_tasks.size());
  for (const Entry& e : m_tasks) {
    out.push_back(released(e.task, std::nullopt));
  }
  m_tasks.clear();
  settle();
  return out;
}

} // namespace taskq::worker
