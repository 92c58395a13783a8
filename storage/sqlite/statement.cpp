// SqliteDb's statements: preparing them, the cache of prepared ones, and
// SqliteStatement, what a Statement runs on a SQLite file.
#include "core/error.hpp"
#include "core/suggestion.hpp"
#include "storage/sqlite/db.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <random>
#include <string>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace taskq::storage {

namespace {

// Throws what a failed prepare or step of `db` means: a statement naming a
// table or column taskq's migrations make that is not there is a schema
// changed behind taskq's back (unavailable); else SqliteDb::fail.
[[noreturn]] void fail_statement(SqliteDb& db, int rc) {
  const std::string_view why = sqlite3_errmsg(db.handle());
  if ((rc & 0xff) == SQLITE_ERROR
      && (why.starts_with("no such table")
          || why.starts_with("no such column"))) {
    // taskq's own statements name what its migrations made: the schema
    // was changed behind its back.
    throw Error(ErrorKind::unavailable,
                "database " + db.path() + " does not have taskq's schema (see "
                    + core::suggest({"db", "check"})
                    + "): " + std::string(why));
  }
  db.fail(rc, "");
}

class SqliteStatement final : public StatementImpl {
public:
  // Borrows the cached statement `entry` (SqliteDb::Cached), or, when
  // `entry` is null, owns `stmt`.
  SqliteStatement(SqliteDb& db, sqlite3_stmt* stmt, SqliteDb::Cached* entry)
      : m_db(&db), m_stmt(stmt), m_entry(entry) {}
  ~SqliteStatement() override {
    if (m_entry == nullptr) {
      sqlite3_finalize(m_stmt);
      return;
    }
    // Back to the cache, ready for its next use: no transaction is held
    // open by a statement left mid-step, and no borrowed text stays bound.
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
    m_entry->in_use = false;
  }
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  void bind_int(int index, int64_t value) override {
    check_bind(sqlite3_bind_int64(m_stmt, index, value));
  }
  void bind_text(int index, std::string_view value, bool borrowed) override {
    check_bind(sqlite3_bind_text64(m_stmt, index, value.data(), value.size(),
                                   borrowed ? SQLITE_STATIC : SQLITE_TRANSIENT,
                                   SQLITE_UTF8));
  }
  void bind_null(int index) override {
    check_bind(sqlite3_bind_null(m_stmt, index));
  }
  void bind_blob(int index, std::string_view value) override {
    // A zero-length blob, not NULL: sqlite3_bind_blob64 reads a null
    // pointer as NULL.
    check_bind(value.empty()
                   ? sqlite3_bind_zeroblob(m_stmt, index, 0)
                   : sqlite3_bind_blob64(m_stmt, index, value.data(),
                                         value.size(), SQLITE_TRANSIENT));
  }

  bool step() override {
    const int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) {
      return true;
    }
    if (rc == SQLITE_DONE) {
      m_changes = sqlite3_changes64(m_db->handle());
      return false;
    }
    fail_statement(*m_db, rc);
  }
  void reset() override { sqlite3_reset(m_stmt); }
  int64_t changes() const override { return m_changes; }

  bool is_null(int col) const override {
    return sqlite3_column_type(m_stmt, col) == SQLITE_NULL;
  }
  bool is_integer(int col) const override {
    return sqlite3_column_type(m_stmt, col) == SQLITE_INTEGER;
  }
  int column_count() const override { return sqlite3_column_count(m_stmt); }
  std::string column_name(int col) const override {
    const char* name = sqlite3_column_name(m_stmt, col);
    return name == nullptr ? std::string() : std::string(name);
  }
  int64_t get_int(int col) const override {
    return sqlite3_column_int64(m_stmt, col);
  }
  std::string get_text(int col) const override {
    const auto* text = sqlite3_column_text(m_stmt, col);
    const int size = sqlite3_column_bytes(m_stmt, col);
    if (text == nullptr) {
      return {};
    }
    return {reinterpret_cast<const char*>(text), static_cast<size_t>(size)};
  }
  std::string get_blob(int col) const override {
    const void* bytes = sqlite3_column_blob(m_stmt, col);
    const int size = sqlite3_column_bytes(m_stmt, col);
    if (bytes == nullptr) {
      return {};
    }
    return {static_cast<const char*>(bytes), static_cast<size_t>(size)};
  }

private:
  void check_bind(int rc) const {
    if (rc != SQLITE_OK) {
      m_db->fail(rc, "cannot bind a value");
    }
  }
  SqliteDb* m_db;
  sqlite3_stmt* m_stmt;
  SqliteDb::Cached* m_entry;
  int64_t m_changes = 0;
};

} // namespace

std::atomic<uint64_t> SqliteDb::s_prepares{0};

sqlite3_stmt* SqliteDb::prepare_raw(std::string_view sql) {
  ++s_prepares;
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v2(
      handle(), sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(raw);
    fail_statement(*this, rc);
  }
  return raw;
}

SqliteDb::Cached* SqliteDb::take_cached(std::string_view sql) {
  auto it = m_cache.find(sql);
  if (it == m_cache.end()) {
    if (m_cache.size() >= k_cache_size) {
      return nullptr; // SQL built with values: not worth keeping
    }
    sqlite3_stmt* raw = prepare_raw(sql);
    it = m_cache.emplace(std::string(sql), Cached{raw, false}).first;
  } else if (it->second.in_use) {
    return nullptr; // the same SQL open twice at once (nested)
  }
  it->second.in_use = true;
  return &it->second;
}

std::unique_ptr<StatementImpl> SqliteDb::prepare(std::string_view sql) {
  if (Cached* entry = take_cached(sql)) {
    return std::make_unique<SqliteStatement>(*this, entry->stmt, entry);
  }
  return std::make_unique<SqliteStatement>(*this, prepare_raw(sql), nullptr);
}

void SqliteDb::run_cached(std::string_view sql, std::string_view context) {
  Cached* entry = take_cached(sql);
  sqlite3_stmt* st = entry != nullptr ? entry->stmt : prepare_raw(sql);
  // Reset (or finalized) once the error, if any, has been read.
  struct Done {
    sqlite3_stmt* st;
    Cached* entry;
    ~Done() {
      if (entry != nullptr) {
        sqlite3_reset(st);
        entry->in_use = false;
      } else {
        sqlite3_finalize(st);
      }
    }
  } done{st, entry};
  const int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    fail(rc, context);
  }
}

} // namespace taskq::storage
