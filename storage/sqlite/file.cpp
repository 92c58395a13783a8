// Everything specific to a SQLite file: creating it (private folders, mode
// 0600), recognising taskq's own, migrating and opening it, the integrity
// and schema part of `db check`, and backup.
#include "storage/sqlite/file.hpp"

#include "core/error.hpp"
#include "storage/seam/db.hpp"
#include "storage/seam/migrations.hpp"
#include "storage/sqlite/db.hpp"
#include "storage/task_store.hpp"

#include <sqlite3.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace taskq::storage {

using namespace detail;

namespace detail {

// Creates the folders of `path` that are missing, mode 0700 (whatever the
// umask), like the database file's 0600.
void create_private_folders(const std::string& path) {
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  std::filesystem::path at;
  for (const auto& part : parent) {
    at /= part;
    if (::mkdir(at.c_str(), 0700) != 0 && errno != EEXIST) {
      throw Error(ErrorKind::unavailable, "cannot create folder " + at.string()
                                              + ": " + std::strerror(errno));
    }
  }
}

// Creates `path`'s folder and the file itself with mode 0600 when missing,
// so SQLite (and its -wal/-shm files, which copy the mode) never makes it
// world-readable.
// Creates the file at `path` (mode 0600); false when another process made
// it first.
bool create_private_file(const std::string& path) {
  create_private_folders(path);
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST) {
    throw Error(ErrorKind::unavailable,
                "cannot create database " + path + ": " + std::strerror(errno));
  }
  if (fd >= 0) {
    ::close(fd);
  }
  return fd >= 0;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// What a file that exists at a database path is, when it is not a regular
// file (SQLite would write a -journal beside it): "" for a regular file.
std::string not_a_file(const struct stat& st) {
  if (S_ISREG(st.st_mode)) {
    return "";
  }
  if (S_ISDIR(st.st_mode)) {
    return "a folder";
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    return "a device";
  }
  if (S_ISFIFO(st.st_mode)) {
    return "a fifo";
  }
  if (S_ISSOCK(st.st_mode)) {
    return "a socket";
  }
  return "not a regular file";
}

int read_user_version(Db& db) {
  Statement st(db, "PRAGMA user_version");
  st.step();
  return static_cast<int>(st.get_int(0));
}

// taskq's mark in a database file's header (PRAGMA application_id):
// "tskq". Set with every migration, so a new database carries it from the
// first commit that gives it tables.
constexpr int k_application_id = 0x74736b71;

void apply_migrations(Db& db) {
  for (const auto& m : migrations()) {
    Transaction tx(db);
    // Another process may have migrated since we looked.
    if (read_user_version(db) >= m.version) {
      continue;
    }
    db.exec(std::string(m.sql).c_str(),
            "cannot apply migration " + std::string(m.name));
    db.exec(("PRAGMA user_version = " + std::to_string(m.version)
             + "; PRAGMA application_id = " + std::to_string(k_application_id))
                .c_str(),
            "cannot record the schema version");
    tx.commit();
  }
}

// Whose the database open on `db` is, read without writing anything, and
// its schema version (PRAGMA user_version).
enum class Owner { taskq, empty, other };
struct Ownership {
  Owner owner;
  int version;
};

int64_t read_pragma(Db& db, const char* sql) {
  Statement st(db, sql);
  st.step();
  return st.get_int(0);
}

Ownership owner_of(Db& db) {
  // Every open: two header reads (one SELECT over sqlite_schema and the
  // pragma functions costs ~0.2 ms more). The schema is looked at only
  // for a file without taskq's mark.
  const int64_t app = read_pragma(db, "PRAGMA application_id");
  if (app == k_application_id) {
    return {Owner::taskq,
            static_cast<int>(read_pragma(db, "PRAGMA user_version"))};
  }
  if (app != 0) {
    return {Owner::other, 0};
  }
  Transaction tx(db, Transaction::Kind::read);
  Statement st(db, "SELECT (SELECT application_id FROM pragma_application_id), "
                   "(SELECT user_version FROM pragma_user_version), "
                   "(SELECT count(*) FROM sqlite_schema), "
                   "(SELECT count(*) FROM sqlite_schema WHERE type = 'table' "
                   "AND name IN ('tasks', 'queues', 'task_errors', 'events'))");
  st.step();
  const int64_t app_now = st.get_int(0);
  const auto version = static_cast<int>(st.get_int(1));
  const int64_t objects = st.get_int(2);
  const int64_t taskq_tables = st.get_int(3);
  if (app_now == k_application_id) {
    return {Owner::taskq, version}; // marked since the PRAGMA above
  }
  if (app_now != 0) {
    return {Owner::other, version};
  }
  if (objects == 0 && version == 0) {
    return {Owner::empty, version};
  }
  // Made before taskq marked its files: its schema version and the tables
  // of its first migration.
  if (version > 0 && taskq_tables == 4) {
    return {Owner::taskq, version};
  }
  return {Owner::other, version};
}

} // namespace detail

