// The engine against a real database (a temporary SQLite file): whether a
// look at the database can be spared, what a revoked lease does to the
// outcome of its handler, and how group commit writes outcomes and the
// next lease in one transaction, durable before a handler sees a task.
#include "storage/task_store.hpp"
#include "worker/lease_source.hpp"
#include "worker/lease_watch.hpp"
#include "worker/outcome.hpp"

#include <doctest/doctest.h>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;
namespace worker = taskq::worker;

namespace {

storage::Outcome outcome(storage::Outcome::Kind kind, const core::Task& t) {
  storage::Outcome o;
  o.kind = kind;
  o.id = t.id;
  o.token = t.lease->token;
  o.worker = t.lease->worker;
  if (kind == storage::Outcome::Kind::fail) {
    o.fail = fail_request("exit status 3", storage::FailMode::no_retry);
  }
  if (kind == storage::Outcome::Kind::release) {
    o.delay = 10s;
  }
  return o;
}

// A new database holding one task of queue q, leased at t0.
struct OneLeased {
  TempDb db;
  TaskStore store{db.path(), OpenMode::write};
  core::Task task;

  explicit OneLeased(Millis lease_for = 5min) {
    add_task(store, "q");
    const auto t = lease_one(store, "q", t0, lease_for);
    REQUIRE(t);
    task = *t;
  }
};

} // namespace

TEST_CASE("a worker's own commits do not make it look again" * sqlite_only()) {
  TempDb db;
  TaskStore mine(db.path(), OpenMode::write);
  std::optional<int64_t> seen;
  CHECK(worker::changed_by_others(mine, seen)); // the first look
  CHECK_FALSE(worker::changed_by_others(mine, seen));
  add_task(mine, "q");
  CHECK_FALSE(worker::changed_by_others(mine, seen));
  {
    TaskStore other(db.path(), OpenMode::update);
    add_task(other, "q");
  }
  CHECK(worker::changed_by_others(mine, seen));
  CHECK_FALSE(worker::changed_by_others(mine, seen));
}

TEST_CASE("an operator's kill revokes the lease its handler holds") {
  OneLeased one;
  auto& store = one.store;
  const auto& t = one.task;
  CHECK(store.lease_held(t.id, t.lease->token, t0 + 1s));
  send_one(store, t.id, core::Message::kill, t0 + 1s);
  CHECK_FALSE(store.lease_held(t.id, t.lease->token, t0 + 2s));
  // What its handler then says is refused, and the task stays killed.
  const auto done = store.apply_outcomes(
      {outcome(storage::Outcome::Kind::complete, t)}, std::nullopt, t0 + 3s);
  REQUIRE(done.outcomes.size() == 1);
  CHECK_FALSE(done.outcomes[0].task.has_value());
  CHECK_FALSE(done.outcomes[0].lost.empty());
}

TEST_CASE("group commit: the outcomes that wait and the next lease at once") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 5; ++i) {
    add_task(store, "q");
  }
  auto req = lease_request("q");
  req.count = 3;
  const auto first = store.lease(req, t0);
  REQUIRE(first.size() == 3);
  req.count = 2;
  const auto batch =
      store.apply_outcomes({outcome(storage::Outcome::Kind::complete, first[0]),
                            outcome(storage::Outcome::Kind::fail, first[1]),
                            outcome(storage::Outcome::Kind::release, first[2])},
                           req, t0 + 1s);
  REQUIRE(batch.outcomes.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(batch.outcomes[i].id == first[i].id); // in request order
    CHECK(batch.outcomes[i].task.has_value());
  }
  CHECK(batch.outcomes[0].task->state == TaskState::completed);
  CHECK(batch.outcomes[1].task->state == TaskState::failed);
  CHECK(batch.leased.size() == 2);
}

TEST_CASE("group commit: a lost lease refuses its outcome alone") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q");
  add_task(store, "q");
  auto req = lease_request("q");
  req.count = 2;
  const auto leased = store.lease(req, t0);
  REQUIRE(leased.size() == 2);
  auto stale = outcome(storage::Outcome::Kind::complete, leased[0]);
  stale.token = "not-the-lease";
  const auto batch = store.apply_outcomes(
      {stale, outcome(storage::Outcome::Kind::complete, leased[1])},
      std::nullopt, t0 + 1s);
  REQUIRE(batch.outcomes.size() == 2);
  CHECK_FALSE(batch.outcomes[0].task.has_value());
  REQUIRE(batch.outcomes[1].task.has_value());
  CHECK(batch.outcomes[1].task->state == TaskState::completed);
}

