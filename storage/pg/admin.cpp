// The PostgreSQL backend's schema: migrations recorded in taskq_schema,
// and db check's comparison with what they make.

#include "storage/pg/admin.hpp"

#include "core/error.hpp"
#include "storage/model/locks.hpp"
#include "storage/pg/db.hpp"
#include "storage/pg/schema_url.hpp"
#include "storage/pg/sql.hpp"
#include "storage/seam/db.hpp"
#include "storage/seam/migrations.hpp"

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
// The table is named with its schema, whatever the search_path.
int recorded_version(Db& db) {
  Statement st(db, "SELECT coalesce(max(version), 0), CAST(floor(extract("
                   "epoch FROM clock_timestamp()) * 1000) AS BIGINT) FROM "
                       + pg_schema(db) + ".taskq_schema");
  st.step();
  db.server_time_seen(core::Time(core::Millis(st.get_int(1))));
  return static_cast<int>(st.get_int(0));
}

// Whether table `name` exists in `schema`, read from the catalogs with the
// statement's snapshot: to_regclass() reads the backend's catalog cache,
// which may not yet show a table that another process made while this one
// waited for the migrations' lock.
bool table_exists(Db& db, const std::string& schema, const std::string& name) {
  Statement st(db, "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace "
                   "n ON n.oid = c.relnamespace WHERE n.nspname = ?1 AND "
                   "c.relname = ?2 AND c.relkind IN ('r', 'p'))");
  st.bind(1, schema).bind(2, name);
  st.step();
  return st.get_int(0) != 0;
}

[[noreturn]] void too_new(Db& db, int version) {
  const int latest = static_cast<int>(migrations().size());
  throw Error(ErrorKind::unavailable,
              "cannot use database " + db.path() + ": its schema version "
                  + std::to_string(version)
                  + " is newer than this taskq understands ("
                  + std::to_string(latest) + "); upgrade taskq");
}

// What a database holds before taskq's migrations run: whether the schema
// exists, how many tables, indexes, sequences and functions it holds, and
// whether `public` holds the migration record of an older taskq (which
// made its tables there).
struct Found {
  bool schema = false;
  int64_t objects = 0;
  bool public_record = false;
};

Found look(Db& db, const std::string& schema) {
  Statement st(db, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname "
                   "= ?1), (SELECT count(*) FROM pg_class c JOIN "
                   "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname "
                   "= ?1) + (SELECT count(*) FROM pg_proc p JOIN pg_namespace "
                   "n ON n.oid = p.pronamespace WHERE n.nspname = ?1), "
                   "EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON "
                   "n.oid = c.relnamespace WHERE n.nspname = 'public' AND "
                   "c.relname = 'taskq_schema')");
  st.bind(1, schema);
  st.step();
  return {st.get_int(0) != 0, st.get_int(1), st.get_int(2) != 0};
}

// The tables and functions that migrations 1 to `upto` make, by name:
// applied to a scratch schema in a savepoint that is rolled back.
struct Made {
  std::vector<std::string> tables;
  std::vector<std::string> functions;
};

Made made_by(Db& db, int upto) {
  const std::string scratch = "taskq_scratch_" + std::to_string(::getpid());
  db.exec(("SAVEPOINT taskq_scratch; CREATE SCHEMA " + scratch
           + "; SET LOCAL search_path TO " + scratch)
              .c_str(),
          "cannot read what taskq's migrations make");
  for (const Migration& m : migrations()) {
    if (m.version <= upto) {
      db.exec(pg_migration_sql(m).c_str(),
              "cannot read what taskq's migrations make");
    }
  }
  Made out;
  Statement tables(db, "SELECT c.relname FROM pg_class c JOIN pg_namespace n "
                       "ON n.oid = c.relnamespace WHERE n.nspname = ?1 AND "
                       "c.relkind IN ('r', 'p') ORDER BY 1");
  tables.bind(1, scratch);
  while (tables.step()) {
    out.tables.push_back(tables.get_text(0));
  }
  Statement functions(db, "SELECT p.proname FROM pg_proc p JOIN pg_namespace "
                          "n ON n.oid = p.pronamespace WHERE n.nspname = ?1 "
                          "ORDER BY 1");
  functions.bind(1, scratch);
  while (functions.step()) {
    out.functions.push_back(functions.get_text(0));
  }
  db.exec(("ROLLBACK TO SAVEPOINT taskq_scratch; SET LOCAL search_path TO "
           + pg_schema(db))
              .c_str(),
          "cannot read what taskq's migrations make");
  return out;
}

