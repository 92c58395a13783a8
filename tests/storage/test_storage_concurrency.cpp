// TaskStore: several stores (connections) on one database file. The
// guarantees of SPEC §4: no task is leased to two live holders, none is lost,
// and no "database is locked" reaches the caller below the busy timeout.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

TEST_CASE("two stores on one file never lease the same task") {
  TempDb db;
  TaskStore first(db.path(), OpenMode::write);
  TaskStore second(db.path(), OpenMode::write);
  for (int i = 0; i < 20; ++i) {
    add_task(i % 2 == 0 ? first : second, "q");
  }
  std::vector<int64_t> leased;
  for (int i = 0; i < 10; ++i) {
    const auto a = lease_one(first, "q", t0);
    const auto b = lease_one(second, "q", t0);
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->id != b->id);
    leased.push_back(a->id);
    leased.push_back(b->id);
  }
  CHECK_FALSE(lease_one(first, "q", t0));
  CHECK_FALSE(lease_one(second, "q", t0));
  const auto unique = sorted(leased);
  CHECK(std::adjacent_find(unique.begin(), unique.end()) == unique.end());
  CHECK(unique.size() == 20);

  // What one store wrote, the other reads at once.
  const int64_t id = add_task(first, "fresh");
  CHECK(second.find(id));
  const auto held = lease_one(second, "fresh", t0);
  REQUIRE(held);
  CHECK(first.complete(id, *token_of(*held), std::nullopt, t0).state
        == TaskState::completed);
  REQUIRE(second.find(id));
  CHECK(second.find(id)->state == TaskState::completed);
}

TEST_CASE("stores in concurrent threads lease and complete every task "
          "exactly once") {
  constexpr int k_threads = 6;
  constexpr int k_tasks = 600;
  TempDb db;
  std::vector<int64_t> all_ids;
  {
    TaskStore store(db.path(), OpenMode::write);
    int produced = 0;
    store.add_many(
        new_task("q"),
        [&](std::string& payload) {
          if (produced == k_tasks) {
            return false;
          }
          payload = std::to_string(produced++);
          return true;
        },
        [&](int64_t id) { all_ids.push_back(id); }, t0, k_operator);
  }
  REQUIRE(all_ids.size() == static_cast<std::size_t>(k_tasks));

  // Each thread keeps its own results; the main thread checks them.
  struct Outcome {
    std::vector<int64_t> completed;
    std::vector<std::string> errors;
  };
  std::vector<Outcome> outcomes(k_threads);
  std::vector<std::thread> threads;
  for (int w = 0; w < k_threads; ++w) {
    threads.emplace_back([&, w] {
      Outcome& out = outcomes[static_cast<std::size_t>(w)];
      try {
        TaskStore store(db.path(), OpenMode::write);
        // Appended, not `"w" + std::to_string(w)`: GCC 12 -O3 reports a
        // false -Wrestrict on that operator+.
        std::string worker = "w";
        worker += std::to_string(w);
        while (true) {
          const auto leased = store.lease(lease_request("q", 5min, worker), t0);
          if (leased.empty()) {
            break;
          }
          for (const auto& task : leased) {
            store.complete(task.id, task.lease->token, std::nullopt, t0);
            out.completed.push_back(task.id);
          }
        }
      } catch (const std::exception& e) {
        out.errors.push_back(e.what());
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }

  std::vector<int64_t> completed;
  for (const auto& out : outcomes) {
    for (const auto& e : out.errors) {
      CAPTURE(e);
      FAIL_CHECK("a worker thread failed");
    }
    completed.insert(completed.end(), out.completed.begin(),
                     out.completed.end());
  }
  CHECK(sorted(completed) == sorted(all_ids));

  TaskStore store(db.path(), OpenMode::write);
  CHECK(store.list(by_state("completed"), t0).size()
        == static_cast<std::size_t>(k_tasks));
  for (const int64_t id : all_ids) {
    const auto detail = store.show(id);
    CHECK(detail.task.attempts == 1);
    int completes = 0;
    for (const auto& e : detail.events) {
      completes += e.message == "complete" ? 1 : 0;
    }
    CHECK(completes == 1);
  }
}
