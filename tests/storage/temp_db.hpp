#pragma once

#include <doctest/doctest.h>
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace taskq::test {

// The backend under test: TASKQ_TEST_BACKEND=postgresql runs the storage
// tests on the PostgreSQL server that libpq's environment (PGHOST, PGPORT,
// PGUSER, ...) names; anything else, or nothing, on SQLite.
inline bool on_postgresql() {
  const char* b = std::getenv("TASKQ_TEST_BACKEND");
  return b != nullptr && std::string_view(b) == "postgresql";
}

// A test about SQLite files (paths, modes, -wal files, raw SQLite pokes,
// backups to a file) is skipped on PostgreSQL:
//   TEST_CASE("a backup ..." * sqlite_only()) { ... }
inline auto sqlite_only() {
  return doctest::skip(on_postgresql());
}

namespace detail {

// Quotes `s` for /bin/sh.
inline std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Runs a shell command line; its output goes to the test's stderr.
inline int run_command(const std::string& command) {
  const int status = std::system(command.c_str());
  return status == -1 ? -1 : WEXITSTATUS(status);
}

} // namespace detail

// A fresh, empty database for one test.
//
// SQLite: a unique path in a fresh temporary folder. The file itself does
// not exist until a store creates it; the destructor removes it with its
// -wal and -shm files, and the folder with anything else a test put there
// (backups, sub-folders).
//
// PostgreSQL: a new database made with `createdb`, path() its
// postgresql:///NAME URL, dropped by the destructor (with --force, so a
// connection a failed test left open does not keep it). The folder is made
// all the same, for a test's other files.
class TempDb {
public:
  TempDb() {
    const std::string pattern =
        (std::filesystem::temp_directory_path() / "taskq-test-XXXXXX").string();
    std::string buffer = pattern;
    if (::mkdtemp(buffer.data()) == nullptr) {
      throw std::runtime_error("mkdtemp failed for " + pattern);
    }
    m_dir = buffer;
    if (on_postgresql()) {
      static std::atomic<int> counter{0};
      m_database = "taskq_test_" + std::to_string(::getpid()) + "_"
                   + std::to_string(++counter);
      if (detail::run_command("createdb -- " + m_database) != 0) {
        std::error_code ec;
        std::filesystem::remove_all(m_dir, ec);
        throw std::runtime_error("createdb " + m_database
                                 + " failed (is PGHOST set, the server up?)");
      }
      m_path = "postgresql:///" + m_database;
    } else {
      m_path = (m_dir / "taskq.db").string();
    }
  }
  ~TempDb() {
    std::error_code ec; // a destructor must not throw
    if (!m_database.empty()) {
      detail::run_command("dropdb --if-exists --force -- " + m_database
                          + " >/dev/null 2>&1");
    } else {
      for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
        std::filesystem::remove(m_path + suffix, ec);
      }
    }
    std::filesystem::remove_all(m_dir, ec);
  }
  TempDb(const TempDb&) = delete;
  TempDb& operator=(const TempDb&) = delete;

  // What a store opens: a file path, or a postgresql:// URL.
  const std::string& path() const { return m_path; }
  // PostgreSQL: the database's name (empty on SQLite).
  const std::string& database() const { return m_database; }
  // The folder for a test's other files (on SQLite it holds path()).
  const std::filesystem::path& dir() const { return m_dir; }
  // A path in dir(), for backups and other files.
  std::string sibling(const std::string& name) const {
    return (m_dir / name).string();
  }

  // Runs `sql` on its own connection, outside any store: a fixture the
  // public API cannot make (a damaged table, a counter that is off). Only
  // SQL both engines accept works on both. Returns whether it succeeded.
  // STYLE.md keeps <sqlite3.h> inside storage/ for product code; a test
  // preparing a fixture is the exception, and the C API (rather than the
  // sqlite3 shell) handles a -wal file left by the store.
  bool exec(const std::string& sql) const {
    if (!m_database.empty()) {
      // taskq's tables are in its schema, taskq.
      return detail::run_command("PGOPTIONS='-c search_path=taskq' "
                                 "psql -X -q -v ON_ERROR_STOP=1 -d "
                                 + m_database + " -c " + detail::sh_quote(sql)
                                 + " >/dev/null")
             == 0;
    }
    sqlite3* raw = nullptr;
    if (sqlite3_open_v2(m_path.c_str(), &raw,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr)
        != SQLITE_OK) {
      sqlite3_close(raw);
      return false;
    }
    const int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr);
    sqlite3_close(raw);
    return rc == SQLITE_OK;
  }

  // PostgreSQL: `sql`'s one value, read by psql on a connection of its
  // own (taskq's schema first on its search_path).
  std::string value(const std::string& sql) const {
    const std::string command = "PGOPTIONS='-c search_path=taskq,public' "
                                "psql -X -A -t -q -v ON_ERROR_STOP=1 -d "
                                + detail::sh_quote(m_database) + " -c "
                                + detail::sh_quote(sql);
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string out;
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) {
      out += buffer;
    }
    ::pclose(pipe);
    while (!out.empty() && out.back() == '\n') {
      out.pop_back();
    }
    return out;
  }

private:
  std::filesystem::path m_dir;
  std::string m_path;
  std::string m_database; // PostgreSQL only
};

// PostgreSQL: a psql session on a connection of its own, fed one statement
// at a time, for a test that holds a transaction open (a row lock, say)
// while a store acts: run() returns once psql has run the statement. The
// session ends (rolling back what it left open) in the destructor.
class PsqlSession {
public:
  explicit PsqlSession(const TempDb& db) : m_db(db) {
    m_pipe = ::popen(("PGOPTIONS='-c search_path=taskq' psql -X -q -v "
                      "ON_ERROR_STOP=1 -d "
                      + detail::sh_quote(db.database()) + " >/dev/null")
                         .c_str(),
                     "w");
    REQUIRE(m_pipe != nullptr);
  }
  ~PsqlSession() { ::pclose(m_pipe); }
  PsqlSession(const PsqlSession&) = delete;
  PsqlSession& operator=(const PsqlSession&) = delete;

  // Sends `sql` (one statement, with its semicolon) and waits until psql
  // has run it: psql touches a file after it, in order.
  void run(const std::string& sql) {
    const std::string mark = m_db.sibling("psql-" + std::to_string(++m_sent));
    std::fprintf(m_pipe, "%s\n\\! touch %s\n", sql.c_str(),
                 detail::sh_quote(mark).c_str());
    std::fflush(m_pipe);
    REQUIRE(await([&] { return std::filesystem::exists(mark); }));
    std::filesystem::remove(mark); // the next session's marks start at 1
  }

  // Polls `done` until it holds, for at most 20 s; whether it did.
  template <typename Done> static bool await(Done done) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
  }

private:
  const TempDb& m_db;
  FILE* m_pipe = nullptr;
  int m_sent = 0;
};

} // namespace taskq::test
