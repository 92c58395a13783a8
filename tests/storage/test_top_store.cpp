// What `taskq top` reads: TaskStore::top_view, one snapshot of the queues,
// the unfinished tasks and the recent failures.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

TEST_CASE("top_view: running tasks first with their lease's start, then the "
          "others newest first, and failures with their last error") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t running = add_task(store, "q");
  const int64_t failing = add_task(store, "q");
  const int64_t waiting = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  REQUIRE(leased->id == running);
  const auto second = lease_one(store, "q", t0 + 1s);
  REQUIRE(second);
  REQUIRE(second->id == failing);
  store.fail(failing, second->lease->token,
             fail_request("disk full", storage::FailMode::no_retry), t0 + 2s);
  store.set_queue_paused("idle", true); // settings, no task

  const storage::TopView view = store.top_view(t0 + 10s, 10);
  REQUIRE(view.tasks.size() == 2);
  CHECK(view.tasks[0].task.id == running);
  REQUIRE(view.tasks[0].leased_at);
  CHECK(*view.tasks[0].leased_at == t0);
  CHECK(view.tasks[0].task.lease->worker == k_worker);
  CHECK(view.tasks[1].task.id == waiting);
  CHECK_FALSE(view.tasks[1].leased_at);
  REQUIRE(view.failures.size() == 1);
  CHECK(view.failures[0].task.id == failing);
  CHECK(view.failures[0].last_error == std::optional<std::string>("disk full"));

  REQUIRE(view.queues.size() == 2);
  CHECK(view.queues[0].stats.queue == "idle");
  CHECK(view.queues[0].paused);
  CHECK(view.queues[0].stats.runnable == 0);
  CHECK(view.queues[1].stats.queue == "q");
  CHECK_FALSE(view.queues[1].paused);
  CHECK(view.queues[1].stats.running == 1);
  CHECK(view.queues[1].stats.failed == 1);

  // Once the lease has run out the task is no longer running: it is listed
  // with the others, newest first.
  const storage::TopView later = store.top_view(t0 + 1h, 10);
  REQUIRE(later.tasks.size() == 2);
  CHECK(later.tasks[0].task.id == waiting);
  CHECK(later.tasks[1].task.id == running);
  CHECK_FALSE(later.tasks[1].leased_at);
}

TEST_CASE("top_view: at most `limit` rows of each kind") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 5; ++i) {
    add_task(store, "q");
  }
  REQUIRE(lease_one(store, "q", t0));
  REQUIRE(lease_one(store, "q", t0));
  REQUIRE(lease_one(store, "q", t0));
  const storage::TopView view = store.top_view(t0 + 1s, 2);
  CHECK(view.tasks.size() == 4); // 2 running, 2 others
  CHECK(view.tasks[0].leased_at);
  CHECK(view.tasks[1].leased_at);
  CHECK_FALSE(view.tasks[2].leased_at);
}
