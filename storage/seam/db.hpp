#pragma once

// The seam between the rules and the backends: Db (one connection),
// StatementImpl and Statement, Transaction; what both backends implement.
// The rules (TaskStore's files in storage/) are written once against it;
// what differs per backend is in storage/sqlite/ and storage/pg/.

#include "core/error.hpp"
#include "core/time.hpp"
#include "storage/task_store.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace taskq::storage {

enum class Backend { sqlite, postgresql };

// How long a writer waits for another to finish (SQLite's busy timeout,
// PostgreSQL's lock_timeout): 30 s, or TASKQ_BUSY_TIMEOUT_MS.
int busy_timeout_ms();

// Where a PostgreSQL URL holds a secret: bytes [begin, end) of it.
struct UrlSpan {
  size_t begin = 0;
  size_t end = 0;
};
// The secrets of `url` (redact_url() hides them), in order, none
// overlapping; none for a string that is no PostgreSQL URL.
std::vector<UrlSpan> url_secrets(std::string_view url);
// `text` percent-decoded as libpq decodes a URL's parts (%XY, either case
// of hex); a malformed escape, which libpq refuses, is kept as it is.
std::string percent_decode(std::string_view text);
// `url` as libpq reads it: its scheme in lower case.
std::string libpq_url(std::string_view url);

// What one backend's prepared statement does; Statement wraps it. Bind
// indexes are 1-based, column indexes 0-based.
class StatementImpl {
public:
  virtual ~StatementImpl() = default;
  virtual void bind_int(int index, int64_t value) = 0;
  // `borrowed`: the caller keeps `value` alive until reset or destruction.
  virtual void bind_text(int index, std::string_view value, bool borrowed) = 0;
  virtual void bind_null(int index) = 0;
  // Bytes, stored as they are (SQLite BLOB, PostgreSQL BYTEA).
  virtual void bind_blob(int index, std::string_view value) = 0;
  virtual bool step() = 0;
  virtual void reset() = 0;
  virtual int64_t changes() const = 0;
  virtual bool is_null(int col) const = 0;
  virtual bool is_integer(int col) const = 0;
  virtual int column_count() const = 0;
  virtual std::string column_name(int col) const = 0;
  virtual int64_t get_int(int col) const = 0;
  virtual std::string get_text(int col) const = 0;
  // A BLOB/BYTEA column's bytes.
  virtual std::string get_blob(int col) const = 0;
};

// One connection to taskq's database. The SQL that taskq's rules write is
// shared by both backends (standard SQL with `?N` parameters, RETURNING,
// ON CONFLICT, partial indexes); what differs sits here: opening, running
// statements, transactions and their locking, the server's clock, and the
// few spellings in Dialect. Failures throw taskq::Error naming the
// database (never a password).
class Db {
public:
  enum class TxKind { read, write };

  // The spellings that differ between the backends' SQL (storage/seam/db.cpp).
  struct Dialect {
    Backend backend;
    // A FROM item: the (key, value) rows of the JSON object held as text
    // by SQL expression `expr`, values as text.
    std::string json_object_rows(std::string_view expr) const;
    // A FROM item: the (value) rows of the JSON array held as text by
    // `expr`, values as text.
    std::string json_array_rows(std::string_view expr) const;
    // A query of the columns of table ?1 in their order: name, then 1 or 0
    // for "holds integers", "NOT NULL" and "NOT NULL without a default".
    // Columns the database always fills itself are left out (PostgreSQL's
    // task_errors.rowid, like SQLite's hidden rowid).
    std::string_view table_columns() const;
    // Follows a text expression in ORDER BY: byte order on both backends
    // (SQLite's BINARY; PostgreSQL's "C", whatever the database's locale).
    std::string_view bytewise() const;
    // Rows per INSERT statement of a bulk add. SQLite gains under 3% past
    // 64; PostgreSQL's per-statement work (a round trip, the executor's
    // start) is larger: 512 rows take a bulk add from 99k to 130k tasks/s
    // (bench/pg (b)).
    int bulk_rows() const;
    // The slot of a counter's row a write adds to: one of 64 on
    // PostgreSQL, by transaction (writers side by side spread over them),
    // the one slot 0 on SQLite (migrations/postgresql/0010_count_slots.sql).
    std::string_view count_slot() const;
    // Whether writers commit in the order they took ids (SQLite's one
    // writer: a snapshot sees every id up to its largest); PostgreSQL's
    // side-by-side writers do not (storage/model/event_horizon.cpp).
    bool commits_in_id_order() const;
    // Whether retrying() may run a write transaction again: PostgreSQL
    // ends conflicting writers; SQLite's one writer never conflicts.
    bool tries_again() const;
  };

