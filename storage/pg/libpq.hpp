#pragma once

// Internal to storage/: libpq as the PostgreSQL backend uses it. The
// library is loaded on first use (pq()), and its messages are said on one
// line, without passwords (storage/pg/libpq.cpp).

#include "core/duration.hpp"

#include <libpq-fe.h>
#include <memory>
#include <string>
#include <vector>

namespace taskq::storage::libpq {

// libpq is loaded when a PostgreSQL database is first used, not when taskq
// starts: linked in, it and the twenty-odd libraries it needs (TLS,
// Kerberos, LDAP) cost every SQLite command about 4 ms of start-up.
#define TASKQ_LIBPQ_FUNCTIONS(X)                                               \
  X(PQbackendPID)                                                              \
  X(PQclear)                                                                   \
  X(PQcmdStatus)                                                               \
  X(PQcmdTuples)                                                               \
  X(PQconnectdbParams)                                                         \
  X(PQconsumeInput)                                                            \
  X(PQerrorMessage)                                                            \
  X(PQescapeLiteral)                                                           \
  X(PQfinish)                                                                  \
  X(PQflush)                                                                   \
  X(PQfname)                                                                   \
  X(PQfreemem)                                                                 \
  X(PQftype)                                                                   \
  X(PQgetResult)                                                               \
  X(PQgetisnull)                                                               \
  X(PQgetlength)                                                               \
  X(PQisBusy)                                                                  \
  X(PQgetvalue)                                                                \
  X(PQnfields)                                                                 \
  X(PQnotifies)                                                                \
  X(PQntuples)                                                                 \
  X(PQresultErrorField)                                                        \
  X(PQresultStatus)                                                            \
  X(PQsendPrepare)                                                             \
  X(PQsendQuery)                                                               \
  X(PQsendQueryParams)                                                         \
  X(PQsendQueryPrepared)                                                       \
  X(PQsetNoticeProcessor)                                                      \
  X(PQsetnonblocking)                                                          \
  X(PQsocket)                                                                  \
  X(PQstatus)                                                                  \
  X(PQtransactionStatus)

struct LibPq {
#define X(name) decltype(&::name) name = nullptr;
  TASKQ_LIBPQ_FUNCTIONS(X)
#undef X
};

// The functions of libpq.so.5; unavailable when it cannot be loaded.
const LibPq& pq();

// libpq's messages end with a newline and may span lines ("connection to
// server ... failed: FATAL:  ...\n\tIs the server running ..."): taskq
// prints one line, each run of spaces and tabs as one space.
std::string one_line(const char* text);

// libpq's message about a connection to `url`, on one line and without
// the URL's passwords.
std::string connect_error(const char* message, const std::string& url);

// How long a connection may take, in seconds, when neither the URL
// (connect_timeout=) nor PGCONNECT_TIMEOUT says: libpq's own default is to
// wait for ever on a server that accepts and never answers. A healthy
// server answers in milliseconds, a loaded one or a slow TLS handshake
// in a few seconds; 10 s leaves them room and still ends a command that
// cannot reach its database while its user is waiting for it.
inline constexpr const char* k_default_connect_timeout = "10";

// libpq's keys and values for a connection.
struct ConnectParams {
  std::vector<std::string> keys;
  std::vector<std::string> values;
  void add(std::string key, std::string value) {
    keys.push_back(std::move(key));
    values.push_back(std::move(value));
  }
};

// What connects to the PostgreSQL URL `url` (its scheme in any case): the
// default connect timeout unless the URL or PGCONNECT_TIMEOUT gives one,
// TCP keepalives and tcp_user_timeout matching `bound` unless the URL
// gives its own (storage/pg/wire.hpp), `options` (the startup packet's;
// nullptr: none) and the application name taskq unless the URL gives one;
// `host` and `port`, when not empty, in place of the URL's (the server
// itself behind a pooler).
ConnectParams connect_params(const std::string& url, const char* options,
                             core::Millis bound, const std::string& host = {},
                             const std::string& port = {});

// Connects with `params`: waits for libpq's connect_timeout (per host),
// but no longer than `bound` (where a stop is watched: pg::connect_within),
// the process's wait limit or a signal to stop allow
// (storage/seam/server_wait.hpp), then throws ConnectionLost naming `url`.
// Never null but out of memory; the connection is non-blocking.
PGconn* connect(const ConnectParams& params, const std::string& url,
                core::Millis bound = core::Millis{0});

// A notice processor that drops notices (taskq prints its own messages).
void no_notices(void*, const char*);

struct ClearResult {
  void operator()(PGresult* r) const { pq().PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ClearResult>;

} // namespace taskq::storage::libpq
