// What follows a task's end (storage/model/followers.cpp): a task added with
// dependencies waits for them, is released when the last completes and is
// paused when one fails or is killed.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

TEST_CASE("after: a dependent waits until every dependency completes") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = add_task(store, "deps");
  const int64_t b = add_task(store, "deps");
  const int64_t c = add_after(store, "deps", {a, b});
  CHECK(task_of(store, c).waiting);
  CHECK(task_of(store, c).after == std::vector<int64_t>{a, b});
  CHECK(contains(store.why(c, t0, k_worker).at(0), "tasks 1 and 2"));

  finish(store, a, t0);
  CHECK(task_of(store, c).waiting);
  const auto why = store.why(c, t0, k_worker);
  REQUIRE(why.size() == 1);
  CHECK(contains(why[0], "task 2 to complete"));
  CHECK(store.anything_due({"deps"}, t0, k_worker)); // b is due

  CHECK(store.check().ok);
  finish(store, b, t0);
  CHECK_FALSE(task_of(store, c).waiting);
  CHECK(store.check().ok);
  const auto leased = lease_one(store, "deps", t0);
  REQUIRE(leased);
  CHECK(leased->id == c);
}

TEST_CASE("after: a waiting task is not leased, not even when alone") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t dep = add_task(store, "other");
  add_after(store, "deps", {dep});
  CHECK_FALSE(lease_one(store, "deps", t0));
  CHECK_FALSE(store.anything_due({"deps"}, t0, k_worker));
  CHECK_FALSE(store.next_due({"deps"}, t0));
}

TEST_CASE("after: a failed or killed dependency pauses the dependent") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t failing = add_task(store, "deps");
  const int64_t killed = add_task(store, "other");
  const int64_t on_failing = add_after(store, "waits", {failing});
  const int64_t on_killed = add_after(store, "waits", {killed});

  const auto leased = lease_one(store, "deps", t0);
  REQUIRE(leased);
  store.fail(failing, leased->lease->token,
             fail_request("boom", storage::FailMode::no_retry), t0);
  const core::Task paused = task_of(store, on_failing);
  CHECK(paused.state == TaskState::paused);
  CHECK(paused.reason == "dependency 1 failed");
  CHECK_FALSE(paused.waiting);

  send_one(store, killed, Message::kill, t0);
  CHECK(task_of(store, on_killed).reason == "dependency 2 was killed");

  // resume runs it anyway
  send_one(store, on_failing, Message::run, t0);
  const auto next = lease_one(store, "waits", t0);
  REQUIRE(next);
  CHECK(next->id == on_failing);
}
