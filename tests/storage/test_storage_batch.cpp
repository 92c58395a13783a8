// TaskStore::apply_outcomes: several worker outcomes and the next lease in
// one transaction, each outcome fenced by its own lease token.
#include "storage/db.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

storage::Outcome done(const core::Task& t, const std::string& result) {
  storage::Outcome o;
  o.kind = storage::Outcome::Kind::complete;
  o.id = t.id;
  o.token = t.lease->token;
  o.result = result;
  return o;
}

storage::Outcome failed(const core::Task& t, const std::string& error) {
  storage::Outcome o;
  o.kind = storage::Outcome::Kind::fail;
  o.id = t.id;
  o.token = t.lease->token;
  o.fail = fail_request(error, storage::FailMode::no_retry);
  return o;
}

storage::Outcome released(const core::Task& t) {
  storage::Outcome o;
  o.kind = storage::Outcome::Kind::release;
  o.id = t.id;
  o.token = t.lease->token;
  o.delay = 10s;
  return o;
}

storage::OutputChunk chunk(int64_t task, const std::string& data) {
  storage::OutputChunk c;
  c.task = task;
  c.attempt = 1;
  c.stream = "stdout";
  c.data = data;
  return c;
}

std::vector<core::Task> lease_n(TaskStore& store, int n, Time now) {
  auto req = lease_request("q");
  req.count = n;
  return store.lease(req, now);
}

} // namespace

TEST_CASE("a batch with one lost lease applies the others and writes nothing "
          "for the lost one") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 4; ++i) {
    add_task(store, "q");
  }
  const auto leased = lease_n(store, 4, t0);
  REQUIRE(leased.size() == 4);
  // An operator revokes the third one's lease.
  send_one(store, leased[2].id, Message::pause, t0 + 1s);
  const auto before = store.show(leased[2].id);

  std::vector<storage::Outcome> batch = {
      done(leased[0], R"({"n":0})"), failed(leased[1], "boom"),
      done(leased[2], R"({"n":2})"), released(leased[3])};
  for (auto& o : batch) {
    o.output.chunks = {chunk(o.id, "out " + std::to_string(o.id))};
    o.output.keep = 1000;
  }
  const auto r = store.apply_outcomes(batch, std::nullopt, t0 + 2s);

  REQUIRE(r.outcomes.size() == 4);
  CHECK(r.leased.empty());
  for (size_t i = 0; i < 4; ++i) {
    CHECK(r.outcomes[i].id == leased[i].id);
  }
  REQUIRE(r.outcomes[0].task);
  CHECK(r.outcomes[0].task->state == TaskState::completed);
  CHECK(r.outcomes[0].task->result == R"({"n":0})");
  CHECK(r.outcomes[0].lost.empty());
  REQUIRE(r.outcomes[1].task);
  CHECK(r.outcomes[1].task->state == TaskState::failed);
  REQUIRE(r.outcomes[3].task);
  CHECK(r.outcomes[3].task->state == TaskState::runnable);
  CHECK_FALSE(r.outcomes[3].task->lease);
  CHECK(r.outcomes[3].task->run_at == t0 + 12s);
  CHECK(r.outcomes[3].task->attempts == 0);

  // The lost one: the message complete() would give, and nothing written.
  CHECK_FALSE(r.outcomes[2].task);
  CHECK(contains(r.outcomes[2].lost, "lease lost"));
  CHECK(contains(r.outcomes[2].lost, "revoked"));
  CHECK(r.outcomes[2].lost == error_message([&] {
          store.complete(leased[2].id, leased[2].lease->token, "{}", t0 + 2s);
        }));
  const auto after = store.show(leased[2].id);
  CHECK(after.task.state == TaskState::paused);
  CHECK_FALSE(after.task.result);
  CHECK(after.events.size() == before.events.size());
  CHECK(store.output(leased[2].id, 1, std::nullopt).empty());
  // The others' output was stored with them.
  for (const size_t i : {size_t{0}, size_t{1}, size_t{3}}) {
    const auto out = store.output(leased[i].id, 1, "stdout");
    REQUIRE(out.size() == 1);
    CHECK(out[0].data == "out " + std::to_string(leased[i].id));
  }
}