TEST_CASE("an outcome written again after its first write committed is "
          "told recorded, one never written is not") {
  // The first write's COMMIT reached the server, its answer was lost with
  // the connection: the same outcome written again is refused by its
  // token, and the task's last event of this worker's is the outcome's.
  for (const auto kind :
       {storage::Outcome::Kind::complete, storage::Outcome::Kind::fail,
        storage::Outcome::Kind::release}) {
    OneLeased one;
    const auto o = outcome(kind, one.task);
    const auto first = one.store.apply_outcomes({o}, std::nullopt, t0 + 1s);
    REQUIRE(first.outcomes.at(0).task.has_value());
    const auto again = one.store.apply_outcomes({o}, std::nullopt, t0 + 2s);
    REQUIRE_FALSE(again.outcomes.at(0).task.has_value());
    const auto after = worker::recorded_before(one.store, o, k_worker);
    REQUIRE(after.has_value());
    CHECK(after->state == first.outcomes[0].task->state);
    // Another worker's name finds nothing of its own.
    CHECK_FALSE(worker::recorded_before(one.store, o, "w2").has_value());
  }
  // A lease an operator took (kill): this worker's last event is its lease,
  // its outcome was never written.
  OneLeased killed;
  send_one(killed.store, killed.task.id, core::Message::kill, t0 + 1s);
  const auto o = outcome(storage::Outcome::Kind::complete, killed.task);
  const auto refused = killed.store.apply_outcomes({o}, std::nullopt, t0 + 2s);
  REQUIRE_FALSE(refused.outcomes.at(0).task.has_value());
  CHECK_FALSE(worker::recorded_before(killed.store, o, k_worker).has_value());
  // A lease that lapsed and went to another worker, which completed it.
  OneLeased lapsed(10s);
  const auto other = lease_one(lapsed.store, "q", t0 + 20s, 5min, "w2");
  REQUIRE(other);
  const auto theirs = lapsed.store.apply_outcomes(
      {outcome(storage::Outcome::Kind::complete, *other)}, std::nullopt,
      t0 + 21s);
  REQUIRE(theirs.outcomes.at(0).task.has_value());
  const auto mine = outcome(storage::Outcome::Kind::complete, lapsed.task);
  CHECK_FALSE(lapsed.store.apply_outcomes({mine}, std::nullopt, t0 + 22s)
                  .outcomes.at(0)
                  .task.has_value());
  CHECK_FALSE(worker::recorded_before(lapsed.store, mine, k_worker));
  CHECK(worker::recorded_before(lapsed.store, mine, "w2").has_value());
}

TEST_CASE("group commit: a task leased is on disk before a handler sees it"
          * sqlite_only()) {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q");
  const bool deferred = store.defer_sync();
  const auto t = lease_one(store, "q", t0);
  REQUIRE(t);
  const uint64_t commit = store.commit_seq();
  store.wait_durable(commit);
  CHECK(store.durable(commit));
  if (deferred) {
    CHECK(store.durable_fd() >= 0);
  }
}

TEST_CASE("group commit batches while handlers are busy, then writes") {
  // --prefetch 8, --flush 5ms: before the deadline, outcomes wait until
  // the eighth fills the batch.
  worker::FlushState s;
  s.prefetch = 8;
  s.flush_at = worker::Instant{} + 5ms;
  for (size_t n = 1; n < 8; ++n) {
    s.pending = n;
    CHECK_FALSE(worker::flush_due(s, worker::Instant{} + 1ms));
  }
  s.pending = 8;
  CHECK(worker::flush_due(s, worker::Instant{} + 1ms));
}

TEST_CASE("a heartbeat extends a held lease by the lease's length") {
  OneLeased one(30s);
  const auto beat =
      worker::heartbeat(one.store, one.task, 30s, std::nullopt, t0 + 10s);
  CHECK(beat.kind == worker::Beat::Kind::extended);
  CHECK(beat.result.expires_at == t0 + 40s);
  CHECK_FALSE(beat.result.checkpoint_requested);
}

TEST_CASE("a heartbeat tells the handler an operator asked for a checkpoint") {
  OneLeased one;
  send_one(one.store, one.task.id, core::Message::checkpoint, t0 + 1s);
  const auto beat =
      worker::heartbeat(one.store, one.task, 5min, std::nullopt, t0 + 2s);
  CHECK(beat.kind == worker::Beat::Kind::extended);
  CHECK(beat.result.checkpoint_requested);
}

TEST_CASE("a heartbeat finds the lease an operator revoked: lost") {
  OneLeased one;
  send_one(one.store, one.task.id, core::Message::pause, t0 + 1s);
  CHECK(worker::heartbeat(one.store, one.task, 5min, std::nullopt, t0 + 2s).kind
        == worker::Beat::Kind::lost);
}

TEST_CASE("a heartbeat after the lease expired: lost") {
  OneLeased one(30s);
  CHECK(worker::heartbeat(one.store, one.task, 30s, std::nullopt, t0 + 31s).kind
        == worker::Beat::Kind::lost);
}

TEST_CASE("a stream handler's checkpoint is saved with its heartbeat") {
  OneLeased one;
  CHECK(worker::heartbeat(one.store, one.task, 5min, std::string(R"({"at":3})"),
                          t0 + 1s)
            .kind
        == worker::Beat::Kind::extended);
  // Expired, and leased again: it starts from the checkpoint.
  const auto again = lease_one(one.store, "q", t0 + 1h);
  REQUIRE(again);
  CHECK(again->checkpoint == R"({"at":3})");
}
