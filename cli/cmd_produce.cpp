// taskq add: one task, or one per line of a JSON Lines file.
#include "cli/commands.hpp"
#include "cli/json_fields.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/handler_env.hpp"
#include "core/new_task.hpp"
#include "core/suggestion.hpp"
#include "core/text.hpp"
#include "worker/child.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace taskq::cli {
namespace {

struct AddOptions {
  std::string queue;
  OptText payload, text, payload_file, jsonl, lines;
  std::vector<std::string> labels;
  int64_t priority = 0;
  OptText delay, at;
  OptText unique;
  std::optional<int64_t> max_attempts;
  PolicyArgs policy;
  std::vector<std::string> after; // each ID,...
  std::vector<std::string> root;  // each K=V,...
  OptText to;
  bool broadcast = false;
  OptText ttl;
  std::vector<std::string> trigger; // each K,...
  OptText sh;                       // --sh: a command line for /bin/sh -c
};

// A broadcast's default lifetime: rescue's retention of finished work.
constexpr std::string_view k_default_broadcast_ttl = "7d";

// `--after 3,5 --after 8`: every id once, in the order given.
std::vector<int64_t> parse_after(const std::vector<std::string>& texts) {
  std::vector<int64_t> ids;
  for (const auto& text : texts) {
    size_t start = 0;
    while (true) {
      const size_t comma = text.find(',', start);
      const std::string piece = text.substr(start, comma - start);
      const bool digits =
          !piece.empty()
          && piece.find_first_not_of("0123456789") == std::string::npos;
      if (!digits) {
        throw Error(ErrorKind::usage,
                    "invalid --after '" + text
                        + "': expected task ids separated by commas, e.g. "
                          "3,5");
      }
      const int64_t id = parse_id(piece);
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
        ids.push_back(id);
      }
      if (comma == std::string::npos) {
        break;
      }
      start = comma + 1;
    }
  }
  return ids;
}

// `--root k=v,k2=v2`: a comma starts the next label only when a key and
// `=` follow it, so a value may hold commas (`--root files=a,b`).
core::Labels parse_root(const std::vector<std::string>& texts) {
  std::vector<std::string> labels;
  for (const auto& text : texts) {
    std::string current;
    size_t start = 0;
    while (true) {
      const size_t comma = text.find(',', start);
      const std::string piece = text.substr(start, comma - start);
      const size_t eq = piece.find('=');
      const bool starts_label =
          eq != std::string::npos && eq > 0
          && core::parse_label(piece.substr(0, eq + 1)).has_value();
      if (start == 0 || starts_label) {
        if (start != 0) {
          labels.push_back(current);
        }
        current = piece;
      } else {
        current += "," + piece;
      }
      if (comma == std::string::npos) {
        break;
      }
      start = comma + 1;
    }
    labels.push_back(current);
  }
  try {
    return parse_labels(labels);
  } catch (const Error& e) {
    throw Error(ErrorKind::usage, std::string("--root: ") + e.what());
  }
}

// Refuses, in add's words, the first rule of a new task that `fields` (the
// options read so far) breaks. Called after each step of reading the
// options, so that the first mistake on the command line is the one told.
void check_fields(const core::NewTaskFields& fields) {
  const auto broken = core::check_new_task(fields);
  if (!broken) {
    return;
  }
  using Rule = core::NewTaskRule;
  switch (broken->rule) {
  case Rule::queue_name:
    check_queue_name(*fields.queue);
    break;
  case Rule::command_empty:
    throw Error(ErrorKind::usage,
                "give the command after --: taskq add QUEUE -- CMD [ARG...]");
  case Rule::command_word:
    // A word from the command line holds no NUL: it is not UTF-8.
    throw Error(
        ErrorKind::usage,
        (broken->index == 0
             ? std::string("the command's name")
             : "argument " + std::to_string(broken->index) + " of the command")
            + " is not UTF-8 text: a task's command is stored as "
              "JSON, which holds UTF-8 only");
  case Rule::max_attempts:
    throw Error(ErrorKind::usage,
                std::string("--max-attempts must be ") + broken->must);
  case Rule::unique_key:
    throw Error(ErrorKind::usage,
                std::string("--unique must be ") + broken->must);
  case Rule::after_id:
    throw Error(ErrorKind::usage, "--after takes task ids (positive)");
  case Rule::to_worker:
    throw Error(ErrorKind::usage, "invalid --to '" + *fields.to_worker
                                      + "': expected a worker name, as "
                                        "given to --worker");
  case Rule::broadcast_to:
    throw Error(ErrorKind::usage, "give only one of --to and --broadcast");
  case Rule::broadcast_alone:
    throw Error(ErrorKind::usage,
                "a broadcast goes to every worker: it takes no --after, "
                "--root or --unique");
  case Rule::broadcast_ttl:
    throw Error(ErrorKind::usage, "--ttl must be longer than 0");
  case Rule::trigger:
    break; // parse_trigger checks --trigger, in its own words
  }
  throw Error(ErrorKind::usage, std::string(broken->field) + " must be "
                                    + broken->must); // not reached
}

