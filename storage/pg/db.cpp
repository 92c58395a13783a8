// The PostgreSQL backend's connection: statements, transactions and their
// locking, the server's clock, and error messages (how its transactions
// begin: begins.cpp; the clock's estimate: server_clock.hpp; libpq itself,
// loaded on first use, and the change feed's connection: libpq.cpp).

#include "storage/seam/db.hpp"

#include "core/error.hpp"
#include "core/reconnect.hpp"
#include "storage/pg/begins.hpp"
#include "storage/pg/db.hpp"
#include "storage/pg/errors.hpp"
#include "storage/pg/libpq.hpp"
#include "storage/pg/schema_url.hpp"
#include "storage/pg/server_clock.hpp"
#include "storage/pg/sql.hpp"
#include "storage/pg/statement.hpp"
#include "storage/pg/tx_sql.hpp"
#include "storage/pg/wire.hpp"
#include "storage/pg/write_behind.hpp"
#include "storage/seam/change_feed.hpp"
#include "storage/seam/server_wait.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <libpq-fe.h>
#include <optional>
#include <unordered_map>
#include <vector>

namespace taskq::storage {

namespace {

using libpq::connect_error;
using libpq::no_notices;
using libpq::one_line;
using libpq::pq;
using libpq::Result;
using pg::k_clock_query;
using pg::k_runs_before_prepare;
using pg::PgStatement;
using pg::Prepared;
using pg::refused_login;
using pg::split_url;

class PgDb final : public Db, public pg::Runner {
public:
  explicit PgDb(const std::string& url) : PgDb(url, split_url(url)) {}

  PgDb(const std::string& url, pg::UrlParts parts)
      : Db(Backend::postgresql, redact_url(url)), m_url(std::move(parts.url)),
        m_schema(std::move(parts.schema)), m_pooled(parts.pooled),
        m_listen(std::move(parts.listen)),
        m_begins(m_schema, m_pooled, pg::idle_limit(pg::answer_bound(parts))),
        m_bound(pg::answer_bound(parts)),
        m_params(pg::connect_params_for(m_url, m_schema, m_pooled, m_bound)),
        m_conn(libpq::connect(m_params, m_url)) {
    if (m_conn == nullptr) {
      throw Error(ErrorKind::unavailable,
                  "cannot connect to database " + path() + ": out of memory");
    }
    if (pq().PQstatus(m_conn.get()) != CONNECTION_OK) {
      // Exit 5 as any unavailable database. A server that cannot be
      // reached (ConnectionLost) may be restarting: a worker starting
      // waits for it as a running one does; a refused login or a missing
      // database is no outage.
      const std::string why =
          connect_error(pq().PQerrorMessage(m_conn.get()), m_url);
      const std::string message =
          "cannot connect to database " + path() + ": " + why;
      if (refused_login(why)) {
        throw Error(ErrorKind::unavailable, message);
      }
      throw ConnectionLost(message);
    }
    pq().PQsetNoticeProcessor(m_conn.get(), no_notices, nullptr);
    if (!m_pooled && m_url.find("options=") != std::string::npos) {
      // The URL sets options of its own, which connect() leaves alone.
      exec(pg::session_settings("SET ", "; ", m_schema, pg::idle_limit(m_bound))
               .c_str(),
           "cannot configure the connection");
    }
  }

  // --- every wait for the server bounded (storage/pg/wire.hpp) ---

  // The answers to what was just sent (pg::answers_within: a server
  // silent past the bound loses the connection, ConnectionLost, unless it
  // is still at work on our statement).
  std::vector<Result> answers() {
    std::string why;
    auto results =
        pg::answers_within(m_conn.get(), m_params, m_bound, m_pooled, why);
    if (!results) {
      lose("lost the connection to database " + path() + ": " + why);
    }
    return std::move(*results);
  }
  // The connection is lost: made again before the next transaction.
  [[noreturn]] void lose(std::string message) const {
    m_lost = true;
    ++m_losses;
    m_last_loss = message;
    throw ConnectionLost(message);
  }
  uint64_t connection_losses() const override { return m_losses; }
  std::string last_connection_loss() const override { return m_last_loss; }

  // `sql` sent and its answer awaited, as PQexec (nullptr: it could not be
  // sent); ConnectionLost past the bound.
  Result exec_raw(const char* sql) {
    if (pq().PQsendQuery(m_conn.get(), sql) == 0) {
      return nullptr;
    }
    return pg::as_exec(answers());
  }
  // A ROLLBACK whose failure is no error (the connection may be gone).
  void rollback_quietly() noexcept {
    try {
      exec_raw("ROLLBACK");
    } catch (...) {
    }
  }

