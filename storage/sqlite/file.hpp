#pragma once

// Internal to storage/: the SQLite file's part of opening, migrating,
// checking and backing up the store (storage/sqlite/file.cpp); what
// storage/seam/open_store.cpp calls for a path that is no PostgreSQL URL.

#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <memory>
#include <string>

namespace taskq::storage {

class SqliteDb;

namespace detail {

// The schema version of the SQLite file open on `db` (PRAGMA user_version).
int read_user_version(Db& db);

// Applies the migrations the file open on `db` has not had yet, each in its
// own transaction, recording the schema version.
void apply_migrations(Db& db);

// Opens (creating it for OpenMode::write) and migrates the SQLite file at
// `path`: refuses another program's database, one newer than this binary,
// and anything but a regular file; a read creates nothing.
std::unique_ptr<Db> open_sqlite_file(const std::string& path, OpenMode mode);

// The SQLite file's own part of `db check`: integrity_check and the schema.
bool check_sqlite_file(Db& db, CheckReport& report);

// Copies the SQLite database open on `source` to `dest_path`, whole and on
// disk before it appears there; usage error when the file exists.
void backup_sqlite_file(SqliteDb& source, const std::string& dest_path);

} // namespace detail

} // namespace taskq::storage
