// What a PostgreSQL connection writes after the fact: the events rows that
// ride an UPDATE of tasks (pg::WriteBehind::riding). No server needed; the
// rows' writing itself is tested through the store (test_worker_store.cpp:
// "a batch's events are all logged, in order...").
#include "storage/pg/write_behind.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <vector>

using taskq::storage::Db;
using taskq::storage::pg::Prepared;
using taskq::storage::pg::translate;
using taskq::storage::pg::WriteBehind;

namespace {

Prepared prepared(const std::string& sqlite_sql, int params) {
  Prepared p;
  p.sql = translate(sqlite_sql);
  p.params = params;
  return p;
}

Db::EventRow row(int64_t task, std::optional<std::string> detail) {
  return {task,         1000 + task, "lease",          "runnable",
          std::nullopt, "w1",        std::move(detail)};
}

} // namespace

TEST_CASE("the events kept ride an UPDATE of tasks, their parameters after "
          "its own") {
  WriteBehind behind;
  behind.keep(row(7, "attempt 1"));
  behind.keep(row(8, std::nullopt));
  const Prepared p =
      prepared("UPDATE tasks SET lease_worker = ?2 WHERE id = ?1", 2);
  const auto riding = behind.riding(p);
  REQUIRE(riding);
  CHECK(riding->sql.text
        == "WITH taskq_events AS (INSERT INTO events (task_id, time, message, "
           "from_state, to_state, actor, detail) VALUES ($3, $4, $5, $6, $7, "
           "$8, $9), ($10, $11, $12, $13, $14, $15, $16)) UPDATE tasks SET "
           "lease_worker = $2 WHERE id = $1");
  CHECK(riding->params == 16);
  // $1 and $2 are the UPDATE's; $3.. copy the bound values 3.. in order.
  const std::vector<int> source{1, 2,  3,  4,  5,  6,  7,  8,
                                9, 10, 11, 12, 13, 14, 15, 16};
  CHECK(riding->sql.source == source);
  CHECK(riding->sql.as_text == std::vector<bool>(16, false));
  // riding() keeps the rows: they go when their values are taken.
  CHECK_FALSE(behind.empty());
  const auto values = behind.take_values();
  CHECK(behind.empty());
  const std::vector<std::optional<std::string>> want{
      "7", "1007", "lease", "runnable", std::nullopt, "w1", "attempt 1",
      "8", "1008", "lease", "runnable", std::nullopt, "w1", std::nullopt};
  CHECK(values == want);
}

TEST_CASE("an UPDATE's IS NULL copies keep their places when events ride it") {
  WriteBehind behind;
  behind.keep(row(1, std::nullopt));
  // ?1 IS NULL reads a text copy of ?1: three server parameters for two
  // bound ones.
  const Prepared p = prepared(
      "UPDATE tasks SET checkpoint = coalesce(?1, checkpoint), checkpoint_req "
      "= CASE WHEN ?1 IS NULL THEN 1 ELSE 0 END WHERE id = ?2",
      2);
  REQUIRE(p.sql.source.size() == 3);
  const auto riding = behind.riding(p);
  REQUIRE(riding);
  CHECK(riding->sql.text.starts_with(
      "WITH taskq_events AS (INSERT INTO events (task_id, time, message, "
      "from_state, to_state, actor, detail) VALUES ($4, $5, $6, $7, $8, $9, "
      "$10)) UPDATE tasks SET"));
  std::vector<int> source = p.sql.source;
  for (int bound = 3; bound <= 9; ++bound) {
    source.push_back(bound);
  }
  CHECK(riding->sql.source == source);
  CHECK(riding->params == 9);
}

TEST_CASE("events ride no other statement, none that reads them, and not "
          "too many at once") {
  WriteBehind behind;
  const Prepared update =
      prepared("UPDATE tasks SET rev = ?2 WHERE id = ?1", 2);
  CHECK_FALSE(behind.riding(update)); // nothing kept
  behind.keep(row(1, std::nullopt));
  CHECK(behind.riding(update));
  CHECK_FALSE(
      behind.riding(prepared("SELECT rev FROM tasks WHERE id = ?1", 1)));
  CHECK_FALSE(behind.riding(
      prepared("INSERT INTO task_deps (task_id, dep_id) VALUES (?1, ?2)", 2)));
  CHECK_FALSE(behind.riding(prepared("UPDATE queues SET paused = 1", 0)));
  // Its rows would not be visible to the UPDATE: it goes after them.
  CHECK_FALSE(behind.riding(
      prepared("UPDATE tasks SET rev = rev + 1 WHERE id IN (SELECT task_id "
               "FROM events WHERE message = ?1)",
               1)));
  CHECK_FALSE(behind.riding(prepared(
      "WITH x AS (SELECT 1) UPDATE tasks SET rev = rev + 1 WHERE id = ?1", 1)));
  for (int64_t i = 2; i <= 16; ++i) {
    behind.keep(row(i, std::nullopt));
  }
  CHECK(behind.riding(update)); // 16
  behind.keep(row(17, std::nullopt));
  CHECK_FALSE(behind.riding(update)); // 17: one INSERT of their own
}
