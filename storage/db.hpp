#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace taskq::storage {

// One SQLite connection, set up for taskq: a busy handler that waits up to
// the busy timeout. Failures throw taskq::Error naming the database's path,
// with context and sqlite3_errmsg().
class Db {
public:
  // Opens `path` read-write (creating it when `create`), or ":memory:".
  Db(const std::string& path, bool create);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  sqlite3* handle() const { return m_handle.get(); }
  const std::string& path() const { return m_path; }

  // The busy handler's per-connection state (storage/db.cpp).
  struct BusyState;

  // Once the file is known to be taskq's: no checkpoint when the connection
  // closes (until then, closing leaves a WAL file as it found it).
  void keep_wal_on_close();

  // Switches the file to WAL mode (stored in the file). SQLite answers
  // SQLITE_BUSY at once, without the busy handler, while another process
  // holds a lock, so this retries until the busy timeout.
  void enable_wal();

  // Runs SQL without results (may hold several statements).
  void exec(const char* sql, std::string_view context);
  // Throws the taskq::Error for SQLite result code `rc`: "CONTEXT: WHY",
  // then "(database PATH)" when CONTEXT does not name the path ("database
  // error" when CONTEXT is empty).
  [[noreturn]] void fail(int rc, std::string_view context) const;

private:
  struct Close {
    void operator()(sqlite3* db) const;
  };
  std::string m_path;
  // Declared before m_handle, so the connection closes first.
  std::unique_ptr<BusyState> m_busy;
  std::unique_ptr<sqlite3, Close> m_handle;
};

// A prepared statement; bind indexes are 1-based, column indexes 0-based.
class Statement {
public:
  Statement(Db& db, std::string_view sql);

  Statement& bind(int index, int64_t value);
  Statement& bind(int index, int value) {
    return bind(index, static_cast<int64_t>(value));
  }
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind_null(int index);
  // Binds text without copying it: `value` must stay alive and unchanged
  // until the statement is reset or finalized.
  Statement& bind_borrowed(int index, std::string_view value);
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Steps once: true when a row is available, false when done.
  bool step();
  // Steps to the end, for statements without rows.
  void run();
  // Makes the statement ready to step again; bindings are kept.
  void reset();

  bool is_null(int col) const;
  bool is_integer(int col) const;
  int column_count() const;
  std::string column_name(int col) const;
  int64_t get_int(int col) const;
  std::string get_text(int col) const;
  std::optional<int64_t> get_opt_int(int col) const;
  std::optional<std::string> get_opt_text(int col) const;

private:
  struct Finalize {
    void operator()(sqlite3_stmt* stmt) const;
  };
  Db* m_db;
  std::unique_ptr<sqlite3_stmt, Finalize> m_stmt;
};

// BEGIN IMMEDIATE (writes) or BEGIN (reads); rolls back in the destructor
// unless commit() ran.
class Transaction {
public:
  enum class Kind { read, write };
  explicit Transaction(Db& db, Kind kind = Kind::write);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

private:
  Db& m_db;
  bool m_open = true;
};

} // namespace taskq::storage
