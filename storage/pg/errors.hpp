#pragma once

// How PostgreSQL's errors become taskq's: which SQLSTATE is which kind of
// Error (exit code), the messages said as on SQLite, and which failed
// connects are worth waiting out (storage/pg/errors.cpp).

#include "core/error.hpp"

#include <libpq-fe.h>
#include <optional>
#include <string>
#include <string_view>

namespace taskq::storage::pg {

// Whether a failed connect was the server refusing us (a wrong password,
// no pg_hba.conf entry, a database or role that does not exist), which no
// waiting mends, rather than a server that could not be reached.
bool refused_login(const std::string& why);

// A unique violation, said as SQLite says it ("UNIQUE constraint failed:
// deliveries.task_id, deliveries.worker"), from the table and the detail.
std::optional<std::string> unique_violation(const PGresult* r);

// The kind of error a SQLSTATE is (connection, authorisation, lock timeout
// and the like: unavailable; anything else: internal).
ErrorKind kind_for(std::string_view state);

// Throws the error of a failed statement `r` (SQLSTATE `state`, message
// `why`) of database `path` that did not lose its connection: a missing
// schema, a lock timeout, a unique violation, a deadlock or serialisation
// failure (TxConflict, run again by retrying()), else by kind_for().
[[noreturn]] void throw_sql_error(const PGresult* r, const std::string& state,
                                  std::string why, std::string_view context,
                                  const std::string& path);

} // namespace taskq::storage::pg