  PGconn* conn() const { return m_conn.get(); }

  // Checks a result: throws for anything but success.
  Result check(PGresult* raw, std::string_view context) {
    Result r(raw);
    const auto status = r ? pq().PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
      return r;
    }
    fail(r.get(), context);
  }

  [[noreturn]] void fail(const PGresult* r, std::string_view context) const {
    std::string state;
    std::string why;
    if (r != nullptr) {
      if (const char* s = pq().PQresultErrorField(r, PG_DIAG_SQLSTATE)) {
        state = s;
      }
      why = one_line(pq().PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY));
    }
    if (why.empty()) {
      why = one_line(pq().PQerrorMessage(m_conn.get()));
    }
    // libpq's own errors carry no SQLSTATE: a connection that broke while
    // a query was sent or awaited ("server closed the connection
    // unexpectedly") is told from another error of libpq's (a bad
    // parameter, say) by reading the socket: a broken one makes the
    // connection bad.
    bool lost = pq().PQstatus(m_conn.get()) == CONNECTION_BAD
                || core::connection_lost_state(state);
    if (!lost && state.empty()) {
      pq().PQconsumeInput(m_conn.get());
      lost = pq().PQstatus(m_conn.get()) == CONNECTION_BAD;
    }
    if (lost) {
      lose("lost the connection to database " + path() + ": " + why);
    }
    pg::throw_sql_error(r, state, std::move(why), context, path());
  }

  std::unique_ptr<StatementImpl> prepare(std::string_view sql) override {
    auto it = m_prepared.find(std::string(sql));
    if (it == m_prepared.end()) {
      Prepared p;
      p.sql = pg::translate(sql);
      p.params = 0;
      for (const int n : p.sql.source) {
        p.params = std::max(p.params, n);
      }
      it = m_prepared.emplace(std::string(sql), std::move(p)).first;
    }
    return std::make_unique<PgStatement>(*this, it->second);
  }

  // Runs `p` with `values` (NULL: nullptr) of the types bound (bigint,
  // text, 0 for a NULL: the server infers it from where it is used; one
  // that only an IS NULL test uses is sent as text). Its first runs parse
  // it with the values in one round trip each; from its third run on it is
  // prepared once on the server (one more round trip), so that loops (bulk
  // add, run) skip the parsing. A statement that one command runs twice
  // (reading a task before and after a change) is not worth preparing.
  // Through a pooler in transaction mode, never: a named statement lives
  // in one server connection's session, and the next transaction may be
  // given another; and a statement outside a transaction gets one of its
  // own, for the schema (alone()).
  Result run(Prepared& p, const std::vector<const char*>& bound_values,
             const std::vector<Oid>& bound_types) override {
    if (m_pooled && pq().PQtransactionStatus(m_conn.get()) == PQTRANS_IDLE) {
      return alone([&] { return run(p, bound_values, bound_types); });
    }
    Result r;
    if (auto riding = m_behind.riding(p)) {
      r = run_riding(p, std::move(*riding), bound_values, bound_types);
    } else {
      if (!m_behind.empty() && p.sql.text.find("events") != std::string::npos) {
        flush_events();
      }
      r = run_once(p, bound_values, bound_types);
    }
    // INSERT, UPDATE and DELETE report the rows they changed.
    const std::string_view status = pq().PQcmdStatus(r.get());
    if (!status.starts_with("SELECT")
        && std::atoll(pq().PQcmdTuples(r.get())) > 0) {
      m_changed = true;
    }
    return r;
  }

  // `p` with the events rows kept riding it (WriteBehind::riding), its
  // text prepared as any other. Kept by its text and which bound value
  // each server parameter copies: two statements alike but for the
  // parameter an IS NULL test reads share their text, not their copies.
  Result run_riding(const Prepared& p, Prepared riding,
                    const std::vector<const char*>& bound_values,
                    const std::vector<Oid>& bound_types) {
    std::string key = riding.sql.text;
    for (const int n : riding.sql.source) {
      key += '\x1f' + std::to_string(n);
    }
    auto it = m_prepared.find(key);
    if (it == m_prepared.end()) {
      it = m_prepared.emplace(std::move(key), std::move(riding)).first;
    }
    const std::vector<std::optional<std::string>> rows = m_behind.take_values();
    std::vector<const char*> values(bound_values);
    std::vector<Oid> types(bound_types);
    values.resize(static_cast<size_t>(p.params));
    types.resize(static_cast<size_t>(p.params));
    for (const auto& v : rows) {
      values.push_back(v ? v->c_str() : nullptr);
      types.push_back(0); // typed by its column
    }
    return run_once(it->second, values, types);
  }