// ---------------------------------------------------------------------------
// Opening and migrations
// ---------------------------------------------------------------------------

namespace {

// Opens the regular file at `path` for taskq: refuses another program's
// database and one newer than this binary; initialises an empty file and
// migrates an older one.
std::unique_ptr<Db> open_file(const std::string& path) {
  auto db = std::make_unique<SqliteDb>(path, false);
  if (file_exists(path + "-wal")) {
    // Closing would checkpoint a WAL that is already there into the file:
    // another program's must stay as found.
    db->keep_wal_on_close();
  }
  // Only reads until the file is known to be taskq's or empty: another
  // program's database is left byte for byte as it was.
  const auto [owner, version] = owner_of(*db);
  if (owner == Owner::other) {
    throw Error(ErrorKind::unavailable,
                "cannot use database " + path
                    + ": it is not a taskq database (it holds another "
                      "program's tables); give taskq a file of its own");
  }
  db->keep_wal_on_close();
  // FULL: a command that returned has its change on disk, also across a
  // power loss (NORMAL in WAL mode may lose the last commits).
  db->exec("PRAGMA synchronous = FULL", "cannot configure " + path);
  if (version > latest_schema_version()) {
    throw Error(ErrorKind::unavailable,
                "cannot use database " + path + ": its schema version "
                    + std::to_string(version)
                    + " is newer than this taskq understands ("
                    + std::to_string(latest_schema_version())
                    + "); upgrade taskq");
  }
  if (version < latest_schema_version()) {
    if (owner == Owner::empty) {
      // WAL lets readers run while a writer commits; the mode is stored in
      // the file, so it is set once, when taskq first creates the schema.
      db->enable_wal();
    }
    apply_migrations(*db);
  }
  return db;
}

} // namespace

namespace detail {

// Opens (creating it for OpenMode::write) and migrates the SQLite file at
// `path`: what TaskStore's constructor does for a path that is no URL.
std::unique_ptr<Db> open_sqlite_file(const std::string& path, OpenMode mode) {
  std::unique_ptr<Db> db;
  if (mode == OpenMode::clock) {
    mode = OpenMode::read; // SQLite's clock is the local one
  }
  // Decided before SQLite opens anything: it would write a -journal beside
  // a device such as /dev/null.
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists) {
    if (const std::string what = not_a_file(st); !what.empty()) {
      throw Error(ErrorKind::unavailable, "cannot use database " + path
                                              + ": it is " + what
                                              + ", not a regular file");
    }
  }
  if (!exists && mode != OpenMode::write) {
    // Only the commands that add something create the database: a read or
    // a worker's command on a path with a typo creates nothing.
    throw Error(ErrorKind::unavailable,
                "no database at " + path + " (the first add creates it)");
  }
  if (!exists) {
    const bool created = create_private_file(path);
    try {
      db = open_file(path);
    } catch (...) {
      // Initialising the file this process made failed (a full disk): take
      // it back, unless another process has begun writing to it (its
      // journal or WAL is there, or the file has grown).
      db.reset();
      struct stat now {};
      if (created && ::stat(path.c_str(), &now) == 0 && now.st_size == 0
          && !file_exists(path + "-journal") && !file_exists(path + "-wal")) {
        ::unlink(path.c_str());
      }
      throw;
    }
    return db;
  }
  db = open_file(path);
  return db;
}

} // namespace detail

namespace {

// Every schema object (table, index, trigger, view) by "type name", with
// the SQL that made it (empty for SQLite's automatic indexes). The
// statistics tables of ANALYZE are the planner's, not the schema.
std::map<std::string, std::string> schema_objects(Db& db) {
  Statement st(db, "SELECT type, name, coalesce(sql, '') FROM sqlite_schema "
                   "WHERE name NOT LIKE 'sqlite!_stat%' ESCAPE '!'");
  std::map<std::string, std::string> out;
  while (st.step()) {
    out[st.get_text(0) + " " + st.get_text(1)] = st.get_text(2);
  }
  return out;
}

// How the schema of `db` differs from what the migrations make: one line
// per missing, unexpected or changed table, column set, index or trigger.
std::vector<std::string> schema_problems(Db& db) {
  SqliteDb expected_db(":memory:", true);
  apply_migrations(expected_db);
  const auto expected = schema_objects(expected_db);
  const auto actual = schema_objects(db);
  return schema_differences(expected, actual, latest_schema_version());
}

} // namespace