TEST_CASE("a batch leases the next tasks after its outcomes, in the same "
          "transaction") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t first = add_task(store, "q");
  // Waits for `first`: eligible only once the batch's completion is in.
  auto spec = new_task("q");
  spec.after = {first};
  const int64_t second = store.add(spec, t0, k_operator);
  const auto leased = lease_n(store, 2, t0);
  REQUIRE(leased.size() == 1);
  REQUIRE(leased[0].id == first);

  auto next = lease_request("q", 1min);
  next.count = 2;
  const auto r = store.apply_outcomes({done(leased[0], "1")}, next, t0 + 1s);
  REQUIRE(r.outcomes.size() == 1);
  REQUIRE(r.outcomes[0].task);
  CHECK(r.outcomes[0].task->state == TaskState::completed);
  REQUIRE(r.leased.size() == 1);
  CHECK(r.leased[0].id == second);
  REQUIRE(r.leased[0].lease);
  CHECK(r.leased[0].lease->worker == k_worker);
  CHECK(r.leased[0].lease->expires_at == t0 + 1s + 1min);
  CHECK(r.leased[0].attempts == 1);
  // The new lease is a real one: its token completes the task.
  CHECK(store.complete(second, r.leased[0].lease->token, "2", t0 + 2s).state
        == TaskState::completed);

  // No outcomes: a plain lease; nothing to lease: empty.
  const auto none = store.apply_outcomes({}, next, t0 + 3s);
  CHECK(none.outcomes.empty());
  CHECK(none.leased.empty());
}

TEST_CASE("a repeated outcome for a finished task is refused as lost") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q");
  add_task(store, "q");
  const auto leased = lease_n(store, 2, t0);
  REQUIRE(leased.size() == 2);

  // The same outcome twice in one batch: the second finds it finished.
  const auto r = store.apply_outcomes(
      {done(leased[0], "1"), done(leased[0], "again")}, std::nullopt, t0 + 1s);
  REQUIRE(r.outcomes.size() == 2);
  REQUIRE(r.outcomes[0].task);
  CHECK(r.outcomes[0].task->result == "1");
  CHECK_FALSE(r.outcomes[1].task);
  CHECK(contains(r.outcomes[1].lost, "lease lost"));
  const auto events = store.show(leased[0].id).events.size();

  // In a later batch too, beside an outcome that still holds its lease.
  const auto again = store.apply_outcomes(
      {failed(leased[0], "late"), done(leased[1], "2")}, std::nullopt, t0 + 2s);
  REQUIRE(again.outcomes.size() == 2);
  CHECK_FALSE(again.outcomes[0].task);
  CHECK(contains(again.outcomes[0].lost, "lease lost"));
  REQUIRE(again.outcomes[1].task);
  CHECK(again.outcomes[1].task->state == TaskState::completed);
  const auto detail = store.show(leased[0].id);
  CHECK(detail.task.state == TaskState::completed);
  CHECK(detail.task.result == "1");
  CHECK(detail.events.size() == events);
  CHECK(detail.task.errors.empty());

  // An expired lease and a task that no longer exists are lost too.
  const int64_t third = add_task(store, "q", t0 + 3s);
  const auto short_lease = store.lease(lease_request("q", 1s), t0 + 3s);
  REQUIRE(short_lease.size() == 1);
  REQUIRE(short_lease[0].id == third);
  auto ghost = done(short_lease[0], "x");
  ghost.id = 999999;
  const auto late = store.apply_outcomes({done(short_lease[0], "3"), ghost},
                                         std::nullopt, t0 + 10s);
  REQUIRE(late.outcomes.size() == 2);
  CHECK(contains(late.outcomes[0].lost, "expired"));
  CHECK_FALSE(late.outcomes[1].lost.empty());
  CHECK(store.find(third)->state == TaskState::runnable);
}

