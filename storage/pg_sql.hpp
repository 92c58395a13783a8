#pragma once

// Internal to storage/: how the shared SQL, written as SQLite reads it, is
// spelled for PostgreSQL (storage/pg_sql.cpp).

#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage::pg {

// PostgreSQL types a parameter from where it is used, and an `$N IS NULL`
// met before a typed use of $N leaves it untypable when its value is NULL.
// So each `? IS [NOT] NULL` test reads a parameter of its own, a text copy
// of the same value: `source` maps every server parameter (1-based
// position - 1) to the bound parameter it copies, and `as_text` says which
// are sent as text whatever was bound.
struct Translation {
  std::string text;
  std::vector<int> source;
  std::vector<bool> as_text;
};

// The one place where taskq's shared SQL is spelled for PostgreSQL:
// parameters `?NNN` (and bare `?`, counted from 1) become `$N`; `INDEXED
// BY name` (a planner hint) is dropped; `INSERT OR IGNORE` becomes INSERT
// ... ON CONFLICT DO NOTHING; the two-argument scalar min()/max() become
// LEAST()/GREATEST(). Quoted text and comments are left alone.
Translation translate(std::string_view sql);

} // namespace taskq::storage::pg
