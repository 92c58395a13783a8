// TaskStore: opening, creating and migrating the database file, refusing
// files it cannot use, and the `db` administration calls.
#include "storage/migrations.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>
#include <sqlite3.h>

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

TEST_CASE("check reports a healthy database as ok") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 5; ++i) {
    add_task(store, "q");
  }
  const auto report = store.check();
  CHECK(report.ok);
  CHECK(report.problems.empty());
  CHECK(report.schema_version == storage::latest_schema_version());
  CHECK(report.tasks == 5);
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

TEST_CASE("check reports a waiting task whose dependency count is off, and "
          "labels missing from the label index") {
  TempDb db;
  {
    TaskStore store(db.path(), OpenMode::write);
    const int64_t dep = add_task(store, "q");
    storage::NewTask waiter = new_task("q");
    waiter.after = {dep};
    waiter.labels = {{"kind", "x"}};
    store.add(waiter, t0, k_operator);
    CHECK(store.check().ok);
  }
  REQUIRE(db.exec("UPDATE tasks SET blockers = 3 WHERE id = 2; "
                  "DELETE FROM task_labels;"));
  TaskStore store(db.path(), OpenMode::read);
  const auto report = store.check();
  CHECK_FALSE(report.ok);
  REQUIRE(report.problems.size() == 2);
  CHECK(contains(report.problems[0], "unfinished dependencies"));
  CHECK(contains(report.problems[1], "label index"));
}