TEST_CASE("a second complete and lease prepare no statement: SQLite keeps "
          "them"
          * sqlite_only()) {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 6; ++i) {
    add_task(store, "q");
  }
  auto task = lease_one(store, "q", t0);
  REQUIRE(task);
  const auto cycle = [&](Time now) {
    // As `run` does: the done and the next lease in one batch, then the
    // same with the separate calls `done` and `lease` make.
    auto r = store.apply_outcomes({done(*task, "1")}, lease_request("q"), now);
    REQUIRE(r.outcomes.size() == 1);
    REQUIRE(r.outcomes[0].task);
    REQUIRE(r.leased.size() == 1);
    store.complete(r.leased[0].id, r.leased[0].lease->token, "2", now);
    task = lease_one(store, "q", now);
    REQUIRE(task);
  };
  cycle(t0 + 1s);
  const uint64_t before = storage::SqliteDb::prepares();
  cycle(t0 + 2s);
  CHECK(storage::SqliteDb::prepares() == before);
}

TEST_CASE("others_version changes for another store's commit, never for our "
          "own") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q");
  const auto v0 = store.others_version();
  if (on_postgresql()) {
    CHECK_FALSE(v0); // not told: every wake-up is looked at
    return;
  }
  REQUIRE(v0);
  auto task = lease_one(store, "q", t0);
  REQUIRE(task);
  store.apply_outcomes({done(*task, "1")}, lease_request("q"), t0 + 1s);
  CHECK(store.others_version() == v0);
  {
    TaskStore other(db.path(), OpenMode::update);
    add_task(other, "q", t0 + 2s);
  }
  const auto v1 = store.others_version();
  REQUIRE(v1);
  CHECK(*v1 != *v0);
  add_task(store, "q", t0 + 3s);
  CHECK(store.others_version() == v1);
}

TEST_CASE("one `done` or `add` prepares only the statements it runs"
          * sqlite_only()) {
  TempDb db;
  {
    TaskStore setup(db.path(), OpenMode::write);
    add_task(setup, "q");
  }
  core::Task task;
  {
    TaskStore store(db.path(), OpenMode::write);
    auto t = lease_one(store, "q", t0);
    REQUIRE(t);
    task = *t;
  }
  // As one invocation: a fresh connection, so nothing is cached.
  TaskStore store(db.path(), OpenMode::write);
  uint64_t before = storage::SqliteDb::prepares();
  store.complete_only(task.id, task.lease->token, "7", t0 + 1s);
  // BEGIN, the task, its one UPDATE, what its end settles (its labels, its
  // dependents), the event, COMMIT: no delivery read (not a broadcast), no
  // label DELETE (none), no second read of the task.
  CHECK(storage::SqliteDb::prepares() - before <= 7);
  const auto found = store.find(task.id);
  REQUIRE(found);
  const core::Task& done = *found;
  CHECK(done.state == TaskState::completed);
  CHECK(done.result == std::optional<std::string>("7"));
  CHECK_FALSE(done.lease);
  CHECK(done.rev == task.rev + 1);
  // Fenced as complete is: the token is spent.
  CHECK_THROWS_AS(store.complete_only(task.id, task.lease->token, "8", t0 + 3s),
                  Error);

  TaskStore fresh(db.path(), OpenMode::write);
  before = storage::SqliteDb::prepares();
  add_task(fresh, "q");
  // BEGIN, the task, its queue's count, COMMIT: no label or dependency
  // insert prepared for a task with neither.
  CHECK(storage::SqliteDb::prepares() - before <= 4);
}

