// Recurring work: schedule add|list|show|pause|resume|rm, gate
// add|list|show|rm, and tick.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/schedule.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <variant>

namespace taskq::cli {
namespace {

// What a schedule or a gate emits: the options it shares with `add`.
struct EmitOptions {
  OptText payload, text;
  std::vector<std::string> labels;
  int64_t priority = 0;
};

void add_emit_options(CLI::App* cmd, EmitOptions& o) {
  cmd->add_option("--payload", o.payload,
                  "payload of each task it emits, any JSON value")
      ->type_name("JSON");
  cmd->add_option("--text", o.text, "payload, stored as a JSON string")
      ->type_name("STR");
  cmd->add_option("--label", o.labels,
                  "label K=V of each task it emits (repeatable)")
      ->type_name("K=V");
  cmd->add_option("--priority", o.priority,
                  "priority of each task it emits (higher is leased first)")
      ->type_name("N");
}

std::string emit_payload(const EmitOptions& o) {
  return payload_arg(o.payload, o.text).value_or("null");
}

Json optional_id(const std::optional<int64_t>& id) {
  return id ? Json(*id) : Json(nullptr);
}

std::string id_text(const std::optional<int64_t>& id) {
  return id ? std::to_string(*id) : "-";
}

std::string join(const std::vector<std::string>& words, const char* sep) {
  std::string text;
  for (const auto& w : words) {
    text += (text.empty() ? "" : sep) + w;
  }
  return text;
}

void detail_line(const char* key, const std::string& value) {
  std::printf("%-12s %s\n", key, value.c_str());
}

// --- schedules -----------------------------------------------------------

const char* schedule_kind(const core::Schedule& when) {
  return std::holds_alternative<core::Cron>(when) ? "cron" : "every";
}

// A schedule has an emission pending when its stored tick has come and it
// is not paused: the next lease, run or tick of its queue emits (or, when
// its last task is unfinished, skips) it.
bool schedule_due(const storage::ScheduleInfo& s, core::Time now) {
  return !s.paused && s.due_at <= now;
}

void print_schedule_json(const storage::ScheduleInfo& s, core::Time now) {
  const core::Ticks t = core::ticks(s.spec.when, now);
  const std::string line =
      ObjectWriter()
          .field("name", s.spec.name)
          .field("queue", s.spec.queue)
          .field(schedule_kind(s.spec.when), core::to_string(s.spec.when))
          .field("prev_tick", core::format_time(t.prev))
          .field("next_tick", core::format_time(t.next))
          .field("paused", s.paused)
          .field("sync", Json(s.sync))
          .field("last_task", optional_id(s.last_task))
          .raw("payload", s.spec.payload)
          .field("labels", Json(s.spec.labels))
          .field("priority", s.spec.priority)
          .field("trigger",
                 s.spec.trigger ? Json(*s.spec.trigger) : Json(nullptr))
          .field("due", schedule_due(s, now))
          .field("created_at", core::format_time(s.created_at))
          .finish();
  std::puts(line.c_str());
}

void print_schedule_detail(const storage::ScheduleInfo& s, core::Time now) {
  const core::Ticks t = core::ticks(s.spec.when, now);
  detail_line("name:", s.spec.name);
  detail_line("queue:", s.spec.queue);
  detail_line((std::string(schedule_kind(s.spec.when)) + ":").c_str(),
              core::to_string(s.spec.when));
  detail_line("prev_tick:", core::format_time(t.prev));
  detail_line("next_tick:", core::format_time(t.next));
  detail_line("paused:", s.paused ? "yes" : "no");
  detail_line("due:", schedule_due(s, now) ? "yes" : "no");
  detail_line("last_task:", id_text(s.last_task));
  detail_line("sync:", Json(s.sync).dump());
  detail_line("payload:", s.spec.payload);
  if (!s.spec.labels.empty()) {
    detail_line("labels:", core::format_labels(s.spec.labels, " "));
  }
  detail_line("priority:", std::to_string(s.spec.priority));
  if (s.spec.trigger) {
    detail_line("trigger:", *s.spec.trigger);
  }
  detail_line("created_at:", core::format_time(s.created_at));
}

void print_schedule(const storage::ScheduleInfo& s, Format format,
                    core::Time now) {
  if (format == Format::json) {
    print_schedule_json(s, now);
  } else {
    print_schedule_detail(s, now);
  }
}

const char* k_every_forms =
    "expected a unit (minute, hour, day, week, month), `1 unit` or `Q units` "
    "with Q >= 2 (15 minutes, 6 hours, 3 days), optionally with a time or "
    "day: `hour at **:30`, `2 days at 08:00`, `week on Wednesday at 06:00`, "
    "`month on the 15th at 17:00`";

core::Schedule parse_every_arg(const std::string& text) {
  if (auto s = core::parse_every(text)) {
    return *s;
  }
  throw Error(ErrorKind::usage,
              "invalid --every " + json_string(text) + ": " + k_every_forms);
}

core::Schedule parse_cron_arg(const std::string& text) {
  if (auto s = core::parse_cron(text)) {
    return *s;
  }
  throw Error(ErrorKind::usage,
              "invalid --cron " + json_string(text)
                  + ": expected five fields \"m h dom mon dow\" (minute "
                    "0-59, hour 0-23, day 1-31, month 1-12 or JAN-DEC, "
                    "weekday 0-7 or SUN-SAT; each *, N, A-B, */S, A-B/S or a "
                    "list of them) that can match, e.g. \"30 6 * * MON-FRI\"");
}

struct ScheduleAddOptions {
  std::string name, queue;
  OptText every, cron;
  EmitOptions emit;
  std::vector<std::string> trigger; // each K,...
};

void run_schedule_add(const ScheduleAddOptions& o, Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json});
  check_name(o.name, "schedule");
  check_queue_name(o.queue);
  if (o.every.has_value() == o.cron.has_value()) {
    throw Error(ErrorKind::usage,
                "give exactly one of --every SPEC and --cron \"m h dom mon "
                "dow\"");
  }
  storage::ScheduleSpec spec;
  spec.name = o.name;
  spec.queue = o.queue;
  spec.when = o.every ? parse_every_arg(*o.every) : parse_cron_arg(*o.cron);
  spec.payload = emit_payload(o.emit);
  spec.labels = parse_labels(o.emit.labels);
  spec.priority = o.emit.priority;
  spec.trigger = parse_trigger(o.trigger);
  const core::Time now = ctx.now();
  auto& store = ctx.store(storage::OpenMode::write);
  store.add_schedule(spec, now, ctx.actor());
  print_schedule(store.schedule(spec.name), format, now);
}

