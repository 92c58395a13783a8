// Queue commands: queue list, show, set, pause, resume, redrive.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"

#include <cstdio>
#include <memory>

namespace taskq::cli {
namespace {

std::string opt_count(const std::optional<int64_t>& n) {
  return n ? std::to_string(*n) : "-";
}

// Whole seconds as an integer, else with their fraction.
Json seconds(core::Millis d) {
  if (d.count() % 1000 == 0) {
    return Json(d.count() / 1000);
  }
  return Json(static_cast<double>(d.count()) / 1000.0);
}

// A queue as one JSON line: its settings (error policy as in effect, the
// defaults filled in; limits null when none) and its counts by state.
Json queue_json(const storage::QueueInfo& q) {
  const core::ErrorPolicy p = core::resolve_policy(q.policy, {});
  const auto& s = q.stats;
  const auto limit = [](const std::optional<int64_t>& n) {
    return n ? Json(*n) : Json(nullptr);
  };
  return Json{{"queue", q.name},
              {"paused", q.paused},
              {"max_running", limit(q.max_running)},
              {"max_attempts", limit(q.max_attempts)},
              {"max_errors", p.max_errors},
              {"error_window_seconds", seconds(p.window)},
              {"retry_delay_seconds", seconds(p.retry_delay)},
              {"backoff", std::string(core::to_string(p.backoff))},
              {"max_delay_seconds", seconds(p.max_delay)},
              {"counts",
               {{"runnable", s.runnable},
                {"sleeping", s.sleeping},
                {"paused", s.paused},
                {"completed", s.completed},
                {"failed", s.failed},
                {"killed", s.killed},
                {"running", s.running},
                {"ready", s.ready},
                {"delayed", s.delayed}}}};
}

// `8/4h`: errors within the window that fail a task.
std::string errors_cell(const core::ErrorPolicy& p) {
  return std::to_string(p.max_errors) + "/" + core::format_duration(p.window);
}

// `10m`, or `10m exp<=24h` with exponential backoff.
std::string retry_cell(const core::ErrorPolicy& p) {
  std::string out = core::format_duration(p.retry_delay);
  if (p.backoff == core::Backoff::exponential) {
    out += " exp<=" + core::format_duration(p.max_delay);
  }
  return out;
}

void print_queue_detail(const storage::QueueInfo& q) {
  const core::ErrorPolicy p = core::resolve_policy(q.policy, {});
  const auto line = [](const char* key, const std::string& value,
                       bool is_default) {
    std::printf("%-14s %s%s\n", key, value.c_str(),
                is_default ? " (default)" : "");
  };
  line("queue:", q.name, false);
  line("paused:", q.paused ? "yes" : "no", false);
  line("max-running:",
       q.max_running ? std::to_string(*q.max_running) : "unlimited", false);
  line("max-attempts:",
       q.max_attempts ? std::to_string(*q.max_attempts) : "unlimited", false);
  line("max-errors:", std::to_string(p.max_errors),
       !q.policy.max_errors.has_value());
  line("error-window:", core::format_duration(p.window),
       !q.policy.window.has_value());
  line("retry-delay:", core::format_duration(p.retry_delay),
       !q.policy.retry_delay.has_value());
  line("backoff:", std::string(core::to_string(p.backoff)),
       !q.policy.backoff.has_value());
  line("max-delay:", core::format_duration(p.max_delay),
       !q.policy.max_delay.has_value());
  const auto& s = q.stats;
  std::puts("");
  print_table({"STATE", "COUNT"}, {{"runnable", std::to_string(s.runnable)},
                                   {"sleeping", std::to_string(s.sleeping)},
                                   {"paused", std::to_string(s.paused)},
                                   {"completed", std::to_string(s.completed)},
                                   {"failed", std::to_string(s.failed)},
                                   {"killed", std::to_string(s.killed)},
                                   {"(running)", std::to_string(s.running)},
                                   {"(ready)", std::to_string(s.ready)},
                                   {"(delayed)", std::to_string(s.delayed)}});
}

} // namespace

void register_queue(CLI::App& app, Context& ctx) {
  CLI::App* queue = add_command(app, "queue", "Queue settings and listing",
                                "taskq queue set thumbs --max-errors 3");
  queue->require_subcommand(1);

  CLI::App* list = add_command(
      *queue, "list",
      "List queues: paused or not, task counts, limits and error policy "
      "(queues with settings and no tasks too)",
      "taskq queue list -o json | jq -r 'select(.paused) | .queue'");
  list->callback([&ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json, Format::id});
    const auto queues = ctx.store(storage::OpenMode::read).queues(ctx.now());
    if (format == Format::id) {
      for (const auto& q : queues) {
        std::puts(q.name.c_str());
      }
      return;
    }
    if (format == Format::json) {
      for (const auto& q : queues) {
        print_json(queue_json(q));
      }
      return;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& q : queues) {
      const auto& s = q.stats;
      const core::ErrorPolicy p = core::resolve_policy(q.policy, {});
      rows.push_back({q.name, q.paused ? "paused" : "-",
                      std::to_string(s.ready), std::to_string(s.running),
                      std::to_string(s.runnable + s.sleeping + s.paused),
                      std::to_string(s.completed + s.failed + s.killed),
                      opt_count(q.max_running), opt_count(q.max_attempts),
                      errors_cell(p), retry_cell(p)});
    }
    print_table({"QUEUE", "PAUSED", "READY", "RUNNING", "OPEN", "FINISHED",
                 "MAX_RUNNING", "MAX_ATT", "ERRORS", "RETRY"},
                rows);
  });

  auto shown = std::make_shared<std::string>();
  CLI::App* show = add_command(
      *queue, "show",
      "Show a queue's settings (limits, error policy, paused) and its "
      "counts by state; exit 3 for a queue with no tasks and no settings",
      "taskq queue show thumbs -o json | jq .counts");
  show->add_option("queue", *shown, "queue name")->required();
  show->callback([shown, &ctx] {
    check_queue_name(*shown);
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    const auto q = ctx.store(storage::OpenMode::read).queue(*shown, ctx.now());
    if (format == Format::json) {
      print_json(queue_json(q));
    } else {
      print_queue_detail(q);
    }
  });

  struct SetOptions {
    std::string name;
    bool create = false;
    std::optional<int64_t> max_running;
    std::optional<int64_t> max_attempts;
    PolicyArgs policy;
  };
  auto o = std::make_shared<SetOptions>();
  CLI::App* set = add_command(
      *queue, "set",
      "Set a queue's limits and its error-policy defaults (a task's own "
      "settings win)",
      "taskq queue set thumbs --max-errors 3 --retry-delay 1m");
  set->add_option("queue", o->name, "queue name")->required();
  set->add_flag("--create", o->create,
                "make the queue though its name is one slip from an existing "
                "queue's (else refused as a typo, exit 3)");
  set->add_option("--max-running", o->max_running,
                  "at most N leased at once, across all workers")
      ->type_name("N");
  set->add_option("--max-attempts", o->max_attempts,
                  "default attempt limit of its tasks")
      ->type_name("N");
  add_policy_options(set, o->policy);
  set->callback([o, &ctx] {
    check_queue_name(o->name);
    storage::QueueSettings s;
    if (o->max_running && *o->max_running < 0) {
      throw Error(ErrorKind::usage, "--max-running must be 0 or more");
    }
    if (o->max_attempts && *o->max_attempts < 1) {
      throw Error(ErrorKind::usage, "--max-attempts must be at least 1");
    }
    s.max_running = o->max_running;
    s.max_attempts = o->max_attempts;
    s.policy = to_overrides(o->policy);
    auto& store = ctx.store(storage::OpenMode::write);
    check_new_queue(store, o->name, o->create);
    store.set_queue(o->name, s);
  });

  for (const bool pause : {true, false}) {
    auto name = std::make_shared<std::string>();
    auto create = std::make_shared<bool>(false);
    CLI::App* cmd =
        pause ? add_command(*queue, "pause",
                            "Stop leasing from QUEUE (leased tasks run on and "
                            "finish)",
                            "taskq queue pause thumbs")
              : add_command(*queue, "resume", "Lease from QUEUE again",
                            "taskq queue resume thumbs");
    cmd->add_option("queue", *name, "queue name")->required();
    if (pause) {
      cmd->add_flag("--create", *create,
                    "make the queue though its name is one slip from an "
                    "existing queue's (else refused as a typo, exit 3)");
    }
    cmd->callback([name, create, pause, &ctx] {
      check_queue_name(*name);
      // Pausing a queue before its first task is a setting worth keeping
      // (it creates the database, and says so; a name one slip from an
      // existing queue's needs --create); resuming one needs it to exist.
      auto& store = ctx.store(pause ? storage::OpenMode::write
                                    : storage::OpenMode::update);
      if (pause) {
        check_new_queue(store, *name, *create);
      } else {
        require_queue(store, *name);
      }
      store.set_queue_paused(*name, pause);
    });
  }

  auto from = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>();
  CLI::App* redrive = add_command(
      *queue, "redrive",
      "Move the runnable and sleeping tasks of FROM (a dead-letter queue) to "
      "TO, due now with their attempt limit counting afresh and their errors "
      "kept; prints how many",
      "taskq queue redrive thumbs.dead thumbs");
  redrive->add_option("from", *from, "queue to empty")->required();
  redrive->add_option("to", *to, "queue to fill")->required();
  redrive->callback([from, to, &ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    check_queue_name(*from);
    check_queue_name(*to);
    auto& store = ctx.store(storage::OpenMode::update);
    require_queue(store, *from);
    const int64_t n = store.redrive(*from, *to, ctx.actor(), ctx.now());
    if (format == Format::json) {
      print_json(Json{{"moved", n}});
    } else {
      std::printf("%lld\n", static_cast<long long>(n));
    }
  });
}

} // namespace taskq::cli
