// Queue commands: queue list, set, pause, resume, redrive.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"

#include <cstdio>
#include <memory>

namespace taskq::cli {

void register_queue(CLI::App& app, Context& ctx) {
  CLI::App* queue = add_command(app, "queue", "Queue settings and listing",
                                "taskq queue set thumbs --max-errors 3");
  queue->require_subcommand(1);

  CLI::App* list =
      add_command(*queue, "list", "List queues with their task counts",
                  "taskq queue list -o id");
  list->callback([&ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::id});
    const auto stats =
        ctx.store(storage::OpenMode::read).stats(std::nullopt, ctx.now());
    if (format == Format::id) {
      for (const auto& s : stats) {
        std::puts(s.queue.c_str());
      }
      return;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& s : stats) {
      rows.push_back({s.queue, std::to_string(s.ready),
                      std::to_string(s.running),
                      std::to_string(s.runnable + s.sleeping + s.paused),
                      std::to_string(s.completed + s.failed + s.killed)});
    }
    print_table({"QUEUE", "READY", "RUNNING", "OPEN", "FINISHED"}, rows);
  });

  struct SetOptions {
    std::string name;
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
    ctx.store(storage::OpenMode::write).set_queue(o->name, s);
  });

  for (const bool pause : {true, false}) {
    auto name = std::make_shared<std::string>();
    CLI::App* cmd =
        pause ? add_command(*queue, "pause",
                            "Stop leasing from QUEUE (leased tasks run on and "
                            "finish)",
                            "taskq queue pause thumbs")
              : add_command(*queue, "resume", "Lease from QUEUE again",
                            "taskq queue resume thumbs");
    cmd->add_option("queue", *name, "queue name")->required();
    cmd->callback([name, pause, &ctx] {
      check_queue_name(*name);
      // Pausing a queue before its first task is a setting worth keeping
      // (it creates the database); resuming one needs it to exist.
      ctx.store(pause ? storage::OpenMode::write : storage::OpenMode::update)
          .set_queue_paused(*name, pause);
    });
  }

  auto from = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>();
  CLI::App* redrive = add_command(
      *queue, "redrive",
      "Move the runnable and sleeping tasks of FROM (a dead-letter queue) to "
      "TO, due now with their attempts reset and their errors kept; prints "
      "how many",
      "taskq queue redrive thumbs.dead thumbs");
  redrive->add_option("from", *from, "queue to empty")->required();
  redrive->add_option("to", *to, "queue to fill")->required();
  redrive->callback([from, to, &ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    check_queue_name(*from);
    check_queue_name(*to);
    const int64_t n = ctx.store(storage::OpenMode::update)
                          .redrive(*from, *to, ctx.actor(), ctx.now());
    if (format == Format::json) {
      print_json(Json{{"moved", n}});
    } else {
      std::printf("%lld\n", static_cast<long long>(n));
    }
  });
}

} // namespace taskq::cli