void run_schedule_list(Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json, Format::id});
  const core::Time now = ctx.now();
  const auto schedules = ctx.store(storage::OpenMode::read).schedules();
  if (format != Format::table) {
    for (const auto& s : schedules) {
      if (format == Format::json) {
        print_schedule_json(s, now);
      } else {
        std::puts(s.spec.name.c_str());
      }
    }
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : schedules) {
    const core::Ticks t = core::ticks(s.spec.when, now);
    rows.push_back({s.spec.name, s.spec.queue,
                    std::string(schedule_kind(s.spec.when)) + " "
                        + core::to_string(s.spec.when),
                    core::format_time(t.prev), core::format_time(t.next),
                    s.paused ? "yes" : "no", id_text(s.last_task)});
  }
  print_table(
      {"NAME", "QUEUE", "SCHEDULE", "PREV", "NEXT", "PAUSED", "LAST_TASK"},
      rows);
}

void register_schedules(CLI::App& app, Context& ctx) {
  CLI::App* schedule =
      add_command(app, "schedule",
                  "Recurring schedules: add a task to a queue at every tick",
                  "taskq schedule add nightly reports --every 'day at 02:00'");
  schedule->require_subcommand(1);

  auto a = std::make_shared<ScheduleAddOptions>();
  CLI::App* add = add_command(
      *schedule, "add",
      "Add a schedule that emits a task into QUEUE at each tick (the first "
      "one after now); prints it",
      "taskq schedule add nightly reports --every 'day at 02:00' --text daily");
  add->add_option("name", a->name, "schedule name")->required();
  add->add_option("queue", a->queue, "queue of the tasks it emits")->required();
  add->add_option("--every", a->every,
                  "interval: minute, 15 minutes, 6 hours, day at 08:00, "
                  "week on Wednesday, month on the 15th at 17:00, ...")
      ->type_name("SPEC");
  add->add_option("--cron", a->cron,
                  "five-field cron expression, in UTC: \"m h dom mon dow\"")
      ->type_name("EXPR");
  add_emit_options(add, a->emit);
  add->add_option("--trigger", a->trigger,
                  "each task it emits covers gate keys K once completed "
                  "(gate add --keys; repeatable)")
      ->type_name("K,...");
  add->callback([a, &ctx] { run_schedule_add(*a, ctx); });

  CLI::App* list = add_command(
      *schedule, "list",
      "List schedules with their previous and next ticks (-o id: names)",
      "taskq schedule list -o json");
  list->callback([&ctx] { run_schedule_list(ctx); });

  auto show_name = std::make_shared<std::string>();
  CLI::App* show = add_command(
      *schedule, "show",
      "Show a schedule: its ticks around now, sync state and last task",
      "taskq schedule show nightly -o json");
  show->add_option("name", *show_name, "schedule name")
      ->required()
      ->type_name("NAME");
  show->callback([show_name, &ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    const core::Time now = ctx.now();
    print_schedule(ctx.store(storage::OpenMode::read).schedule(*show_name),
                   format, now);
  });

  struct Toggle {
    const char* name;
    const char* description;
    bool paused;
  };
  for (const Toggle& t :
       {Toggle{"pause", "Stop a schedule emitting tasks", true},
        Toggle{"resume",
               "Let a paused schedule emit again, from its first tick after "
               "now (missed ticks are not made up)",
               false}}) {
    auto name = std::make_shared<std::string>();
    CLI::App* cmd =
        add_command(*schedule, t.name, t.description,
                    std::string("taskq schedule ") + t.name + " nightly");
    cmd->add_option("name", *name, "schedule name")
        ->required()
        ->type_name("NAME");
    const bool paused = t.paused;
    cmd->callback([name, paused, &ctx] {
      ctx.store(storage::OpenMode::update)
          .set_schedule_paused(*name, paused, ctx.now());
    });
  }

  auto rm_name = std::make_shared<std::string>();
  CLI::App* rm =
      add_command(*schedule, "rm",
                  "Remove a schedule (the tasks it emitted stay as they are)",
                  "taskq schedule rm nightly");
  rm->add_option("name", *rm_name, "schedule name")
      ->required()
      ->type_name("NAME");
  rm->callback([rm_name, &ctx] {
    ctx.store(storage::OpenMode::update).remove_schedule(*rm_name);
  });
}

