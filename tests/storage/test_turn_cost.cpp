// What a worker's turn costs the server on PostgreSQL, in statements
// (pg_stat_statements, which the test cluster loads: tests/CMakeLists.txt):
// a done and the next lease (TaskStore::apply_outcomes, what `run --stream`
// and `run` commit per task), and a plain lease. bench/pg's cost table
// measures the same per task at four workers, beside the SKIP LOCKED
// floor; this pins the count so that a change adding a statement to the
// hot path fails here first. SQLite has no round trips: skipped there.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

// The statements the server ran for `db` since `reset`, but the test's own
// and the wake-ups': a commit that changed rows wakes the waiters in a
// statement of its own (pg_notify, pg::k_commit_write), at most one each
// core::k_wake_every, so how many depends on how fast the test runs.
int64_t statements(const TempDb& db) {
  const std::string from = "FROM pg_stat_statements s "
                           "JOIN pg_database d ON d.oid = s.dbid "
                           "WHERE d.datname = current_database() ";
  const int64_t all =
      std::stoll(db.value("SELECT coalesce(sum(calls), 0) " + from
                          + "AND query NOT LIKE '%pg_stat_statements%'"));
  const int64_t wakes =
      std::stoll(db.value("SELECT coalesce(sum(calls), 0) " + from
                          + "AND query LIKE '%pg_notify(%'"));
  return all - wakes;
}

void reset(const TempDb& db) {
  REQUIRE(db.exec("CREATE EXTENSION IF NOT EXISTS pg_stat_statements "
                  "SCHEMA public"));
  REQUIRE(db.exec("SELECT public.pg_stat_statements_reset()"));
}

} // namespace

TEST_CASE("a done and the next lease cost at most 5 statements on "
          "PostgreSQL"
          * doctest::skip(!on_postgresql())) {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  constexpr int k_turns = 20;
  for (int i = 0; i <= k_turns; ++i) {
    add_task(store, "q");
  }
  auto held = lease_one(store, "q", t0);
  REQUIRE(held);
  const auto next = lease_request("q");
  reset(db);
  for (int i = 0; i < k_turns; ++i) {
    const auto r = store.apply_outcomes({done(*held, "")}, next, t0 + 1s);
    REQUIRE(r.outcomes.size() == 1);
    REQUIRE(r.outcomes[0].task);
    REQUIRE(r.leased.size() == 1);
    held = r.leased[0];
  }
  const int64_t n = statements(db);
  CAPTURE(n);
  // BEGIN; its lock, clock and settings with the held task's row locked
  // (Db::begin_holding); its done, the lease checked in the UPDATE's WHERE
  // (no read of the held task first); the queue's probe, its first
  // candidate, that task's lease and its event in one statement, which the
  // done's event rides (lease_store.cpp's lease_plain); COMMIT.
  CHECK(n <= 5 * k_turns);
  CHECK(n >= 4 * k_turns); // the count is read at all
}

TEST_CASE("a plain lease costs at most 4 statements on PostgreSQL"
          * doctest::skip(!on_postgresql())) {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  constexpr int k_leases = 20;
  for (int i = 0; i < k_leases; ++i) {
    add_task(store, "q");
  }
  reset(db);
  for (int i = 0; i < k_leases; ++i) {
    REQUIRE(lease_one(store, "q", t0));
  }
  const int64_t n = statements(db);
  CAPTURE(n);
  // BEGIN; its lock, clock and settings; the probe, the first candidate,
  // its lease and its event in one statement; COMMIT.
  CHECK(n <= 4 * k_leases);
  CHECK(n >= 3 * k_leases);
}
