// When a waiting worker should look again (storage/features/lease_store.cpp):
// next_due, the earliest time something becomes leasable, read without a
// write, and anything_due.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

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