// --- gates ---------------------------------------------------------------

// --keys K1,K2,...: each key a label key (1-128 letters, digits and
// . _ / -); returned sorted, without duplicates.
std::vector<std::string> parse_keys(const std::string& text) {
  std::vector<std::string> keys;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string key = text.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    const bool ok = !key.empty() && key.size() <= 128
                    && key.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                             "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                             "0123456789._/-")
                           == std::string::npos;
    if (!ok) {
      throw Error(ErrorKind::usage,
                  "invalid key '" + key + "' in --keys '" + text
                      + "': expected K1,K2,..., each key 1-128 letters, "
                        "digits and . _ / -");
    }
    keys.push_back(key);
    if (comma == std::string::npos) {
      break;
    }
    start = comma + 1;
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::vector<std::string> waiting_keys(const storage::GateInfo& g) {
  std::vector<std::string> waiting;
  for (const auto& k : g.spec.keys) {
    if (std::find(g.covered.begin(), g.covered.end(), k) == g.covered.end()) {
      waiting.push_back(k);
    }
  }
  return waiting;
}

void print_gate_json(const storage::GateInfo& g) {
  const std::string line =
      ObjectWriter()
          .field("name", g.spec.name)
          .field("queue", g.spec.queue)
          .field("keys", Json(g.spec.keys))
          .field("covered", Json(g.covered))
          .field("waiting", Json(waiting_keys(g)))
          .field("emitted", g.emitted)
          .field("last_task", optional_id(g.last_task))
          .raw("payload", g.spec.payload)
          .field("labels", Json(g.spec.labels))
          .field("priority", g.spec.priority)
          .field("created_at", core::format_time(g.created_at))
          .finish();
  std::puts(line.c_str());
}

void print_gate(const storage::GateInfo& g, Format format) {
  if (format == Format::json) {
    print_gate_json(g);
    return;
  }
  detail_line("name:", g.spec.name);
  detail_line("queue:", g.spec.queue);
  detail_line("keys:", join(g.spec.keys, ","));
  detail_line("covered:", g.covered.empty() ? "-" : join(g.covered, ","));
  const auto waiting = waiting_keys(g);
  detail_line("waiting:", waiting.empty() ? "-" : join(waiting, ","));
  detail_line("emitted:", std::to_string(g.emitted));
  detail_line("last_task:", id_text(g.last_task));
  detail_line("payload:", g.spec.payload);
  if (!g.spec.labels.empty()) {
    detail_line("labels:", core::format_labels(g.spec.labels, " "));
  }
  detail_line("priority:", std::to_string(g.spec.priority));
  detail_line("created_at:", core::format_time(g.created_at));
}

struct GateAddOptions {
  std::string name, queue, keys;
  EmitOptions emit;
};

void run_gate_add(const GateAddOptions& o, Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json});
  check_name(o.name, "gate");
  check_queue_name(o.queue);
  storage::GateSpec spec;
  spec.name = o.name;
  spec.queue = o.queue;
  spec.keys = parse_keys(o.keys);
  spec.payload = emit_payload(o.emit);
  spec.labels = parse_labels(o.emit.labels);
  spec.priority = o.emit.priority;
  auto& store = ctx.store(storage::OpenMode::write);
  store.add_gate(spec, ctx.now(), ctx.actor());
  print_gate(store.gate(spec.name), format);
}