  virtual ~Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  Backend backend() const { return m_backend; }
  // The database as shown to users: a file path, or a URL without its
  // password.
  const std::string& path() const { return m_path; }
  Dialect dialect() const { return Dialect{m_backend}; }

  virtual std::unique_ptr<StatementImpl> prepare(std::string_view sql) = 0;
  // Runs SQL without results (may hold several statements).
  virtual void exec(const char* sql, std::string_view context) = 0;

  // A write transaction: on SQLite it excludes every other writer until it
  // ends (BEGIN IMMEDIATE); on PostgreSQL writers run side by side and each
  // rule that reads then writes holds by row locks or a constraint of its
  // own (a conflict the server ends is run again by retrying()). A read
  // transaction sees one snapshot.
  virtual void begin(TxKind kind) = 0;
  // A write transaction that holds the rows of tasks `ids` from its start,
  // locked in id order, as lock_task() would lock each: on PostgreSQL in
  // the statement that begins it (a statement and a round trip less a
  // task). SQLite's write lock holds every row: begin(write).
  virtual void begin_holding(const std::vector<int64_t>& ids) {
    (void)ids;
    begin(TxKind::write);
  }
  // Whether the transaction begun last holds task `id`'s row from its
  // start (begin_holding()).
  virtual bool holds_task(int64_t id) const {
    (void)id;
    return false;
  }
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;

  // The database's clock (PostgreSQL: the server's, so that hosts whose
  // clocks disagree agree on leases); std::nullopt: use the local clock.
  virtual std::optional<core::Time> server_now() { return std::nullopt; }
  // The server's clock read `at` in a reply that has just come back (a
  // query that asked for it besides its own work): server_now() counts on
  // from the latest such reading instead of asking again.
  virtual void server_time_seen(core::Time /*at*/) {}

  // What a ChangeFeed on this database is given: the file's path on
  // SQLite; on PostgreSQL the URL as given, password included (path()
  // hides it), so that the feed's own connection can log in. Never shown.
  virtual std::string feed_source() const { return m_path; }
  // The server process of this connection, whose notifications a ChangeFeed
  // may leave out as our own commits (0: none to leave out).
  virtual int backend_pid() const { return 0; }
  // How many times the connection to the server was lost (a ConnectionLost
  // thrown), and the last one's message: a long-lived caller whose code
  // swallowed one on a path where a failure changes nothing (a read that
  // only refines a decision) still learns of it (0 and "" on SQLite).
  virtual uint64_t connection_losses() const { return 0; }
  virtual std::string last_connection_loss() const { return {}; }

  // A number that changes when another connection commits to the
  // database, and only then (SQLite's data_version); std::nullopt where
  // the backend does not say.
  virtual std::optional<int64_t> others_version() { return std::nullopt; }

  // Group commit, for a long-lived writer (run --stream). After
  // defer_sync(), a commit of this connection returns once the database
  // holds it (every connection sees it, and a kill of this process loses
  // nothing), without waiting for the disk: a thread of the connection's
  // own syncs the log, each sync covering every commit made before it
  // began, so one sync can serve several commits. commit_seq() numbers
  // this connection's commits; wait_durable(n) returns once the n-th is on
  // disk, true when it had to wait for that, and throws unavailable when a
  // sync failed; durable(n) says whether it would return at once (a failed
  // sync counts: the wait throws), and durable_fd() is readable after each
  // sync ends (read it to clear it). Closing waits for all.
  // false, and nothing to wait for, where a commit is durable when it
  // returns (PostgreSQL).
  virtual bool defer_sync() { return false; }
  virtual uint64_t commit_seq() const { return 0; }
  virtual bool wait_durable(uint64_t /*seq*/) { return false; }
  virtual bool durable(uint64_t /*seq*/) const { return true; }
  virtual int durable_fd() const { return -1; }

