// Commands that run on: run (the worker loop), wait, progress.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/run_host.hpp"
#include "core/bytes.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/outcome.hpp"
#include "core/progress.hpp"
#include "core/suggestion.hpp"
#include "worker/child.hpp"
#include "worker/reconnect.hpp"
#include "worker/run.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <unistd.h>

namespace taskq::cli {
namespace {

using worker::FailOn;
using worker::RunOptions;
using worker::RunSummary;
using worker::StreamOptions;

struct RunArgs {
  std::vector<std::string> queues;
  std::string lease_for = "5m";
  int concurrency = 1;
  std::optional<int64_t> max_tasks;
  bool until_empty = false;
  OptText timeout;
  std::string grace = "10s";
  std::string release_delay = "10s";
  bool result_stdout = false;
  std::string keep_output = "1M";
  bool tag = false;
  std::vector<std::string> match;
  std::string checkpoint_signal = "USR1";
  bool verbose = false;
  bool quiet = false;
  std::string fail_on = "retry";
  bool stream = false;
  std::optional<int> prefetch;
  OptText flush;
  bool keep_output_given = false;
  std::string reconnect_for = "5m";
};

// `--stream`'s options, checked against the others.
StreamOptions check_stream_args(const RunArgs& a, const RunOptions& o) {
  StreamOptions s;
  if (!a.stream) {
    if (a.prefetch || a.flush) {
      throw Error(ErrorKind::usage,
                  std::string(a.prefetch ? "--prefetch" : "--flush")
                      + " needs --stream");
    }
    return s;
  }
  if (o.command.empty()) {
    throw Error(ErrorKind::usage,
                "--stream needs the handler to start after "
                "--: taskq run QUEUE --stream -- CMD [ARG...]");
  }
  for (const auto& [given, name] :
       {std::pair{a.result_stdout, "--result-stdout"},
        std::pair{a.tag, "--tag"},
        std::pair{a.keep_output_given, "--keep-output"}}) {
    if (given) {
      throw Error(ErrorKind::usage,
                  std::string(name)
                      + " cannot go with --stream: the handler's stdout "
                        "carries its answers");
    }
  }
  if (a.prefetch) {
    if (*a.prefetch < 1) {
      throw Error(ErrorKind::usage, "--prefetch must be at least 1");
    }
    s.prefetch = *a.prefetch;
  }
  if (const auto flush = parse_duration_arg(a.flush, "--flush")) {
    s.flush = *flush;
  }
  if (s.prefetch > 1 && o.lease_for < std::chrono::seconds(1)) {
    throw Error(ErrorKind::usage,
                "--for must be at least 1s with --prefetch: a lease must "
                "outlast a batch");
  }
  return s;
}

FailOn parse_fail_on(const std::string& text) {
  if (text == "failed") {
    return FailOn::failed;
  }
  if (text == "retry") {
    return FailOn::retry;
  }
  if (text == "never") {
    return FailOn::never;
  }
  throw Error(ErrorKind::usage, "invalid --fail-on '" + text
                                    + "': expected failed, retry or never");
}

RunOptions check_run_args(const RunArgs& a, Context& ctx) {
  RunOptions o;
  // A program's words are not queue names: said as a forgotten -- first.
  check_not_a_program(a.queues, ctx);
  for (const auto& q : a.queues) {
    check_queue_name(q);
  }
  o.queues = a.queues;
  o.lease_for = parse_duration_arg(a.lease_for, "--for");
  if (o.lease_for.count() <= 0) {
    throw Error(ErrorKind::usage, "--for must be longer than 0");
  }
  if (a.concurrency < 1) {
    throw Error(ErrorKind::usage, "--concurrency must be at least 1");
  }
  o.concurrency = a.concurrency;
  if (a.max_tasks && *a.max_tasks < 1) {
    throw Error(ErrorKind::usage, "--max-tasks must be at least 1");
  }
  o.max_tasks = a.max_tasks;
  o.until_empty = a.until_empty;
  o.timeout = parse_duration_arg(a.timeout, "--timeout");
  if (o.timeout && o.timeout->count() <= 0) {
    throw Error(ErrorKind::usage, "--timeout must be longer than 0");
  }
  o.grace = parse_duration_arg(a.grace, "--grace");
  o.release_delay = parse_duration_arg(a.release_delay, "--release-delay");
  o.reconnect_for = worker::parse_reconnect_for(a.reconnect_for);
  o.result_stdout = a.result_stdout;
  const auto keep = core::parse_size(a.keep_output);
  if (!keep) {
    throw Error(ErrorKind::usage,
                "invalid size '" + a.keep_output
                    + "' for --keep-output: expected bytes, or a number "
                      "followed by K, M or G (64K, 1M; 0 keeps none)");
  }
  o.keep_output = *keep;
  o.tag = a.tag;
  o.match = parse_patterns(a.match);
  const auto sig = core::parse_signal(a.checkpoint_signal);
  if (!sig) {
    throw Error(ErrorKind::usage,
                "invalid signal '" + a.checkpoint_signal
                    + "' for --checkpoint-signal: expected a name such as "
                      "USR1 or a number");
  }
  o.checkpoint_signal = *sig;
  o.verbose = a.verbose;
  if (ctx.command_given && ctx.command.empty()) {
    throw Error(ErrorKind::usage,
                "give the command to run after --: taskq run QUEUE -- CMD "
                "[ARG...] (or no --, to run each task's own command)");
  }
  o.command = ctx.command;
  if (o.command.empty()) {
    return o; // each task's own command, found as each one starts
  }
  const auto path = worker::resolve_command(o.command.front());
  if (!path) {
    throw Error(ErrorKind::usage,
                "cannot run " + o.command.front() + ": no such executable file"
                    + (o.command.front().find('/') == std::string::npos
                           ? " on $PATH"
                           : ""));
  }
  o.command_path = *path;
  return o;
}

bool terminal(core::TaskState s) {
  return s == core::TaskState::completed || s == core::TaskState::failed
         || s == core::TaskState::killed;
}

std::string join_ids(const std::vector<int64_t>& ids) {
  std::string out;
  for (const int64_t id : ids) {
    out += (out.empty() ? "" : ", ") + std::to_string(id);
  }
  return out;
}

// What `wait` says on stderr, once each, while it waits: that a task it
// waits for failed an attempt and will be retried (so a 70-minute wait is
// not a silent one), and that no worker has leased from a task's queue
// lately while the task is ready.
class WaitNotes {
public:
  // Each look at the tasks asks about each queue at most once.
  void new_round() { m_asked.clear(); }
  void look(const core::Task& t, storage::TaskStore& store, Context& ctx) {
    const core::Time now = ctx.live_now();
    auto& told = m_errors_told[t.id];
    if (t.state == core::TaskState::sleeping && t.errors.size() > told) {
      told = t.errors.size();
      for (const auto& r : store.why(t.id, now, ctx.worker())) {
        if (r.rfind("attempt ", 0) == 0) {
          std::fprintf(stderr, "taskq: task %lld: %s\n",
                       static_cast<long long>(t.id), r.c_str());
        }
      }
    }
    const bool ready = t.state == core::TaskState::runnable && !t.waiting
                       && t.run_at <= now && !t.leased(now);
    if (!ready || m_idle_told.count(t.queue) != 0
        || !m_asked.insert(t.queue).second) {
      return;
    }
    storage::QueueInfo q;
    try {
      q = store.queue(t.queue, now);
    } catch (const Error&) {
      return;
    }
    if (q.paused || q.stats.running > 0
        || (q.last_lease && now - *q.last_lease < k_recent)) {
      return;
    }
    m_idle_told.insert(t.queue);
    std::fprintf(
        stderr,
        "taskq: no worker has leased from queue %s %s; task %lld "
        "waits for one (%s)\n",
        t.queue.c_str(),
        q.last_lease ? ("since " + core::format_time(*q.last_lease)).c_str()
                     : "yet",
        static_cast<long long>(t.id), core::suggest({"run", t.queue}).c_str());
  }

private:
  static constexpr core::Millis k_recent = std::chrono::minutes(1);
  std::map<int64_t, size_t> m_errors_told; // errors said, per task
  std::set<std::string> m_idle_told;       // queues said to be idle
  std::set<std::string> m_asked;           // queues asked about this round
};

void run_wait(const std::vector<std::string>& id_args,
              const OptText& timeout_arg, const std::string& reconnect_arg,
              Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json, Format::id});
  const auto ids = parse_ids(id_args);
  const auto timeout = parse_duration_arg(timeout_arg, "--timeout");
  worker::Reconnect rc("wait", worker::parse_reconnect_for(reconnect_arg));
  auto& store = ctx.store(storage::OpenMode::read);
  std::vector<core::Task> tasks;
  std::vector<int64_t> pending;
  WaitNotes notes;
  const bool finished = watch(store, timeout, [&] {
    return worker::retrying(rc, [&] {
      tasks.clear();
      pending.clear();
      notes.new_round();
      for (const int64_t id : ids) {
        auto t = store.find(id);
        if (!t) {
          throw Error(ErrorKind::not_found, "no task " + std::to_string(id));
        }
        if (!terminal(t->state)) {
          pending.push_back(id);
        }
        tasks.push_back(std::move(*t));
      }
      // Once every id is known to exist: a bad id is the only message.
      for (const auto& t : tasks) {
        if (!terminal(t.state)) {
          notes.look(t, store, ctx);
        }
      }
      return pending.empty();
    });
  });
  if (!finished) {
    std::fprintf(stderr, "taskq: timed out after %s; not finished: %s\n",
                 core::format_duration(*timeout).c_str(),
                 join_ids(pending).c_str());
    ctx.exit_code = k_exit_nothing;
    return;
  }
  const core::Time now = ctx.live_now();
  bool all_completed = true;
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : tasks) {
    all_completed = all_completed && t.state == core::TaskState::completed;
    if (format == Format::json) {
      print_task_json(t, now);
    } else if (format == Format::id) {
      std::printf("%lld\n", static_cast<long long>(t.id));
    } else {
      rows.push_back(
          {std::to_string(t.id), std::string(core::to_string(t.state)),
           t.state == core::TaskState::completed ? t.result.value_or("")
           : t.state == core::TaskState::failed  ? failure_text(t)
                                                 : t.reason});
    }
  }
  if (format == Format::table) {
    print_table({"ID", "STATE", "RESULT"}, rows);
  }
  ctx.exit_code = all_completed ? k_exit_ok : k_exit_task_failed;
}

