// What each column of an exported or imported row holds and may hold,
// and the columns of a table as the schema lists them.
#include "storage/model/transfer_columns.hpp"

#include "core/bytes.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/error_policy.hpp"
#include "core/flow.hpp"
#include "core/labels.hpp"
#include "core/new_task.hpp"
#include "core/state.hpp"
#include "core/text.hpp"
#include "core/time.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskq::storage::detail {

namespace flow = core::flow;

// The tables of a flow's rows that name it by flow_id.
bool is_flow_row(std::string_view table) {
  return table == "flow_atoms" || table == "flow_events"
         || table == "flow_documents";
}

// The TEXT columns that hold JSON: exported embedded, as stored.
bool holds_json(std::string_view table, std::string_view column) {
  if (table == "tasks") {
    return column == "payload" || column == "labels" || column == "checkpoint"
           || column == "result" || column == "after_ids" || column == "root"
           || column == "sync" || column == "flow" || column == "command";
  }
  return (table == "flows" && column == "store")
         || (is_flow_row(table) && (column == "result" || column == "history"));
}

// The BLOB columns: exported as a JSON string of their bytes in base64.
bool holds_bytes(std::string_view table, std::string_view column) {
  return table == "task_output" && column == "data";
}

// JSON columns where nothing (SQL NULL) and JSON null differ (an atom's
// result is unset, or its task completed without one): an image leaves
// the column out when it holds nothing.
bool null_differs(std::string_view table, std::string_view column) {
  return is_flow_row(table) && column == "result";
}

// Columns an image leaves out: the owning task or flow is implied, and
// event ids are assigned afresh. (An atom's task_id is its own.) A flow's
// version is the random mark of the step that wrote it, by which the
// process that wrote it knows its rows (flow_store.cpp): an imported flow
// gets the default, which no step writes, so every process reads it.
bool implied(std::string_view table, std::string_view column) {
  if (is_flow_row(table)) {
    return column == "flow_id" || (table == "flow_events" && column == "id");
  }
  if (table == "flows") {
    return column == "version";
  }
  return column == "task_id"
         || ((table == "events" || table == "task_output") && column == "id");
}

Domain domain_of(std::string_view table, std::string_view column) {
  if (column == "time" || column == "run_at" || column == "created_at"
      || column == "updated_at" || column == "lease_expires"
      || column == "broadcast_until") {
    return Domain::time;
  }
  if (table == "events" && (column == "from_state" || column == "to_state")) {
    return Domain::state;
  }
  if (table == "task_deps" && column == "dep_id") {
    return Domain::task_id;
  }
  if (table != "tasks") {
    static const std::map<std::pair<std::string_view, std::string_view>, Domain>
        k_flows = {
            {{"flows", "id"}, Domain::flow_id},
            {{"flows", "state"}, Domain::flow_state},
            {{"flows", "store"}, Domain::object},
            {{"flows", "failed"}, Domain::flag},
            {{"flow_atoms", "node"}, Domain::count},
            {{"flow_atoms", "kind"}, Domain::atom_kind},
            {{"flow_atoms", "state"}, Domain::atom_state},
            {{"flow_atoms", "intention"}, Domain::intention},
            {{"flow_atoms", "task_id"}, Domain::task_id},
            {{"flow_atoms", "history"}, Domain::history},
            {{"flow_events", "kind"}, Domain::change_kind},
            {{"task_output", "attempt"}, Domain::positive},
            {{"task_output", "pos"}, Domain::count},
        };
    const auto it = k_flows.find({table, column});
    return it == k_flows.end() ? Domain::any : it->second;
  }
  static const std::map<std::string_view, Domain> k_tasks = {
      {"id", Domain::task_id},
      {"rev", Domain::positive},
      {"queue", Domain::name},
      {"state", Domain::state},
      {"labels", Domain::labels},
      {"attempts", Domain::count},
      {"attempts_base", Domain::count},
      {"max_attempts", Domain::max_attempts},
      {"lease_for_ms", Domain::duration},
      {"checkpoint_req", Domain::flag},
      {"max_errors", Domain::max_errors},
      {"error_window_ms", Domain::positive_duration},
      {"retry_delay_ms", Domain::duration},
      {"backoff", Domain::backoff},
      {"max_delay_ms", Domain::duration},
      {"retry_of", Domain::task_id},
      {"after_ids", Domain::task_ids},
      {"blockers", Domain::count},
      {"root", Domain::labels},
      {"sync", Domain::labels},
      {"flow", Domain::flow_link},
      {"command", Domain::argv},
  };
  const auto it = k_tasks.find(column);
  return it == k_tasks.end() ? Domain::any : it->second;
}

namespace {

bool is_duration(int64_t ms) {
  return ms >= 0 && core::parse_duration(std::to_string(ms) + "ms");
}

} // namespace

