// TaskStore: export and import. A task travels as its stored row and the
// rows beside it, column by column, so that export → import into an empty
// database → export gives the same bytes, and a column added by a later
// migration travels without code here changing. A flow travels the same
// way: its row, its atoms' rows and its event history.
#include "core/bytes.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/error_policy.hpp"
#include "core/flow.hpp"
#include "core/labels.hpp"
#include "core/state.hpp"
#include "core/text.hpp"
#include "core/time.hpp"
#include "storage/features/check_store.hpp"
#include "storage/model/rows.hpp"
#include "storage/model/transfer_columns.hpp"
#include "storage/seam/replay.hpp"
#include "storage/task_store.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;
namespace flow = core::flow;

namespace {

// The current row of `st` (over `table`) as an image row.
ImageRow image_row(const Statement& st, std::string_view table) {
  ImageRow row;
  for (int c = 0; c < st.column_count(); ++c) {
    std::string name = st.column_name(c);
    if (implied(table, name) || (st.is_null(c) && null_differs(table, name))) {
      continue;
    }
    std::string value;
    if (st.is_null(c)) {
      value = "null";
    } else if (st.is_integer(c)) {
      value = std::to_string(st.get_int(c));
    } else if (holds_json(table, name)) {
      value = st.get_text(c);
    } else if (holds_bytes(table, name)) {
      value = nlohmann::json(core::base64_encode(st.get_blob(c))).dump();
    } else {
      value =
          nlohmann::json(st.get_text(c))
              .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    row.emplace_back(std::move(name), std::move(value));
  }
  return row;
}

// The rows beside the exported tasks (or flows), table by table: one query
// each for the whole export, in task order, read alongside the tasks (a
// round trip per task and table would dominate on a server).
class SideRows {
public:
  // `owners`: the exported tasks' (or flows') ids, as a subquery with
  // parameter ?1 (`queue`) unless `queue` is null; `key`: the column that
  // names the owner.
  SideRows(Db& db, std::string table, std::string_view order,
           std::string_view owners, const std::optional<std::string>* queue,
           std::string_view key = "task_id")
      : m_table(std::move(table)),
        m_st(db, select_columns(db, m_table) + " WHERE " + std::string(key)
                     + " IN (" + std::string(owners) + ") ORDER BY "
                     + std::string(key) + ", " + std::string(order)) {
    if (queue != nullptr) {
      m_st.bind(1, *queue);
    }
    m_more = m_st.step();
    // (Columns are known once a row is: on PostgreSQL, with the result.)
    for (int c = 0; m_more && c < m_st.column_count(); ++c) {
      if (m_st.column_name(c) == key) {
        m_task_column = c;
      }
    }
  }

  // The rows of task (or flow) `id`; ids must come in increasing order.
  std::vector<ImageRow> of(int64_t id) {
    std::vector<ImageRow> rows;
    while (m_more && m_st.get_int(m_task_column) <= id) {
      if (m_st.get_int(m_task_column) == id) {
        rows.push_back(image_row(m_st, m_table));
      }
      m_more = m_st.step();
    }
    return rows;
  }

private:
  std::string m_table;
  Statement m_st;
  int m_task_column = 0;
  bool m_more = false;
};

// The value of `column` in `row`, if it has one.
const std::string* cell(const ImageRow& row, std::string_view column) {
  for (const auto& [name, value] : row) {
    if (name == column) {
      return &value;
    }
  }
  return nullptr;
}

// The id in `row`'s "id" column: 1 or more; std::nullopt when it is
// missing or not one.
std::optional<int64_t> id_cell(const ImageRow& row) {
  const std::string* text = cell(row, "id");
  int64_t id = 0;
  if (text == nullptr
      || std::from_chars(text->data(), text->data() + text->size(), id).ec
             != std::errc()
      || id < 1) {
    return std::nullopt;
  }
  return id;
}

// Inserts one image row into `table` (with task_id = `task_id` when the
// table has one); usage errors for unknown columns and misfit values.
class RowWriter {
public:
  // `list` names the table's rows in errors (as export lines do); `owner`
  // is the column write() fills with the owner's id.
  RowWriter(Db& db, std::string table, std::string list,
            std::string owner = "task_id")
      : m_db(db), m_table(std::move(table)), m_list(std::move(list)),
        m_owner(std::move(owner)), m_columns(by_name(columns_of(db, m_table))) {
  }

  Db& db() const { return m_db; }

  // Whether the table has a column `name` that an image may give.
  bool takes(const std::string& name) const {
    return m_columns.contains(name) && !implied(m_table, name);
  }

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
      add_name(m_owner);
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
  static std::map<std::string, Column, std::less<>>
  by_name(std::vector<Column> columns) {
    std::map<std::string, Column, std::less<>> out;
    for (Column& c : columns) {
      std::string name = c.name;
      out.emplace(std::move(name), std::move(c));
    }
    return out;
  }

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
    const Domain domain = domain_of(m_table, name);
    if (holds_json(m_table, name)) {
      // JSON null: SQL NULL where the column allows it (and nothing
      // differs from JSON null), else JSON text.
      if (value == "null" && !col.not_null && !null_differs(m_table, name)) {
        st.bind_null(index);
        return;
      }
      if (const char* what = json_misfit(domain, value)) {
        throw misfit(what);
      }
      st.bind(index, value);
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
      if (const char* what = integer_misfit(domain, n)) {
        throw misfit(what);
      }
      st.bind(index, n);
      return;
    }
    const auto parsed = nlohmann::json::parse(value, nullptr, false);
    if (!parsed.is_string()) {
      throw misfit("a string");
    }
    const auto text = parsed.get<std::string>();
    if (holds_bytes(m_table, name)) {
      const auto bytes = core::base64_decode(text);
      if (!bytes) {
        throw misfit("base64 text");
      }
      st.bind_blob(index, *bytes);
      return;
    }
    if (const char* what = string_misfit(domain, text)) {
      throw misfit(what);
    }
    st.bind(index, text);
  }

  Db& m_db;
  std::string m_table;
  std::string m_list;
  std::string m_owner;
  std::map<std::string, Column, std::less<>> m_columns;
  std::map<std::string, Statement> m_inserts; // by column list
};

// Checks one task's row as a whole and writes it with the rows beside it;
// returns its id.
int64_t import_one(const TaskImage& image, Statement& exists, RowWriter& tasks,
                   RowWriter& errors, RowWriter& events, RowWriter& deps,
                   RowWriter& deliveries, RowWriter& output) {
  const auto given_id = id_cell(image.task);
  if (!given_id) {
    throw Error(ErrorKind::usage, "'id' must be a task id (1 or more)");
  }
  const int64_t id = *given_id;
  // A lease is its token, holder and expiry together (read_task reads all
  // three when the token is there).
  int given = 0;
  for (const char* column : {"lease_token", "lease_worker", "lease_expires"}) {
    const std::string* v = cell(image.task, column);
    given += v != nullptr && *v != "null" ? 1 : 0;
  }
  if (given != 0 && given != 3) {
    throw Error(ErrorKind::usage, "'lease_token', 'lease_worker' and "
                                  "'lease_expires' must be given together");
  }
  exists.bind(1, id);
  const bool taken = exists.step();
  exists.reset();
  if (taken) {
    throw Error(ErrorKind::conflict, task_ref(id) + " already exists");
  }
  tasks.write(image.task, std::nullopt);
  if (const auto what = task_misfit(image.task)) {
    throw Error(ErrorKind::usage, *what);
  }
  count_added_task(tasks.db(), id);
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
  for (const auto& row : image.output) {
    output.write(row, id);
  }
  return id;
}

// The text of string column `column` in `row`; std::nullopt when it is
// missing or null. (Called once the row is written, its values checked.)
std::optional<std::string> text_cell(const ImageRow& row,
                                     std::string_view column) {
  const std::string* v = cell(row, column);
  if (v == nullptr) {
    return std::nullopt;
  }
  const auto j = nlohmann::json::parse(*v, nullptr, false);
  return j.is_string() ? std::optional(j.get<std::string>()) : std::nullopt;
}

// The writers of a flow's rows, for the whole import.
struct FlowWriters {
  explicit FlowWriters(Db& db)
      : flows(db, "flows", "flow"),
        documents(db, "flow_documents", "flow", "flow_id"),
        atoms(db, "flow_atoms", "atoms", "flow_id"),
        events(db, "flow_events", "events", "flow_id"),
        exists(db, "SELECT 1 FROM flows WHERE id = ?1") {}
  RowWriter flows;
  RowWriter documents; // its columns travel in the flow's row
  RowWriter atoms;
  RowWriter events;
  Statement exists;
};

// Checks one flow as a whole and writes its rows; returns its id. Its
// atoms' rows must be its compiled document's nodes, in order; the links
// between its atoms and their tasks are checked once every line is in.
int64_t import_flow(const TaskImage::Flow& image, FlowWriters& w) {
  const auto given_id = id_cell(image.flow);
  if (!given_id) {
    throw Error(ErrorKind::usage, "flow: 'id' must be a flow id (1 or more)");
  }
  const int64_t id = *given_id;
  w.exists.bind(1, id);
  const bool taken = w.exists.step();
  w.exists.reset();
  if (taken) {
    throw Error(ErrorKind::conflict,
                "flow " + std::to_string(id) + " already exists");
  }
  // The flow's row as exported: its `flows` row and its document's.
  ImageRow flow_row;
  ImageRow document;
  for (const auto& column : image.flow) {
    (w.documents.takes(column.first) ? document : flow_row).push_back(column);
  }
  w.flows.write(flow_row, std::nullopt);
  w.documents.write(document, id);
  const flow::Compiled c =
      flow::compile_flow(text_cell(image.flow, "document").value_or(""));
  if (!c.model) {
    throw Error(ErrorKind::usage,
                "flow: its 'document' does not compile: " + c.error);
  }
  const flow::FlowModel& model = *c.model;
  if (text_cell(image.flow, "name") != model.name) {
    throw Error(ErrorKind::usage, "flow: 'name' must be its document's name '"
                                      + model.name + "'");
  }
  if (image.atoms.size() != model.nodes.size()) {
    throw Error(ErrorKind::usage,
                "atoms: its document has " + std::to_string(model.nodes.size())
                    + " atoms (retry controllers included), one row each; "
                      "there are "
                    + std::to_string(image.atoms.size()));
  }
  for (size_t i = 0; i < image.atoms.size(); ++i) {
    const ImageRow& row = image.atoms[i];
    w.atoms.write(row, id);
    const flow::Node& node = model.nodes[i];
    const bool retry = node.kind == flow::NodeKind::retry;
    const std::string* n = cell(row, "node");
    const std::string* history = cell(row, "history");
    const bool has_history = history != nullptr && *history != "null";
    if (n == nullptr || *n != std::to_string(i)
        || text_cell(row, "name") != node.name
        || text_cell(row, "kind") != (retry ? "retry" : "task")
        || has_history != retry) {
      throw Error(ErrorKind::usage,
                  "atoms: row " + std::to_string(i + 1) + " must be node "
                      + std::to_string(i) + " of its document: "
                      + (retry ? "retry controller" : "task atom") + " '"
                      + node.name + "', with "
                      + (retry ? "its history" : "no history"));
    }
  }
  for (const ImageRow& row : image.events) {
    w.events.write(row, id);
  }
  return id;
}

} // namespace