  // One row of the events table, as log_event writes it.
  struct EventRow {
    int64_t task_id = 0;
    int64_t time = 0; // unix milliseconds
    std::string message;
    std::optional<std::string> from, to; // states
    std::string actor;
    std::optional<std::string> detail;
  };
  // Takes an events row to write later in the open write transaction,
  // before its next statement that names the events table and at the
  // latest in its commit's round trip (PostgreSQL: no round trip of its
  // own, several rows in one INSERT); false where the caller writes it
  // now. A rollback drops it.
  virtual bool defer_event(EventRow& /*row*/) { return false; }
  // Written in a statement's `INSERT INTO events (columns)`, before the
  // SELECT of its own rows: where the rows defer_event() kept go in that
  // statement (PostgreSQL: pg::WriteBehind::riding), so that the INSERT
  // writes them first and no statement of their own is needed. A comment:
  // with none kept, the statement runs as written.
  static constexpr std::string_view k_kept_events_here =
      "/*taskq_kept_events*/";
  // A statement whose status does not say it changed rows did (a SELECT
  // whose data-modifying WITH wrote): its commit wakes the watchers as any
  // write's does.
  virtual void wrote() {}

  // The wake-up this connection owes the processes waiting on the
  // database (PostgreSQL: its commits wake them at most once per
  // core::k_wake_every, see core/wake_throttle.hpp): when it is due
  // (std::nullopt: none owed), and sending it once due (nothing before,
  // nor inside a transaction). A long-lived writer waits no longer than
  // wake_due() and then calls wake_owed(); the next transaction and closing
  // send it too.
  virtual std::optional<std::chrono::steady_clock::time_point>
  wake_due() const {
    return std::nullopt;
  }
  virtual void wake_owed() {}
  // The open write transaction's changes concern only those watching (see
  // core::k_quiet_wake_every), unless wake_soon() says otherwise: a change
  // that may give a waiting worker work (a task added, made ready, due
  // again, or whose dependency ended). Both end with the transaction.
  virtual void wake_later() {}
  virtual void wake_soon() {}

  // The id of the last row this connection inserted, where the database
  // keeps it (SQLite); std::nullopt elsewhere: ask with RETURNING.
  virtual std::optional<int64_t> last_insert_id() const { return std::nullopt; }

  // Rows were inserted into `table` with explicit values of its `id`
  // column: the ids it generates next must be larger than all of them.
  // (SQLite's AUTOINCREMENT sees to it; PostgreSQL moves the identity's
  // sequence, never backwards.)
  virtual void ids_given(std::string_view /*table*/) {}

  // Work the open write transaction does last, just before it commits (a
  // flow's step once its atom's task has ended and every row of that end
  // is written). Work it queues runs too; a rollback drops it all.
  void defer(std::function<void()> work) {
    m_deferred.push_back(std::move(work));
  }
  void run_deferred() {
    for (size_t i = 0; i < m_deferred.size(); ++i) {
      auto work = std::move(m_deferred[i]);
      work();
    }
    m_deferred.clear();
  }
  void drop_deferred() noexcept { m_deferred.clear(); }

protected:
  Db(Backend backend, std::string path)
      : m_backend(backend), m_path(std::move(path)) {}

private:
  Backend m_backend;
  std::string m_path;
  std::vector<std::function<void()>> m_deferred;
};

// A prepared statement of either backend.
class Statement {
public:
  Statement(Db& db, std::string_view sql) : m_impl(db.prepare(sql)) {}