// What an integer of `domain` must be, or nullptr when `n` is one.
const char* integer_misfit(Domain domain, int64_t n) {
  switch (domain) {
  case Domain::time:
    return core::in_range(core::from_unix_ms(n))
               ? nullptr
               : "a time within years 0000-9999 (milliseconds from "
                 "-62167219200000 to 253402300799999)";
  case Domain::duration:
    return is_duration(n) ? nullptr
                          : "a duration of 0 to 100 years in milliseconds";
  case Domain::positive_duration:
    return n > 0 && is_duration(n)
               ? nullptr
               : "a duration of 1 ms to 100 years in milliseconds";
  case Domain::task_id:
    return n >= 1 ? nullptr : "a task id (1 or more)";
  case Domain::flow_id:
    return n >= 1 ? nullptr : "a flow id (1 or more)";
  case Domain::count:
    return n >= 0 ? nullptr : "0 or more";
  case Domain::positive:
    return n >= 1 ? nullptr : "at least 1";
  case Domain::max_attempts: {
    core::NewTaskFields task;
    task.max_attempts = n;
    const auto broken = core::check_new_task(task);
    return broken ? broken->must : nullptr;
  }
  case Domain::max_errors:
    return n >= 1 && n <= 1'000'000 ? nullptr : "between 1 and 1000000";
  case Domain::flag:
    return n == 0 || n == 1 ? nullptr : "0 or 1";
  default:
    return nullptr;
  }
}

// What a string of `domain` must be, or nullptr when `text` is one.
const char* string_misfit(Domain domain, const std::string& text) {
  switch (domain) {
  case Domain::name: {
    core::NewTaskFields task;
    task.queue = text;
    const auto broken = core::check_new_task(task);
    return broken ? broken->must : nullptr;
  }
  case Domain::state:
    return core::parse_state(text) ? nullptr : "a task state";
  case Domain::backoff:
    return core::parse_backoff(text) ? nullptr : "constant or exponential";
  case Domain::flow_state:
    return flow::parse_flow_state(text)
               ? nullptr
               : "a flow state (PENDING, RUNNING, ...)";
  case Domain::atom_state:
    return flow::parse_atom_state(text)
               ? nullptr
               : "an atom state (PENDING, RUNNING, ...)";
  case Domain::intention:
    return flow::parse_intention(text)
               ? nullptr
               : "an intention (EXECUTE, IGNORE, REVERT or RETRY)";
  case Domain::atom_kind:
    return text == "task" || text == "retry" ? nullptr : "task or retry";
  case Domain::change_kind:
    return text == "flow" || text == "task" || text == "retry"
               ? nullptr
               : "flow, task or retry";
  default:
    return nullptr;
  }
}

// What JSON text of `domain` must be, or nullptr when `json` is one.
const char* json_misfit(Domain domain, const std::string& json) {
  if (domain == Domain::any) {
    return nullptr; // a payload, result or checkpoint: any JSON value
  }
  const auto v = nlohmann::json::parse(json, nullptr, false);
  if (domain == Domain::object) {
    return v.is_object() ? nullptr : "a JSON object";
  }
  if (domain == Domain::history) {
    // As flow_store reads it back: one {"value", "failures"} per
    // execution, failures an object of strings.
    const bool ok =
        v.is_array()
        && std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) {
             return e.is_object() && e.size() == 2 && e.contains("value")
                    && e.contains("failures") && e["failures"].is_object()
                    && std::all_of(
                        e["failures"].begin(), e["failures"].end(),
                        [](const nlohmann::json& f) { return f.is_string(); });
           });
    return ok ? nullptr
              : "an array of {\"value\": ..., \"failures\": {ATOM: "
                "ERROR}}";
  }
  if (domain == Domain::flow_link) {
    // As flow_store writes it: which flow, atom and action the task works
    // for, and the args it was given.
    const char* what = "an object {\"id\": FLOW, \"atom\": NAME, "
                       "\"action\": \"execute\" or \"revert\", "
                       "\"args\": {...}}";
    if (!v.is_object() || v.size() != 4 || !v.contains("id")
        || !v["id"].is_number_integer() || v["id"].get<int64_t>() < 1
        || !v.contains("atom") || !v["atom"].is_string()
        || !v.contains("action")
        || (v["action"] != "execute" && v["action"] != "revert")
        || !v.contains("args") || !v["args"].is_object()) {
      return what;
    }
    return nullptr;
  }
  if (domain == Domain::labels) {
    // As --label and tx's "labels" take them, label by label.
    const char* what = "an object of strings (KEY: letters, digits and "
                       ". _ / -; VALUE: no control characters)";
    if (!v.is_object()) {
      return what;
    }
    for (const auto& item : v.items()) {
      if (!item.value().is_string() || item.key().find('=') != std::string::npos
          || !core::parse_label(item.key() + "="
                                + item.value().get<std::string>())) {
        return what;
      }
    }
    return nullptr;
  }
  if (domain == Domain::argv) {
    // As `add -- CMD` stores it: what execve can take (no NUL), the
    // program's name not empty.
    const char* what = "an array of strings without NUL, the first not "
                       "empty (a program and its arguments)";
    if (!v.is_array()
        || !std::all_of(v.begin(), v.end(), [](const nlohmann::json& arg) {
             return arg.is_string();
           })) {
      return what;
    }
    core::NewTaskFields task;
    task.command = v.get<std::vector<std::string>>();
    return core::check_new_task(task) ? what : nullptr;
  }
  if (domain == Domain::task_ids) {
    const char* what = "an array of task ids";
    if (!v.is_array()
        || !std::all_of(v.begin(), v.end(), [](const nlohmann::json& id) {
             return id.is_number_integer();
           })) {
      return what;
    }
    core::NewTaskFields task;
    for (const auto& id : v) {
      task.after.push_back(id.get<int64_t>());
    }
    return core::check_new_task(task) ? what : nullptr;
  }
  return nullptr;
}
namespace {

// The value of `column` in `row`, parsed; JSON null when it has none.
nlohmann::json value_in(const ImageRow& row, std::string_view column) {
  for (const auto& [name, value] : row) {
    if (name == column) {
      return nlohmann::json::parse(value, nullptr, false);
    }
  }
  return nullptr;
}

std::optional<std::string> text_of(const nlohmann::json& v) {
  return v.is_string() ? std::optional(v.get<std::string>()) : std::nullopt;
}

std::optional<int64_t> integer_of(const nlohmann::json& v) {
  return v.is_number_integer() ? std::optional(v.get<int64_t>()) : std::nullopt;
}

// The column of a task's row that holds a new task's `field`.
std::string column_of(std::string_view field) {
  if (field == "after") {
    return "after_ids";
  }
  if (field == "trigger") {
    return "trigger_key";
  }
  if (field == "broadcast" || field == "broadcast_ttl") {
    return "broadcast_until";
  }
  return std::string(field);
}

} // namespace