void run_progress(const std::string& queue, const std::string& interval_arg,
                  Context& ctx) {
  check_queue_name(queue);
  const auto interval = parse_duration_arg(interval_arg, "--interval");
  if (interval.count() <= 0) {
    throw Error(ErrorKind::usage, "--interval must be longer than 0");
  }
  const bool json =
      ctx.format(Format::table, {Format::table, Format::json}) == Format::json;
  const bool tty = !json && ::isatty(STDOUT_FILENO) == 1;
  auto& store = ctx.store(storage::OpenMode::read);
  note_unknown_queues(store, {queue}); // 0/0 of a typo is said to be one
  auto feed = store.changes();
  worker::Reconnect rc("progress", core::k_default_reconnect_for);
  const auto counts = [&] {
    return worker::retrying(rc, [&] {
      const auto stats = store.stats(queue, ctx.live_now());
      return stats.empty() ? storage::QueueStats{} : stats.front();
    });
  };
  // What was finished before we started is not this run's progress.
  const storage::QueueStats start = counts();
  const int64_t finished_before = start.completed + start.failed + start.killed;
  const int64_t failed_before = start.failed + start.killed;
  core::RateMeter meter;
  // On a terminal, redraw at most this often however fast tasks finish.
  const core::Millis redraw = std::min(interval, core::Millis{200});
  while (true) {
    feed.drain();
    const storage::QueueStats now = counts();
    const int64_t finished = now.completed + now.failed + now.killed;
    const int64_t open = now.runnable + now.sleeping + now.paused;
    core::ProgressView view;
    view.done = std::max<int64_t>(0, finished - finished_before);
    view.total = view.done + open;
    view.failed = std::max<int64_t>(0, now.failed + now.killed - failed_before);
    meter.sample(ctx.live_now(), view.done);
    view.rate = meter.per_second();
    view.eta = meter.eta(open);
    const std::string line = core::format_progress(view, tty ? 30 : 0);
    if (json) {
      print_json(
          Json{{"queue", queue},
               {"done", view.done},
               {"total", view.total},
               {"failed", view.failed},
               {"rate", view.rate ? Json(*view.rate) : Json(nullptr)},
               {"eta_seconds",
                view.eta ? Json(static_cast<double>(view.eta->count()) / 1000.0)
                         : Json(nullptr)}});
    } else if (tty) {
      std::printf("\r\033[K%s %s", queue.c_str(), line.c_str());
    } else {
      std::printf("%s %s\n", queue.c_str(), line.c_str());
    }
    std::fflush(stdout);
    if (open == 0) {
      if (tty) {
        std::putchar('\n');
      }
      return;
    }
    if (tty) {
      // Wake on a change, but also each interval: the rate and ETA age.
      feed.wait(interval);
      ::usleep(static_cast<useconds_t>(redraw.count() * 1000));
    } else {
      // One plain line per interval; a drained queue ends it sooner.
      const auto until = std::chrono::steady_clock::now() + interval;
      while (std::chrono::steady_clock::now() < until) {
        feed.wait(std::chrono::ceil<core::Millis>(
            until - std::chrono::steady_clock::now()));
        const auto s = counts();
        if (s.runnable + s.sleeping + s.paused == 0) {
          break;
        }
      }
    }
  }
}

} // namespace

