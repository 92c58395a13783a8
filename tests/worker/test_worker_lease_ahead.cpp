// What both engines of `run` share about tasks leased ahead and the
// outcomes they write, against a real database: the hold of a task leased
// ahead and its give-back, the check before it starts, and an outcome
// batch written with the next lease in one transaction, a stale lease's
// outcome refused.
#include "storage/task_store.hpp"
#include "worker/lease_ahead.hpp"
#include "worker/outcome.hpp"

#include <doctest/doctest.h>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;
namespace worker = taskq::worker;
using worker::LeaseAhead;
using worker::OutcomeBatch;

namespace {

// A new database holding `n` tasks of queue q.
struct Tasks {
  TempDb db;
  TaskStore store{db.path(), OpenMode::write};

  explicit Tasks(int n) {
    for (int i = 0; i < n; ++i) {
      add_task(store, "q");
    }
  }

  core::Task lease(Time now, Millis lease_for = 5min) {
    const auto t = lease_one(store, "q", now, lease_for);
    REQUIRE(t);
    return *t;
  }
};

// What OutcomeBatch::write reported, outcome by outcome.
struct Reported {
  std::vector<int64_t> ids;
  std::vector<std::optional<core::Task>> after;
  OutcomeBatch::Each each() {
    return [this](const storage::Outcome& o, const storage::OutcomeResult& r) {
      ids.push_back(o.id);
      after.push_back(r.task);
    };
  }
};

} // namespace

TEST_CASE("lease-ahead: the hold ends its hold after the lease, then gives "
          "the task back, its attempt too") {
  Tasks q(1);
  const core::Task t = q.lease(t0);
  REQUIRE(t.attempts == 1);
  LeaseAhead ahead(250ms);
  const worker::Instant leased{};
  ahead.keep(t, leased);
  CHECK_FALSE(ahead.until()); // kept, not yet leased ahead: not held
  ahead.hold_kept();
  REQUIRE(ahead.until());
  CHECK(*ahead.until() == leased + 250ms);
  CHECK_FALSE(ahead.over(leased + 249ms));
  CHECK(ahead.over(leased + 250ms));

  OutcomeBatch back;
  for (auto& o : ahead.give_back()) {
    CHECK(o.kind == storage::Outcome::Kind::release);
    CHECK_FALSE(o.delay); // due at once
    back.add(std::move(o), false);
  }
  CHECK(ahead.empty());
  CHECK_FALSE(ahead.until());
  Reported seen;
  back.write(q.store, std::nullopt, t0 + 1s, seen.each());
  CHECK(seen.ids.empty()); // never counted as leased: nothing to count
  CHECK(back.empty());
  const auto after = q.store.find(t.id);
  REQUIRE(after);
  CHECK(after->state == TaskState::runnable);
  CHECK_FALSE(after->lease);
  CHECK(after->attempts == 0);
  CHECK(after->run_at <= t0 + 1s);
}

TEST_CASE("lease-ahead: the hold follows the task to start next") {
  Tasks q(3);
  LeaseAhead ahead(250ms);
  const worker::Instant first{};
  ahead.keep(q.lease(t0), first);
  ahead.keep(q.lease(t0), first + 100ms);
  ahead.hold_kept();
  CHECK(*ahead.until() == first + 250ms);
  ahead.take();
  CHECK(*ahead.until() == first + 350ms);
  ahead.take();
  CHECK(ahead.empty());
  CHECK_FALSE(ahead.until()); // nothing held: a later keep is not held
  ahead.keep(q.lease(t0), first);
  CHECK_FALSE(ahead.until());
}

TEST_CASE("lease-ahead: a task an operator killed meanwhile is not started") {
  Tasks q(2);
  const core::Task killed = q.lease(t0);
  const core::Task kept = q.lease(t0);
  LeaseAhead ahead(250ms);
  ahead.keep(killed, worker::Instant{});
  ahead.keep(kept, worker::Instant{});
  ahead.hold_kept();
  send_one(q.store, killed.id, Message::kill, t0 + 1s);
  CHECK(LeaseAhead::revoked(q.store, killed, t0 + 2s));
  CHECK_FALSE(LeaseAhead::revoked(q.store, kept, t0 + 2s));
  CHECK_FALSE(LeaseAhead::still_ours(q.store, killed, t0 + 2s, true));
  CHECK(LeaseAhead::still_ours(q.store, kept, t0 + 2s, true));
  // An expired lease is another's, read or no read.
  CHECK(LeaseAhead::expired(kept, t0 + 5min));
  CHECK_FALSE(LeaseAhead::still_ours(q.store, kept, t0 + 5min, false));

  std::vector<int64_t> dropped;
  ahead.drop_if([&](const LeaseAhead::Entry& e) {
    if (LeaseAhead::still_ours(q.store, e.task, t0 + 2s, true)) {
      return false;
    }
    dropped.push_back(e.task.id);
    return true;
  });
  CHECK(dropped == std::vector<int64_t>{killed.id});
  REQUIRE(ahead.size() == 1);
  CHECK(ahead.take().id == kept.id);
}

