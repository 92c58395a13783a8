// TaskStore::fail (storage/features/worker_store.cpp): the error policy (retry
// delay, error window, backoff, the error history), --no-retry and the
// dead-letter move.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

// Leases task `id` (the only eligible one of `queue`) at `now` and fails it.
core::Task lease_and_fail(TaskStore& store, int64_t id,
                          const std::string& queue, Time now,
                          const std::string& error,
                          std::optional<Millis> retry_in = std::nullopt) {
  const auto leased = lease_one(store, queue, now);
  REQUIRE(leased);
  REQUIRE(leased->id == id);
  auto req = fail_request(error);
  req.retry_in = retry_in;
  return store.fail(id, *token_of(*leased), req, now);
}

} // namespace

TEST_CASE("a failed attempt sleeps until now plus the retry delay") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto failed = lease_and_fail(store, id, "q", t0 + 1s, "disk full");

  CHECK(failed.state == TaskState::sleeping);
  CHECK(failed.run_at == t0 + 1s + 10min);
  CHECK_FALSE(failed.leased(t0 + 1s));
  REQUIRE(failed.errors.size() == 1);
  CHECK(failed.errors[0].message == "disk full");
  CHECK(failed.errors[0].time == t0 + 1s);

  const auto stored = store.find(id);
  REQUIRE(stored);
  CHECK(stored->state == TaskState::sleeping);
  CHECK(stored->run_at == t0 + 1s + 10min);
  REQUIRE(stored->errors.size() == 1);
  CHECK(stored->errors[0].message == "disk full");

  CHECK_FALSE(lease_one(store, "q", t0 + 1s + 10min - 1ms));
  const auto again = lease_one(store, "q", t0 + 1s + 10min);
  REQUIRE(again);
  CHECK(again->id == id);
  CHECK(again->attempts == 2);
}

TEST_CASE("the eighth error within the window fails the task with "
          "exceeded error rate") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  Time now = t0;
  for (int i = 1; i <= 7; ++i) {
    CAPTURE(i);
    const auto t = lease_and_fail(store, id, "q", now, numbered("error ", i));
    CHECK(t.state == TaskState::sleeping);
    CHECK(t.run_at == now + 10min);
    CHECK(t.errors.size() == static_cast<std::size_t>(i));
    now += 10min;
  }
  const auto failed = lease_and_fail(store, id, "q", now, "error 8");
  CHECK(failed.state == TaskState::failed);
  REQUIRE(failed.errors.size() == 9);
  CHECK(failed.errors[7].message == "error 8");
  CHECK(failed.errors.back().message == core::k_exceeded_error_rate);
  const auto stored = store.find(id);
  REQUIRE(stored);
  CHECK(stored->state == TaskState::failed);
  REQUIRE_FALSE(stored->errors.empty());
  CHECK(stored->errors.back().message == "exceeded error rate");
  CHECK_FALSE(lease_one(store, "q", now + std::chrono::weeks(1)));
}

TEST_CASE("errors at exactly now minus the window no longer count") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q");
  spec.policy.max_errors = 2;
  spec.policy.window = 1h;
  const int64_t id = store.add(spec, t0, k_operator);

  CHECK(lease_and_fail(store, id, "q", t0, "first").state
        == TaskState::sleeping);
  // The first error is at now - window: not strictly after it.
  CHECK(lease_and_fail(store, id, "q", t0 + 1h, "second").state
        == TaskState::sleeping);
  // Now the second and the third are both within the window.
  const auto third = lease_and_fail(store, id, "q", t0 + 1h + 10min, "third");
  CHECK(third.state == TaskState::failed);
  CHECK(third.errors.back().message == "exceeded error rate");
}

TEST_CASE("fail with retry_in sleeps for that long instead of the delay") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto t = lease_and_fail(store, id, "q", t0, "rate limited", 30s);
  CHECK(t.state == TaskState::sleeping);
  CHECK(t.run_at == t0 + 30s);
}

TEST_CASE("a task's policy overrides its queue's, which override the "
          "defaults") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::QueueSettings settings;
  settings.policy.max_errors = 1;
  settings.policy.retry_delay = 1min;
  store.set_queue("strict", settings);

  const int64_t by_queue_policy = add_task(store, "strict");
  const auto failed =
      lease_and_fail(store, by_queue_policy, "strict", t0, "once is enough");
  CHECK(failed.state == TaskState::failed);

  storage::NewTask lenient = new_task("strict");
  lenient.policy.max_errors = 3;
  const int64_t by_task_policy = store.add(lenient, t0, k_operator);
  const auto slept =
      lease_and_fail(store, by_task_policy, "strict", t0, "try again");
  CHECK(slept.state == TaskState::sleeping);
  CHECK(slept.run_at == t0 + 1min); // the queue's delay still applies
}

