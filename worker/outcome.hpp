// What a handler's end makes of its task's outcome, beyond core::judge.
#pragma once

#include "core/task.hpp"
#include "storage/task_store.hpp"
#include "worker/policy.hpp"
#include "worker/run.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace taskq::worker {

// What a handler printed, as a task result (--result-stdout): its JSON when
// stdout is one JSON value, else a JSON string of the text (one final
// newline dropped, invalid UTF-8 replaced).
std::string result_from_stdout(std::string text);

// Group commit of `run --stream` outcomes: with --prefetch above 1 they
// wait to be written in one transaction with the next lease; otherwise
// each is written at once.
struct FlushState {
  int prefetch = 1;      // --prefetch
  bool stopping = false; // `run` is stopping
  size_t pending = 0;    // outcomes waiting
  // The first waiting outcome's deadline: it came --flush ago.
  std::optional<Instant> flush_at;
  // Nothing is leased and unsent, and every handler is free: no lease
  // comes before the next outcome, so waiting would only delay it.
  bool idle = false;
};
// Whether the waiting outcomes are to be written now (at `now`).
bool flush_due(const FlushState& s, Instant now);

// The outcomes a handler's end writes for the task `t` under its lease:
// done with `result` (JSON text), failed as `req` asks, released to be due
// again after `delay` (none: at once).
storage::Outcome completed(const core::Task& t,
                           std::optional<std::string> result);
storage::Outcome failed(const core::Task& t, storage::FailRequest req);
storage::Outcome released(const core::Task& t,
                          std::optional<core::Millis> delay);

// Outcomes waiting to be written, in one transaction with the next lease
// when one is asked for: the end of one task and the lease of the next
// cost one commit.
class OutcomeBatch {
public:
  // `counted`: false for a task given back that the summary never counted
  // as leased (leased ahead, never started); its result is not reported.
  void add(storage::Outcome o, bool counted = true);
  bool empty() const { return m_outcomes.empty(); }
  const std::vector<storage::Outcome>& outcomes() const { return m_outcomes; }
  // Whether outcomes()[i] is counted (see add).
  bool counted(size_t i) const { return m_counted.at(i); }
  size_t size() const { return m_outcomes.size(); }
  // Drops them all, written or not.
  void clear();

  // For each outcome counted: the outcome, and what writing it did.
  using Each = std::function<void(const storage::Outcome& o,
                                  const storage::OutcomeResult& r)>;
  // Writes the outcomes, each checked against its lease (one whose lease
  // was lost is refused alone, writing nothing for it), and leases per
  // `next` when set: one transaction. Calls `each` per counted outcome, in
  // the order added, then drops them and returns what it leased. What the
  // store throws leaves them waiting, nothing written.
  std::vector<core::Task>
  write(storage::TaskStore& store,
        const std::optional<storage::LeaseRequest>& next, core::Time now,
        const Each& each);

private:
  std::vector<storage::Outcome> m_outcomes;
  std::vector<bool> m_counted; // per outcome
};

// What an outcome written made of its task, as the summary counts it.
enum class Tally { completed, released, retrying, failed };

// Counts in `s` an outcome of kind `kind` written, `after` the task it
// left: a failure that sleeps is a retry (the earliest one kept in
// s.retry_at), any other failure failed for good.
Tally tally(RunSummary& s, storage::Outcome::Kind kind,
            const core::Task& after);

// The -v words for an outcome counted as `t`: "completed", "released",
// "will retry at TIME", "failed for good", then `took` (" (after 2s)" or
// nothing), and for a failure ": " and its `error`, and with `reason` the
// task's reason when it is another (a broadcast's delivery).
std::string tally_words(Tally t, const core::Task& after,
                        const std::string& error, const std::string& took,
                        bool reason);

// An outcome refused by its lease token that this worker had written
// already: the first write's COMMIT reached the server and its answer was
// lost with the connection, so the outcome was kept and written again
// (doc/postgresql.md, "A write in flight"). The task then holds it: this
// worker's last event on it is the outcome's. Returns the task as it is
// now, to count the outcome by; nothing when it was not written, or when
// the read fails too (never throws: the outcomes around it did commit).
std::optional<core::Task> recorded_before(storage::TaskStore& store,
                                          const storage::Outcome& o,
                                          const std::string& worker);

// An outcome that was not written (`why`: its lease was lost, the task
// deleted, the database locked): counted revoked in `s`, and said.
void not_recorded(RunSummary& s, int64_t id, const std::string& why);

} // namespace taskq::worker
