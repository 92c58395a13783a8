// The event stream's horizon (storage/event_horizon.*): a follower never
// moves past an event id that a transaction still in flight holds, and
// passes an id that never comes (a rollback) once the writers then in
// flight have ended. Two writers overlap only on PostgreSQL (SQLite has
// one writer, and a rollback leaves no gap there).
#include "core/time.hpp"
#include "storage/pg/db.hpp"
#include "storage/seam/db.hpp"
#include "storage/sqlite/db.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

// A connection of its own to the database a store made: a writer the
// follower does not know about.
std::unique_ptr<storage::Db> open_db(const TempDb& db) {
  if (on_postgresql()) {
    return storage::connect_postgres(db.path());
  }
  return std::make_unique<storage::SqliteDb>(db.path(), false);
}

// Logs a note on `task` in the open transaction of `db`: its event id.
int64_t log_note(storage::Db& db, int64_t task) {
  storage::Statement st(db, "INSERT INTO events (task_id, time, message, "
                            "actor) VALUES (?1, ?2, 'note', 'test') "
                            "RETURNING id");
  st.bind(1, task).bind(2, core::to_unix_ms(t0));
  REQUIRE(st.step());
  return st.get_int(0);
}

// The ids of the notes one read of the stream prints.
std::vector<int64_t> read_notes(TaskStore& store, storage::EventCursor& c) {
  std::vector<int64_t> out;
  for (const auto& e : store.events(std::nullopt, std::nullopt, c, 100)) {
    if (e.event.message == "note") {
      out.push_back(e.event.id);
    }
  }
  return out;
}

// A follower that has read everything so far, and a task to log notes on.
struct Scene {
  TempDb temp;
  TaskStore store{temp.path(), OpenMode::write};
  int64_t task = add_task(store, "q");
  storage::EventCursor cursor;
  std::unique_ptr<storage::Db> a = open_db(temp);
  std::unique_ptr<storage::Db> b = open_db(temp);
  Scene() { store.events(std::nullopt, std::nullopt, cursor, 100); }
};

auto postgresql_only() {
  return doctest::skip(!on_postgresql());
}

} // namespace

TEST_CASE("events: an id that is never committed is passed, the next once") {
  Scene s;
  {
    storage::Transaction tx(*s.a);
    log_note(*s.a, s.task);
  } // rolled back: on PostgreSQL its id is a gap for good
  int64_t committed = 0;
  {
    storage::Transaction tx(*s.b);
    committed = log_note(*s.b, s.task);
    tx.commit();
  }
  std::vector<int64_t> seen = read_notes(s.store, s.cursor);
  if (on_postgresql()) {
    // The first read cannot tell a rollback from a writer in flight; the
    // next one (after a wake-up) settles the gap.
    CHECK(seen.empty());
    CHECK(s.cursor.held());
    seen = read_notes(s.store, s.cursor);
  }
  CHECK(seen == std::vector<int64_t>{committed});
  CHECK_FALSE(s.cursor.held());
  CHECK(read_notes(s.store, s.cursor).empty());
}

TEST_CASE("events: an event committed before an earlier id waits for it, then "
          "both in id order"
          * postgresql_only()) {
  Scene s;
  std::optional<storage::Transaction> in_flight(std::in_place, *s.a);
  const int64_t first = log_note(*s.a, s.task);
  int64_t second = 0;
  {
    storage::Transaction tx(*s.b);
    second = log_note(*s.b, s.task);
    tx.commit();
  }
  REQUIRE(second > first);
  CHECK(read_notes(s.store, s.cursor).empty());
  CHECK(s.cursor.held());
  SUBCASE("the earlier one commits") {
    in_flight->commit();
    CHECK(read_notes(s.store, s.cursor) == std::vector<int64_t>{first, second});
  }
  SUBCASE("the earlier one rolls back") {
    in_flight.reset();
    CHECK(read_notes(s.store, s.cursor) == std::vector<int64_t>{second});
  }
  CHECK_FALSE(s.cursor.held());
  CHECK(read_notes(s.store, s.cursor).empty());
}

TEST_CASE("events: a gap that outlives a wake-up waits for the writers in "
          "flight"
          * postgresql_only()) {
  Scene s;
  storage::Transaction in_flight(*s.a);
  const int64_t first = log_note(*s.a, s.task);
  int64_t second = 0;
  {
    storage::Transaction tx(*s.b);
    second = log_note(*s.b, s.task);
    tx.commit();
  }
  CHECK(read_notes(s.store, s.cursor).empty());
  REQUIRE(s.cursor.held());
  // The next read waits for the writer holding the gap to end.
  auto next = std::async(std::launch::async,
                         [&] { return read_notes(s.store, s.cursor); });
  // It is waiting once the server shows the barrier's lock requested and
  // not granted.
  const auto waiting = [&] {
    storage::Statement st(*s.b, "SELECT count(*) FROM pg_locks WHERE "
                                "locktype = 'advisory' AND NOT granted AND "
                                "database = (SELECT oid FROM pg_database "
                                "WHERE datname = current_database())");
    st.step();
    return st.get_int(0) == 1;
  };
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (!waiting() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(waiting());
  CHECK(next.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  in_flight.commit();
  CHECK(next.get() == std::vector<int64_t>{first, second});
}