TEST_CASE("exponential backoff doubles the delay for each counted error") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q");
  spec.policy.backoff = core::Backoff::exponential;
  spec.policy.retry_delay = 1min;
  spec.policy.max_delay = 3min;
  const int64_t id = store.add(spec, t0, k_operator);

  auto t = lease_and_fail(store, id, "q", t0, "1");
  CHECK(t.run_at == t0 + 1min);
  t = lease_and_fail(store, id, "q", t0 + 1min, "2");
  CHECK(t.run_at == t0 + 1min + 2min);
  t = lease_and_fail(store, id, "q", t0 + 3min, "3");
  CHECK(t.run_at == t0 + 3min + 3min); // 4 min, capped at 3
}

TEST_CASE("fail with no_retry fails the task at once") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  const auto t =
      store.fail(id, *token_of(*leased),
                 fail_request("bad input", storage::FailMode::no_retry), t0);
  CHECK(t.state == TaskState::failed);
  REQUIRE_FALSE(t.errors.empty());
  CHECK(t.errors.front().message == "bad input");
  CHECK_FALSE(t.leased(t0));
  const auto stored = store.find(id);
  REQUIRE(stored);
  CHECK(stored->state == TaskState::failed);
  CHECK_FALSE(lease_one(store, "q", t0 + std::chrono::weeks(1)));
  // The spent token cannot complete a failed task.
  CHECK(error_kind(
            [&] { store.complete(id, *token_of(*leased), std::nullopt, t0); })
        == ErrorKind::conflict);
}

TEST_CASE("fail with move_to sends the task to the dead-letter queue") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q", R"({"file":"x"})");
  spec.labels = {{"k", "v"}};
  const int64_t id = store.add(spec, t0, k_operator);
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  auto req = fail_request("poison", storage::FailMode::move_to);
  req.move_to = "dead";
  const auto moved = store.fail(id, *token_of(*leased), req, t0 + 1s);

  CHECK(moved.id == id);
  CHECK(moved.queue == "dead");
  CHECK(moved.state == TaskState::runnable);
  CHECK(moved.attempts == 1); // its runs keep their numbers
  CHECK_FALSE(moved.leased(t0 + 1s));
  REQUIRE(moved.errors.size() == 1);
  CHECK(moved.errors[0].message == "poison");
  CHECK(moved.payload == R"({"file":"x"})");
  CHECK(moved.labels == core::Labels{{"k", "v"}});

  CHECK_FALSE(lease_one(store, "q", t0 + 1s));
  const auto again = lease_one(store, "dead", t0 + 1s);
  REQUIRE(again);
  CHECK(again->id == id);
  CHECK(again->attempts == 2);
  CHECK(error_kind([&] {
          store.complete(id, *token_of(*leased), std::nullopt, t0 + 2s);
        })
        == ErrorKind::conflict);
}

TEST_CASE("a failing task never stays in fault") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  lease_and_fail(store, id, "q", t0, "x");
  CHECK(store.list(by_state("fault"), t0).empty());
  REQUIRE(store.find(id));
  CHECK(store.find(id)->state != TaskState::fault);
}

TEST_CASE("the error history keeps at least the last 100 errors") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q");
  spec.policy.max_errors = 1000;
  spec.policy.retry_delay = Millis(0);
  const int64_t id = store.add(spec, t0, k_operator);
  Time now = t0;
  for (int i = 1; i <= 120; ++i) {
    lease_and_fail(store, id, "q", now, numbered("e", i));
    now += 1s;
  }
  const auto stored = store.find(id);
  REQUIRE(stored);
  REQUIRE(stored->errors.size() >= 100);
  CHECK(stored->errors.back().message == "e120");
  const std::size_t n = stored->errors.size();
  CHECK(stored->errors[n - 100].message == "e21");
}

TEST_CASE("the error history is trimmed to the last 100 errors") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q");
  // Errors 1 s apart in a 1 ms window: each counts alone, none fails it.
  spec.policy.window = 1ms;
  spec.policy.retry_delay = Millis(0);
  const int64_t id = store.add(spec, t0, k_operator);
  Time now = t0;
  for (int i = 1; i <= 130; ++i) {
    CHECK(lease_and_fail(store, id, "q", now, numbered("e", i)).state
          == TaskState::sleeping);
    now += 1s;
  }
  const auto stored = store.find(id);
  REQUIRE(stored);
  REQUIRE(stored->errors.size() >= 100);
  const std::size_t n = stored->errors.size();
  CHECK(stored->errors[n - 100].message == "e31");
  CHECK(stored->errors.back().message == "e130");
  CHECK(stored->errors.back().time == now - 1s);
}
