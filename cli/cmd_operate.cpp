// Operator commands: pause, resume, sleep, kill, release, checkpoint, send,
// freeze, continue, retry. `release` and `sleep` also serve the lease
// holder (with a token).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace taskq::cli {
namespace {

struct SendOptions {
  std::vector<std::string> args; // ids (send: ids, then the message)
  std::optional<std::string> queue;
  std::optional<std::string> state;
  std::vector<std::string> match;
  OptText until;
  OptText for_;
  OptText lease;
  OptText delay;
};

void add_selector_options(CLI::App* cmd, SendOptions& o) {
  cmd->add_option("--queue", o.queue, "every task of QUEUE")
      ->type_name("QUEUE");
  cmd->add_option("--state", o.state,
                  "every task in these states, comma-separated (or running, "
                  "ready)")
      ->type_name("S,...");
  cmd->add_option("--match", o.match,
                  "every task with labels matching K=V (repeatable)")
      ->type_name("K=V");
}

std::optional<core::Time> sleep_until(const SendOptions& o, core::Time now) {
  if (o.until && o.for_) {
    throw Error(ErrorKind::usage, "give only one of --until and --for");
  }
  if (const auto for_ = parse_duration_arg(o.for_, "--for")) {
    return time_after(now, *for_, "--for");
  }
  return parse_time_arg(o.until, "--until");
}

// The tasks a command names: its ids, or its bulk filters (not both).
storage::Selector select_tasks(const std::vector<std::string>& ids,
                               const OptText& queue, const OptText& state,
                               const std::vector<std::string>& match) {
  storage::Selector sel;
  sel.ids = parse_ids(ids);
  if (queue) {
    check_queue_name(*queue);
  }
  sel.queue = queue;
  if (state) {
    sel.states = parse_states(*state);
  }
  sel.match = parse_patterns(match);
  if (sel.ids.empty() == !sel.has_filters()) {
    throw Error(ErrorKind::usage,
                sel.ids.empty()
                    ? "which tasks? give IDs, or --queue/--state/--match"
                    : "give either IDs or --queue/--state/--match, not both");
  }
  return sel;
}

// Applies an operator message to the ids or the bulk filters of `o`.
void send_message(const SendOptions& o, const std::vector<std::string>& ids,
                  core::Message msg, Context& ctx) {
  const storage::Selector sel = select_tasks(ids, o.queue, o.state, o.match);
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json, Format::id});
  const core::Time now = ctx.now();
  const auto until = sleep_until(o, now);
  if (msg == core::Message::sleep && !until) {
    throw Error(ErrorKind::usage, "sleep needs --until TIME or --for DUR");
  }
  if (msg != core::Message::sleep && until) {
    throw Error(ErrorKind::usage, "--until and --for only go with sleep");
  }
  auto& store = ctx.store(storage::OpenMode::update);
  if (sel.queue) {
    require_queue(store, *sel.queue);
  }
  if (sel.has_filters() && format != Format::json) {
    // In bulk only the count is kept (and the ids, for -o id), however
    // many tasks change.
    std::vector<int64_t> changed;
    const int64_t n =
        store.send_bulk(sel, msg, until, ctx.actor(), now,
                        format == Format::id ? &changed : nullptr);
    for (const int64_t id : changed) {
      std::printf("%lld\n", static_cast<long long>(id));
    }
    if (format == Format::table) {
      std::printf("%lld\n", static_cast<long long>(n));
    }
    return;
  }
  const auto changed = store.send(sel, msg, until, ctx.actor(), now);
  for (const auto& t : changed) {
    if (format == Format::json) {
      print_task_json(t, now);
    } else if (format == Format::id) {
      std::printf("%lld\n", static_cast<long long>(t.id));
    }
  }
  if (format == Format::table && sel.has_filters()) {
    std::printf("%zu\n", changed.size());
  }
}

