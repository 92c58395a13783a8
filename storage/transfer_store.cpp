// TaskStore: export and import. A task travels as its stored row and the
// rows beside it, column by column, so that export → import into an empty
// database → export gives the same bytes, and a column added by a later
// migration travels without code here changing.
#include "core/error.hpp"
#include "storage/store_detail.hpp"
#include "storage/task_store.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <string>

namespace taskq::storage {

using namespace detail;

namespace {

// The TEXT columns that hold JSON: exported embedded, as stored.
bool holds_json(std::string_view table, std::string_view column) {
  return table == "tasks"
         && (column == "payload" || column == "labels" || column == "checkpoint"
             || column == "result" || column == "after_ids" || column == "root"
             || column == "sync");
}

// Columns an image leaves out: the owning task is implied, and event ids
// are assigned afresh.
bool implied(std::string_view table, std::string_view column) {
  return column == "task_id" || (table == "events" && column == "id");
}

// The current row of `st` (over `table`) as an image row.
ImageRow image_row(const Statement& st, std::string_view table) {
  ImageRow row;
  for (int c = 0; c < st.column_count(); ++c) {
    std::string name = st.column_name(c);
    if (implied(table, name)) {
      continue;
    }
    std::string value;
    if (st.is_null(c)) {
      value = "null";
    } else if (st.is_integer(c)) {
      value = std::to_string(st.get_int(c));
    } else if (holds_json(table, name)) {
      value = st.get_text(c);
    } else {
      value =
          nlohmann::json(st.get_text(c))
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    row.emplace_back(std::move(name), std::move(value));
  }
  return row;
}

std::vector<ImageRow> side_rows(Db& db, const char* table, const char* order,
                                int64_t id) {
  Statement st(db, std::string("SELECT * FROM ") + table
                       + " WHERE task_id = ?1 ORDER BY " + order);
  st.bind(1, id);
  std::vector<ImageRow> rows;
  while (st.step()) {
    rows.push_back(image_row(st, table));
  }
  return rows;
}

struct Column {
  bool integer = false;
  bool not_null = false;
  bool required = false; // NOT NULL without a default
};

// A table's columns by name, from the schema itself.
std::map<std::string, Column, std::less<>>
columns_of(Db& db, const std::string& table) {
  std::map<std::string, Column, std::less<>> out;
  Statement st(db, "SELECT name, type, \"notnull\", dflt_value IS NULL "
                   "FROM pragma_table_info(?1)");
  st.bind(1, table);
  while (st.step()) {
    const bool not_null = st.get_int(2) != 0;
    out[st.get_text(0)] = {st.get_text(1) == "INTEGER", not_null,
                           not_null && st.get_int(3) != 0};
  }
  return out;
}

// The value of `column` in `row`, if it has one.
const std::string* cell(const ImageRow& row, std::string_view column) {
  for (const auto& [name, value] : row) {
    if (name == column) {
      return &value;
    }
  }
  return nullptr;
}

// Inserts one image row into `table` (with task_id = `task_id` when the
// table has one); usage errors for unknown columns and misfit values.
class RowWriter {
public:
  // `list` names the table's rows in errors (as export lines do).
  RowWriter(Db& db, std::string table, std::string list)
      : m_db(db), m_table(std::move(table)), m_list(std::move(list)),
        m_columns(columns_of(db, m_table)) {}

  void write(const ImageRow& row, std::optional<int64_t> task_id) {
    std::string names;
    std::string params;
    int n = 0;
    const auto add_name = [&](const std::string& name) {
      names += (n == 0 ? "" : ", ") + ("\"" + name + "\"");
      params += (n == 0 ? "?" : ", ?") + std::to_string(n + 1);
      ++n;
    };
    for (const auto& [name, value] : row) {
      if (!m_columns.contains(name) || implied(m_table, name)) {
        throw Error(ErrorKind::usage,
                    where() + "unknown column '" + name + "'");
      }
      add_name(name);
    }
    for (const auto& [name, col] : m_columns) {
      if (col.required && !implied(m_table, name)
          && cell(row, name) == nullptr) {
        throw Error(ErrorKind::usage, where() + "'" + name + "' is required");
      }
    }
    if (task_id) {
      add_name("task_id");
    }
    // Rows of one export share their columns: one statement per shape.
    Statement& st = m_inserts
                        .try_emplace(names, m_db,
                                     "INSERT INTO " + m_table + " (" + names
                                         + ") VALUES (" + params + ")")
                        .first->second;
    st.reset();
    int i = 0;
    for (const auto& [name, value] : row) {
      bind_value(st, ++i, name, value);
    }
    if (task_id) {
      st.bind(++i, *task_id);
    }
    try {
      st.run();
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::internal) {
        throw;
      }
      // A constraint of the schema (a row given twice): the file's fault.
      throw Error(ErrorKind::usage, where() + "row refused: " + e.what());
    }
  }

private:
  std::string where() const {
    return m_list.empty() ? std::string() : m_list + ": ";
  }

  void bind_value(Statement& st, int index, const std::string& name,
                  const std::string& value) {
    const Column& col = m_columns.find(name)->second;
    const auto misfit = [&](const char* what) {
      return Error(ErrorKind::usage,
                   where() + "'" + name + "' must be " + what);
    };
    if (holds_json(m_table, name)) {
      // JSON null: SQL NULL where the column allows it, else JSON text.
      if (value == "null" && !col.not_null) {
        st.bind_null(index);
      } else {
        st.bind(index, value);
      }
      return;
    }
    if (value == "null") {
      if (col.not_null) {
        throw misfit("given");
      }
      st.bind_null(index);
      return;
    }
    if (col.integer) {
      int64_t n = 0;
      const char* end = value.data() + value.size();
      const auto [ptr, ec] = std::from_chars(value.data(), end, n);
      if (ec != std::errc() || ptr != end) {
        throw misfit("an integer");
      }
      st.bind(index, n);
      return;
    }
    const auto parsed = nlohmann::json::parse(value, nullptr, false);
    if (!parsed.is_string()) {
      throw misfit("a string");
    }
    st.bind(index, parsed.get<std::string>());
  }

  Db& m_db;
  std::string m_table;
  std::string m_list;
  std::map<std::string, Column, std::less<>> m_columns;
  std::map<std::string, Statement> m_inserts; // by column list
};

} // namespace

void TaskStore::export_tasks(
    const std::optional<std::string>& queue,
    const std::function<void(const TaskImage&)>& each) {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, "SELECT * FROM tasks WHERE ?1 IS NULL OR queue = ?1 "
                      "ORDER BY id");
  st.bind(1, queue);
  while (st.step()) {
    TaskImage image;
    image.task = image_row(st, "tasks");
    const int64_t id = st.get_int(0);
    image.errors = side_rows(*m_db, "task_errors", "rowid", id);
    image.events = side_rows(*m_db, "events", "id", id);
    image.deps = side_rows(*m_db, "task_deps", "dep_id", id);
    image.deliveries = side_rows(*m_db, "deliveries", "worker", id);
    each(image);
  }
}

