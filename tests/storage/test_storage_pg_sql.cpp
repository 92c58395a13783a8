// How the shared SQL is spelled for PostgreSQL, and how URLs are shown.
// No server needed: these are the pure parts of the PostgreSQL backend.
#include "storage/db.hpp"

#include <doctest/doctest.h>

using taskq::storage::pg_sql;
using taskq::storage::redact_url;

TEST_CASE("numbered and bare parameters become $N") {
  CHECK(pg_sql("SELECT a FROM t WHERE x = ?2 AND y = ?1")
        == "SELECT a FROM t WHERE x = $2 AND y = $1");
  CHECK(pg_sql("INSERT INTO t VALUES (?, ?, ?)")
        == "INSERT INTO t VALUES ($1, $2, $3)");
}

TEST_CASE("question marks inside quotes and comments are left alone") {
  CHECK(pg_sql("SELECT '?1', \"a?\" FROM t WHERE x = ?1 -- why?\n")
        == "SELECT '?1', \"a?\" FROM t WHERE x = $1 -- why?\n");
}

TEST_CASE("an IS NULL test reads a text copy of a parameter typed elsewhere") {
  // $2 is the copy of ?1 for its IS NULL test; the typed use keeps $1.
  CHECK(pg_sql("SELECT 1 FROM t WHERE ?1 IS NULL OR q = ?1")
        == "SELECT 1 FROM t WHERE $2 IS NULL OR q = $1");
  CHECK(pg_sql("SELECT 1 FROM t WHERE ?1 IS NOT NULL AND q = ?1 AND "
               "?1 IS NULL")
        == "SELECT 1 FROM t WHERE $2 IS NOT NULL AND q = $1 AND $2 IS NULL");
  // Only ever tested: it keeps its number (and is sent as text).
  CHECK(pg_sql("SELECT 1 WHERE ?1 IS NULL") == "SELECT 1 WHERE $1 IS NULL");
}

TEST_CASE("SQLite's planner hints and INSERT OR IGNORE are respelled") {
  CHECK(pg_sql("SELECT id FROM tasks INDEXED BY tasks_ready WHERE q = ?1")
        == "SELECT id FROM tasks WHERE q = $1");
  CHECK(pg_sql("INSERT OR IGNORE INTO d (a) VALUES (?1)")
        == "INSERT INTO d (a) VALUES ($1) ON CONFLICT DO NOTHING");
  // Words that merely contain the keywords are not touched.
  CHECK(pg_sql("SELECT reindexed_by FROM t") == "SELECT reindexed_by FROM t");
}

TEST_CASE("two-argument min and max become LEAST and GREATEST") {
  CHECK(pg_sql("UPDATE t SET a = max(a - 1, 0), b = min(b, ?1)")
        == "UPDATE t SET a = GREATEST(a - 1, 0), b = LEAST(b, $1)");
  // The aggregates stay.
  CHECK(pg_sql("SELECT min(run_at), max(id) FROM t")
        == "SELECT min(run_at), max(id) FROM t");
  CHECK(pg_sql("SELECT max(coalesce(a, 0)) FROM t")
        == "SELECT max(coalesce(a, 0)) FROM t");
}

TEST_CASE("a URL is shown without its password") {
  CHECK(redact_url("postgresql://u:secret@host:5432/db")
        == "postgresql://u:***@host:5432/db");
  CHECK(redact_url("postgres://u@host/db") == "postgres://u@host/db");
  CHECK(redact_url("postgresql:///db?host=/tmp&password=secret&sslmode=off")
        == "postgresql:///db?host=/tmp&password=***&sslmode=off");
  CHECK(redact_url("postgresql://u:p%40ss@h/db") == "postgresql://u:***@h/db");
  CHECK(redact_url("/var/lib/taskq.db") == "/var/lib/taskq.db");
}
