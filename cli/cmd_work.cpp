// Worker commands: lease, heartbeat, done, fail. (A worker's release and
// sleep share their commands with the operator forms: cmd_operate.cpp.)
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/bytes.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "worker/reconnect.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

namespace taskq::cli {
namespace {

struct LeaseOptions {
  std::vector<std::string> queues;
  std::string lease_for = "5m";
  std::vector<std::string> match;
  int count = 1;
  OptText wait; // "" when --wait has no value: no limit
  bool quiet = false;
  std::string reconnect_for = "5m";
};

// Leases as `lease` does; with --wait, blocks until something can be leased
// (or the wait runs out), waking on each change to the database and when
// the next task comes due, never polling.
std::vector<core::Task>
lease_or_wait(const LeaseOptions& o, storage::LeaseRequest& req, Context& ctx) {
  auto& store = ctx.store(storage::OpenMode::update);
  if (!o.wait) {
    auto tasks = store.lease(req, ctx.now());
    if (tasks.empty()) { // a typo leases nothing: said even with -q
      note_unknown_queues(store, req.queues,
                          o.quiet ? Notes::typos : Notes::all);
    }
    return tasks;
  }
  std::optional<core::Millis> limit;
  if (!o.wait->empty()) {
    limit = core::parse_duration(*o.wait);
    if (!limit) {
      throw Error(ErrorKind::usage,
                  "invalid duration '" + *o.wait
                      + "' for --wait: expected e.g. 30s, 5m or 1h (give the "
                        "queues before --wait, or write --wait=DUR)");
    }
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + limit.value_or(core::Millis{0});
  worker::Reconnect rc("lease", worker::parse_reconnect_for(o.reconnect_for));
  storage::ChangeFeed feed = store.changes(); // before the first look
  bool noted = false; // the note on unknown queues: once, retried look or not
  for (bool first = true;; first = false) {
    feed.drain();
    // A look whose connection is lost is made again once the server is
    // back (said once, with back-off: worker/reconnect.hpp). A lease whose
    // commit is unknown is abandoned: if it was written, it expires.
    const auto look = [&]() -> std::optional<std::vector<core::Task>> {
      // After the first look, take the write lock only when a read says
      // something may be there: a commit to another queue wakes every
      // waiting worker, and they should not queue up for the lock for it.
      // One time for both reads of this look: were anything_due and next_due
      // asked at two times, a task due between them would be neither due at
      // the first nor due after the second, and the wait would sleep through
      // it to --wait's end.
      const core::Time now = ctx.live_now();
      if (first || store.anything_due(req.queues, now, req.worker)) {
        auto tasks = store.lease(req, ctx.live_now());
        if (!tasks.empty()) {
          return tasks;
        }
        if (first && !noted) {
          noted = true; // said once, then waits
          note_unknown_queues(store, req.queues,
                              o.quiet ? Notes::typos : Notes::all);
        }
      }
      std::optional<core::Millis> wait;
      if (limit) {
        wait = std::chrono::ceil<core::Millis>(deadline - Clock::now());
        if (wait->count() <= 0) {
          return std::vector<core::Task>{};
        }
      }
      if (const auto due = store.next_due(req.queues, now)) {
        const auto in = std::max(core::Millis{0}, *due - ctx.live_now());
        wait = wait ? std::min(*wait, in) : in;
      }
      // A wake-up this command's own commits owe (a lease reclaimed) goes
      // out when due, not when it next looks.
      if (const auto owed = store.wake_due()) {
        const auto in =
            std::max(core::Millis{0},
                     std::chrono::ceil<core::Millis>(*owed - Clock::now()));
        wait = wait ? std::min(*wait, in) : in;
      }
      feed.wait(wait);
      store.wake_owed();
      return std::nullopt;
    };
    if (auto tasks = worker::retrying(rc, look)) {
      return std::move(*tasks);
    }
  }
}

void run_lease(const LeaseOptions& o, Context& ctx) {
  const Format format = ctx.format(
      Format::json, {Format::json, Format::env, Format::id, Format::table});
  storage::LeaseRequest req;
  for (const auto& q : o.queues) {
    check_queue_name(q);
  }
  req.queues = o.queues;
  req.lease_for = parse_duration_arg(o.lease_for, "--for");
  if (req.lease_for.count() <= 0) {
    throw Error(ErrorKind::usage, "--for must be longer than 0");
  }
  time_after(ctx.now(), req.lease_for, "--for");
  req.match = parse_patterns(o.match);
  if (o.count < 1) {
    throw Error(ErrorKind::usage, "--count must be at least 1");
  }
  if (format == Format::env && o.count != 1) {
    throw Error(ErrorKind::usage, "-o env leases one task: drop --count");
  }
  req.count = o.count;
  req.worker = ctx.worker();
  const auto tasks = lease_or_wait(o, req, ctx);
  const core::Time now = ctx.live_now();
  if (tasks.empty()) {
    if (format == Format::env) {
      // So that `eval "$(taskq lease q -o env)" || exit 0` sees the 75.
      std::puts("(exit 75)");
    }
    std::string names;
    for (const auto& q : o.queues) {
      names += (names.empty() ? "" : ", ") + q;
    }
    if (!o.quiet) {
      std::fprintf(stderr, "taskq: nothing to lease in %s\n", names.c_str());
    }
    ctx.exit_code = k_exit_nothing;
    return;
  }
  for (const auto& t : tasks) {
    switch (format) {
    case Format::env:
      print_env(t);
      break;
    case Format::id:
      std::printf("%lld\n", static_cast<long long>(t.id));
      break;
    case Format::table:
      break;
    case Format::json:
      print_task_json(t, now);
      break;
    }
  }
  if (format == Format::table) {
    print_task_table(tasks, now);
  }
}

struct WorkerOptions {
  OptText id;
  OptText lease;
};

void add_worker_options(CLI::App* cmd, WorkerOptions& o) {
  cmd->add_option("id", o.id, "task id (default: $TASKQ_ID)")->type_name("ID");
  cmd->add_option("--lease", o.lease, "lease token (default: $TASKQ_LEASE)")
      ->type_name("TOKEN");
}

} // namespace

namespace {

// What `done`/`fail --output-file` keep of the file: its last part, as
// `run` keeps a stream by default.
constexpr int64_t k_output_file_keep = 1024 * 1024;

// The last `keep` bytes of file `path`, and its whole size.
std::pair<std::string, int64_t> file_tail(const std::string& path,
                                          int64_t keep) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    throw Error(ErrorKind::usage,
                "cannot read " + path + ": " + std::strerror(errno));
  }
  const auto size = static_cast<int64_t>(in.tellg());
  const int64_t from = std::max<int64_t>(0, size - keep);
  in.seekg(from);
  std::string data(static_cast<size_t>(size - from), '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  if (!in) {
    throw Error(ErrorKind::usage, "cannot read " + path);
  }
  return {std::move(data), size};
}

// Stores file `path` as the stdout of the attempt that holds lease `ref`,
// after what the attempt has kept already. Before the outcome, so that
// `logs --follow` sees it; nothing when the lease is not held (the outcome
// says why).
void attach_output(storage::TaskStore& store, const WorkerRef& ref,
                   const std::string& path, core::Time now) {
  auto [data, size] = file_tail(path, k_output_file_keep);
  const auto task = store.find(ref.id);
  if (!task || !store.lease_held(ref.id, ref.token, now)) {
    return;
  }
  int64_t before = 0;
  for (const auto& o : store.output_sizes(ref.id)) {
    if (o.attempt == task->attempts && o.stream == "stdout") {
      before = o.total;
    }
  }
  storage::OutputChunk c;
  c.task = ref.id;
  c.attempt = task->attempts;
  c.stream = "stdout";
  c.offset = before + size - static_cast<int64_t>(data.size());
  c.data = std::move(data);
  store.append_output({c}, k_output_file_keep);
}

} // namespace

