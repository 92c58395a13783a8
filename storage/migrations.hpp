#pragma once

#include <string_view>
#include <vector>

namespace taskq::storage {

// One numbered file of migrations/, embedded at build time.
struct Migration {
  int version;
  std::string_view name;
  std::string_view sql;
};

// Every migration, in version order (1, 2, ...): SQLite's (migrations/)
// and PostgreSQL's (migrations/postgresql/), with the same versions.
const std::vector<Migration>& migrations();
const std::vector<Migration>& pg_migrations();

} // namespace taskq::storage