// Fills the dependency, root, addressing and gate fields of `task`.
void apply_rescue_options(const AddOptions& o, storage::NewTask& task,
                          core::NewTaskFields& fields) {
  task.after = parse_after(o.after);
  task.root = parse_root(o.root);
  fields.after = task.after;
  fields.has_root = !task.root.empty();
  fields.to_worker = o.to;
  check_fields(fields);
  task.to_worker = o.to;
  if (o.ttl && !o.broadcast) {
    throw Error(ErrorKind::usage, "--ttl is the lifetime of a --broadcast");
  }
  if (o.broadcast) {
    fields.broadcast = true;
    check_fields(fields);
    fields.broadcast_ttl = parse_duration_arg(
        o.ttl.value_or(std::string(k_default_broadcast_ttl)), "--ttl");
    check_fields(fields);
    task.broadcast_ttl = fields.broadcast_ttl;
  }
  task.trigger = parse_trigger(o.trigger);
}

// The shell that runs a `--sh` command line, as `/bin/sh -c LINE`.
constexpr std::string_view k_shell = "/bin/sh";

// A lone word after -- that a shell would have split or interpreted (`add
// q -- 'echo hi; ls'`): no program is named like that, so it is refused
// with the way to say it. A program whose name really holds such
// characters is found here and accepted.
bool shell_string(const std::vector<std::string>& argv) {
  return argv.size() == 1 && core::shell_syntax(argv.front())
         && !worker::resolve_command(argv.front());
}

// `add QUEUE -- CMD [ARG...]` or `add QUEUE --sh LINE`: the argv, checked.
// It is stored as JSON text, so each word must be UTF-8. The program
// itself is looked up by `run`, on the worker's $PATH; when this host
// has no such program, a note says so (the worker's host may differ).
std::vector<std::string> command_arg(const AddOptions& o, const Context& ctx,
                                     core::NewTaskFields& fields) {
  if (o.sh) {
    if (ctx.command_given) {
      throw Error(ErrorKind::usage,
                  "give only one of --sh LINE and -- CMD [ARG...]");
    }
    if (o.sh->find_first_not_of(" \t\n") == std::string::npos) {
      throw Error(ErrorKind::usage,
                  "give the command line after --sh: taskq add QUEUE --sh "
                  "'CMD; CMD2'");
    }
    if (!core::is_valid_utf8(*o.sh) || o.sh->find('\0') != std::string::npos) {
      throw Error(ErrorKind::usage,
                  "the --sh command line is not UTF-8 text: a task's command "
                  "is stored as JSON, which holds UTF-8 only");
    }
    std::vector<std::string> argv{std::string(k_shell), "-c", *o.sh};
    fields.command = argv;
    check_fields(fields);
    return argv;
  }
  if (!ctx.command_given) {
    return {};
  }
  fields.command = ctx.command;
  check_fields(fields);
  if (shell_string(ctx.command)) {
    const std::string& word = ctx.command.front();
    const bool printable = std::none_of(word.begin(), word.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    });
    // A word with control characters is not shown: it would break the
    // one-line message; the hint is then the usage form, with LINE.
    throw Error(ErrorKind::usage,
                (printable ? core::command_line({word}) : "the command")
                    + " is one word, not a program and its arguments; to "
                      "run it with /bin/sh -c: "
                    + (printable
                           ? core::suggest(core::add_args(o.queue, {word}))
                           : "taskq add " + core::command_line({o.queue})
                                 + " --sh LINE")
                    + " (or give the program and each argument as words "
                      "after --)");
  }
  if (!worker::resolve_command(ctx.command.front())) {
    std::fprintf(stderr,
                 "taskq: note: no program %s on this host%s; a worker "
                 "without it fails the task at once\n",
                 ctx.command.front().c_str(),
                 ctx.command.front().find('/') == std::string::npos ? "'s $PATH"
                                                                    : "");
  }
  return ctx.command;
}