std::optional<std::string> task_misfit(const ImageRow& row) {
  core::NewTaskFields task;
  task.queue = text_of(value_in(row, "queue"));
  const auto argv = value_in(row, "command");
  if (argv.is_array()
      && std::all_of(argv.begin(), argv.end(), [](const nlohmann::json& arg) {
           return arg.is_string();
         })) {
    task.command = argv.get<std::vector<std::string>>();
  }
  task.max_attempts = integer_of(value_in(row, "max_attempts"));
  task.unique_key = text_of(value_in(row, "unique_key"));
  for (const auto& id : value_in(row, "after_ids")) {
    if (id.is_number_integer()) {
      task.after.push_back(id.get<int64_t>());
    }
  }
  // As add stores them: no root, no list of dependencies, is null.
  const auto root = value_in(row, "root");
  task.has_root = root.is_object() && !root.empty();
  task.to_worker = text_of(value_in(row, "to_worker"));
  // A broadcast is a task with an end; its ttl reaches from its creation.
  const auto until = integer_of(value_in(row, "broadcast_until"));
  const auto created = integer_of(value_in(row, "created_at"));
  task.broadcast = until.has_value();
  if (until && created) {
    task.broadcast_ttl = core::Millis(*until - *created);
  }
  task.trigger = text_of(value_in(row, "trigger_key"));
  const auto broken = core::check_new_task(task);
  if (!broken) {
    // Keys are stored as add stores them: sorted, each once.
    if (task.trigger && *task.trigger != core::normal_trigger(*task.trigger)) {
      return "'trigger_key' must be its keys sorted, each once ('"
             + core::normal_trigger(*task.trigger) + "', not '" + *task.trigger
             + "')";
    }
    return std::nullopt;
  }
  const char* k_to_every = " must be absent from a broadcast (it goes to "
                           "every worker)";
  switch (broken->rule) {
  case core::NewTaskRule::broadcast_alone:
    return std::string(!task.after.empty() ? "'after_ids'"
                       : task.has_root     ? "'root'"
                                           : "'unique_key'")
           + k_to_every;
  case core::NewTaskRule::trigger:
    return std::string("'trigger_key' must be ") + broken->must + ": '"
           + core::trigger_keys(*task.trigger).at(broken->index) + "' is not";
  case core::NewTaskRule::broadcast_ttl:
    return "'broadcast_until' must be later than 'created_at' (a "
           "broadcast's ttl is longer than 0)";
  default:
    return "'" + column_of(broken->field) + "' must be " + broken->must;
  }
}

// A table's columns in their order, from the schema itself.
std::vector<Column> columns_of(Db& db, const std::string& table) {
  std::vector<Column> out;
  Statement st(db, db.dialect().table_columns());
  st.bind(1, table);
  while (st.step()) {
    out.push_back({st.get_text(0), st.get_int(1) != 0, st.get_int(2) != 0,
                   st.get_int(3) != 0});
  }
  return out;
}

// SELECT of `table`'s columns, named one by one in the schema's order, so
// that both backends export the same keys in the same order.
std::string select_columns(Db& db, const std::string& table) {
  std::string names;
  for (const Column& c : columns_of(db, table)) {
    names += (names.empty() ? "\"" : ", \"") + c.name + "\"";
  }
  return "SELECT " + names + " FROM " + table;
}

} // namespace taskq::storage::detail
