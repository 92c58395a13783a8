// Job output: logs (what a task's handler printed, kept by `run`).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/bytes.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

#include <cstdio>
#include <functional>
#include <memory>

namespace taskq::cli {
namespace {

struct LogsArgs {
  std::string id;
  std::optional<int64_t> attempt;
  bool only_stdout = false;
  bool only_stderr = false;
  bool follow = false;
};

// Prints chunks of output: as they are (stdout's to stdout and stderr's to
// stderr, or the one stream asked for to stdout), or as JSON lines.
class LogPrinter {
public:
  LogPrinter(Format format, bool one_stream)
      : m_json(format == Format::json), m_one_stream(one_stream) {}

  void print(const std::vector<storage::OutputChunk>& chunks) {
    for (const auto& c : chunks) {
      if (m_json) {
        ObjectWriter w;
        w.field("task", c.task)
            .field("attempt", c.attempt)
            .field("stream", c.stream)
            .field("offset", c.offset)
            .raw("data", json_string(core::to_valid_utf8(c.data)));
        const std::string line = w.finish() + "\n";
        std::fwrite(line.data(), 1, line.size(), stdout);
        continue;
      }
      std::FILE* to = m_one_stream || c.stream == "stdout" ? stdout : stderr;
      if (to != m_last && m_last != nullptr) {
        std::fflush(m_last);
      }
      m_last = to;
      std::fwrite(c.data.data(), 1, c.data.size(), to);
    }
    std::fflush(stdout);
    std::fflush(stderr);
  }

private:
  bool m_json;
  bool m_one_stream;
  std::FILE* m_last = nullptr;
};

// Prints the attempt's output as it comes (print_new prints what is new)
// until the attempt has ended: the task is gone, leased again, or holds
// no live lease. `run` stores a handler's output before its outcome, so
// once the end is seen, one more read has all of it.
//
// Waits on the change feed. On SQLite a writer's last write to the WAL
// wakes us just before its commit shows (it syncs the WAL in between),
// and a long-lived writer such as `run` may write nothing more for a
// while: after each wake-up, look again shortly after, twice.
void follow(storage::TaskStore& store, Context& ctx, int64_t attempt,
            int64_t id, const std::function<void()>& print_new) {
  constexpr core::Millis k_relook[] = {core::Millis{25}, core::Millis{250}};
  auto feed = store.changes();
  size_t relooks = std::size(k_relook); // none until a wake-up
  while (true) {
    feed.drain(); // what changes after this look wakes the wait below
    const auto t = store.find(id);
    const bool ended =
        !t || t->attempts != attempt || !t->leased(ctx.live_now());
    print_new();
    if (ended) {
      return;
    }
    if (relooks < std::size(k_relook)) {
      const bool woke = feed.wait(k_relook[relooks]);
      relooks = woke ? 0 : relooks + 1;
    } else {
      feed.wait(std::nullopt);
      relooks = 0;
    }
  }
}

void run_logs(const LogsArgs& a, Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json});
  const int64_t id = parse_id(a.id);
  if (a.attempt && *a.attempt < 1) {
    throw Error(ErrorKind::usage, "--attempt must be at least 1");
  }
  std::optional<std::string> stream;
  if (a.only_stdout) {
    stream = "stdout";
  } else if (a.only_stderr) {
    stream = "stderr";
  }
  auto& store = ctx.store(storage::OpenMode::read);
  const auto task = store.find(id);
  if (!task) {
    throw Error(ErrorKind::not_found, "no task " + std::to_string(id));
  }
  if (a.attempt && *a.attempt > task->attempts) {
    throw Error(ErrorKind::not_found,
                "task " + std::to_string(id) + " has no attempt "
                    + std::to_string(*a.attempt) + " (it has had "
                    + std::to_string(task->attempts) + ")");
  }
  const int64_t attempt = a.attempt.value_or(task->attempts);
  if (attempt == 0) {
    std::fprintf(stderr, "taskq: task %lld has not run yet\n",
                 static_cast<long long>(id));
    return;
  }
  for (const auto& s : store.output_sizes(id)) {
    if (s.attempt == attempt && s.total > s.kept
        && (!stream || *stream == s.stream)) {
      std::fprintf(stderr,
                   "taskq: task %lld attempt %lld: the first %s of %s "
                   "dropped (kept the last %s)\n",
                   static_cast<long long>(id), static_cast<long long>(attempt),
                   core::format_size(s.total - s.kept).c_str(),
                   s.stream.c_str(), core::format_size(s.kept).c_str());
    }
  }
  LogPrinter printer(format, stream.has_value());
  int64_t after = 0;
  bool any = false;
  const auto print_new = [&] {
    const auto chunks = store.output(id, attempt, stream, after);
    if (!chunks.empty()) {
      after = chunks.back().id;
      any = true;
      printer.print(chunks);
    }
  };
  if (!a.follow) {
    print_new();
  } else {
    follow(store, ctx, attempt, id, print_new);
  }
  if (!any) {
    std::fprintf(stderr, "taskq: task %lld attempt %lld has no output%s\n",
                 static_cast<long long>(id), static_cast<long long>(attempt),
                 stream ? (" on " + *stream).c_str() : "");
  }
}

} // namespace

void register_logs(CLI::App& app, Context& ctx) {
  auto a = std::make_shared<LogsArgs>();
  CLI::App* logs = add_command(
      app, "logs",
      "Print what task ID's handler printed (kept by run --keep-output): "
      "the latest attempt's stdout to stdout and stderr to stderr, in the "
      "order printed",
      "taskq logs 42 --follow");
  logs->add_option("id", a->id, "task id")->required()->type_name("ID");
  logs->add_option("--attempt", a->attempt,
                   "attempt N (1 is the first; default: the latest)")
      ->type_name("N");
  auto* out =
      logs->add_flag("--stdout", a->only_stdout, "only stdout (to stdout)");
  auto* err =
      logs->add_flag("--stderr", a->only_stderr, "only stderr (to stdout)");
  out->excludes(err);
  logs->add_flag("-f,--follow", a->follow,
                 "print new output as it comes, until the attempt ends");
  logs->callback([a, &ctx] { run_logs(*a, ctx); });
}

} // namespace taskq::cli
