#pragma once

// PgDb: the Db of a PostgreSQL server (storage/pg/db.cpp).

#include "storage/db.hpp"

#include <memory>
#include <string>

namespace taskq::storage {

// Opens a connection to the server at `url`: unavailable when the server
// cannot be reached or refuses us.
std::unique_ptr<Db> connect_postgres(const std::string& url);

} // namespace taskq::storage
