// taskq add: one task, or one per line of a JSON Lines file.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

namespace taskq::cli {
namespace {

struct AddOptions {
  std::string queue;
  OptText payload, text, payload_file, jsonl;
  std::vector<std::string> labels;
  int64_t priority = 0;
  OptText delay, at;
  OptText unique;
  std::optional<int64_t> max_attempts;
  PolicyArgs policy;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::usage, "cannot read " + path);
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// Streams payloads from a JSON Lines file: one JSON value per line, blank
// lines skipped. A malformed line aborts the add (nothing is committed).
class JsonlReader {
public:
  explicit JsonlReader(const std::string& path) : m_path(path) {
    if (path == "-") {
      m_file = stdin;
    } else {
      m_file = std::fopen(path.c_str(), "rb");
      if (m_file == nullptr) {
        throw Error(ErrorKind::usage, "cannot read " + path);
      }
      m_owned = true;
    }
  }
  ~JsonlReader() {
    std::free(m_line);
    if (m_owned) {
      std::fclose(m_file);
    }
  }
  JsonlReader(const JsonlReader&) = delete;
  JsonlReader& operator=(const JsonlReader&) = delete;

  // Puts the next payload, minified, in `out` (reusing its buffer); false
  // at the end of the input.
  bool next(std::string& out) {
    while (true) {
      const ssize_t n = ::getline(&m_line, &m_capacity, m_file);
      if (n < 0) {
        if (std::ferror(m_file)) {
          throw Error(ErrorKind::internal, "cannot read " + m_path);
        }
        return false;
      }
      ++m_number;
      std::string_view line(m_line, static_cast<size_t>(n));
      const auto first = line.find_first_not_of(" \t\r\n");
      if (first == std::string_view::npos) {
        continue;
      }
      const auto last = line.find_last_not_of(" \t\r\n");
      line = line.substr(first, last - first + 1);
      if (!nlohmann::json::accept(line)) {
        throw Error(ErrorKind::usage, "invalid JSON on line "
                                          + std::to_string(m_number) + " of "
                                          + (m_path == "-" ? "stdin" : m_path)
                                          + "; nothing was added");
      }
      minify_json_into(line, out);
      return true;
    }
  }

private:
  std::string m_path;
  std::FILE* m_file = nullptr;
  bool m_owned = false;
  char* m_line = nullptr;
  size_t m_capacity = 0;
  int64_t m_number = 0;
};

void run_add(const AddOptions& o, Context& ctx) {
  check_queue_name(o.queue);
  const int sources = o.payload.has_value() + o.text.has_value()
                      + o.payload_file.has_value() + o.jsonl.has_value();
  if (sources > 1) {
    throw Error(ErrorKind::usage, "give only one of --payload, --text, "
                                  "--payload-file and --jsonl");
  }
  storage::NewTask task;
  task.queue = o.queue;
  if (o.payload) {
    if (!nlohmann::json::accept(*o.payload)) {
      throw Error(ErrorKind::usage,
                  "invalid JSON for --payload; to store plain text, use "
                  "--text STRING");
    }
    task.payload = parse_json_arg(*o.payload, "--payload");
  } else if (o.text) {
    if (!core::is_valid_utf8(*o.text)) {
      throw Error(ErrorKind::usage, "--text is not valid UTF-8");
    }
    task.payload = json_string(*o.text);
  } else if (o.payload_file) {
    task.payload = parse_json_arg(read_file(*o.payload_file), *o.payload_file);
  }
  task.labels = parse_labels(o.labels);
  task.priority = o.priority;
  const core::Time now = ctx.now();
  if (o.delay && o.at) {
    throw Error(ErrorKind::usage, "give only one of --delay and --at");
  }
  if (const auto delay = parse_duration_arg(o.delay, "--delay")) {
    task.run_at = now + *delay;
  }
  if (const auto at = parse_time_arg(o.at, "--at")) {
    task.run_at = *at;
  }
  if (o.max_attempts && *o.max_attempts < 1) {
    throw Error(ErrorKind::usage, "--max-attempts must be at least 1");
  }
  task.max_attempts = o.max_attempts;
  task.policy = to_overrides(o.policy);
  if (o.unique) {
    if (o.jsonl) {
      throw Error(ErrorKind::usage,
                  "--unique goes with one task, not --jsonl (every line "
                  "would share the key)");
    }
    if (!core::is_valid_utf8(*o.unique)) {
      throw Error(ErrorKind::usage, "--unique is not valid UTF-8");
    }
    task.unique_key = o.unique;
  }

  if (!o.jsonl) {
    const Format format = ctx.format(Format::id, {Format::id, Format::json});
    auto& store = ctx.store(storage::OpenMode::write);
    const storage::Added added = store.add_unique(task, now, ctx.actor());
    const auto t = store.find(added.id);
    if (!t) { // deleted by another process in between
      throw Error(ErrorKind::not_found, "no task " + std::to_string(added.id));
    }
    if (added.existed) {
      std::fprintf(stderr,
                   "taskq: task %lld has the unique key '%s' and is still "
                   "%s: added nothing\n",
                   static_cast<long long>(added.id), task.unique_key->c_str(),
                   display_state(*t, now).c_str());
    }
    if (format == Format::json) {
      print_task_json(*t, now);
    } else {
      std::printf("%lld\n", static_cast<long long>(added.id));
    }
    return;
  }

  const Format format = ctx.format(Format::table, {Format::table, Format::id});
  JsonlReader reader(*o.jsonl);
  auto& store = ctx.store(storage::OpenMode::write);
  // Ids within one write transaction are consecutive, so the first and
  // the count give them all without holding them in memory.
  int64_t first = 0;
  const int64_t count = store.add_many(
      task, [&](std::string& payload) { return reader.next(payload); },
      [&](int64_t id) {
        if (first == 0) {
          first = id;
        }
      },
      now, ctx.actor());
  if (format == Format::id) {
    for (int64_t i = 0; i < count; ++i) {
      std::printf("%lld\n", static_cast<long long>(first + i));
    }
  } else {
    std::printf("%lld\n", static_cast<long long>(count));
  }
}

} // namespace

void register_produce(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<AddOptions>();
  CLI::App* add = add_command(
      app, "add", "Add a task to QUEUE (prints its id), or many with --jsonl",
      "taskq add thumbs --payload '{\"file\":\"a.png\"}' --label kind=image");
  add->add_option("queue", o->queue, "queue name")->required();
  add->add_option("--payload", o->payload, "payload, any JSON value")
      ->type_name("JSON");
  add->add_option("--text", o->text, "payload, stored as a JSON string")
      ->type_name("STR");
  add->add_option("--payload-file", o->payload_file,
                  "read the JSON payload from file F")
      ->type_name("F");
  add->add_option("--jsonl", o->jsonl,
                  "add one task per line of FILE (- for stdin), all or "
                  "nothing; prints the count")
      ->type_name("FILE");
  add->add_option("--label", o->labels, "label K=V (repeatable)")
      ->type_name("K=V");
  add->add_option("--priority", o->priority, "higher is leased first")
      ->type_name("N");
  add->add_option("--delay", o->delay, "due after DUR")->type_name("DUR");
  add->add_option("--at", o->at, "due at TIME (RFC 3339)")->type_name("TIME");
  add->add_option("--max-attempts", o->max_attempts,
                  "pause the task instead of leasing it an N+1th time")
      ->type_name("N");
  add->add_option("--unique", o->unique,
                  "add nothing while an unfinished task of QUEUE has this key "
                  "(prints that task's id)")
      ->type_name("KEY");
  add_policy_options(add, o->policy);
  add->callback([o, &ctx] { run_add(*o, ctx); });
}

} // namespace taskq::cli
