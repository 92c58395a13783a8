// Moving tasks between databases: export and import, as JSON Lines of
// whole tasks with their history, then whole flows.
#include "cli/commands.hpp"
#include "cli/json_fields.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>

namespace taskq::cli {
namespace {

// The lists of rows beside a task, by their key in an export line.
constexpr const char* k_errors = "errors";
constexpr const char* k_events = "events";
constexpr const char* k_deps = "deps";
constexpr const char* k_deliveries = "deliveries";
constexpr const char* k_output = "output";
// A flow's line: {"flow": {its row}, "atoms": [...], "events": [...]}. A
// task's line always has "id"; a flow's never has one at the top.
constexpr const char* k_flow = "flow";
constexpr const char* k_atoms = "atoms";

std::string row_json(const storage::ImageRow& row) {
  ObjectWriter w;
  for (const auto& [name, value] : row) {
    w.raw(name, value);
  }
  return w.finish();
}

std::string rows_json(const std::vector<storage::ImageRow>& rows) {
  std::string out = "[";
  for (const auto& row : rows) {
    out += out.size() == 1 ? "" : ",";
    out += row_json(row);
  }
  return out + "]";
}

// One export line: the task's columns, then the rows beside it; or the
// flow's row, its atoms and its events.
std::string image_json(const storage::TaskImage& image) {
  ObjectWriter w;
  if (image.flow) {
    w.raw(k_flow, row_json(image.flow->flow));
    w.raw(k_atoms, rows_json(image.flow->atoms));
    w.raw(k_events, rows_json(image.flow->events));
    return w.finish();
  }
  for (const auto& [name, value] : image.task) {
    w.raw(name, value);
  }
  w.raw(k_errors, rows_json(image.errors));
  w.raw(k_events, rows_json(image.events));
  w.raw(k_deps, rows_json(image.deps));
  w.raw(k_deliveries, rows_json(image.deliveries));
  if (!image.output.empty()) {
    w.raw(k_output, rows_json(image.output));
  }
  return w.finish();
}

// A JSON object's members as an image row, keys decoded; `where` names it
// in errors (empty: the task itself).
storage::ImageRow object_row(std::string_view object,
                             const std::string& where) {
  if (core::json_kind(object) != core::JsonKind::object) {
    throw Error(ErrorKind::usage,
                (where.empty() ? "" : where + ": ") + "expected a JSON object");
  }
  storage::ImageRow row;
  std::set<std::string> seen;
  for (const auto& [key, value] : core::json_members(object)) {
    std::string name = *json_string_value(key);
    if (!seen.insert(name).second) {
      throw Error(ErrorKind::usage, (where.empty() ? "" : where + ": ") + "'"
                                        + name + "' is given twice");
    }
    row.emplace_back(std::move(name), std::string(value));
  }
  return row;
}

// The rows of a list member `name` (an array of objects).
std::vector<storage::ImageRow> list_rows(const std::string& name,
                                         std::string_view value) {
  if (core::json_kind(value) != core::JsonKind::array) {
    throw Error(ErrorKind::usage, "'" + name + "' must be an array");
  }
  std::vector<storage::ImageRow> rows;
  for (const auto item : core::json_items(value)) {
    rows.push_back(object_row(item, name));
  }
  return rows;
}

// A flow's line, split into its rows; `members`: the line's.
storage::TaskImage parse_flow(storage::ImageRow members) {
  storage::TaskImage image;
  auto& f = image.flow.emplace();
  bool atoms = false;
  bool events = false;
  for (auto& [name, value] : members) {
    if (name == k_flow) {
      f.flow = object_row(value, k_flow);
    } else if (name == k_atoms) {
      f.atoms = list_rows(name, value);
      atoms = true;
    } else if (name == k_events) {
      f.events = list_rows(name, value);
      events = true;
    } else {
      throw Error(ErrorKind::usage,
                  "unknown member '" + name
                      + "' of a flow (a flow's line holds flow, atoms and "
                        "events)");
    }
  }
  for (const auto& [given, name] :
       {std::pair(atoms, k_atoms), std::pair(events, k_events)}) {
    if (!given) {
      throw Error(ErrorKind::usage,
                  std::string("a flow's '") + name + "' is required");
    }
  }
  return image;
}

// Splits an export line into the task's row and the lists beside it, or
// into a flow's rows.
storage::TaskImage parse_image(std::string_view line) {
  storage::ImageRow members = object_row(line, "");
  const auto named = [&](std::string_view key) {
    return std::find_if(members.begin(), members.end(),
                        [&](const auto& m) { return m.first == key; });
  };
  const auto flow = named(k_flow);
  if (named("id") == members.end() && flow != members.end()
      && core::json_kind(flow->second) == core::JsonKind::object) {
    return parse_flow(std::move(members));
  }
  storage::TaskImage image;
  for (auto& [name, value] : members) {
    std::vector<storage::ImageRow>* list = name == k_errors   ? &image.errors
                                           : name == k_events ? &image.events
                                           : name == k_deps   ? &image.deps
                                           : name == k_deliveries
                                               ? &image.deliveries
                                           : name == k_output ? &image.output
                                                              : nullptr;
    if (list == nullptr) {
      image.task.emplace_back(std::move(name), std::move(value));
      continue;
    }
    *list = list_rows(name, value);
  }
  return image;
}

} // namespace

void register_transfer(CLI::App& app, Context& ctx) {
  auto queue = std::make_shared<OptText>();
  CLI::App* exp =
      add_command(app, "export",
                  "Print every task with its history, then every flow, as "
                  "JSON Lines, for import",
                  "taskq export --queue thumbs > thumbs.jsonl");
  exp->add_option("--queue", *queue,
                  "only this queue's tasks, and no flows (a flow's tasks "
                  "may lie in several queues)")
      ->type_name("QUEUE");
  exp->callback([queue, &ctx] {
    ctx.format(Format::json, {Format::json});
    if (*queue) {
      check_queue_name(**queue);
    }
    ctx.store(storage::OpenMode::read)
        .export_tasks(*queue, [](const storage::TaskImage& image) {
          const std::string line = image_json(image);
          std::fwrite(line.data(), 1, line.size(), stdout);
          std::fputc('\n', stdout);
        });
  });

  auto file = std::make_shared<std::string>();
  CLI::App* imp = add_command(
      app, "import",
      "Add the tasks and flows of an export, keeping their ids and history "
      "(all or nothing)",
      "taskq import thumbs.jsonl");
  imp->add_option("file", *file, "an export's JSON Lines; - reads stdin")
      ->type_name("FILE|-")
      ->required();
  imp->callback([file, &ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    JsonlReader reader(*file, "nothing was imported");
    std::string line;
    bool reading = false; // errors while reading name their line and outcome
    int64_t n = 0;
    int64_t flows = 0;
    try {
      n = ctx.store(storage::OpenMode::write)
              .import_tasks([&](storage::TaskImage& image) {
                reading = true;
                const bool more = reader.next(line);
                if (more) {
                  const std::string at =
                      "line " + std::to_string(reader.line()) + ": ";
                  try {
                    image = parse_image(line);
                  } catch (const Error& e) {
                    throw Error(e.kind(),
                                at + e.what() + "; nothing was imported");
                  }
                  image.line = reader.line();
                  flows += image.flow ? 1 : 0;
                }
                reading = false;
                return more;
              });
    } catch (const Error& e) {
      if (reading) {
        throw;
      }
      // The store names the line of the task it refused.
      throw Error(e.kind(), std::string(e.what()) + "; nothing was imported");
    }
    if (format == Format::json) {
      print_json(Json{{"imported", n}, {"flows", flows}});
      return;
    }
    std::printf("imported %lld task%s", static_cast<long long>(n),
                n == 1 ? "" : "s");
    if (flows > 0) {
      std::printf(" and %lld flow%s", static_cast<long long>(flows),
                  flows == 1 ? "" : "s");
    }
    std::printf("\n");
  });
}

} // namespace taskq::cli
