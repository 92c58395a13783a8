// Moving tasks between databases: export and import, as JSON Lines of
// whole tasks with their history.
#include "cli/commands.hpp"
#include "cli/json_fields.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"

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

// One export line: the task's columns, then the rows beside it.
std::string image_json(const storage::TaskImage& image) {
  ObjectWriter w;
  for (const auto& [name, value] : image.task) {
    w.raw(name, value);
  }
  w.raw(k_errors, rows_json(image.errors));
  w.raw(k_events, rows_json(image.events));
  w.raw(k_deps, rows_json(image.deps));
  w.raw(k_deliveries, rows_json(image.deliveries));
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

// Splits an export line into the task's row and the lists beside it.
storage::TaskImage parse_image(std::string_view line) {
  storage::TaskImage image;
  for (auto& [name, value] : object_row(line, "")) {
    std::vector<storage::ImageRow>* list = name == k_errors   ? &image.errors
                                           : name == k_events ? &image.events
                                           : name == k_deps   ? &image.deps
                                           : name == k_deliveries
                                               ? &image.deliveries
                                               : nullptr;
    if (list == nullptr) {
      image.task.emplace_back(std::move(name), std::move(value));
      continue;
    }
    if (core::json_kind(value) != core::JsonKind::array) {
      throw Error(ErrorKind::usage, "'" + name + "' must be an array");
    }
    for (const auto item : core::json_items(value)) {
      list->push_back(object_row(item, name));
    }
  }
  return image;
}

} // namespace

void register_transfer(CLI::App& app, Context& ctx) {
  auto queue = std::make_shared<OptText>();
  CLI::App* exp =
      add_command(app, "export",
                  "Print every task with its history as JSON Lines, for import",
                  "taskq export --queue thumbs > thumbs.jsonl");
  exp->add_option("--queue", *queue, "only this queue's tasks")
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
      "Add the tasks of an export, keeping their ids and history (all or "
      "nothing)",
      "taskq import thumbs.jsonl");
  imp->add_option("file", *file, "an export's JSON Lines; - reads stdin")
      ->type_name("FILE|-")
      ->required();
  imp->callback([file, &ctx] {
    ctx.format(Format::table, {Format::table});
    JsonlReader reader(*file, "nothing was imported");
    std::string line;
    bool reading = false; // errors while reading name their line and outcome
    int64_t n = 0;
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
    std::printf("imported %lld task%s\n", static_cast<long long>(n),
                n == 1 ? "" : "s");
  });
}

} // namespace taskq::cli
