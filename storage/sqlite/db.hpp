#pragma once

// SqliteDb: the Db of a SQLite file (storage/sqlite/db.cpp, its statements
// in storage/sqlite/statement.cpp).

#include "storage/seam/db.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

struct sqlite3;
struct sqlite3_stmt;

namespace taskq::storage {

// One SQLite connection, set up for taskq: a busy handler that waits up to
// the busy timeout. Failures throw taskq::Error naming the database's path,
// with context and sqlite3_errmsg().
class SqliteDb final : public Db {
public:
  // Opens `path` read-write (creating it when `create`), or ":memory:".
  SqliteDb(const std::string& path, bool create);
  ~SqliteDb() override;
  sqlite3* handle() const { return m_handle.get(); }

  // The busy handler's per-connection state (storage/sqlite/db.cpp).
  struct BusyState;
  // The thread behind defer_sync (storage/sqlite/db.cpp).
  class WalSync;

  // Once the file is known to be taskq's: no checkpoint when the connection
  // closes (until then, closing leaves a WAL file as it found it).
  void keep_wal_on_close();

  // Switches the file to WAL mode (stored in the file). SQLite answers
  // SQLITE_BUSY at once, without the busy handler, while another process
  // holds a lock, so this retries until the busy timeout.
  void enable_wal();

  std::unique_ptr<StatementImpl> prepare(std::string_view sql) override;
  void exec(const char* sql, std::string_view context) override;
  std::optional<int64_t> last_insert_id() const override;
  std::optional<int64_t> others_version() override;
  void begin(TxKind kind) override;
  void commit() override;
  void rollback() noexcept override;
  bool defer_sync() override;
  uint64_t commit_seq() const override;
  bool wait_durable(uint64_t seq) override;
  bool durable(uint64_t seq) const override;
  int durable_fd() const override;

  // How many statements every SqliteDb of this process has prepared
  // (sqlite3_prepare_v2, and each exec): for tests of the cache.
  static uint64_t prepares();

  // A statement of the cache (see prepare): borrowed by one Statement at a
  // time.
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };

  // Throws the taskq::Error for SQLite result code `rc`: "CONTEXT: WHY",
  // then "(database PATH)" when CONTEXT does not name the path ("database
  // error" when CONTEXT is empty).
  [[noreturn]] void fail(int rc, std::string_view context) const;

private:
  struct Close {
    void operator()(sqlite3* db) const;
  };
  sqlite3_stmt* prepare_raw(std::string_view sql);
  // The cached statement of `sql`, marked in use (prepared on its first
  // use); null when the cache is full or that statement is in use.
  Cached* take_cached(std::string_view sql);
  // Steps a statement without results once (BEGIN, COMMIT, ROLLBACK).
  void run_cached(std::string_view sql, std::string_view context);

  struct SqlHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>{}(s);
    }
  };
  // Past this many distinct statements, new ones are prepared each time
  // (SQL that carries values, which would never be used again).
  static constexpr size_t k_cache_size = 256;
  static std::atomic<uint64_t> s_prepares;

  // Declared before m_handle, so the connection closes first.
  std::unique_ptr<BusyState> m_busy;
  // ~SqliteDb stops it first, syncing what is left.
  std::unique_ptr<WalSync> m_sync;
  std::unique_ptr<sqlite3, Close> m_handle;
  // Statements by SQL text, finalized by ~SqliteDb before the connection
  // closes. Each is reset, its bindings cleared, when its Statement ends.
  std::unordered_map<std::string, Cached, SqlHash, std::equal_to<>> m_cache;
};

} // namespace taskq::storage