void TaskStore::export_tasks(
    const std::optional<std::string>& queue,
    const std::function<void(const TaskImage&)>& each) {
  Transaction tx(*m_db, Transaction::Kind::read);
  {
    const std::string_view which = " WHERE ?1 IS NULL OR queue = ?1";
    Statement st(*m_db, select_columns(*m_db, "tasks") + std::string(which)
                            + " ORDER BY id");
    st.bind(1, queue);
    const std::string ids = "SELECT id FROM tasks" + std::string(which);
    SideRows errors(*m_db, "task_errors", "rowid", ids, &queue);
    SideRows events(*m_db, "events", "id", ids, &queue);
    SideRows deps(*m_db, "task_deps", "dep_id", ids, &queue);
    SideRows deliveries(*m_db, "deliveries",
                        "worker" + std::string(m_db->dialect().bytewise()), ids,
                        &queue);
    SideRows output(*m_db, "task_output", "id", ids, &queue);
    while (st.step()) {
      TaskImage image;
      image.task = image_row(st, "tasks");
      const int64_t id = st.get_int(0); // the first column
      image.errors = errors.of(id);
      image.events = events.of(id);
      image.deps = deps.of(id);
      image.deliveries = deliveries.of(id);
      image.output = output.of(id);
      each(image);
    }
  }
  if (queue) {
    return; // a flow's atoms' tasks may lie in any queue
  }
  Statement st(*m_db, select_columns(*m_db, "flows") + " ORDER BY id");
  const std::string ids = "SELECT id FROM flows";
  SideRows documents(*m_db, "flow_documents", "flow_id", ids, nullptr,
                     "flow_id");
  SideRows atoms(*m_db, "flow_atoms", "node", ids, nullptr, "flow_id");
  SideRows events(*m_db, "flow_events", "id", ids, nullptr, "flow_id");
  while (st.step()) {
    TaskImage image;
    image.flow.emplace();
    image.flow->flow = image_row(st, "flows");
    const int64_t id = st.get_int(0); // the first column
    for (const ImageRow& d : documents.of(id)) {
      image.flow->flow.insert(image.flow->flow.end(), d.begin(), d.end());
    }
    image.flow->atoms = atoms.of(id);
    image.flow->events = events.of(id);
    each(image);
  }
}

