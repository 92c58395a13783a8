// What waiting workers rely on: next_due (when to look again without a
// write), lease_held (has an operator taken my lease?) and the change feed
// (another process committed). Each test runs on a real SQLite file.
#include "storage/change_feed.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

int64_t add_at(TaskStore& store, const std::string& queue, Time run_at,
               int64_t priority = 0) {
  storage::NewTask spec = new_task(queue);
  spec.run_at = run_at;
  spec.priority = priority;
  return store.add(spec, t0, k_operator);
}

} // namespace

TEST_CASE("next_due: nothing coming, or only what is due already") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  CHECK_FALSE(store.next_due({"q"}, t0));
  add_task(store, "q", t0); // due now: a look finds it, no timer needed
  add_at(store, "q", t0 - 1h);
  CHECK_FALSE(store.next_due({"q"}, t0));
}

TEST_CASE("next_due: the earliest future run_at across priorities") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_at(store, "q", t0 + 2h, 5);
  add_at(store, "q", t0 + 3h, 5);
  add_at(store, "q", t0 + 30min, 0); // lower priority, but sooner
  add_at(store, "q", t0 + 1h, -7);
  add_at(store, "other", t0 + 1min); // another queue: not ours
  CHECK(store.next_due({"q"}, t0) == t0 + 30min);
  CHECK(store.next_due({"q", "other"}, t0) == t0 + 1min);
  CHECK(store.next_due({"other"}, t0 + 1min) == std::nullopt);
  // Strictly after now: at exactly 30 minutes the next is an hour.
  CHECK(store.next_due({"q"}, t0 + 30min) == t0 + 1h);
  CHECK(store.next_due({"q"}, t0 + 2h) == t0 + 3h);
}

TEST_CASE("next_due: extreme priorities are walked too") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_at(store, "q", t0 + 3h, std::numeric_limits<int64_t>::max());
  add_at(store, "q", t0 + 2h, std::numeric_limits<int64_t>::min());
  CHECK(store.next_due({"q"}, t0) == t0 + 2h);
  CHECK(store.next_due({"q"}, t0 + 2h) == t0 + 3h);
  CHECK_FALSE(store.anything_due({"q"}, t0 + 2h - 1ms, "w"));
  CHECK(store.anything_due({"q"}, t0 + 2h, "w")); // the lowest priority
  TempDb db2;
  TaskStore top(db2.path(), OpenMode::write);
  add_at(top, "q", t0 + 3h, std::numeric_limits<int64_t>::max());
  CHECK(top.next_due({"q"}, t0) == t0 + 3h);
  CHECK(top.anything_due({"q"}, t0 + 3h, "w")); // the highest priority
}

TEST_CASE("anything_due: a due task, or an expired lease, in any priority") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  CHECK_FALSE(store.anything_due({"q"}, t0, "w"));
  add_at(store, "q", t0 + 1h, 9);
  add_at(store, "q", t0 + 2h, 0);
  add_at(store, "other", t0); // due, but another queue
  CHECK_FALSE(store.anything_due({"q"}, t0, "w"));
  CHECK(store.anything_due({"q", "other"}, t0, "w"));
  CHECK(store.anything_due({"q"}, t0 + 1h, "w"));
  // A leased task is not due; once its lease expires, it is.
  const auto leased = lease_one(store, "q", t0 + 1h, 5min);
  REQUIRE(leased);
  CHECK_FALSE(store.anything_due({"q"}, t0 + 1h, "w"));
  CHECK(store.anything_due({"q"}, t0 + 1h + 5min, "w"));
  // Paused tasks never are.
  send_one(store, leased->id, Message::pause, t0 + 1h);
  CHECK_FALSE(store.anything_due({"q"}, t0 + 1h + 5min, "w"));
  CHECK(store.anything_due({"q"}, t0 + 2h, "w"));
}