int64_t TaskStore::import_tasks(const std::function<bool(TaskImage&)>& next) {
  Transaction tx(*m_db);
  RowWriter tasks(*m_db, "tasks", "");
  RowWriter errors(*m_db, "task_errors", "errors");
  RowWriter events(*m_db, "events", "events");
  RowWriter deps(*m_db, "task_deps", "deps");
  RowWriter deliveries(*m_db, "deliveries", "deliveries");
  Statement exists(*m_db, "SELECT 1 FROM tasks WHERE id = ?1");
  // The label index holds the labels of unfinished tasks.
  Statement index(*m_db,
                  "INSERT OR IGNORE INTO task_labels (key, value, "
                  "task_id) SELECT j.key, j.value, t.id FROM tasks t, "
                  "json_each(t.labels) j WHERE t.id = ?1 "
                  "AND t.state NOT IN ('completed', 'failed', 'killed')");
  int64_t count = 0;
  TaskImage image;
  while (next(image)) {
    const std::string* id_text = cell(image.task, "id");
    int64_t id = 0;
    if (id_text == nullptr
        || std::from_chars(id_text->data(), id_text->data() + id_text->size(),
                           id)
                   .ec
               != std::errc()
        || id < 1) {
      throw Error(ErrorKind::usage, "'id' must be a task id (1 or more)");
    }
    const std::string* state = cell(image.task, "state");
    const auto state_json = state == nullptr
                                ? nlohmann::json()
                                : nlohmann::json::parse(*state, nullptr, false);
    if (!state_json.is_string()
        || !core::parse_state(state_json.get<std::string>())) {
      throw Error(ErrorKind::usage, "'state' must be a task state");
    }
    for (const char* json_col : {"labels", "root", "sync"}) {
      const std::string* text = cell(image.task, json_col);
      try {
        if (text != nullptr && *text != "null") {
          labels_from_json(*text);
        }
      } catch (const std::exception&) {
        throw Error(ErrorKind::usage, "'" + std::string(json_col)
                                          + "' must be an object of strings");
      }
    }
    if (const std::string* after = cell(image.task, "after_ids");
        after != nullptr && *after != "null") {
      const auto ids = nlohmann::json::parse(*after, nullptr, false);
      const bool ok =
          ids.is_array()
          && std::all_of(ids.begin(), ids.end(), [](const nlohmann::json& v) {
               return v.is_number_integer() && v.get<int64_t>() > 0;
             });
      if (!ok) {
        throw Error(ErrorKind::usage,
                    "'after_ids' must be an array of task ids");
      }
    }
    exists.bind(1, id);
    const bool taken = exists.step();
    exists.reset();
    if (taken) {
      throw Error(ErrorKind::conflict, task_ref(id) + " already exists");
    }
    tasks.write(image.task, std::nullopt);
    for (const auto& row : image.errors) {
      errors.write(row, id);
    }
    for (const auto& row : image.events) {
      events.write(row, id);
    }
    for (const auto& row : image.deps) {
      deps.write(row, id);
    }
    for (const auto& row : image.deliveries) {
      deliveries.write(row, id);
    }
    index.bind(1, id);
    index.run();
    index.reset();
    ++count;
    image = TaskImage();
  }
  tx.commit();
  return count;
}

} // namespace taskq::storage