// A worker's form of release/sleep: --lease given, or no ids and the
// worker's TASKQ_ID/TASKQ_LEASE in the environment, or exactly TASKQ_ID
// with TASKQ_LEASE set.
bool is_worker_form(const SendOptions& o) {
  if (o.lease) {
    return true;
  }
  if (o.queue || o.state || !o.match.empty()) {
    return false;
  }
  const char* env_id = std::getenv("TASKQ_ID");
  const char* env_lease = std::getenv("TASKQ_LEASE");
  if (env_lease == nullptr || *env_lease == '\0') {
    return false;
  }
  return o.args.empty()
         || (o.args.size() == 1 && env_id != nullptr && o.args[0] == env_id);
}

OptText single_id(const SendOptions& o) {
  if (o.args.size() > 1) {
    throw Error(ErrorKind::usage, "a lease token goes with one task id");
  }
  return o.args.empty() ? std::nullopt : OptText(o.args[0]);
}

CLI::App* operator_command(CLI::App& app, Context& ctx, core::Message msg,
                           const std::string& name,
                           const std::string& description,
                           const std::string& example) {
  auto o = std::make_shared<SendOptions>();
  CLI::App* cmd = add_command(app, name, description, example);
  cmd->add_option("id", o->args, "task ids")->type_name("ID...");
  add_selector_options(cmd, *o);
  if (msg == core::Message::sleep) {
    cmd->add_option("--until", o->until, "sleep until TIME")->type_name("TIME");
    cmd->add_option("--for", o->for_, "sleep for DUR")->type_name("DUR");
  }
  if (msg == core::Message::sleep || msg == core::Message::release) {
    cmd->add_option("--lease", o->lease,
                    "as the lease holder (default: $TASKQ_LEASE with "
                    "$TASKQ_ID)")
        ->type_name("TOKEN");
  }
  if (msg == core::Message::release) {
    cmd->add_option("--delay", o->delay,
                    "lease holder only: due again after DUR")
        ->type_name("DUR");
  }
  cmd->callback([o, msg, &ctx] {
    if ((msg == core::Message::sleep || msg == core::Message::release)
        && is_worker_form(*o)) {
      const WorkerRef ref = worker_ref(single_id(*o), o->lease);
      auto& store = ctx.store(storage::OpenMode::update);
      const core::Time now = ctx.now();
      if (msg == core::Message::release) {
        const auto delay = parse_duration_arg(o->delay, "--delay");
        if (delay) {
          time_after(now, *delay, "--delay");
        }
        store.release(ref.id, ref.token, delay, now);
      } else {
        const auto until = sleep_until(*o, now);
        if (!until) {
          throw Error(ErrorKind::usage,
                      "sleep needs --until TIME or --for DUR");
        }
        store.worker_sleep(ref.id, ref.token, *until, now);
      }
      return;
    }
    if (o->delay) {
      throw Error(ErrorKind::usage,
                  "--delay is for the lease holder (give --lease TOKEN)");
    }
    send_message(*o, o->args, msg, ctx);
  });
  return cmd;
}

} // namespace

