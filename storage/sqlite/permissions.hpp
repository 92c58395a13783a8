// Why a database file cannot be used, when the cause is a permission.
#pragma once

#include <string>

namespace taskq::storage {

// Why this process cannot open the database at `path` when the cause is a
// permission or a read-only file system, in plain words naming the file
// ("you cannot write /srv/q.db-wal (owner root, mode 0600); taskq needs
// write access ..."); "" when it is not. SQLite's WAL mode writes beside the
// database (its -wal and -shm files) even to read it.
std::string permission_problem(const std::string& path);

} // namespace taskq::storage