TEST_CASE("next_due: a sleeper's wake time and a lease's expiry") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q", t0);
  add_task(store, "q", t0);
  const auto a = lease_one(store, "q", t0, 20min);
  const auto b = lease_one(store, "q", t0, 5min);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(store.next_due({"q"}, t0) == t0 + 5min); // b's lease expires
  store.worker_sleep(b->id, b->lease->token, t0 + 10min, t0);
  CHECK(store.next_due({"q"}, t0) == t0 + 10min);         // b wakes
  CHECK(store.next_due({"q"}, t0 + 10min) == t0 + 20min); // a expires
  CHECK_FALSE(store.next_due({"q"}, t0 + 20min));
}

TEST_CASE("next_due ignores paused and finished tasks") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t paused = add_at(store, "q", t0 + 1h);
  send_one(store, paused, Message::pause, t0);
  const int64_t killed = add_at(store, "q", t0 + 2h);
  send_one(store, killed, Message::kill, t0);
  CHECK_FALSE(store.next_due({"q"}, t0));
}

TEST_CASE("lease_held follows the lease") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0, 5min);
  REQUIRE(leased);
  const std::string token = leased->lease->token;
  CHECK(store.lease_held(id, token, t0));
  CHECK(store.lease_held(id, token, t0 + 5min - 1ms));
  CHECK_FALSE(store.lease_held(id, token, t0 + 5min)); // expired
  CHECK_FALSE(store.lease_held(id, "not-the-token", t0));
  CHECK_FALSE(store.lease_held(id + 1, token, t0)); // no such task

  send_one(store, id, Message::kill, t0 + 1s);
  CHECK_FALSE(store.lease_held(id, token, t0 + 1s));
  CHECK(store.revoked_reason(id, token) == "kill");
}

TEST_CASE("the change feed wakes on another connection's commit") {
  TempDb db;
  TaskStore waiter(db.path(), OpenMode::write);
  storage::ChangeFeed feed = waiter.changes();
  REQUIRE_FALSE(feed.polling()); // inotify works here
  feed.drain();
  CHECK_FALSE(feed.wait(50ms)); // nothing happened

  TaskStore other(db.path(), OpenMode::write);
  add_task(other, "q");
  const auto start = std::chrono::steady_clock::now();
  CHECK(feed.wait(10s));
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  // One commit, one wake-up: drained, it is quiet again.
  feed.drain();
  CHECK_FALSE(feed.wait(50ms));
}

TEST_CASE("a look that finds nothing writes nothing, so idle workers do not "
          "wake each other") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_at(store, "q", t0 + 1h); // something to look at, not yet due
  storage::ChangeFeed feed = store.changes();
  feed.drain();
  CHECK(store.lease(lease_request("q"), t0).empty());
  CHECK_FALSE(store.next_due({"q"}, t0) == std::nullopt);
  CHECK(store.lease_held(1, "token", t0) == false);
  CHECK(store.find(1));
  CHECK_FALSE(feed.wait(100ms));
}

TEST_CASE("a change feed and its waits survive being moved") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::ChangeFeed first = store.changes();
  storage::ChangeFeed moved = std::move(first);
  moved.drain();
  TaskStore other(db.path(), OpenMode::write);
  add_task(other, "q");
  CHECK(moved.wait(10s));
}

TEST_CASE("on PostgreSQL a store's feed leaves out the store's own commits") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::ChangeFeed own = store.changes();
  if (!on_postgresql()) {
    CHECK_FALSE(own.skips_own()); // inotify cannot tell who wrote
    return;
  }
  REQUIRE(own.skips_own());
  // A feed that reports every commit, to know when the server has sent
  // the notification of ours.
  storage::ChangeFeed all(db.path());
  REQUIRE_FALSE(all.skips_own());
  own.drain();
  all.drain();
  add_task(store, "q");
  REQUIRE(all.wait(10s));
  CHECK_FALSE(own.wait(500ms));
  TaskStore other(db.path(), OpenMode::write);
  add_task(other, "q");
  CHECK(own.wait(10s));
}