TEST_CASE("lease-ahead: wanted only for quick handlers, not stopping, "
          "without --max-tasks, with a lease of three holds") {
  LeaseAhead ahead(250ms);
  CHECK_FALSE(ahead.wanted(false, false, 5min)); // not quick yet
  CHECK(ahead.within(249ms));
  CHECK_FALSE(ahead.within(250ms));
  ahead.set_quick(true);
  CHECK(ahead.wanted(false, false, 750ms));
  CHECK_FALSE(ahead.wanted(false, false, 749ms));
  CHECK_FALSE(ahead.wanted(true, false, 5min));
  CHECK_FALSE(ahead.wanted(false, true, 5min));
  LeaseAhead none(0ms);
  none.set_quick(true);
  CHECK_FALSE(none.wanted(false, false, 5min));
}

TEST_CASE("outcome batch: the outcomes and the next lease in one transaction"
          * sqlite_only()) {
  Tasks q(4);
  REQUIRE(q.store.defer_sync()); // numbers the commits
  const core::Task a = q.lease(t0);
  const core::Task b = q.lease(t0);
  OutcomeBatch batch;
  batch.add(worker::completed(a, std::string(R"({"n":1})")));
  batch.add(worker::failed(
      b, fail_request("exit status 3", storage::FailMode::no_retry)));
  CHECK(batch.size() == 2);
  auto req = lease_request("q");
  req.count = 2;
  const uint64_t before = q.store.commit_seq();
  Reported seen;
  const auto leased = batch.write(q.store, req, t0 + 1s, seen.each());
  CHECK(q.store.commit_seq() == before + 1);
  CHECK(leased.size() == 2);
  CHECK(batch.empty());
  REQUIRE(seen.ids == std::vector<int64_t>{a.id, b.id});
  REQUIRE(seen.after[0]);
  REQUIRE(seen.after[1]);
  CHECK(seen.after[0]->state == TaskState::completed);
  CHECK(seen.after[1]->state == TaskState::failed);
  CHECK(q.store.find(a.id)->result == R"({"n":1})");

  worker::RunSummary s;
  CHECK(worker::tally(s, storage::Outcome::Kind::complete, *seen.after[0])
        == worker::Tally::completed);
  const auto t = worker::tally(s, storage::Outcome::Kind::fail, *seen.after[1]);
  CHECK(t == worker::Tally::failed);
  CHECK(s.completed == 1);
  CHECK(s.failed == 1);
  CHECK(worker::tally_words(t, *seen.after[1], "exit status 3", " (after 1s)",
                            true)
        == "failed for good (after 1s): exit status 3");
}

TEST_CASE("outcome batch: a stale lease's outcome is refused, the others "
          "written") {
  Tasks q(2);
  const core::Task stale = q.lease(t0, 30s);
  const core::Task fresh = q.lease(t0, 5min);
  // Expired, and leased again by another worker: the first lease is stale.
  const auto again = lease_one(q.store, "q", t0 + 1min, 5min, "w2");
  REQUIRE(again);
  REQUIRE(again->id == stale.id);

  OutcomeBatch batch;
  batch.add(worker::completed(stale, std::nullopt));
  batch.add(worker::released(fresh, 10s));
  std::vector<std::string> lost;
  worker::RunSummary s;
  batch.write(q.store, std::nullopt, t0 + 2min,
              [&](const storage::Outcome& o, const storage::OutcomeResult& r) {
                if (!r.task) {
                  lost.push_back(r.lost);
                  worker::not_recorded(s, o.id, r.lost);
                  return;
                }
                worker::tally(s, o.kind, *r.task);
              });
  REQUIRE(lost.size() == 1);
  CHECK_FALSE(lost[0].empty());
  CHECK(s.revoked == 1);
  CHECK(s.released == 1);
  CHECK(s.completed == 0);
  // The other worker's lease stands; the fresh task is released.
  CHECK(q.store.lease_held(stale.id, again->lease->token, t0 + 2min));
  CHECK(q.store.find(stale.id)->state == TaskState::runnable); // not done
  CHECK(q.store.find(fresh.id)->state == TaskState::runnable);
  CHECK_FALSE(q.store.find(fresh.id)->lease);
}