// A lease of many reads a page of candidates once and takes them in turn;
// each task it returns is the one it read with the lease's writes applied,
// not read again. Both must be invisible: the same tasks in the same
// order as leases of one, each equal to what a read of it gives.
TEST_CASE("one lease of many takes what leases of one take, in the same "
          "order, each task as stored") {
  TempDb many_db;
  TempDb one_db;
  TaskStore many(many_db.path(), OpenMode::write);
  TaskStore one(one_db.path(), OpenMode::write);
  const auto fill = [](TaskStore& store) {
    storage::QueueSettings limited;
    limited.max_running = 7;
    store.set_queue("b", limited);
    // More tasks that this worker may not take than a page of candidates
    // holds, first in lease order: labels it does not match, or addressed
    // to another worker.
    for (int i = 0; i < 20; ++i) {
      auto spec = new_task("a");
      spec.priority = 9;
      if (i % 2 == 0) {
        spec.labels = {{"kind", "other"}};
      } else {
        spec.to_worker = "w2";
      }
      store.add(spec, t0 - 1h, k_operator);
    }
    for (int i = 0; i < 40; ++i) {
      auto spec = new_task(i % 3 == 0 ? "b" : "a");
      spec.priority = i % 4;
      spec.run_at = t0 - 10min - std::chrono::minutes((i * 7) % 5);
      spec.labels = {{"kind", i % 5 == 0 ? "other" : "mine"}};
      if (i == 11) {
        spec.max_attempts = 1; // leased and failed below: paused when met
        spec.priority = 99;
      }
      if (i % 13 == 4) {
        spec.root = {{"batch", "late"}}; // obsolete once one is added
      }
      store.add(spec, t0 - 1h, k_operator);
    }
    auto late = new_task("c");
    late.labels = {{"batch", "late"}};
    store.add(late, t0 - 1h, k_operator);
    // Three that failed once, due again before t0: two are leased with
    // their errors, the one with max_attempts 1 is paused.
    auto first = lease_request("a", 1min);
    first.queues = {"a", "b"};
    first.match = {core::LabelPattern{"kind", "mine"}};
    first.count = 3;
    for (const auto& t : store.lease(first, t0 - 9min)) {
      storage::FailRequest fail;
      fail.error = "boom " + std::to_string(t.id);
      fail.retry_in = 1min;
      store.fail(t.id, t.lease->token, fail, t0 - 9min);
    }
  };
  fill(many);
  fill(one);

  auto req = lease_request("a", 10min);
  req.queues = {"b", "a"};
  req.match = {core::LabelPattern{"kind", "mine"}};
  req.count = 100; // more than there are
  const auto batch = many.lease(req, t0);
  req.count = 1;
  std::vector<core::Task> singles;
  while (true) {
    auto leased = one.lease(req, t0);
    if (leased.empty()) {
      break;
    }
    singles.push_back(std::move(leased.front()));
  }
  REQUIRE(batch.size() > 20);
  CHECK(ids_of(batch) == ids_of(singles));
  int with_errors = 0;
  for (const auto& t : batch) {
    const auto stored = many.find(t.id);
    REQUIRE(stored);
    CHECK(t.rev == stored->rev);
    CHECK(t.state == stored->state);
    CHECK(t.attempts == stored->attempts);
    CHECK(t.updated_at == stored->updated_at);
    REQUIRE(t.lease);
    CHECK(t.lease->token == stored->lease->token);
    CHECK(t.lease->expires_at == stored->lease->expires_at);
    CHECK(t.errors.size() == stored->errors.size());
    CHECK(t.payload == stored->payload);
    CHECK(t.labels == stored->labels);
    with_errors += t.errors.empty() ? 0 : 1;
  }
  CHECK(with_errors == 2);
  // The limit of queue b and the tasks ended on the way hold alike.
  CHECK(many.list(by_state("paused"), t0).size() == 1); // max_attempts
  CHECK(many.list(by_state("killed"), t0).size() == 2); // obsolete
  for (const char* state : {"runnable", "paused", "killed"}) {
    CHECK(ids_of(many.list(by_state(state), t0))
          == ids_of(one.list(by_state(state), t0)));
  }
}