  Result run_once(Prepared& p, const std::vector<const char*>& bound_values,
                  const std::vector<Oid>& bound_types) {
    std::vector<const char*> values;
    std::vector<Oid> types;
    for (size_t i = 0; i < p.sql.source.size(); ++i) {
      const auto from = static_cast<size_t>(p.sql.source[i] - 1);
      values.push_back(bound_values[from]);
      types.push_back(p.sql.as_text[i] ? 25 : bound_types[from]);
    }
    const int n = static_cast<int>(values.size());
    const std::string& text = p.sql.text;
    const std::string_view context = std::getenv("TASKQ_DEBUG_SQL") != nullptr
                                         ? std::string_view(text)
                                         : std::string_view();
    if (++p.runs < k_runs_before_prepare || m_pooled) {
      if (pq().PQsendQueryParams(m_conn.get(), text.c_str(), n, types.data(),
                                 values.data(), nullptr, nullptr, 0)
          == 0) {
        fail(nullptr, context);
      }
      return check(pg::as_exec(answers()).release(), context);
    }
    if (p.name.empty()) {
      std::string name = "s" + std::to_string(++m_statements);
      if (pq().PQsendPrepare(m_conn.get(), name.c_str(), text.c_str(), n,
                             types.data())
          == 0) {
        fail(nullptr, context);
      }
      check(pg::as_exec(answers()).release(), context);
      p.name = std::move(name);
    }
    if (pq().PQsendQueryPrepared(m_conn.get(), p.name.c_str(), n, values.data(),
                                 nullptr, nullptr, 0)
        == 0) {
      fail(nullptr, context);
    }
    return check(pg::as_exec(answers()).release(), context);
  }

  void exec(const char* sql, std::string_view context) override {
    flush_events();
    if (m_pooled && pq().PQtransactionStatus(m_conn.get()) == PQTRANS_IDLE
        && !std::string_view(sql).starts_with("VACUUM")) {
      alone([&] {
        exec(sql, context);
        return Result();
      });
      return;
    }
    check(exec_raw(sql).release(), context);
    m_changed = true; // migrations and the like: assume they changed rows
  }

  // Through a pooler in transaction mode, `f` (a statement that would run
  // outside a transaction, relying on the session's search_path) in a
  // transaction of its own that sets the schema: two more round trips,
  // only where no transaction is open (opening a store, reading the
  // schema's version).
  template <typename F> Result alone(F f) {
    connect_if_lost();
    check(exec_raw(m_begins.alone().c_str()).release(),
          "cannot start a transaction");
    try {
      Result r = f();
      check(exec_raw("COMMIT").release(), "cannot commit");
      return r;
    } catch (...) {
      if (!m_lost) {
        rollback_quietly();
      }
      throw;
    }
  }

  // A connection lost since the last transaction is made again before
  // the next one begins (nothing is in flight then), on a fresh socket (a
  // silent one may never answer): the server's session is new, so
  // statements prepared on the old one are prepared again. Throws
  // ConnectionLost while the server cannot be reached.
  void reconnect() {
    // connect_timeout bounds it, not the answer bound: a server loaded by
    // a fleet reconnecting at once (after a restart) may take seconds to
    // accept, and a connection given up on is one more it made for
    // nothing.
    std::unique_ptr<PGconn, Finish> fresh(libpq::connect(m_params, m_url));
    if (!fresh) {
      throw ConnectionLost("cannot connect to database " + path()
                           + ": out of memory");
    }
    if (pq().PQstatus(fresh.get()) != CONNECTION_OK) {
      throw ConnectionLost(
          "cannot connect to database " + path() + ": "
          + connect_error(pq().PQerrorMessage(fresh.get()), m_url));
    }
    // The old one is non-blocking: closing it sends its goodbye without
    // waiting for a network that may not take it.
    m_conn = std::move(fresh);
    m_lost = false;
    for (auto& [sql, p] : m_prepared) {
      p.name.clear();
      p.runs = 0;
    }
    m_begins.session_new();
    pq().PQsetNoticeProcessor(m_conn.get(), no_notices, nullptr);
    if (!m_pooled && m_url.find("options=") != std::string::npos) {
      exec(pg::session_settings("SET ", "; ", m_schema, pg::idle_limit(m_bound))
               .c_str(),
           "cannot configure the connection");
    }
  }

