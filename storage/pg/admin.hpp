#pragma once

// PostgreSQL's schema (taskq's tables live in a schema of their own,
// storage/pg/db.hpp): its migrations, recorded in table taskq_schema, and
// the schema part of `db check` (storage/pg/admin.cpp).

#include "storage/seam/db.hpp"

#include <string>
#include <vector>

namespace taskq::storage {

// VACUUM of taskq's tables (those of its schema) only: a database shared
// with other applications keeps theirs to themselves.
void pg_vacuum(Db& db);
// The schema version recorded in table taskq_schema (0: none yet).
int pg_schema_version(Db& db);
// The same, in one round trip when the table is there, which also reads
// the server's clock (Db::server_time_seen). Outside a transaction only.
int pg_recorded_version(Db& db);
// Applies the pending migrations (SQLite's respelled, see migrations.hpp)
// in taskq's schema (pg_schema()), recording each in its taskq_schema;
// unavailable when the database's schema is newer than this binary, when
// the schema holds what taskq did not make, or when there is no schema
// yet and `create` is false (a read creates nothing). An older taskq's
// tables in `public` move into the default schema first. Returns the
// version.
int pg_migrate(Db& db, bool create);
// How the database's tables and indexes differ from what the migrations
// make (applied to a scratch schema, rolled back with the caller's
// transaction, which must be open); empty when they agree.
std::vector<std::string> pg_schema_problems(Db& db);

} // namespace taskq::storage
