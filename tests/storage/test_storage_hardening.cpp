// TaskStore under hostile conditions (issue 11): the time a write decides
// with, another program's database, a damaged schema.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <iterator>
#include <string>
#include <thread>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `sql` on its own connection (a fixture the public API cannot make;
// see test_storage_db.cpp on <sqlite3.h> in tests).
void exec_sql(const std::string& path, const char* sql) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &raw,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr)
          == SQLITE_OK);
  const int rc = sqlite3_exec(raw, sql, nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  REQUIRE(rc == SQLITE_OK);
}

} // namespace

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

TEST_CASE("another program's database is refused and left byte for byte"
          * sqlite_only()) {
  TempDb db;
  exec_sql(db.path(), "CREATE TABLE tasks (id INTEGER PRIMARY KEY, x TEXT); "
                      "INSERT INTO tasks VALUES (1, 'mine');");
  const std::string before = read_file(db.path());
  for (const OpenMode mode : {OpenMode::read, OpenMode::write}) {
    try {
      TaskStore store(db.path(), mode);
      FAIL("opened another program's database");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::unavailable);
      CHECK(contains(e.what(), db.path()));
      CHECK(contains(e.what(), "not a taskq database"));
    }
  }
  CHECK(read_file(db.path()) == before);
  CHECK_FALSE(std::filesystem::exists(db.path() + "-wal"));
  CHECK_FALSE(std::filesystem::exists(db.path() + "-journal"));
}

TEST_CASE("check reports a dropped table, an extra index and a changed "
          "column set") {
  TempDb db;
  {
    TaskStore setup(db.path(), OpenMode::write);
    add_task(setup, "q");
    CHECK(setup.check().ok);
  }
  REQUIRE(db.exec("DROP TABLE events; CREATE INDEX mine ON tasks (queue); "
                  "ALTER TABLE queues ADD COLUMN extra TEXT;"));
  const auto report = TaskStore(db.path(), OpenMode::read).check();
  CHECK_FALSE(report.ok);
  std::string all;
  for (const auto& p : report.problems) {
    all += p + "\n";
  }
  CHECK(contains(all, "table events is missing"));
  CHECK(contains(all, "index events_task is missing"));
  CHECK(contains(all, "index mine is not part of taskq's schema"));
  CHECK(contains(all, "table queues differs"));
}
