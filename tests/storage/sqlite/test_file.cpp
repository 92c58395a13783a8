// A SQLite file (storage/sqlite/file.cpp): creating it (mode 0600),
// opening and migrating it, refusing files it cannot use (not a database,
// another program's, a newer schema, a missing one), and backup.
#include "storage/seam/migrations.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;
namespace fs = std::filesystem;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

// The permission bits of `path`.
unsigned mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return static_cast<unsigned>(st.st_mode) & 0777U;
}

// Test fixtures the public API cannot make: a database whose PRAGMA
// user_version is newer than this binary. STYLE.md keeps <sqlite3.h> inside
// storage/ for product code; a test preparing a fixture is the exception,
// and the C API (rather than the sqlite3 shell) keeps the test free of
// external tools and handles a -wal file left by the store.
void set_user_version(const std::string& path, int version) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr)
          == SQLITE_OK);
  const std::string sql = numbered("PRAGMA user_version = ", version);
  const int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  REQUIRE(rc == SQLITE_OK);
}

int user_version(const std::string& path) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr)
          == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  int version = -1;
  if (sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &st, nullptr)
          == SQLITE_OK
      && sqlite3_step(st) == SQLITE_ROW) {
    version = sqlite3_column_int(st, 0);
  }
  sqlite3_finalize(st);
  sqlite3_close(raw);
  return version;
}

// Creates a database at schema `version` by applying the first `version`
// migrations, then runs `sql` on it: an old database as an old taskq left it.
void make_old_database(const std::string& path, int version,
                       const std::string& sql) {
  sqlite3* raw = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &raw,
                          SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr)
          == SQLITE_OK);
  std::string script;
  for (const auto& m : storage::migrations()) {
    if (m.version <= version) {
      script += m.sql;
      script += ";\n";
    }
  }
  script += numbered("PRAGMA user_version = ", version) + ";\n" + sql;
  const int rc = sqlite3_exec(raw, script.c_str(), nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  REQUIRE(rc == SQLITE_OK);
}

// Restores the process umask when a test ends.
class ScopedUmask {
public:
  explicit ScopedUmask(mode_t mask) : m_old(::umask(mask)) {}
  ~ScopedUmask() { ::umask(m_old); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

private:
  mode_t m_old;
};

// Runs `sql` on its own connection (a fixture the public API cannot make;
// see set_user_version on <sqlite3.h> in tests).
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

TEST_CASE("a new database is at the latest schema version") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  CHECK(storage::latest_schema_version() >= 1);
  CHECK(store.schema_version() == storage::latest_schema_version());
  // migrate on an up-to-date database changes nothing.
  CHECK(store.migrate() == storage::latest_schema_version());
  CHECK(store.schema_version() == storage::latest_schema_version());
}

TEST_CASE("reopening a database does not migrate it again or lose tasks") {
  TempDb db;
  int64_t id = 0;
  {
    TaskStore store(db.path(), OpenMode::write);
    id = add_task(store, "q");
  }
  for (int i = 0; i < 3; ++i) {
    TaskStore store(db.path(), OpenMode::write);
    CHECK(store.schema_version() == storage::latest_schema_version());
    CHECK(store.find(id));
  }
}

