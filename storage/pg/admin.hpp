#pragma once

// PostgreSQL's schema: its migrations, recorded in table taskq_schema, and
// the schema part of `db check` (storage/pg/admin.cpp).

#include "storage/db.hpp"

#include <string>
#include <vector>

namespace taskq::storage {

// The schema version recorded in table taskq_schema (0: none yet).
int pg_schema_version(Db& db);
// The same, in one round trip when the table is there, which also reads
// the server's clock (Db::server_time_seen). Outside a transaction only.
int pg_recorded_version(Db& db);
// Applies the pending migrations (SQLite's respelled, see migrations.hpp)
// under the write lock, recording each in taskq_schema; unavailable when
// the database's schema is newer than this binary. Returns the version.
int pg_migrate(Db& db);
// How the database's tables and indexes differ from what the migrations
// make (applied to a scratch schema, rolled back with the caller's
// transaction, which must be open); empty when they agree.
std::vector<std::string> pg_schema_problems(Db& db);

} // namespace taskq::storage
