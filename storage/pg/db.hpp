#pragma once

// PgDb: the Db of a PostgreSQL server (storage/pg/db.cpp).

#include "storage/seam/db.hpp"

#include <memory>
#include <string>

namespace taskq::storage {

// Opens a connection to the server at `url`: unavailable when the server
// cannot be reached or refuses us.
// The URL may name the schema of taskq's tables with the query parameter
// `schema=NAME` (taken out before libpq reads the URL; default "taskq"):
// every transaction sets it as its search_path.
std::unique_ptr<Db> connect_postgres(const std::string& url);

// The schema of taskq's tables on `db`, a connection connect_postgres()
// made; and the one used when the URL names none.
std::string pg_schema(const Db& db);
std::string pg_default_schema();

} // namespace taskq::storage