void run_add(const AddOptions& o, Context& ctx) {
  core::NewTaskFields fields;
  fields.queue = o.queue;
  check_fields(fields);
  const int sources = o.payload.has_value() + o.text.has_value()
                      + o.payload_file.has_value() + o.jsonl.has_value()
                      + o.lines.has_value();
  if (sources > 1) {
    throw Error(ErrorKind::usage, "give only one of --payload, --text, "
                                  "--payload-file, --jsonl and --lines");
  }
  storage::NewTask task;
  task.queue = o.queue;
  task.command = command_arg(o, ctx, fields);
  if (auto payload = payload_arg(o.payload, o.text)) {
    task.payload = std::move(*payload);
  } else if (o.payload_file) {
    task.payload = parse_json_arg(read_input(*o.payload_file), *o.payload_file);
  }
  task.labels = parse_labels(o.labels);
  task.priority = o.priority;
  const core::Time now = ctx.now();
  if (o.delay && o.at) {
    throw Error(ErrorKind::usage, "give only one of --delay and --at");
  }
  if (const auto delay = parse_duration_arg(o.delay, "--delay")) {
    task.run_at = time_after(now, *delay, "--delay");
  }
  if (const auto at = parse_time_arg(o.at, "--at")) {
    task.run_at = *at;
  }
  fields.max_attempts = o.max_attempts;
  check_fields(fields);
  task.max_attempts = o.max_attempts;
  task.policy = to_overrides(o.policy);
  const OptText& bulk = o.jsonl ? o.jsonl : o.lines;
  const std::string bulk_option = o.jsonl ? "--jsonl" : "--lines";
  if (o.unique) {
    if (bulk) {
      throw Error(ErrorKind::usage, "--unique goes with one task, not "
                                        + bulk_option
                                        + " (every line would share the key)");
    }
    fields.unique_key = o.unique;
    check_fields(fields);
    task.unique_key = o.unique;
  }
  if (bulk && (!o.root.empty() || o.broadcast)) {
    throw Error(ErrorKind::usage,
                std::string(o.broadcast ? "--broadcast" : "--root")
                    + " goes with one task, not " + bulk_option
                    + ": add those one by one");
  }
  apply_rescue_options(o, task, fields);
  if (task.broadcast_ttl) {
    time_after(now, *task.broadcast_ttl, "--ttl");
  }

  if (!bulk) {
    const Format format = ctx.format(Format::id, {Format::id, Format::json});
    auto& store = ctx.store(storage::OpenMode::write);
    const storage::Added added = store.add_unique(task, now, ctx.actor());
    if (added.obsoleted_by) {
      std::fprintf(stderr,
                   "taskq: not added: obsolete while task %lld is unfinished "
                   "(--root %s)\n",
                   static_cast<long long>(*added.obsoleted_by),
                   core::format_labels(task.root).c_str());
      return;
    }
    if (!added.existed && format == Format::id) {
      std::printf("%lld\n", static_cast<long long>(added.id));
      return;
    }
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

  const Format format =
      ctx.format(Format::table, {Format::table, Format::id, Format::json});
  JsonlReader reader(*bulk, "nothing was added", o.lines.has_value());
  auto& store = ctx.store(storage::OpenMode::write);
  // On PostgreSQL, adds at the same time take ids from one sequence in
  // turns: each id is printed as it comes (after the commit), never
  // inferred from the first.
  int64_t first = 0;
  int64_t last = 0;
  const int64_t count = store.add_many(
      task, [&](std::string& payload) { return reader.next(payload); },
      [&](int64_t id) {
        if (first == 0) {
          first = id;
        }
        last = id;
        if (format == Format::id) {
          std::printf("%lld\n", static_cast<long long>(id));
        }
      },
      now, ctx.actor());
  if (format == Format::json) {
    print_json(Json{{"added", count},
                    {"first_id", count > 0 ? Json(first) : Json(nullptr)},
                    {"last_id", count > 0 ? Json(last) : Json(nullptr)}});
  } else if (format == Format::table) {
    std::printf("%lld\n", static_cast<long long>(count));
  }
}

} // namespace

void register_produce(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<AddOptions>();
  CLI::App* add = add_command(
      app, "add",
      "Add a task to QUEUE (prints its id), or many with --jsonl or --lines; "
      "after --, the command `run` executes for it (never through a shell); "
      "--sh LINE runs LINE with /bin/sh -c",
      "taskq add thumbs --payload '{\"file\":\"a.png\"}' --label kind=image\n"
      "  taskq add backups -- rsync -a /srv/www/ backup:/www/\n"
      "  taskq add jobs --sh 'make && make test'\n"
      "  find . -name '*.png' | taskq add thumbs --lines - -o id");
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
  add->add_option("--lines", o->lines,
                  "add one task per line of FILE (- for stdin), its text as "
                  "a JSON string payload; all or nothing; prints the count")
      ->type_name("FILE");
  add->add_option("--sh", o->sh,
                  "the command: LINE, run by /bin/sh -c LINE (stored as that "
                  "argv); instead of -- CMD")
      ->type_name("LINE");
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
  add->add_option("--after", o->after,
                  "wait until each task ID is completed; paused if one fails "
                  "or is killed (repeatable)")
      ->type_name("ID,...");
  add->add_option("--root", o->root,
                  "obsolete (not added, never leased) while an unfinished "
                  "task has all these labels")
      ->type_name("K=V,...");
  add->add_option("--to", o->to, "only worker WORKER leases it")
      ->type_name("WORKER");
  add->add_flag("--broadcast", o->broadcast,
                "deliver once to every worker leasing from QUEUE; needs no "
                "done; ends completed after --ttl");
  add->add_option("--ttl", o->ttl, "how long a --broadcast lasts (default 7d)")
      ->type_name("DUR");
  add->add_option("--trigger", o->trigger,
                  "once completed, covers each gate key K (gate add --keys; "
                  "repeatable)")
      ->type_name("K,...");
  add_policy_options(add, o->policy);
  add->callback([o, &ctx] { run_add(*o, ctx); });
}

} // namespace taskq::cli