TEST_CASE("a file that is not a database is refused as unavailable and left "
          "untouched"
          * sqlite_only()) {
  TempDb db;
  std::string garbage;
  for (int i = 0; i < 200; ++i) {
    garbage += numbered("this is not an SQLite database, line ", i) + "\n";
  }
  write_file(db.path(), garbage);

  for (const OpenMode mode : {OpenMode::write, OpenMode::read}) {
    const auto kind = error_kind([&] {
      TaskStore store(db.path(), mode);
      // Some implementations only notice on first use.
      store.list(storage::Selector{}, t0);
    });
    CHECK(kind == ErrorKind::unavailable);
  }
  CHECK(read_file(db.path()) == garbage);
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

TEST_CASE("a database whose schema is newer than this binary is refused as "
          "unavailable"
          * sqlite_only()) {
  TempDb db;
  {
    TaskStore store(db.path(), OpenMode::write);
    add_task(store, "q");
  }
  const int too_new = storage::latest_schema_version() + 1;
  set_user_version(db.path(), too_new);

  for (const OpenMode mode : {OpenMode::write, OpenMode::read}) {
    std::optional<ErrorKind> kind;
    std::string message;
    try {
      TaskStore store(db.path(), mode);
      store.list(storage::Selector{}, t0);
    } catch (const taskq::Error& e) {
      kind = e.kind();
      message = e.what();
    }
    CHECK(kind == ErrorKind::unavailable);
    CHECK(contains(message, "schema"));
  }
  // Refusing it changed nothing: no migration "down", no write.
  CHECK(user_version(db.path()) == too_new);
}

TEST_CASE("opening a missing database but to create it is refused and "
          "creates nothing"
          * sqlite_only()) {
  TempDb db;
  for (const char* where : {"not/yet/taskq.db", "taskq.db"}) {
    const std::string path = (db.dir() / where).string();
    for (const OpenMode mode : {OpenMode::read, OpenMode::update}) {
      try {
        TaskStore store(path, mode);
        FAIL("opened a missing database");
      } catch (const Error& e) {
        CHECK(e.kind() == ErrorKind::unavailable);
        CHECK(std::string(e.what())
              == "no database at " + path + " (the first add creates it)");
      }
    }
  }
  CHECK(fs::is_empty(db.dir()));
}

TEST_CASE("opening for writing creates the file with mode 0600 and its "
          "folder"
          * sqlite_only()) {
  TempDb db;
  const ScopedUmask umask_022(022); // a typical user's umask
  const std::string path = (db.dir() / "sub" / "dir" / "taskq.db").string();
  TaskStore store(path, OpenMode::write);
  add_task(store, "q");
  REQUIRE(fs::exists(path));
  CHECK(mode_of(path) == 0600U);
  // The WAL holds task data too.
  for (const char* suffix : {"-wal", "-shm"}) {
    if (fs::exists(path + suffix)) {
      CAPTURE(suffix);
      CHECK((mode_of(path + suffix) & 0077U) == 0U);
    }
  }
}

TEST_CASE("backup produces a database that opens with the same tasks"
          * sqlite_only()) {
  TempDb db;
  const std::string copy = db.sibling("backup.db");
  int64_t leased_id = 0;
  int64_t killed_id = 0;
  {
    TaskStore store(db.path(), OpenMode::write);
    storage::NewTask spec = new_task("q", R"({"a": [1, 2]})");
    spec.labels = {{"k", "v"}};
    store.add(spec, t0, k_operator);
    const auto leased = lease_one(store, "q", t0);
    REQUIRE(leased);
    leased_id = leased->id;
    killed_id = add_task(store, "other");
    send_one(store, killed_id, Message::kill, t0);
    store.backup(copy);
    // Changes after the backup are not in it.
    add_task(store, "q");
  }
  REQUIRE(fs::exists(copy));
  TaskStore restored(copy, OpenMode::write);
  CHECK(restored.schema_version() == storage::latest_schema_version());
  const auto tasks = restored.list(storage::Selector{}, t0);
  CHECK(sorted(ids_of(tasks)) == std::vector<int64_t>{leased_id, killed_id});
  const auto leased = restored.find(leased_id);
  REQUIRE(leased);
  CHECK(leased->payload == R"({"a": [1, 2]})");
  CHECK(leased->labels == core::Labels{{"k", "v"}});
  CHECK(leased->attempts == 1);
  CHECK(leased->leased(t0));
  REQUIRE(restored.find(killed_id));
  CHECK(restored.find(killed_id)->state == TaskState::killed);
  bool kill_event = false;
  for (const auto& e : restored.show(killed_id).events) {
    kill_event = kill_event || e.message == "kill";
  }
  CHECK(kill_event);
  CHECK(restored.check().ok);
}

TEST_CASE("migrating to schema 3 indexes the labels of unfinished tasks"
          * sqlite_only()) {
  TempDb db;
  // Two tasks from a schema-2 taskq: one unfinished, one completed, both
  // labelled job=sync.
  make_old_database(
      db.path(), 2,
      "INSERT INTO tasks (queue, state, payload, labels, run_at, created_at, "
      "updated_at) VALUES ('q', 'runnable', 'null', '{\"job\":\"sync\"}', "
      "0, 0, 0), ('q', 'completed', 'null', '{\"job\":\"old\"}', 0, 0, 0);");
  TaskStore store(db.path(), OpenMode::write);
  CHECK(store.schema_version() == storage::latest_schema_version());
  storage::NewTask rooted = new_task("q");
  rooted.root = {{"job", "sync"}};
  CHECK(store.add_unique(rooted, t0, k_operator).obsoleted_by == 1);
  rooted.root = {{"job", "old"}};
  CHECK(store.add_unique(rooted, t0, k_operator).id == 3);
  // The old task is leased as before, through the rebuilt index.
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  CHECK(leased->id == 1);
}

TEST_CASE("migrating to schema 10 keeps the counts and counters, in slot 0"
          * sqlite_only()) {
  TempDb db;
  // A schema-9 database: three tasks of q (two runnable, one completed)
  // and one of r, with the counts an old taskq kept for them.
  make_old_database(
      db.path(), 9,
      "INSERT INTO tasks (queue, state, payload, run_at, created_at, "
      "updated_at) VALUES ('q', 'runnable', 'null', 0, 0, 0), ('q', "
      "'runnable', 'null', 0, 0, 0), ('q', 'completed', 'null', 0, 0, 0), "
      "('r', 'runnable', 'null', 0, 0, 0);"
      "INSERT INTO queue_counts (queue, state, n) VALUES ('q', 'runnable', "
      "2), ('q', 'completed', 1), ('r', 'runnable', 1);"
      "INSERT INTO queues (name, errors_total, leases_expired_total) "
      "VALUES ('q', 3, 2);");
  TaskStore store(db.path(), OpenMode::write);
  CHECK(store.schema_version() == storage::latest_schema_version());
  const auto counted = [&](const std::string& q) {
    const auto s = store.stats(q, t0);
    REQUIRE(s.size() == 1);
    return std::pair{s[0].runnable, s[0].completed};
  };
  CHECK(counted("q") == std::pair<int64_t, int64_t>{2, 1});
  CHECK(counted("r") == std::pair<int64_t, int64_t>{1, 0});
  CHECK(store.check().problems.empty());
  // So are the counters, moved off the queue's row.
  const auto metrics = store.metrics(t0);
  const auto q =
      std::find_if(metrics.begin(), metrics.end(),
                   [](const auto& m) { return m.stats.queue == "q"; });
  REQUIRE(q != metrics.end());
  CHECK(q->errors_total == 3);
  CHECK(q->leases_expired_total == 2);
  // A move after the migration is counted on top of the old counts.
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  store.complete(leased->id, leased->lease->token, std::nullopt, t0);
  CHECK(counted("q") == std::pair<int64_t, int64_t>{1, 2});
  CHECK(store.check().problems.empty());
}
