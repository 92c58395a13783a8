// How PostgreSQL's errors become taskq's (storage/pg/errors.hpp).
#include "storage/pg/errors.hpp"

#include "core/reconnect.hpp"
#include "core/suggestion.hpp"
#include "storage/pg/libpq.hpp"
#include "storage/seam/db.hpp"

#include <algorithm>
#include <libpq-fe.h>

namespace taskq::storage::pg {

using libpq::pq;

// Whether a failed connect was the server refusing us (a wrong password,
// no pg_hba.conf entry, a database or role that does not exist), which no
// waiting mends, rather than a server that could not be reached.
bool refused_login(const std::string& why) {
  for (const char* word :
       {"authentication failed", "pg_hba.conf", "does not exist",
        "no password supplied", "permission denied"}) {
    if (why.find(word) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// A unique violation, said as SQLite says it ("UNIQUE constraint failed:
// deliveries.task_id, deliveries.worker"), so that both backends give the
// same message; from the table and the detail "Key (task_id, worker)=...".
std::optional<std::string> unique_violation(const PGresult* r) {
  const char* table = pq().PQresultErrorField(r, PG_DIAG_TABLE_NAME);
  const char* detail = pq().PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL);
  if (table == nullptr || detail == nullptr) {
    return std::nullopt;
  }
  const std::string_view d(detail);
  const size_t end = d.find(")=(");
  if (!d.starts_with("Key (") || end == std::string_view::npos) {
    return std::nullopt;
  }
  std::string out = "UNIQUE constraint failed: ";
  const std::string_view columns = d.substr(5, end - 5);
  for (size_t at = 0; at <= columns.size();) {
    const size_t comma = std::min(columns.find(", ", at), columns.size());
    out += (at == 0 ? "" : ", ") + std::string(table) + "."
           + std::string(columns.substr(at, comma - at));
    at = comma + 2;
  }
  return out;
}

ErrorKind kind_for(std::string_view state) {
  // Connection (08), authorisation (28), no such database (3D), operator
  // intervention (57: shutdown), resources (53), lock timeout (55P03),
  // privileges (42501), read-only (25006): the database is unavailable.
  if (state.starts_with("08") || state.starts_with("28")
      || state.starts_with("3D") || state.starts_with("57")
      || state.starts_with("53") || state == "55P03" || state == "42501"
      || state == "25006" || state.empty()) {
    return ErrorKind::unavailable;
  }
  return ErrorKind::internal;
}

[[noreturn]] void throw_sql_error(const PGresult* r, const std::string& state,
                                  std::string why, std::string_view context,
                                  const std::string& path) {
  if (state == "42P01" || state == "42703") {
    throw Error(ErrorKind::unavailable,
                "database " + path + " does not have taskq's schema (see "
                    + core::suggest({"db", "check"}) + "): " + why);
  }
  if (state == "55P03") {
    why = "database is locked past the busy timeout";
  }
  if (state == "23505") {
    why = unique_violation(r).value_or(why);
  }
  std::string message(context.empty() ? "database error" : context);
  message += ": " + why;
  if (context.find(path) == std::string_view::npos) {
    message += " (database " + path + ")";
  }
  if (state == "40P01" || state == "40001") {
    // Ran again whole by retrying(); unavailable once it gives up.
    throw TxConflict(ErrorKind::unavailable, message);
  }
  throw Error(kind_for(state), message);
}
} // namespace taskq::storage::pg
