// The change feed (storage/change_feed.cpp): it wakes on another
// connection's commit, not on a look that writes nothing, survives being
// moved, and on PostgreSQL leaves out the store's own commits.
#include "storage/change_feed.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

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

// A commit within core::k_wake_every of the store's last wake-up (opening
// it may make one) owes its wake-up, sent once due: as a worker's loop
// does, send it.
void send_owed_wake(TaskStore& store) {
  if (const auto due = store.wake_due()) {
    std::this_thread::sleep_until(*due);
    store.wake_owed();
  }
  CHECK_FALSE(store.wake_due());
}

TEST_CASE("on PostgreSQL a commit's wake-up is sent at once or owed and sent "
          "when due") {
  TempDb db;
  if (!on_postgresql()) {
    return;
  }
  TaskStore store(db.path(), OpenMode::write);
  storage::ChangeFeed all(db.path());
  all.drain();
  // Commits one after another: each wakes the feed, at once or, within
  // k_wake_every of the last wake-up, once the owed one is sent.
  for (int i = 0; i < 3; ++i) {
    add_task(store, "q");
    send_owed_wake(store);
    REQUIRE(all.wait(10s));
    all.drain();
  }
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
  send_owed_wake(store);
  REQUIRE(all.wait(10s));
  CHECK_FALSE(own.wait(500ms));
  TaskStore other(db.path(), OpenMode::write);
  add_task(other, "q");
  CHECK(own.wait(10s));
}