  Statement& bind(int index, int64_t value) {
    m_impl->bind_int(index, value);
    return *this;
  }
  Statement& bind(int index, int value) {
    return bind(index, static_cast<int64_t>(value));
  }
  Statement& bind(int index, std::string_view value) {
    m_impl->bind_text(index, value, false);
    return *this;
  }
  Statement& bind(int index, const char* value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind(int index, const std::string& value) {
    return bind(index, std::string_view(value));
  }
  Statement& bind_null(int index) {
    m_impl->bind_null(index);
    return *this;
  }
  // Binds bytes (any, NUL included) for a BLOB column; copied.
  Statement& bind_blob(int index, std::string_view value) {
    m_impl->bind_blob(index, value);
    return *this;
  }
  // Binds text without copying it: `value` must stay alive and unchanged
  // until the statement is reset or finalized.
  Statement& bind_borrowed(int index, std::string_view value) {
    m_impl->bind_text(index, value, true);
    return *this;
  }
  template <typename T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // Steps once: true when a row is available, false when done.
  bool step() { return m_impl->step(); }
  // Steps to the end, for statements without rows.
  void run() {
    while (step()) {
    }
  }
  // Makes the statement ready to step again; bindings are kept.
  void reset() { m_impl->reset(); }
  // The rows the last run inserted, updated or deleted.
  int64_t changes() const { return m_impl->changes(); }

  bool is_null(int col) const { return m_impl->is_null(col); }
  bool is_integer(int col) const { return m_impl->is_integer(col); }
  int column_count() const { return m_impl->column_count(); }
  std::string column_name(int col) const { return m_impl->column_name(col); }
  int64_t get_int(int col) const { return m_impl->get_int(col); }
  std::string get_text(int col) const { return m_impl->get_text(col); }
  std::string get_blob(int col) const { return m_impl->get_blob(col); }
  std::optional<int64_t> get_opt_int(int col) const {
    if (is_null(col)) {
      return std::nullopt;
    }
    return get_int(col);
  }
  std::optional<std::string> get_opt_text(int col) const {
    if (is_null(col)) {
      return std::nullopt;
    }
    return get_text(col);
  }

private:
  std::unique_ptr<StatementImpl> m_impl;
};

// A write transaction the database ended because another one stood in
// its way in a manner that running it again resolves: PostgreSQL's
// deadlock (40P01) or serialisation failure (40001). Its kind is
// unavailable (exit 5), which is what reaches the user once retrying()
// has given up.
class TxConflict : public Error {
public:
  using Error::Error;
};

// How many times retrying() runs a write transaction that ends in
// TxConflict; the pause before try n is random, up to n * 10 ms.
constexpr int k_write_tries = 5;

// Runs `work`, one whole write transaction (its Transaction made inside,
// committed before it returns), and runs it again from BEGIN when the
// database ended it in TxConflict: every read is made again, so each
// decision sees the rows as they are now. `work` must have no effect
// outside the database before it commits. On SQLite, whose one writer
// never meets another, this only runs `work`.
template <typename Work> decltype(auto) retrying(Work&& work) {
  for (int tries = 1;; ++tries) {
    try {
      return work();
    } catch (const TxConflict&) {
      if (tries == k_write_tries) {
        throw;
      }
      thread_local std::minstd_rand random(std::random_device{}());
      std::this_thread::sleep_for(std::chrono::milliseconds(
          1 + std::uniform_int_distribution<int>(0, 10 * tries - 1)(random)));
    }
  }
}

// A write or read transaction (Db::begin); rolls back in the destructor
// unless commit() ran.
class Transaction {
public:
  enum class Kind { read, write };
  explicit Transaction(Db& db, Kind kind = Kind::write) : m_db(db) {
    m_db.begin(kind == Kind::write ? Db::TxKind::write : Db::TxKind::read);
  }
  // A write transaction holding tasks `ids` from its start
  // (Db::begin_holding).
  Transaction(Db& db, const std::vector<int64_t>& ids) : m_db(db) {
    m_db.begin_holding(ids);
  }
  ~Transaction() {
    if (m_open) {
      m_db.drop_deferred();
      m_db.rollback();
    }
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    m_db.run_deferred();
    m_db.commit();
    m_open = false;
  }

private:
  Db& m_db;
  bool m_open = true;
};

} // namespace taskq::storage
