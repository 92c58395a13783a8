// The PostgreSQL backend's schema: migrations recorded in taskq_schema,
// and db check's comparison with what they make.

#include "storage/pg/admin.hpp"

#include "core/error.hpp"
#include "storage/db.hpp"
#include "storage/migrations.hpp"
#include "storage/pg/sql.hpp"
#include "storage/store_detail.hpp"

#include <map>
#include <string>
#include <unistd.h>
#include <vector>

// --- migrations
// ----------------------------------------------------------------

namespace taskq::storage {

namespace {

constexpr const char* k_schema_table =
    "CREATE TABLE IF NOT EXISTS taskq_schema ("
    " version BIGINT PRIMARY KEY, name TEXT NOT NULL,"
    " applied_at TIMESTAMPTZ NOT NULL DEFAULT now())";

// PostgreSQL's migration N: SQLite's respelled, then what only PostgreSQL
// needs (migrations/postgresql/).
std::string pg_migration_sql(const Migration& m) {
  std::string sql = pg::translate_schema(m.sql);
  if (!m.pg_extra.empty()) {
    sql += '\n';
    sql += m.pg_extra;
  }
  return sql;
}

// The server's clock comes along: a command that reads before it writes
// then needs no round trip of its own to learn the time (server_now()).
int recorded_version(Db& db) {
  Statement st(db, "SELECT coalesce(max(version), 0), CAST(floor(extract("
                   "epoch FROM clock_timestamp()) * 1000) AS BIGINT) "
                   "FROM taskq_schema");
  st.step();
  db.server_time_seen(core::Time(core::Millis(st.get_int(1))));
  return static_cast<int>(st.get_int(0));
}

[[noreturn]] void too_new(Db& db, int version) {
  const int latest = static_cast<int>(migrations().size());
  throw Error(ErrorKind::unavailable,
              "cannot use database " + db.path() + ": its schema version "
                  + std::to_string(version)
                  + " is newer than this taskq understands ("
                  + std::to_string(latest) + "); upgrade taskq");
}

} // namespace

int pg_schema_version(Db& db) {
  Statement exists(db, "SELECT to_regclass('taskq_schema') IS NOT NULL");
  exists.step();
  return exists.get_int(0) != 0 ? recorded_version(db) : 0;
}

int pg_recorded_version(Db& db) {
  // Outside a transaction, a query of a missing table harms nothing.
  try {
    return recorded_version(db);
  } catch (const Error&) {
    return pg_schema_version(db); // no schema table yet, or worse: ask
  }
}

int pg_migrate(Db& db) {
  const int latest = static_cast<int>(migrations().size());
  // The common case costs one round trip and no lock.
  const int seen = pg_recorded_version(db);
  if (seen > latest) {
    too_new(db, seen);
  }
  if (seen == latest) {
    return seen;
  }
  Transaction tx(db); // the write lock: one process migrates at a time
  db.exec(k_schema_table, "cannot create taskq's schema table");
  const int version = recorded_version(db);
  if (version > latest) {
    too_new(db, version);
  }
  for (const Migration& m : migrations()) {
    if (m.version <= version) {
      continue;
    }
    db.exec(pg_migration_sql(m).c_str(), "cannot apply migration "
                                             + std::string(m.name)
                                             + " to database " + db.path());
    Statement record(
        db, "INSERT INTO taskq_schema (version, name) VALUES (?1, ?2)");
    record.bind(1, m.version).bind(2, m.name).run();
  }
  tx.commit();
  return latest;
}

} // namespace taskq::storage

namespace taskq::storage {

namespace {

// Every column and index of `schema`, as name -> definition, with the
// schema's name taken out of the definitions.
std::map<std::string, std::string> schema_objects(Db& db,
                                                  const std::string& schema) {
  Statement st(
      db, "SELECT 'table ' || table_name, string_agg(column_name || ' ' || "
          "data_type || ' ' || is_nullable || coalesce(' default ' || "
          "column_default, '') || ' ' || is_identity, ', ' ORDER BY "
          "ordinal_position) FROM information_schema.columns "
          "WHERE table_schema = ?1 AND table_name <> 'taskq_schema' "
          "GROUP BY table_name "
          "UNION ALL SELECT 'index ' || indexname, replace(indexdef, "
          "' ON ' || ?1 || '.', ' ON ') FROM pg_indexes "
          "WHERE schemaname = ?1 AND tablename <> 'taskq_schema'");
  st.bind(1, schema);
  std::map<std::string, std::string> out;
  while (st.step()) {
    out[st.get_text(0)] = st.get_text(1);
  }
  return out;
}

} // namespace

std::vector<std::string> pg_schema_problems(Db& db) {
  Statement current(db, "SELECT current_schema()");
  current.step();
  const std::string actual_schema = current.get_text(0);
  const auto actual = schema_objects(db, actual_schema);
  // The migrations, applied to a scratch schema that the caller's
  // transaction rolls back.
  const std::string scratch = "taskq_check_" + std::to_string(::getpid());
  db.exec(("SAVEPOINT taskq_check; CREATE SCHEMA " + scratch
           + "; SET LOCAL search_path TO " + scratch)
              .c_str(),
          "cannot check the schema");
  for (const Migration& m : migrations()) {
    db.exec(pg_migration_sql(m).c_str(), "cannot check the schema");
  }
  const auto expected = schema_objects(db, scratch);
  db.exec(("ROLLBACK TO SAVEPOINT taskq_check; SET LOCAL search_path TO "
           + actual_schema)
              .c_str(),
          "cannot check the schema");
  return detail::schema_differences(expected, actual,
                                    static_cast<int>(migrations().size()));
}

} // namespace taskq::storage
