#pragma once

#include <map>
#include <string>
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

namespace detail {

// How a schema differs from the one the migrations make, both given as
// "KIND NAME" (table, index, trigger) -> its definition: one line per
// missing, changed or foreign object, in the same words on both backends.
std::vector<std::string>
schema_differences(const std::map<std::string, std::string>& expected,
                   const std::map<std::string, std::string>& actual,
                   int version);

} // namespace detail

} // namespace taskq::storage