void register_run(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* run = add_command(
      app, "run",
      "Work QUEUE...: lease each task and run CMD for it, or without -- CMD "
      "the task's own command (payload on stdin, TASKQ_* in its "
      "environment); exit 0 completes, 75 releases, anything else fails. "
      "Exits 6 when a handler it ran failed, even if its task will retry "
      "(--fail-on)",
      "taskq run thumbs --concurrency 4 -- ./make-thumb.sh\n"
      "  taskq run backups --until-empty -q   # in cron: tasks added with "
      "add -- CMD");
  run->add_option("queue", a->queues, "queues to work")->required();
  run->add_option("--for", a->lease_for,
                  "lease duration (default 5m); heartbeats every third")
      ->type_name("DUR");
  run->add_option("--concurrency", a->concurrency,
                  "run up to N handlers at once (default 1)")
      ->type_name("N");
  run->add_option("--max-tasks", a->max_tasks,
                  "lease at most N tasks, then exit")
      ->type_name("N");
  run->add_flag("--until-empty", a->until_empty,
                "exit when nothing is eligible (default: wait for work)");
  run->add_option("--timeout", a->timeout,
                  "stop a handler after DUR and fail its task")
      ->type_name("DUR");
  run->add_option("--grace", a->grace,
                  "between SIGTERM and SIGKILL when stopping a handler "
                  "(default 10s)")
      ->type_name("DUR");
  run->add_option("--release-delay", a->release_delay,
                  "when a handler exits 75, its task is due again after DUR "
                  "(default 10s)")
      ->type_name("DUR");
  run->add_flag("--result-stdout", a->result_stdout,
                "store the handler's stdout as the result (JSON, or a string)");
  CLI::Option* keep_output =
      run->add_option(
             "--keep-output", a->keep_output,
             "store the last SIZE bytes of each handler's stdout and "
             "stderr per attempt, for taskq logs (default 1M; 64K, 2M; "
             "0: none)")
          ->type_name("SIZE");
  run->add_flag("--tag", a->tag,
                "prefix each line a handler prints with its task id and a tab");
  run->add_option("--match", a->match,
                  "only tasks with labels matching K=V (repeatable)")
      ->type_name("K=V");
  run->add_option("--checkpoint-signal", a->checkpoint_signal,
                  "signal for an operator's checkpoint request (default USR1)")
      ->type_name("SIG");
  run->add_flag(
      "-v,--verbose", a->verbose,
      "a line per task event on stderr, timestamped, in the summary's "
      "words");
  run->add_flag("-q,--quiet", a->quiet,
                "print nothing when no task was leased (for cron); a queue "
                "name one slip from a known one (a typo) is still said");
  run->add_option("--fail-on", a->fail_on,
                  "which outcomes make run exit 6: retry (a handler failed, "
                  "whether its task will retry or failed for good; the "
                  "default), failed (a task failed for good), never")
      ->type_name("WHAT");
  run->add_option("--reconnect-for", a->reconnect_for,
                  "when the database server goes away, connect again for "
                  "DUR, handlers running on, then exit 5 (default 5m; 0; "
                  "forever)")
      ->type_name("DUR");
  run->add_flag("--stream", a->stream,
                "start CMD once (per --concurrency) and feed it one JSON task "
                "per line on stdin; it answers one JSON outcome per line on "
                "stdout (doc/workers.md, --stream)");
  run->add_option("--prefetch", a->prefetch,
                  "with --stream: lease up to K tasks ahead in one "
                  "transaction and record outcomes in batches (default 1)")
      ->type_name("K");
  run->add_option("--flush", a->flush,
                  "with --prefetch: record a batch of outcomes at most DUR "
                  "after its first (default 5ms)")
      ->type_name("DUR");
  run->callback([a, keep_output, &ctx] {
    // Checked before any work: a bad -o must change nothing.
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    const FailOn fail_on = parse_fail_on(a->fail_on);
    a->keep_output_given = keep_output->count() > 0;
    const RunOptions o = check_run_args(*a, ctx);
    const StreamOptions so = check_stream_args(*a, o);
    // -q: cron mails nothing when nothing ran; a queue name one slip from
    // a known one (a typo) is still said: it is a mistake, not nothing to do.
    ContextHost host(ctx, o.queues, o.reconnect_for,
                     a->quiet ? Notes::typos : Notes::all);
    const RunSummary s = a->stream ? worker::run_stream(o, so, host)
                                   : worker::run_worker(o, host);
    if (worker::run_failed(s, fail_on)) {
      ctx.exit_code = k_exit_task_failed;
    }
    if (a->quiet && s.leased == 0 && !s.unreachable) {
      return;
    }
    if (format == Format::json) {
      print_json(nlohmann::json{
          {"leased", s.leased},
          {"completed", s.completed},
          {"failed", s.failed},
          {"retrying", s.retrying},
          {"retry_at", s.retry_at
                           ? nlohmann::json(core::format_time(*s.retry_at))
                           : nlohmann::json(nullptr)},
          {"released", s.released},
          {"revoked", s.revoked},
          {"failed_ids", s.failed_ids},
          {"retrying_ids", s.retrying_ids}});
    } else {
      std::printf("%s\n", summary_line(s).c_str());
    }
    if (s.unreachable) { // after the summary
      throw Error(ErrorKind::unavailable, *s.unreachable);
    }
  });

  auto ids = std::make_shared<std::vector<std::string>>();
  auto timeout = std::make_shared<OptText>();
  CLI::App* wait = add_command(
      app, "wait",
      "Block until every task ID is finished; exit 0 if all completed, 6 if "
      "any failed or was killed, 75 on --timeout",
      "taskq wait \"$id\" --timeout 10m");
  wait->add_option("id", *ids, "task ids")->required()->type_name("ID");
  wait->add_option("--timeout", *timeout, "give up after DUR (exit 75)")
      ->type_name("DUR");
  auto reconnect = std::make_shared<std::string>("5m");
  wait->add_option("--reconnect-for", *reconnect,
                   "when the server goes away, retry for DUR (default 5m)")
      ->type_name("DUR");
  wait->callback([ids, timeout, reconnect, &ctx] {
    run_wait(*ids, *timeout, *reconnect, ctx);
  });

  auto queue = std::make_shared<std::string>();
  auto interval = std::make_shared<std::string>("1s");
  CLI::App* progress = add_command(
      app, "progress",
      "Show QUEUE's progress (done of total, rate, ETA) until nothing in it "
      "is left to do; a live bar on a terminal, else a line per interval",
      "taskq progress thumbs");
  progress->add_option("queue", *queue, "queue to watch")->required();
  progress
      ->add_option("--interval", *interval,
                   "seconds between lines when not on a terminal (default 1s)")
      ->type_name("DUR");
  progress->callback(
      [queue, interval, &ctx] { run_progress(*queue, *interval, ctx); });
}

} // namespace taskq::cli