int64_t TaskStore::import_tasks(const std::function<bool(TaskImage&)>& next) {
  // Each try reads the same images (kept in a temporary file on
  // PostgreSQL, where a conflict runs the transaction again).
  Replay<TaskImage> input(next, m_db->dialect().tries_again());
  return retrying_with(input, [&]() -> int64_t {
    Transaction tx(*m_db);
    RowWriter tasks(*m_db, "tasks", "");
    RowWriter errors(*m_db, "task_errors", "errors");
    RowWriter events(*m_db, "events", "events");
    RowWriter deps(*m_db, "task_deps", "deps");
    RowWriter deliveries(*m_db, "deliveries", "deliveries");
    RowWriter output(*m_db, "task_output", "output");
    FlowWriters flows(*m_db);
    Statement exists(*m_db, "SELECT 1 FROM tasks WHERE id = ?1");
    // Where each imported task and flow came from, for errors found after
    // the last line: its index in `lines` by id.
    std::vector<int64_t> lines;
    std::unordered_map<int64_t, size_t> task_place;
    std::unordered_map<int64_t, size_t> flow_place;
    std::string ids = "[";
    std::string flow_ids = "[";
    const auto at = [](int64_t line) {
      return line > 0 ? "line " + std::to_string(line) + ": " : std::string();
    };
    // A task or flow the input gives twice is the input's fault (exit 2),
    // not a conflict with the database: the first one is already written.
    const auto once = [&](const ImageRow& row,
                          const std::unordered_map<int64_t, size_t>& place,
                          const char* kind) {
      const std::string* text = cell(row, "id");
      int64_t id = 0;
      if (text == nullptr
          || std::from_chars(text->data(), text->data() + text->size(), id).ec
                 != std::errc()) {
        return; // import_one/import_flow say what is wrong with it
      }
      if (const auto found = place.find(id); found != place.end()) {
        throw Error(ErrorKind::usage,
                    std::string(kind) + " " + std::to_string(id)
                        + " is given twice (first on line "
                        + std::to_string(lines[found->second]) + ")");
      }
    };
    TaskImage image;
    while (input.next(image)) {
      try {
        if (image.flow) {
          once(image.flow->flow, flow_place, "flow");
          const int64_t id = import_flow(*image.flow, flows);
          flow_ids += (flow_place.empty() ? "" : ",") + std::to_string(id);
          flow_place.emplace(id, lines.size());
        } else {
          once(image.task, task_place, "task");
          const int64_t id = import_one(image, exists, tasks, errors, events,
                                        deps, deliveries, output);
          ids += (task_place.empty() ? "" : ",") + std::to_string(id);
          task_place.emplace(id, lines.size());
        }
        lines.push_back(image.line);
      } catch (const TxConflict&) {
        throw; // the whole import again
      } catch (const Error& e) {
        throw Error(e.kind(), at(image.line) + e.what());
      }
      image = TaskImage();
    }
    ids += "]";
    flow_ids += "]";
    // The label index holds the labels of unfinished tasks: those imported,
    // in one statement.
    Statement(*m_db, "INSERT OR IGNORE INTO task_labels (key, value, task_id) "
                     "SELECT j.key, j.value, t.id FROM tasks t, "
                         + m_db->dialect().json_object_rows("t.labels")
                         + " j WHERE t.id IN (SELECT CAST(i.value AS BIGINT) "
                           "FROM "
                         + m_db->dialect().json_array_rows("?1")
                         + " i) AND t.state NOT IN "
                         + detail::terminal_states_sql())
        .bind(1, ids)
        .run();
    // The rules db check verifies, on the imported tasks and flows (they may
    // name each other in any order, so only now): the first offender in the
    // input names its line.
    std::optional<std::pair<size_t, std::string>> first; // (place, what)
    std::string_view problem;
    const auto offender = [&](const std::unordered_map<int64_t, size_t>& place,
                              const char* what) {
      return
          [&place, &first, &problem, what](const Invariant& rule, int64_t id) {
            const size_t p = place.at(id);
            if (!first || p < first->first) {
              first = std::pair(p, what + std::to_string(id));
              problem = rule.problem;
            }
          };
    };
    find_violations(*m_db, ids, offender(task_place, "task "));
    find_flow_violations(*m_db, flow_ids, offender(flow_place, "flow "));
    if (first) {
      throw Error(ErrorKind::usage, at(lines[first->first]) + first->second
                                        + ": " + std::string(problem));
    }
    if (!task_place.empty()) {
      m_db->ids_given("tasks");
    }
    if (!flow_place.empty()) {
      m_db->ids_given("flows");
    }
    tx.commit();
    return static_cast<int64_t>(task_place.size());
  });
}

} // namespace taskq::storage