// An older taskq made its tables in `public`: they move, all in this
// transaction, into `schema` (their rows, indexes, triggers and ids go
// with them); an application's own tables there stay. Only when public
// holds every table and function of the version its record names.
int move_from_public(Db& db, const std::string& schema) {
  Statement record(db, "SELECT coalesce(max(version), 0) FROM "
                       "public.taskq_schema");
  record.step();
  const int version = static_cast<int>(record.get_int(0));
  if (version > static_cast<int>(migrations().size())) {
    too_new(db, version);
  }
  const Made made = made_by(db, version);
  const auto missing = [&db](const std::string& kind, const std::string& name) {
    throw Error(ErrorKind::unavailable,
                "cannot use database " + db.path()
                    + ": schema public holds a half-made taskq schema of an "
                      "older taskq ("
                    + kind + " " + name + " is missing)");
  };
  if (version == 0) {
    missing("migration record", "public.taskq_schema");
  }
  std::string sql = "CREATE SCHEMA IF NOT EXISTS " + schema
                    + "; ALTER TABLE public.taskq_schema SET SCHEMA " + schema;
  for (const std::string& t : made.tables) {
    if (!table_exists(db, "public", t)) {
      missing("table", t);
    }
    sql += "; ALTER TABLE public." + t + " SET SCHEMA " + schema;
  }
  for (const std::string& f : made.functions) {
    Statement there(db, "SELECT 'public.' || p.proname || '(' || "
                        "pg_get_function_identity_arguments(p.oid) || ')' "
                        "FROM pg_proc p JOIN pg_namespace n ON n.oid = "
                        "p.pronamespace WHERE n.nspname = 'public' AND "
                        "p.proname = ?1");
    there.bind(1, f);
    if (!there.step()) {
      missing("function", f);
    }
    sql += "; ALTER FUNCTION " + there.get_text(0) + " SET SCHEMA " + schema;
  }
  db.exec(sql.c_str(), "cannot move taskq's tables from schema public to "
                           + schema + " in database " + db.path());
  return version;
}

} // namespace

void pg_vacuum(Db& db) {
  const std::string schema = pg_schema(db);
  std::string sql;
  Statement st(db, "SELECT tablename FROM pg_tables WHERE schemaname = ?1 "
                   "ORDER BY 1");
  st.bind(1, schema);
  while (st.step()) {
    sql += (sql.empty() ? "VACUUM " : ", ") + schema + "." + st.get_text(0);
  }
  if (!sql.empty()) {
    db.exec(sql.c_str(), "cannot vacuum the database");
  }
}

int pg_schema_version(Db& db) {
  return table_exists(db, pg_schema(db), "taskq_schema") ? recorded_version(db)
                                                         : 0;
}

int pg_recorded_version(Db& db) {
  // Outside a transaction, a query of a missing table harms nothing.
  try {
    return recorded_version(db);
  } catch (const Error&) {
    return pg_schema_version(db); // no schema table yet, or worse: ask
  }
}

int pg_migrate(Db& db, bool create) {
  const int latest = static_cast<int>(migrations().size());
  // The common case costs one round trip and no lock.
  const int seen = pg_recorded_version(db);
  if (seen > latest) {
    too_new(db, seen);
  }
  if (seen == latest) {
    return seen;
  }
  const std::string schema = pg_schema(db);
  Transaction tx(db);
  // One process migrates at a time (a lock of its own, whatever the
  // writers take).
  detail::lock_migrations(db);
  int version = pg_schema_version(db);
  if (version == 0) {
    const Found found = look(db, schema);
    if (found.objects > 0) {
      throw Error(ErrorKind::unavailable,
                  "cannot use database " + db.path() + ": its schema " + schema
                      + " holds tables taskq did not make, or lacks their "
                        "migration record (name another schema with "
                        "?schema=NAME)");
    }
    if (found.public_record && schema == pg_default_schema()) {
      version = move_from_public(db, schema);
    } else if (!create) {
      // Only the commands that add something create taskq's schema: a
      // read or a worker's command writes nothing to a database taskq
      // did not make.
      throw Error(ErrorKind::unavailable, "no taskq schema " + schema
                                              + " in database " + db.path()
                                              + " (the first add creates it)");
    } else if (!found.schema) {
      db.exec(("CREATE SCHEMA " + schema).c_str(),
              "cannot create schema " + schema + " in database " + db.path());
    }
  }
  if (version > latest) {
    too_new(db, version);
  }
  db.exec(k_schema_table, "cannot create taskq's schema table");
  for (const Migration& m : migrations()) {
    if (m.version <= version) {
      continue;
    }
    try {
      db.exec(pg_migration_sql(m).c_str(), "cannot apply migration "
                                               + std::string(m.name)
                                               + " to database " + db.path());
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::unavailable) {
        throw;
      }
      // Tables in the way that its record does not account for.
      throw Error(ErrorKind::unavailable,
                  std::string(e.what()) + " (its schema " + schema
                      + " is not as taskq's migrations left it: see taskq "
                        "db check)");
    }
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
  const std::string actual_schema = pg_schema(db);
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

std::string pg_default_schema() {
  return std::string(pg::k_default_schema);
}

} // namespace taskq::storage
