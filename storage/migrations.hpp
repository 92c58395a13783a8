#pragma once

#include <string_view>
#include <vector>

namespace taskq::storage {

// One numbered file of migrations/, embedded at build time.
struct Migration {
  int version;
  std::string_view name;
  // The file: SQLite's schema N, the one text of every table, column and
  // index (PostgreSQL's is this respelled: pg::translate_schema()).
  std::string_view sql;
  // migrations/postgresql/<name>.sql when there is one: what only
  // PostgreSQL needs, run after the respelled `sql` (empty: nothing).
  std::string_view pg_extra;
};

// Every migration, in version order (1, 2, ...).
const std::vector<Migration>& migrations();

} // namespace taskq::storage
