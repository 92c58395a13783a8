// Why a database file cannot be used, when the cause is a permission.
#include "storage/sqlite/permissions.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace taskq::storage {

namespace {

// "owner alice, mode 0600" of `path`.
std::string owner_and_mode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return "";
  }
  std::string owner = std::to_string(st.st_uid);
  if (const passwd* pw = ::getpwuid(st.st_uid)) {
    owner = pw->pw_name;
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o",
                static_cast<unsigned>(st.st_mode & 07777));
  return " (owner " + owner + ", mode " + mode + ")";
}

// Whether this process may `how` (R_OK, W_OK) `path`; when not, why, in
// words: "you cannot write F (owner root, mode 0600)". nullopt when it may.
std::optional<std::string> denied(const std::string& path, int how,
                                  const char* verb) {
  if (::access(path.c_str(), how) == 0) {
    return std::nullopt;
  }
  if (errno == EROFS) {
    return path + " is on a read-only file system";
  }
  if (errno != EACCES && errno != EPERM) {
    return std::nullopt;
  }
  return std::string("you cannot ") + verb + " " + path + owner_and_mode(path);
}

} // namespace

std::string permission_problem(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0) {
    return "";
  }
  if (const auto why = denied(path, R_OK, "read")) {
    return *why;
  }
  const std::string wal_note =
      "; taskq needs write access to the database, its -wal and -shm files "
      "and their folder, even to read (SQLite's WAL mode)";
  if (const auto why = denied(path, W_OK, "write")) {
    return *why + wal_note;
  }
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string side = path + suffix;
    if (::access(side.c_str(), F_OK) == 0) {
      if (const auto why = denied(side, R_OK | W_OK, "write")) {
        return *why + wal_note;
      }
    }
  }
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos
                                 ? "."
                                 : path.substr(0, std::max<size_t>(slash, 1));
  if (const auto why = denied(folder, W_OK | X_OK, "write the folder")) {
    return *why + wal_note;
  }
  return "";
}

} // namespace taskq::storage