namespace detail {

// The SQLite file's own part of `db check`: integrity_check and the schema.
bool check_sqlite_file(Db& db, CheckReport& report) {
  {
    Statement st(db, "PRAGMA integrity_check");
    while (st.step()) {
      const std::string line = st.get_text(0);
      if (line != "ok") {
        report.problems.push_back(line);
      }
    }
  }
  report.schema_version = read_user_version(db);
  if (auto schema = schema_problems(db); !schema.empty()) {
    // The invariants read the tables: not without the schema.
    report.problems.insert(report.problems.end(), schema.begin(), schema.end());
    return false;
  }
  return true;
}

} // namespace detail

namespace {

// Removes the temporary file of a backup that did not finish.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    if (!path.empty()) {
      ::unlink(path.c_str());
    }
  }
};

void sync_path(const std::string& path, int flags, const std::string& what) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) {
      ::close(fd);
    }
    throw Error(ErrorKind::unavailable,
                "cannot back up to " + what + ": " + std::strerror(err));
  }
  ::close(fd);
}

} // namespace

namespace detail {

// Copies the SQLite database open on `source` to `dest_path`
// (TaskStore::backup).
void backup_sqlite_file(SqliteDb& source, const std::string& dest_path) {
  struct stat existing {};
  if (::lstat(dest_path.c_str(), &existing) == 0) {
    throw Error(ErrorKind::usage,
                "cannot back up to " + dest_path + ": the file exists");
  }
  create_private_folders(dest_path);
  // The copy goes to a temporary file in the target's folder (the rename
  // must not cross file systems), renamed into place once it is whole and
  // on disk: a backup killed half-way leaves no file at the target.
  const std::filesystem::path target(dest_path);
  const std::string folder =
      target.has_parent_path() ? target.parent_path().string() : ".";
  std::string temp =
      folder + "/." + target.filename().string() + ".taskq-backup-XXXXXX";
  const int fd = ::mkstemp(temp.data()); // mode 0600
  if (fd < 0) {
    throw Error(ErrorKind::unavailable,
                "cannot back up to " + dest_path + ": " + std::strerror(errno));
  }
  ::close(fd);
  RemoveOnExit cleanup{temp};
  {
    SqliteDb dest(temp, false);
    // The file is nothing until it is renamed: no journal to keep, and one
    // fsync at the end instead of one per write.
    dest.exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF",
              "cannot back up to " + dest_path);
    sqlite3_backup* b =
        sqlite3_backup_init(dest.handle(), "main", source.handle(), "main");
    if (b == nullptr) {
      dest.fail(sqlite3_errcode(dest.handle()),
                "cannot back up to " + dest_path);
    }
    // One step copies everything under a read transaction; writers in WAL
    // mode carry on meanwhile.
    int rc = SQLITE_OK;
    do {
      rc = sqlite3_backup_step(b, -1);
      if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
        sqlite3_sleep(5);
      }
    } while (rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
      source.fail(rc, "cannot back up to " + dest_path);
    }
  }
  sync_path(temp, O_RDONLY, dest_path);
  // Never over a file that appeared meanwhile.
  int renamed = ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, dest_path.c_str(),
                            RENAME_NOREPLACE);
  if (renamed != 0 && errno == EINVAL) {
    // A file system without RENAME_NOREPLACE.
    renamed = ::lstat(dest_path.c_str(), &existing) == 0
                  ? (errno = EEXIST, -1)
                  : ::rename(temp.c_str(), dest_path.c_str());
  }
  if (renamed != 0) {
    const int err = errno;
    throw Error(err == EEXIST ? ErrorKind::usage : ErrorKind::unavailable,
                "cannot back up to " + dest_path + ": "
                    + (err == EEXIST ? std::string("the file exists")
                                     : std::string(std::strerror(err))));
  }
  cleanup.path.clear();
  sync_path(folder, O_RDONLY | O_DIRECTORY, dest_path);
}

} // namespace detail

} // namespace taskq::storage
