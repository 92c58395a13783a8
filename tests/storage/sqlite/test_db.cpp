// The connection under every store (storage/sqlite/db.cpp): the time a write
// decides with, read once it holds the write lock; several stores on one
// file, no task leased twice and none lost; the WAL kept short; group
// commit; the statement cache; others_version.
#include "storage/seam/db.hpp"
#include "storage/sqlite/db.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;
namespace fs = std::filesystem;

TEST_CASE("a write reads its clock once it holds the write lock"
          * sqlite_only()) {
  TempDb db;
  {
    TaskStore setup(db.path(), OpenMode::write);
    add_task(setup, "q");
  }
  // Another connection holds the write lock; the clock records whether it
  // had let go when it was read.
  std::atomic<bool> released{false};
  int reads = 0;
  const Time locked_at = t0 + 3s;
  TaskStore store(db.path(), OpenMode::write, [&] {
    ++reads;
    CHECK(released.load());
    return locked_at;
  });
  std::promise<void> held;
  std::thread other([&] {
    sqlite3* raw = nullptr;
    REQUIRE(
        sqlite3_open_v2(db.path().c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr)
        == SQLITE_OK);
    REQUIRE(sqlite3_exec(raw, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr)
            == SQLITE_OK);
    held.set_value();
    // Holding the lock a while is the scenario.
    std::this_thread::sleep_for(200ms);
    released = true;
    sqlite3_exec(raw, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(raw);
  });
  held.get_future().wait();
  // `now` as the caller read it before waiting: stale by the time the lock
  // is free.
  const auto leased = lease_one(store, "q", t0, 2s);
  other.join();
  REQUIRE(leased);
  CHECK(reads == 1);
  CHECK(leased->lease->expires_at == locked_at + 2s);
  CHECK(leased->updated_at == locked_at);
}

TEST_CASE("every write decides with the store's clock, not the `now` given") {
  TempDb db;
  const Time clock = t0 + 1h;
  TaskStore store(db.path(), OpenMode::write, [&] { return clock; });
  const int64_t id = add_task(store, "q", t0);
  CHECK(store.show(id).task.created_at == clock);
  const auto leased = lease_one(store, "q", t0, 1min);
  REQUIRE(leased);
  CHECK(leased->lease->expires_at == clock + 1min);
  const auto hb =
      store.heartbeat(id, leased->lease->token, 5min, std::nullopt, t0);
  CHECK(hb.expires_at == clock + 5min);
  const auto done = store.complete(id, leased->lease->token, std::nullopt, t0);
  CHECK(done.updated_at == clock);
}

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

TEST_CASE("the WAL is restarted in place after small commits and "
          "truncated after a large one"
          * sqlite_only()) {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const std::string wal = db.path() + "-wal";
  // A bulk add writes more than twice the checkpoint threshold (1,000
  // frames): its commit copies the WAL back and truncates it.
  int left = 100000;
  const auto next = [&left](std::string& payload) {
    payload = std::to_string(left);
    return left-- > 0;
  };
  store.add_many(
      new_task("q", "null"), next, [](int64_t) {}, t0, k_operator);
  CHECK(fs::file_size(wal) == 0);
  // Small commits fill it up to the threshold, then start it over from
  // its beginning: the file never shrinks, and never grows past twice the
  // threshold.
  uintmax_t largest = 0;
  bool shrank = false;
  for (int i = 0; i < 1000; ++i) {
    add_task(store, "q");
    const uintmax_t size = fs::file_size(wal);
    shrank = shrank || size < largest;
    largest = std::max(largest, size);
  }
  const uintmax_t frame = 4096 + 24;
  CHECK_FALSE(shrank);
  CHECK(largest >= 1000 * frame);
  CHECK(largest < 2000 * frame);
}

TEST_CASE("commands that commit once and exit keep the WAL short"
          * sqlite_only()) {
  // Each process that opens the database alone reads the whole WAL; a
  // restart would be forgotten once the process exits, so a connection's
  // first commits truncate it past 64 frames.
  TempDb db;
  const std::string wal = db.path() + "-wal";
  const uintmax_t frame = 4096 + 24;
  uintmax_t largest = 0;
  int truncated = 0;
  uintmax_t before = 0;
  for (int i = 0; i < 300; ++i) {
    {
      TaskStore store(db.path(), OpenMode::write);
      add_task(store, "q");
    }
    const uintmax_t size = fs::exists(wal) ? fs::file_size(wal) : 0;
    truncated += size < before ? 1 : 0;
    before = size;
    largest = std::max(largest, size);
  }
  CHECK(truncated >= 3);
  CHECK(largest < 80 * frame);
}

TEST_CASE("group commit: each commit is numbered, and waited for until its "
          "sync ends") {
  TempDb db;
  {
    TaskStore store(db.path(), OpenMode::write);
    if (on_postgresql()) {
      // A commit is durable when it returns: nothing to defer or wait for.
      CHECK_FALSE(store.defer_sync());
      add_task(store, "q");
      CHECK(store.commit_seq() == 0);
      CHECK_FALSE(store.wait_durable(store.commit_seq()));
      return;
    }
    REQUIRE(store.defer_sync());
    CHECK(store.defer_sync()); // once is enough
    const uint64_t first = store.commit_seq();
    add_task(store, "q");
    CHECK(store.commit_seq() == first + 1);
    for (int i = 0; i < 50; ++i) {
      add_task(store, "q");
    }
    CHECK(store.commit_seq() == first + 51);
    // Reads commit nothing.
    CHECK(store.list(by_queue("q"), t0).size() == 51);
    CHECK(store.commit_seq() == first + 51);
    store.wait_durable(store.commit_seq());
    // Committed is visible to another connection at once, synced or not.
    add_task(store, "q");
    TaskStore other(db.path(), OpenMode::update);
    CHECK(other.list(by_queue("q"), t0).size() == 52);
  }
  // Closing waits for the last syncs; nothing is lost.
  TaskStore again(db.path(), OpenMode::update);
  CHECK(again.list(by_queue("q"), t0).size() == 52);
}

TEST_CASE("group commit: a database moved while open is synced all the same"
          * sqlite_only()) {
  // The sync goes through a descriptor of the WAL SQLite writes, not its
  // name: a rename of the database's folder is nothing to it.
  TempDb db;
  const fs::path dir = fs::path(db.path()).parent_path();
  const fs::path moved = dir / "moved";
  fs::create_directory(moved);
  const fs::path file = moved / "q.db";
  {
    TaskStore store(file.string(), OpenMode::write);
    REQUIRE(store.defer_sync());
    add_task(store, "q");
    store.wait_durable(store.commit_seq());
    fs::rename(moved, dir / "moved-again");
    for (int i = 0; i < 5; ++i) {
      add_task(store, "q");
    }
    CHECK_FALSE(store.durable(store.commit_seq() + 1)); // not made yet
    CHECK_NOTHROW(store.wait_durable(store.commit_seq()));
    CHECK(store.durable(store.commit_seq()));
  }
  TaskStore again((dir / "moved-again" / "q.db").string(), OpenMode::update);
  CHECK(again.list(by_queue("q"), t0).size() == 6);
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