// One function a command: an invocation registers only the command it
// names (cli/app.cpp), and each option built costs start-up time.
void register_lease(CLI::App& app, Context& ctx) {
  auto lo = std::make_shared<LeaseOptions>();
  CLI::App* lease = add_command(
      app, "lease",
      "Lease the next eligible task of QUEUE... (exit 75 when none)",
      "eval \"$(taskq lease thumbs -o env)\" || exit 0");
  lease->add_option("queue", lo->queues, "queues to lease from")->required();
  lease
      ->add_option("--for", lo->lease_for,
                   "lease duration (default 5m); heartbeat to extend")
      ->type_name("DUR");
  lease
      ->add_option("--match", lo->match,
                   "only tasks with labels matching K=V (repeatable; * "
                   "wildcards)")
      ->type_name("K=V");
  lease->add_option("--count", lo->count, "lease up to N tasks")
      ->type_name("N");
  lease
      ->add_option("--wait", lo->wait,
                   "block until a task is eligible, at most DUR if given "
                   "(then exit 75)")
      ->expected(0, 1)
      ->type_name("[DUR]");
  lease
      ->add_option("--reconnect-for", lo->reconnect_for,
                   "with --wait: when the database server goes away, keep "
                   "connecting again for DUR (default 5m; 0: exit 5 at "
                   "once; forever)")
      ->type_name("DUR");
  lease->add_flag("-q,--quiet", lo->quiet,
                  "say nothing when there is nothing to lease (still exit 75; "
                  "-o env still prints `(exit 75)` for eval); a queue name "
                  "one slip from a known one (a typo) is still said");
  lease->callback([lo, &ctx] { run_lease(*lo, ctx); });
}

