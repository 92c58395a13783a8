#pragma once

// What a PostgreSQL URL tells taskq rather than libpq: the schema of
// taskq's tables, and how to work through a pooler that hands a server
// connection from client to client between transactions
// (storage/pg/schema_url.cpp).

#include "core/duration.hpp"
#include "storage/pg/libpq.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskq::storage::pg {

// The schema holding taskq's tables when the URL names none.
constexpr std::string_view k_default_schema = "taskq";

// A schema's name as taskq accepts it: a lower-case identifier, which
// needs no quoting anywhere, and none of the server's own (pg_...).
bool valid_schema_name(std::string_view name);

// A URL's parameters that are taskq's (libpq would refuse them), taken out
// of the URL that libpq reads.
struct UrlParts {
  std::string url;    // for libpq: the URL without taskq's parameters
  std::string schema; // schema=NAME
  // pool=transaction: the URL leads to a pooler in transaction pooling
  // mode (PgBouncer's pool_mode = transaction), which may give each
  // transaction another server connection: taskq then keeps no state in
  // the session (no prepared statements, no startup options, settings
  // made in each transaction) and waits without LISTEN, unless `listen`
  // names the server itself. pool=session (the default) keeps sessions.
  bool pooled = false;
  // listen=HOST:PORT (or HOST, or :PORT): where the server itself is, for
  // the connection that LISTENs (the URL's user, database and password).
  // Empty: with pool=transaction, waiting looks again every second.
  std::string listen;
  // answer_timeout=DURATION (2s, 500ms; bare digits are seconds; 0: none):
  // how long to wait for the server's answer before the connection counts
  // as lost (storage/seam/server_wait.hpp). Unset: the process's.
  std::optional<core::Millis> answer_timeout;
};

// Splits `url`: the schema is the last `schema=NAME` (a bad name is a
// usage error), else the first of a search_path set in the URL's options
// (how a schema was chosen before), else the default. An unknown pool=
// or an empty listen= is a usage error; so is listen= without
// pool=transaction.
UrlParts split_url(const std::string& url);

// The URL without its `schema=NAME`, and the schema (split_url()).
std::pair<std::string, std::string> split_schema(const std::string& url);

// `url` (libpq's) with pool=transaction, listen= and answer_timeout= as
// `parts` has them:
// what a change feed is given to find the same server (split_url() reads
// it back).
std::string with_pool(std::string url, const UrlParts& parts);

// A listen= value as libpq's host and port ("" where it names none):
// "h:5432", "h", ":5432", "[::1]:5432", "/run/postgresql:5432".
std::pair<std::string, std::string> listen_host_port(std::string_view value);

// `begin` (a BEGIN and what follows it) with the schema set as the
// search_path right after the BEGIN: every transaction names it itself, so
// the schema needs no session state. `settings` (SET LOCAL statements, each
// ending with "; ") follow it: a pooled connection's session settings.
std::string with_schema(std::string_view begin, const std::string& schema,
                        std::string_view settings = {});

// The session settings: how long a writer waits for a lock (as SQLite's
// busy timeout), quiet notices, and taskq's schema for the statements
// outside a transaction (each transaction sets it again); each `set`
// NAME=VALUE, joined by `sep` ("-c " and " " for a startup packet's
// options, "SET " and "; " for statements).
// `idle` (0: none) is the idle_in_transaction_session_timeout: a client
// cut off by a silent network mid-transaction leaves its server process
// holding row locks, which the server ends this long after (twice the
// answer bound: the client gave up on it by then); a worker's connection,
// that has it, also plans its prepared statements once
// (plan_cache_mode = force_generic_plan; see storage/server_wait.hpp).
std::string session_settings(std::string_view set, std::string_view sep,
                             const std::string& schema,
                             core::Millis idle = core::Millis{0});

// Through a pooler in transaction mode (`pooled`): the session settings
// but the search_path (with_schema()'s), made for each transaction alone
// (SET LOCAL) right after its BEGIN, each ending with "; ". Else none: the
// connection's startup packet set them.
std::string local_settings(bool pooled, const std::string& schema,
                           core::Millis idle = core::Millis{0});

// A connection's answer bound (storage/seam/server_wait.hpp): the URL's,
// else the process's.
core::Millis answer_bound(const UrlParts& parts);
// The server's idle_in_transaction_session_timeout for a connection with
// that bound: twice it, where the process asks for one (run); else 0
// (none).
core::Millis idle_limit(core::Millis bound);

// What libpq connects with: the session settings sent in the startup
// packet (no round trip of their own), unless the URL has options of its
// own or leads to a pooler in transaction mode: PgBouncer refuses startup
// parameters it does not know, and a session's settings would stay with
// the server connection, not with us (each transaction makes them:
// local_settings()).
libpq::ConnectParams connect_params_for(const std::string& url,
                                        const std::string& schema, bool pooled,
                                        core::Millis bound);

// k_begin_write with the schema as the search_path and, through a pooler
// (`pooled`), the session settings, each made with set_config(..., true)
// (SET LOCAL) in the statement that takes the write lock: a write begins
// with two statements, BEGIN and that one, in one round trip.
std::string with_schema_write(const std::string& schema, bool pooled,
                              core::Millis idle = core::Millis{0});

// `begin_write` (with_schema_write()'s) that also locks the rows of tasks
// `ids` (sorted), in id order, once the write lock is held, in the same
// statement: Db::begin_holding(). The table is named with its schema (the
// statement is parsed before its search_path is set).
std::string with_tasks_locked(std::string_view begin_write,
                              const std::string& schema,
                              const std::vector<int64_t>& ids);

// The same statement prepared in a session (PREPARE, once), the ids its
// parameter, and the begin that executes it: the server plans it once,
// where with_tasks_locked()'s text, its ids written in, is planned at each
// begin (a third of a worker's turn's planning). Not through a pooler in
// transaction mode: a prepared statement lives in one server connection.
inline constexpr std::string_view k_tasks_locked_name = "taskq_begin_holding";
std::string prepare_tasks_locked(std::string_view begin_write,
                                 const std::string& schema);
std::string execute_tasks_locked(const std::vector<int64_t>& ids);

} // namespace taskq::storage::pg
