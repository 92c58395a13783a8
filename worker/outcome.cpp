#include "worker/outcome.hpp"

#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/state.hpp"
#include "core/text.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace taskq::worker {

std::string result_from_stdout(std::string text) {
  if (core::json_valid(text)) {
    return core::minify_json(text);
  }
  if (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  return nlohmann::json(core::to_valid_utf8(text)).dump();
}

bool flush_due(const FlushState& s, Instant now) {
  if (s.prefetch <= 1 || s.stopping) {
    return true;
  }
  if (s.pending >= static_cast<size_t>(s.prefetch)) {
    return true;
  }
  if (s.flush_at && now >= *s.flush_at) {
    return true;
  }
  return s.idle;
}

namespace {

// An outcome of kind `kind` for `t`, under its lease.
storage::Outcome under_lease(const core::Task& t, storage::Outcome::Kind kind) {
  storage::Outcome o;
  o.kind = kind;
  o.id = t.id;
  o.token = t.lease->token;
  o.worker = t.lease->worker;
  return o;
}

} // namespace

storage::Outcome completed(const core::Task& t,
                           std::optional<std::string> result) {
  storage::Outcome o = under_lease(t, storage::Outcome::Kind::complete);
  o.result = std::move(result);
  return o;
}

storage::Outcome failed(const core::Task& t, storage::FailRequest req) {
  storage::Outcome o = under_lease(t, storage::Outcome::Kind::fail);
  o.fail = std::move(req);
  return o;
}

storage::Outcome released(const core::Task& t,
                          std::optional<core::Millis> delay) {
  storage::Outcome o = under_lease(t, storage::Outcome::Kind::release);
  o.delay = delay;
  return o;
}

void OutcomeBatch::add(storage::Outcome o, bool counted) {
  m_outcomes.push_back(std::move(o));
  m_counted.push_back(counted);
}

void OutcomeBatch::clear() {
  m_outcomes.clear();
  m_counted.clear();
}

std::vector<core::Task>
OutcomeBatch::write(storage::TaskStore& store,
                    const std::optional<storage::LeaseRequest>& next,
                    core::Time now, const Each& each) {
  storage::BatchResult done = store.apply_outcomes(m_outcomes, next, now);
  for (size_t i = 0; i < m_outcomes.size() && i < done.outcomes.size(); ++i) {
    if (m_counted[i] && each) {
      each(m_outcomes[i], done.outcomes[i]);
    }
  }
  clear();
  return std::move(done.leased);
}

Tally tally(RunSummary& s, storage::Outcome::Kind kind,
            const core::Task& after) {
  switch (kind) {
  case storage::Outcome::Kind::complete:
    ++s.completed;
    return Tally::completed;
  case storage::Outcome::Kind::release:
    ++s.released;
    return Tally::released;
  case storage::Outcome::Kind::fail:
    break;
  }
  if (after.state == core::TaskState::sleeping) {
    ++s.retrying;
    s.retrying_ids.push_back(after.id);
    if (!s.retry_at || after.run_at < *s.retry_at) {
      s.retry_at = after.run_at;
    }
    return Tally::retrying;
  }
  // Failed (or a broadcast's delivery, which is not retried).
  ++s.failed;
  s.failed_ids.push_back(after.id);
  return Tally::failed;
}

std::string tally_words(Tally t, const core::Task& after,
                        const std::string& error, const std::string& took,
                        bool reason) {
  switch (t) {
  case Tally::completed:
    return "completed" + took;
  case Tally::released:
    return "released" + took;
  case Tally::retrying:
    return "will retry at " + core::format_time(after.run_at) + took + ": "
           + error;
  case Tally::failed:
    break;
  }
  return "failed for good" + took + ": " + error
         + (!reason || after.reason.empty() || after.reason == error
                ? ""
                : "; " + after.reason);
}

std::optional<core::Task> recorded_before(storage::TaskStore& store,
                                          const storage::Outcome& o,
                                          const std::string& worker) {
  // The events a worker's outcomes log (storage/features/worker_store.cpp).
  core::Message message = core::Message::complete;
  if (o.kind == storage::Outcome::Kind::fail) {
    message = core::Message::error;
  } else if (o.kind == storage::Outcome::Kind::release) {
    message = core::Message::release;
  }
  try {
    const auto e = store.last_event_by(o.id, worker);
    if (!e || e->message != core::to_string(message)) {
      return std::nullopt;
    }
    return store.find(o.id);
  } catch (const Error&) {
    return std::nullopt; // a loss is heard by the engine's loop
  }
}

void not_recorded(RunSummary& s, int64_t id, const std::string& why) {
  ++s.revoked;
  std::fprintf(stderr, "taskq: task %lld: %s; its outcome was not recorded\n",
               static_cast<long long>(id), why.c_str());
}

} // namespace taskq::worker