  void begin(TxKind kind) override {
    m_begins.hold_none();
    begin_with(kind,
               kind == TxKind::write ? m_begins.write() : m_begins.read());
  }

  void begin_holding(const std::vector<int64_t>& ids) override {
    // Checked first: a session made again has nothing prepared
    // (reconnect()), and the begin sent next must not connect again on
    // its own.
    connect_if_lost();
    const pg::Begins::Holding begin = m_begins.hold(ids);
    if (!begin.prepare.empty()) {
      check(exec_raw(begin.prepare.c_str()).release(),
            "cannot prepare a transaction's begin");
      m_begins.prepared();
    }
    begin_sent(TxKind::write, begin.begin);
  }

  bool holds_task(int64_t id) const override { return m_begins.holds(id); }

  void begin_with(TxKind kind, const std::string& sql) {
    connect_if_lost();
    begin_sent(kind, sql);
  }

  // The connection made again when it is lost or broken (its session
  // then has nothing prepared: reconnect()).
  void connect_if_lost() {
    if (m_lost || pq().PQstatus(m_conn.get()) == CONNECTION_BAD) {
      reconnect();
    }
  }

  // Begins with `sql` on the connection as it is.
  void begin_sent(TxKind kind, const std::string& sql) {
    wake_owed();
    m_write = kind == TxKind::write;
    Result r;
    try {
      r = check(exec_raw(sql.c_str()).release(), "cannot start a transaction");
    } catch (...) {
      // Its BEGIN ran and the statement after it failed (a held row's
      // lock timed out, a deadlock): the transaction is ended here, as no
      // Transaction holds it yet, or every later statement of the session
      // would fail ("current transaction is aborted").
      if (!m_lost
          && pq().PQtransactionStatus(m_conn.get()) == PQTRANS_INERROR) {
        rollback_quietly();
      }
      throw;
    }
    m_lock_time.reset();
    if (m_write) {
      m_lock_time = pg::parse_clock(pq().PQgetvalue(r.get(), 0, 0));
      server_time_seen(*m_lock_time);
    }
    m_changed = false;
    m_wake_later = m_wake_soon = false;
    m_behind.drop();
  }

  void commit() override {
    // The events rows not yet written go first, in the same round trip;
    // their INSERT failing stops the rest.
    const std::string sql = m_behind.take_sql(m_conn.get())
                            + m_behind.commit_sql(m_write && m_changed,
                                                  m_wake_later && !m_wake_soon);
    // The commit's result first (the INSERT's before it), then the
    // NOTIFY's transaction, whose results are read and dropped (a wake-up
    // lost is no error). A commit that fails leaves owed what was owed.
    try {
      send_commit(sql);
    } catch (...) {
      m_behind.commit_failed();
      throw;
    }
  }
  void send_commit(const std::string& sql) {
    if (pq().PQsendQuery(m_conn.get(), sql.c_str()) == 0) {
      fail(nullptr, "cannot commit");
    }
    std::vector<Result> results = answers();
    if (pq().PQtransactionStatus(m_conn.get()) == PQTRANS_INERROR) {
      // A failed INSERT left the write open, or the NOTIFY's transaction
      // failed: end it, so that the next BEGIN finds the connection idle.
      rollback_quietly();
    }
    size_t at = 0;
    if (sql.starts_with("INSERT") && !results.empty()) {
      check(results[at++].release(), "cannot log an event");
    }
    committed(check(at < results.size() ? results[at].release() : nullptr,
                    "cannot commit"));
  }
  // COMMIT's status says whether the transaction committed or, already
  // failed, was rolled back.
  void committed(const Result& r) const {
    if (std::string_view(pq().PQcmdStatus(r.get())) != "COMMIT") {
      throw Error(ErrorKind::internal,
                  "cannot commit: the transaction was rolled back (database "
                      + path() + ")");
    }
  }
  std::optional<std::chrono::steady_clock::time_point>
  wake_due() const override {
    return m_behind.wake_due();
  }
  // A server silent past the bound throws ConnectionLost here too, for
  // the caller to say so (a worker's loop) before the next begin()
  // connects again.
  void wake_owed() override {
    m_behind.wake_owed(m_conn.get(),
                       [this](const char* sql) { return exec_raw(sql); });
  }
  void wake_later() override { m_wake_later = true; }
  void wake_soon() override { m_wake_soon = true; }
  ~PgDb() override {
    if (!m_lost) {
      m_behind.wake_owed(
          m_conn.get(),
          [this](const char* sql) {
            try {
              return exec_raw(sql);
            } catch (const ConnectionLost&) {
              return Result();
            }
          },
          true);
    }
  }

