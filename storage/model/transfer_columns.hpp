#pragma once

// Internal to storage/: what each column of an exported or imported row
// holds (JSON, bytes, an implied owner) and may hold (its domain), and the
// columns of a table as the schema lists them. Shared by export and import
// (transfer_store.cpp).

#include "storage/log_types.hpp"
#include "storage/seam/db.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage::detail {

// The tables of a flow's rows that name it by flow_id.
bool is_flow_row(std::string_view table);

// The TEXT columns that hold JSON: exported embedded, as stored.
bool holds_json(std::string_view table, std::string_view column);

// The BLOB columns: exported as a JSON string of their bytes in base64.
bool holds_bytes(std::string_view table, std::string_view column);

// JSON columns where nothing (SQL NULL) and JSON null differ: an image
// leaves the column out when it holds nothing.
bool null_differs(std::string_view table, std::string_view column);

// Columns an image leaves out: the owning task or flow is implied, and
// event ids are assigned afresh.
bool implied(std::string_view table, std::string_view column);

// What a column may hold beyond its SQL type: the values add, tx and the
// state machine write, so that an imported row reads back like any other
// (a time prints as a date, a duration added to now stays a date).
enum class Domain {
  any,
  time,              // within years 0000-9999
  duration,          // what parse_duration reads (0 to 100 years)
  positive_duration, // the same, longer than 0
  task_id,           // 1 or more
  count,             // 0 or more
  positive,          // 1 or more
  max_attempts,      // a task's: as a new task's (core/new_task.hpp)
  max_errors,        // 1 to 1000000, as --max-errors
  flag,              // 0 or 1
  name,              // a queue name, as a new task's
  state,             // a task state
  backoff,           // constant or exponential
  labels,            // a JSON object of labels --label accepts
  task_ids,          // a JSON array of task ids, as a new task's after
  flow_id,           // 1 or more
  flow_state,        // TaskFlow's flow states
  atom_state,        // TaskFlow's atom states (a retry's RETRYING too)
  intention,         // TaskFlow's intentions
  atom_kind,         // task or retry
  change_kind,       // flow, task or retry
  object,            // a JSON object (a flow's store)
  history,           // a retry controller's history: [{value, failures}]
  flow_link,         // a task's {"id","atom","action","args"}
  argv, // a task's command: a JSON array of strings, as a new task's
};

// The domain of `column` in `table`.
Domain domain_of(std::string_view table, std::string_view column);

// What an integer of `domain` must be, or nullptr when `n` is one.
const char* integer_misfit(Domain domain, int64_t n);

// What a string of `domain` must be, or nullptr when `text` is one.
const char* string_misfit(Domain domain, const std::string& text);

// What JSON text of `domain` must be, or nullptr when `json` is one.
const char* json_misfit(Domain domain, const std::string& json);

// What a task's row breaks of the rules every new task keeps
// (core::check_new_task), as far as they hold for a stored task: "'COLUMN'
// must be ...", naming the column at fault; std::nullopt when it breaks
// none. For a row whose values fit their columns' domains.
std::optional<std::string> task_misfit(const ImageRow& row);

struct Column {
  std::string name;
  bool integer = false;
  bool not_null = false;
  bool required = false; // NOT NULL without a default
};

// A table's columns in their order, from the schema itself.
std::vector<Column> columns_of(Db& db, const std::string& table);

// SELECT of `table`'s columns, named one by one in the schema's order, so
// that both backends export the same keys in the same order.
std::string select_columns(Db& db, const std::string& table);

} // namespace taskq::storage::detail