void register_heartbeat(CLI::App& app, Context& ctx) {
  struct HeartbeatOptions : WorkerOptions {
    OptText extend;
    OptText checkpoint;
  };
  auto ho = std::make_shared<HeartbeatOptions>();
  CLI::App* hb = add_command(
      app, "heartbeat",
      "Extend the lease; prints `checkpoint` when an operator asks for one, "
      "or the operator's message and exit 4 when the lease was revoked",
      "taskq heartbeat --for 5m --checkpoint '{\"offset\":1200}'");
  add_worker_options(hb, *ho);
  hb->add_option("--for", ho->extend,
                 "extend to now + DUR (default: the lease's duration)")
      ->type_name("DUR");
  hb->add_option("--checkpoint", ho->checkpoint,
                 "save progress (JSON), kept across attempts")
      ->type_name("JSON");
  hb->callback([ho, &ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    const WorkerRef ref = worker_ref(ho->id, ho->lease);
    const auto extend = parse_duration_arg(ho->extend, "--for");
    if (extend && extend->count() <= 0) {
      throw Error(ErrorKind::usage, "--for must be longer than 0");
    }
    if (extend) {
      time_after(ctx.now(), *extend, "--for");
    }
    const auto checkpoint = parse_json_arg(ho->checkpoint, "--checkpoint");
    auto& store = ctx.store(storage::OpenMode::update);
    try {
      const auto r =
          store.heartbeat(ref.id, ref.token, extend, checkpoint, ctx.now());
      if (format == Format::json) {
        print_json(Json{{"id", ref.id},
                        {"checkpoint_requested", r.checkpoint_requested}});
      } else if (r.checkpoint_requested) {
        std::puts("checkpoint");
      }
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::conflict) {
        if (auto why = store.revoked_reason(ref.id, ref.token)) {
          if (format == Format::json) {
            print_json(Json{{"id", ref.id}, {"revoked", *why}});
          } else {
            std::puts(why->c_str());
          }
        }
      }
      throw;
    }
  });
}

void register_done(CLI::App& app, Context& ctx) {
  struct DoneOptions : WorkerOptions {
    OptText result;
    OptText output_file;
    std::vector<std::string> sync;
  };
  auto d = std::make_shared<DoneOptions>();
  CLI::App* done = add_command(app, "done", "Complete the leased task",
                               "taskq done --result '{\"pages\":3}'");
  add_worker_options(done, *d);
  done->add_option("--result", d->result, "result to store (JSON)")
      ->type_name("JSON");
  done->add_option("--sync", d->sync,
                   "store K=V on the task's schedule; its next task gets it "
                   "(repeatable)")
      ->type_name("K=V");
  done->add_option("--output-file", d->output_file,
                   "store file F (its last 1 MiB) as this attempt's output, "
                   "for taskq logs")
      ->type_name("F");
  done->callback([d, &ctx] {
    const WorkerRef ref = worker_ref(d->id, d->lease);
    const auto result = parse_json_arg(d->result, "--result");
    core::Labels sync;
    try {
      sync = parse_labels(d->sync);
    } catch (const Error& e) {
      throw Error(ErrorKind::usage, std::string("--sync: ") + e.what());
    }
    auto& store = ctx.store(storage::OpenMode::update);
    if (d->output_file) {
      attach_output(store, ref, *d->output_file, ctx.now());
    }
    store.complete_only(ref.id, ref.token, result, ctx.now(), sync);
  });
}

void register_fail(CLI::App& app, Context& ctx) {
  struct FailOptions : WorkerOptions {
    std::string error;
    bool no_retry = false;
    OptText move_to;
    OptText retry_in;
    OptText output_file;
  };
  auto f = std::make_shared<FailOptions>();
  CLI::App* fail = add_command(
      app, "fail",
      "Report an error on the leased task; the error policy decides: sleep "
      "and retry, or fail",
      "taskq fail --error 'convert: exit status 1'");
  add_worker_options(fail, *f);
  fail->add_option("--error", f->error, "what went wrong")
      ->required()
      ->type_name("MSG");
  auto* no_retry =
      fail->add_flag("--no-retry", f->no_retry, "fail it for good now");
  auto* move_to = fail->add_option("--move-to", f->move_to,
                                   "dead-letter: move it to QUEUE, runnable")
                      ->type_name("QUEUE");
  auto* retry_in =
      fail->add_option("--retry-in", f->retry_in,
                       "retry after DUR instead of the policy's delay")
          ->type_name("DUR");
  fail->add_option("--output-file", f->output_file,
                   "store file F (its last 1 MiB) as this attempt's output, "
                   "for taskq logs")
      ->type_name("F");
  no_retry->excludes(move_to)->excludes(retry_in);
  move_to->excludes(retry_in);
  fail->callback([f, &ctx] {
    const WorkerRef ref = worker_ref(f->id, f->lease);
    storage::FailRequest req;
    req.error = f->error;
    if (req.error.empty()) {
      throw Error(ErrorKind::usage, "--error must not be empty");
    }
    if (f->no_retry) {
      req.mode = storage::FailMode::no_retry;
    } else if (f->move_to) {
      check_queue_name(*f->move_to);
      req.mode = storage::FailMode::move_to;
      req.move_to = *f->move_to;
    } else {
      req.retry_in = parse_duration_arg(f->retry_in, "--retry-in");
      if (req.retry_in) {
        time_after(ctx.now(), *req.retry_in, "--retry-in");
      }
    }
    auto& store = ctx.store(storage::OpenMode::update);
    if (f->output_file) {
      attach_output(store, ref, *f->output_file, ctx.now());
    }
    store.fail(ref.id, ref.token, req, ctx.now());
  });
}

} // namespace taskq::cli