void register_operate(CLI::App& app, Context& ctx) {
  using core::Message;
  operator_command(
      app, ctx, Message::pause, "pause",
      "Pause tasks until resumed. A running command is stopped (SIGTERM, "
      "then SIGKILL after run's --grace) and its work is lost: resume starts "
      "it over. To stop a command and keep its work, use freeze",
      "taskq pause 42 43   # or: taskq pause --queue thumbs");
  operator_command(
      app, ctx, Message::run, "resume",
      "Make paused or sleeping tasks runnable: each runs again from the "
      "start, as its next attempt (a paused task's attempt limit counts "
      "afresh; logs keeps each attempt's output). A frozen command is "
      "continued by continue, not resume",
      "taskq resume 42");
  operator_command(app, ctx, Message::sleep, "sleep",
                   "Put tasks to sleep until a time. A running command is "
                   "stopped (SIGTERM) and its work is lost: it runs again "
                   "from the start when the task wakes",
                   "taskq sleep 42 --for 2h");
  operator_command(app, ctx, Message::kill, "kill",
                   "Kill tasks for good. A running command is stopped "
                   "(SIGTERM, then SIGKILL after run's --grace)",
                   "taskq kill --queue thumbs --match kind=image");
  operator_command(app, ctx, Message::release, "release",
                   "Take tasks' leases away: a running command is stopped "
                   "(SIGTERM) and the task is runnable again, to run from the "
                   "start; with a lease token, give your leased task back "
                   "untouched",
                   "taskq release 42   # worker: taskq release --delay 1m");
  operator_command(app, ctx, Message::checkpoint, "checkpoint",
                   "Ask a running command to save its state: run sends it "
                   "its --checkpoint-signal at the next heartbeat; it keeps "
                   "running",
                   "taskq checkpoint 42");
  for (const bool frozen : {true, false}) {
    auto ids = std::make_shared<std::vector<std::string>>();
    CLI::App* cmd = add_command(
        app, frozen ? "freeze" : "continue",
        frozen ? "Freeze running commands where they are: run stops each "
                 "one's process group (SIGSTOP) and keeps its lease alive; "
                 "nothing is lost; taskq continue lets it go on (ids: all or "
                 "nothing)"
               : "Continue frozen commands from where they stopped: run "
                 "sends SIGCONT (ids: all or nothing)",
        frozen ? "taskq freeze 42   # later: taskq continue 42"
               : "taskq continue 42");
    cmd->add_option("id", *ids, "task ids")->required()->type_name("ID...");
    cmd->callback([ids, frozen, &ctx] {
      const auto parsed = parse_ids(*ids);
      // As the messages to tasks: nothing on success (the ids were
      // named), the tasks with -o json, their ids with -o id.
      const Format format =
          ctx.format(Format::table, {Format::table, Format::json, Format::id});
      const core::Time now = ctx.now();
      const auto done = ctx.store(storage::OpenMode::update)
                            .freeze(parsed, frozen, ctx.actor(), now);
      for (const auto& t : done) {
        if (format == Format::json) {
          print_task_json(t, now);
        } else if (format == Format::id) {
          std::printf("%lld\n", static_cast<long long>(t.id));
        }
      }
    });
  }

  auto o = std::make_shared<SendOptions>();
  CLI::App* send = add_command(
      app, "send",
      "Send an operator message (run, pause, sleep, release, checkpoint, "
      "kill) to tasks",
      "taskq send 42 sleep --for 1h   # bulk: taskq send pause --queue q");
  send->add_option("args", o->args, "task ids, then the message")
      ->required()
      ->type_name("ID... MESSAGE");
  add_selector_options(send, *o);
  send->add_option("--until", o->until, "with sleep: until TIME")
      ->type_name("TIME");
  send->add_option("--for", o->for_, "with sleep: for DUR")->type_name("DUR");
  send->callback([o, &ctx] {
    std::vector<std::string> ids = o->args;
    const std::string name = ids.back();
    ids.pop_back();
    const auto msg = core::parse_message(name);
    if (!msg || !core::is_operator_message(*msg)) {
      throw Error(ErrorKind::usage,
                  "invalid message '" + name
                      + "': expected run, pause, sleep, release, checkpoint or "
                        "kill");
    }
    send_message(*o, ids, *msg, ctx);
  });

  struct RetryOptions {
    std::vector<std::string> ids;
    OptText queue, state;
    std::vector<std::string> match;
    bool again = false;
  };
  auto ro = std::make_shared<RetryOptions>();
  CLI::App* retry = add_command(
      app, "retry",
      "Add a new task with the spec of each failed, killed or completed one "
      "(prints the new ids; ids: all or nothing; a task whose retry is "
      "still unfinished is refused, or skipped in bulk, unless --again); an "
      "id sleeping after an error runs now, itself, instead of at its retry "
      "time",
      "taskq retry 42 43   # bulk: taskq retry --queue thumbs --state failed");
  retry->add_option("id", ro->ids, "task ids")->type_name("ID...");
  retry->add_option("--queue", ro->queue, "every task of QUEUE")
      ->type_name("QUEUE");
  retry
      ->add_option("--state", ro->state,
                   "every task in these states: failed, killed, completed "
                   "or several, failed,killed (needed with --queue/--match)")
      ->type_name("S,...");
  retry
      ->add_option("--match", ro->match,
                   "every task with labels matching K=V (repeatable)")
      ->type_name("K=V");
  retry->add_flag("--again", ro->again,
                  "retry even a task whose last retry is still unfinished");
  retry->callback([ro, &ctx] {
    const storage::Selector sel =
        select_tasks(ro->ids, ro->queue, ro->state, ro->match);
    const Format format =
        ctx.format(Format::id, {Format::table, Format::json, Format::id});
    auto& store = ctx.store(storage::OpenMode::update);
    if (sel.queue) {
      require_queue(store, *sel.queue);
    }
    const auto done = store.retry_many(
        sel, ro->again ? storage::LiveRetry::again : storage::LiveRetry::refuse,
        ctx.actor(), ctx.now());
    for (const auto& r : done) {
      if (r.retry == 0) {
        std::fprintf(stderr, "taskq: skipped: %s\n", r.skipped.c_str());
      } else if (format == Format::json) {
        print_json(Json{{"task", r.task}, {"retry", r.retry}});
      } else {
        std::printf("%lld\n", static_cast<long long>(r.retry));
      }
    }
  });

  auto rq = std::make_shared<std::string>();
  CLI::App* requeue = add_command(
      app, "requeue",
      "Make every delayed or sleeping task of QUEUE due now (prints how many; "
      "-o json/id: the tasks)",
      "taskq requeue thumbs");
  requeue->add_option("queue", *rq, "queue")->required();
  requeue->callback([rq, &ctx] {
    check_queue_name(*rq);
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json, Format::id});
    const core::Time now = ctx.now();
    auto& store = ctx.store(storage::OpenMode::update);
    require_queue(store, *rq);
    const auto changed = store.requeue(*rq, ctx.actor(), now);
    for (const auto& t : changed) {
      if (format == Format::json) {
        print_task_json(t, now);
      } else if (format == Format::id) {
        std::printf("%lld\n", static_cast<long long>(t.id));
      }
    }
    if (format == Format::table) {
      std::printf("%zu\n", changed.size());
    }
  });

  struct PurgeOptions {
    OptText queue, older_than;
    std::vector<std::string> states;
    bool force = false, dry_run = false;
  };
  auto po = std::make_shared<PurgeOptions>();
  CLI::App* purge = add_command(
      app, "purge",
      "Delete finished tasks with their history (prints how many; unfinished "
      "ones only with --force)",
      "taskq purge --queue thumbs --state completed --older-than 7d");
  purge->add_option("--queue", po->queue, "only QUEUE")->type_name("QUEUE");
  purge
      ->add_option("--state", po->states,
                   "only these states (comma-separated; default: "
                   "completed, failed, killed)")
      ->type_name("S,...")
      ->delimiter(',');
  purge
      ->add_option("--older-than", po->older_than,
                   "only tasks finished at least DUR ago")
      ->type_name("DUR");
  purge->add_flag("--force", po->force,
                  "also delete unfinished tasks (runnable, sleeping, paused)");
  purge->add_flag("--dry-run", po->dry_run,
                  "print how many would go; delete nothing");
  purge->callback([po, &ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    storage::PurgeRequest req;
    if (po->queue) {
      check_queue_name(*po->queue);
    }
    req.queue = po->queue;
    for (const auto& name : po->states) {
      const auto state = core::parse_state(name);
      if (!state) {
        throw Error(ErrorKind::usage,
                    "invalid --state '" + name
                        + "': expected runnable, sleeping, paused, fault, "
                          "completed, failed or killed");
      }
      req.states.push_back(*state);
    }
    req.older_than = parse_duration_arg(po->older_than, "--older-than");
    req.force = po->force;
    req.dry_run = po->dry_run;
    auto& store = ctx.store(storage::OpenMode::update);
    if (req.queue) {
      require_queue(store, *req.queue);
    }
    const int64_t n = store.purge(req, ctx.now());
    if (format == Format::json) {
      print_json(Json{{po->dry_run ? "would_purge" : "purged", n}});
    } else {
      std::printf("%lld\n", static_cast<long long>(n));
    }
  });
}

} // namespace taskq::cli