void run_gate_list(Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json, Format::id});
  const auto gates = ctx.store(storage::OpenMode::read).gates();
  if (format != Format::table) {
    for (const auto& g : gates) {
      if (format == Format::json) {
        print_gate_json(g);
      } else {
        std::puts(g.spec.name.c_str());
      }
    }
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& g : gates) {
    const auto waiting = waiting_keys(g);
    rows.push_back({g.spec.name, g.spec.queue, join(g.spec.keys, ","),
                    waiting.empty() ? "-" : join(waiting, ","),
                    std::to_string(g.emitted), id_text(g.last_task)});
  }
  print_table({"NAME", "QUEUE", "KEYS", "WAITING", "EMITTED", "LAST_TASK"},
              rows);
}

void register_gates(CLI::App& app, Context& ctx) {
  CLI::App* gate = add_command(
      app, "gate",
      "Gates: emit a task once tasks with each key have completed, then "
      "re-arm",
      "taskq gate add publish site --keys docs,assets");
  gate->require_subcommand(1);

  auto a = std::make_shared<GateAddOptions>();
  CLI::App* add = add_command(
      *gate, "add",
      "Add a gate: when a task added with --trigger K has completed for each "
      "of its keys, it emits a task into QUEUE and re-arms; prints it",
      "taskq gate add publish site --keys docs,assets --payload "
      "'{\"to\":\"prod\"}'");
  add->add_option("name", a->name, "gate name")->required();
  add->add_option("queue", a->queue, "queue of the tasks it emits")->required();
  add->add_option("--keys", a->keys,
                  "the trigger keys it waits for, comma-separated")
      ->type_name("K1,K2,...")
      ->required();
  add_emit_options(add, a->emit);
  add->callback([a, &ctx] { run_gate_add(*a, ctx); });

  CLI::App* list =
      add_command(*gate, "list", "List gates with the keys they still wait for",
                  "taskq gate list -o json");
  list->callback([&ctx] { run_gate_list(ctx); });

  auto show_name = std::make_shared<std::string>();
  CLI::App* show = add_command(
      *gate, "show", "Show a gate: the keys covered and still waited for",
      "taskq gate show publish -o json");
  show->add_option("name", *show_name, "gate name")
      ->required()
      ->type_name("NAME");
  show->callback([show_name, &ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    print_gate(ctx.store(storage::OpenMode::read).gate(*show_name), format);
  });

  auto rm_name = std::make_shared<std::string>();
  CLI::App* rm = add_command(
      *gate, "rm", "Remove a gate (the tasks it emitted stay as they are)",
      "taskq gate rm publish");
  rm->add_option("name", *rm_name, "gate name")->required()->type_name("NAME");
  rm->callback([rm_name, &ctx] {
    ctx.store(storage::OpenMode::update).remove_gate(*rm_name);
  });
}

} // namespace

void register_schedule(CLI::App& app, Context& ctx) {
  register_schedules(app, ctx);
  register_gates(app, ctx);

  auto queue = std::make_shared<OptText>();
  CLI::App* tick = add_command(
      app, "tick",
      "Emit the tasks of the schedules that are due now (lease and run do "
      "it too); prints their ids",
      "taskq tick --queue reports   # e.g. every minute from cron");
  tick->add_option("--queue", *queue, "only the schedules of QUEUE")
      ->type_name("QUEUE");
  tick->callback([queue, &ctx] {
    const Format format = ctx.format(Format::id, {Format::id, Format::json});
    if (*queue) {
      check_queue_name(**queue);
    }
    const core::Time now = ctx.now();
    auto& store = ctx.store(storage::OpenMode::update);
    const auto ids = store.tick(*queue, now, ctx.actor());
    for (const int64_t id : ids) {
      if (format == Format::json) {
        if (const auto t = store.find(id)) {
          print_task_json(*t, now);
        }
      } else {
        std::printf("%lld\n", static_cast<long long>(id));
      }
    }
  });
}

} // namespace taskq::cli