  void wrote() override { m_changed = true; }

  bool defer_event(EventRow& row) override {
    if (!m_write || pq().PQtransactionStatus(m_conn.get()) != PQTRANS_INTRANS) {
      return false;
    }
    m_changed = true;
    if (m_behind.keep(std::move(row))) {
      flush_events();
    }
    return true;
  }
  void flush_events() {
    if (!m_behind.empty()) {
      check(exec_raw(m_behind.take_sql(m_conn.get()).c_str()).release(),
            "cannot log an event");
    }
  }

  void rollback() noexcept override {
    m_behind.drop();
    if (!m_lost) {
      rollback_quietly();
    }
  }

  void ids_given(std::string_view table) override {
    // The identity's next value follows the largest id, or stays where it
    // is when it is already past it (ids are never given out twice, as
    // with SQLite's AUTOINCREMENT).
    const std::string t(table);
    exec(("SELECT setval(s, GREATEST((SELECT max(id) FROM " + t
          + "), coalesce(pg_sequence_last_value(s), 0), 1)) FROM (SELECT "
            "CAST(pg_get_serial_sequence('"
          + t + "', 'id') AS regclass) AS s) AS q")
             .c_str(),
         "cannot move the ids of " + t + " past the imported ones");
  }

  // Through a pooler in transaction mode, the feed is told so (and where
  // the server listens, if the URL says): see ChangeFeed.
  std::string feed_source() const override {
    pg::UrlParts parts;
    parts.pooled = m_pooled;
    parts.listen = m_listen;
    return pg::with_pool(m_url, parts);
  }
  const std::string& schema() const { return m_schema; }
  // Through a pooler, the process id libpq reports is the pooler's own
  // invention, never the server process that sends a NOTIFY: none.
  int backend_pid() const override {
    return m_pooled ? 0 : pq().PQbackendPID(m_conn.get());
  }

  // In a write transaction: the time when it took the lock (the decisions
  // of one transaction share one "now"). Otherwise the estimate of
  // pg::ServerClock; a round trip only when there is no reading yet.
  std::optional<core::Time> server_now() override {
    if (m_lock_time && pq().PQtransactionStatus(m_conn.get()) != PQTRANS_IDLE) {
      return m_lock_time;
    }
    if (!m_clock.read()) {
      const Result r = check(exec_raw(k_clock_query).release(),
                             "cannot read the server's clock");
      server_time_seen(pg::parse_clock(pq().PQgetvalue(r.get(), 0, 0)));
    }
    return m_clock.now();
  }

  void server_time_seen(core::Time at) override { m_clock.seen(at); }

private:
  struct Finish {
    void operator()(PGconn* c) const { pq().PQfinish(c); }
  };
  std::string m_url;             // as libpq reads it, with its password
  std::string m_schema;          // taskq's tables: the URL's schema=
  bool m_pooled = false;         // the URL's pool=transaction
  std::string m_listen;          // the URL's listen=
  pg::Begins m_begins;           // how its transactions begin
  core::Millis m_bound;          // for each answer (0: none)
  libpq::ConnectParams m_params; // a connection's, made again with them
  std::unique_ptr<PGconn, Finish> m_conn;
  std::unordered_map<std::string, Prepared> m_prepared;
  int m_statements = 0;
  bool m_write = false;
  std::optional<core::Time> m_lock_time; // see server_now()
  pg::ServerClock m_clock;               // the latest reading: see server_now()
  bool m_changed = false;    // since begin(): a statement changed rows
  bool m_wake_later = false; // since begin(): see Db::wake_later()
  bool m_wake_soon = false;
  pg::WriteBehind m_behind;      // events rows and wake-ups: see defer_event()
  mutable bool m_lost = false;   // the connection broke: see reconnect()
  mutable uint64_t m_losses = 0; // see lose()
  mutable std::string m_last_loss;
};

} // namespace

std::unique_ptr<Db> connect_postgres(const std::string& url) {
  return std::make_unique<PgDb>(url);
}

std::string pg_schema(const Db& db) {
  return static_cast<const PgDb&>(db).schema();
}

} // namespace taskq::storage
