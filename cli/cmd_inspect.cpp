// Reading commands: show, list, stats, why.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/bytes.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/suggestion.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>

namespace taskq::cli {
namespace {

// A Prometheus label value, escaped as the text format wants.
std::string prom_label(const std::string& value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// One metric family: HELP, TYPE, then a sample per queue.
void print_family(const std::vector<storage::QueueMetrics>& queues,
                  const char* name, const char* type, const char* help,
                  const std::function<void(const storage::QueueMetrics&,
                                           const std::string&)>& samples) {
  std::printf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  for (const auto& m : queues) {
    samples(m, "queue=\"" + prom_label(m.stats.queue) + "\"");
  }
}

// Flows per state: every state once there is a flow, so that each series
// is always there; no samples before (as queues have none before a task).
void print_flow_metrics(
    const std::vector<std::pair<std::string, int64_t>>& flows) {
  std::puts("# HELP taskq_flows Flows per state.");
  std::puts("# TYPE taskq_flows gauge");
  int64_t total = 0;
  for (const auto& [state, n] : flows) {
    total += n;
  }
  for (const auto& [state, n] : total == 0 ? decltype(flows){} : flows) {
    std::printf("taskq_flows{state=\"%s\"} %lld\n", state.c_str(),
                static_cast<long long>(n));
  }
}

void print_metrics(const std::vector<storage::QueueMetrics>& queues) {
  print_family(queues, "taskq_tasks", "gauge", "Tasks per queue and state.",
               [](const storage::QueueMetrics& m, const std::string& q) {
                 const auto& s = m.stats;
                 for (const auto& [state, n] :
                      {std::pair{"runnable", s.runnable},
                       {"sleeping", s.sleeping},
                       {"paused", s.paused},
                       {"completed", s.completed},
                       {"failed", s.failed},
                       {"killed", s.killed}}) {
                   std::printf("taskq_tasks{%s,state=\"%s\"} %lld\n", q.c_str(),
                               state, static_cast<long long>(n));
                 }
               });
  const auto gauge = [&](const char* name, const char* help,
                         int64_t storage::QueueStats::*field) {
    print_family(queues, name, "gauge", help,
                 [&](const storage::QueueMetrics& m, const std::string& q) {
                   std::printf("%s{%s} %lld\n", name, q.c_str(),
                               static_cast<long long>(m.stats.*field));
                 });
  };
  gauge("taskq_ready", "Tasks eligible now: due, not leased.",
        &storage::QueueStats::ready);
  gauge("taskq_running", "Tasks leased with a live lease.",
        &storage::QueueStats::running);
  print_family(
      queues, "taskq_oldest_ready_seconds", "gauge",
      "Seconds the oldest ready task has been due (0 when none is ready).",
      [](const storage::QueueMetrics& m, const std::string& q) {
        const double age =
            m.stats.oldest_ready_age
                ? static_cast<double>(m.stats.oldest_ready_age->count())
                      / 1000.0
                : 0.0;
        std::printf("taskq_oldest_ready_seconds{%s} %.3f\n", q.c_str(), age);
      });
  print_family(queues, "taskq_errors_total", "counter",
               "Errors reported by workers (taskq fail), ever.",
               [](const storage::QueueMetrics& m, const std::string& q) {
                 std::printf("taskq_errors_total{%s} %lld\n", q.c_str(),
                             static_cast<long long>(m.errors_total));
               });
  print_family(queues, "taskq_leases_expired_total", "counter",
               "Leases that ran out before their worker finished, ever.",
               [](const storage::QueueMetrics& m, const std::string& q) {
                 std::printf("taskq_leases_expired_total{%s} %lld\n", q.c_str(),
                             static_cast<long long>(m.leases_expired_total));
               });
}

struct ListOptions {
  std::optional<std::string> queue;
  std::optional<std::string> state;
  std::vector<std::string> match;
  std::optional<int64_t> limit;
  bool newest = false;
  bool wide = false;
};

// When `list --state failed` finds none but tasks failed their last
// attempt and wait to be retried, says so on stderr with the command that
// lists them (its words shell-quoted as needed).
void note_erred(storage::TaskStore& store, const ListOptions& o,
                const storage::Selector& sel, core::Time now) {
  storage::Selector erred = sel;
  erred.states = {"erred"};
  erred.limit.reset();
  int64_t waiting = 0;
  for (const auto& t : store.list(erred, now)) {
    waiting += core::is_terminal(t.state) ? 0 : 1;
  }
  if (waiting == 0) {
    return;
  }
  std::vector<std::string> argv = {"list", "--state", "erred"};
  if (o.queue) {
    argv.insert(argv.end(), {"--queue", *o.queue});
  }
  for (const auto& m : o.match) {
    argv.insert(argv.end(), {"--match", m});
  }
  std::fflush(stdout); // after the table, in a log of both
  std::fprintf(stderr,
               "taskq: no task has failed for good; %lld failed %s last "
               "attempt and %s to be retried: %s\n",
               static_cast<long long>(waiting), waiting == 1 ? "its" : "their",
               waiting == 1 ? "waits" : "wait", core::suggest(argv).c_str());
}

// While a table is wider than `width`, its rightmost column that says
// nothing (0 or - in every row) goes: stats fits the terminal where it can,
// and -o json keeps every field.
void drop_quiet_columns(std::vector<std::string>& header,
                        std::vector<std::vector<std::string>>& rows,
                        size_t width) {
  const auto too_wide = [&] {
    size_t total = 0;
    for (size_t i = 0; i < header.size(); ++i) {
      size_t w = display_width(header[i]);
      for (const auto& r : rows) {
        w = std::max(w, display_width(r[i]));
      }
      total += w + (i + 1 < header.size() ? 2 : 0);
    }
    return total > width;
  };
  for (size_t i = header.size(); i > 1 && too_wide(); --i) {
    const size_t c = i - 1;
    const bool quiet =
        std::all_of(rows.begin(), rows.end(),
                    [c](const auto& r) { return r[c] == "0" || r[c] == "-"; });
    if (quiet) {
      header.erase(header.begin() + static_cast<std::ptrdiff_t>(c));
      for (auto& r : rows) {
        r.erase(r.begin() + static_cast<std::ptrdiff_t>(c));
      }
    }
  }
}

void run_list(const ListOptions& o, Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json, Format::id});
  storage::Selector sel;
  if (o.queue) {
    check_queue_name(*o.queue);
  }
  sel.queue = o.queue;
  if (o.state) {
    sel.states = parse_states(*o.state);
  }
  sel.newest = o.newest;
  sel.match = parse_patterns(o.match);
  if (o.limit && *o.limit < 1) {
    throw Error(ErrorKind::usage, "--limit must be at least 1");
  }
  sel.limit = o.limit;
  const core::Time now = ctx.now();
  auto& store = ctx.store(storage::OpenMode::read);
  if (sel.queue && format == Format::table) { // for a reader, not a pipe
    note_unknown_queues(store, {*sel.queue}); // empty, and says why
  }
  const auto tasks = store.list(sel, now);
  if (format == Format::table) {
    print_task_table(tasks, now, {o.wide});
    if (tasks.empty()
        && std::find(sel.states.begin(), sel.states.end(), "failed")
               != sel.states.end()) {
      note_erred(store, o, sel, now);
    }
    return;
  }
  for (const auto& t : tasks) {
    if (format == Format::json) {
      print_task_json(t, now);
    } else {
      std::printf("%lld\n", static_cast<long long>(t.id));
    }
  }
}

void run_stats(const std::optional<std::string>& queue, Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json});
  if (queue) {
    check_queue_name(*queue);
  }
  const core::Time now = ctx.now();
  auto& store = ctx.store(storage::OpenMode::read);
  if (queue && format == Format::table) {
    note_unknown_queues(store, {*queue});
  }
  const auto stats = store.stats(queue, now);
  // Flows by state, when there are any (and no --queue: flows span queues).
  std::vector<std::pair<std::string, int64_t>> flows;
  if (!queue) {
    flows = store.flow_counts();
  }
  int64_t flow_total = 0;
  for (const auto& [state, n] : flows) {
    flow_total += n;
  }
  if (format == Format::json) {
    for (const auto& s : stats) {
      Json j;
      j["queue"] = s.queue;
      j["runnable"] = s.runnable;
      j["sleeping"] = s.sleeping;
      j["paused"] = s.paused;
      j["completed"] = s.completed;
      j["failed"] = s.failed;
      j["killed"] = s.killed;
      j["running"] = s.running;
      j["ready"] = s.ready;
      j["delayed"] = s.delayed;
      j["oldest_ready_seconds"] =
          s.oldest_ready_age
              ? Json(static_cast<double>(s.oldest_ready_age->count()) / 1000.0)
              : Json(nullptr);
      j["completed_last_minute"] = s.completed_last_minute;
      j["completed_last_hour"] = s.completed_last_hour;
      print_json(j);
    }
    if (flow_total > 0) {
      Json counts = Json::object();
      for (const auto& [state, n] : flows) {
        counts[state] = n;
      }
      print_json(Json{{"flows", counts}});
    }
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : stats) {
    rows.push_back({s.queue, std::to_string(s.ready), std::to_string(s.running),
                    std::to_string(s.delayed), std::to_string(s.sleeping),
                    std::to_string(s.paused), std::to_string(s.completed),
                    std::to_string(s.failed), std::to_string(s.killed),
                    s.oldest_ready_age ? core::format_duration(
                        std::chrono::duration_cast<std::chrono::seconds>(
                            *s.oldest_ready_age))
                                       : "-",
                    std::to_string(s.completed_last_minute),
                    std::to_string(s.completed_last_hour)});
  }
  std::vector<std::string> header{
      "QUEUE",     "READY",  "RUNNING", "DELAYED",      "SLEEPING", "PAUSED",
      "COMPLETED", "FAILED", "KILLED",  "OLDEST_READY", "DONE_1M",  "DONE_1H"};
  drop_quiet_columns(header, rows, table_width());
  print_table(header, rows);
  if (flow_total > 0) {
    rows.clear();
    for (const auto& [state, n] : flows) {
      rows.push_back({state, std::to_string(n)});
    }
    std::puts("");
    print_table({"FLOWS", "COUNT"}, rows);
  }
}

} // namespace

void register_inspect(CLI::App& app, Context& ctx) {
  auto sid = std::make_shared<std::string>();
  CLI::App* show = add_command(
      app, "show", "Show a task with its error history and event log",
      "taskq show 42 -o json");
  show->add_option("id", *sid, "task id")->required()->type_name("ID");
  show->callback([sid, &ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    const core::Time now = ctx.now();
    auto& store = ctx.store(storage::OpenMode::read);
    const auto detail = store.show(parse_id(*sid));
    // Which attempts have output (taskq logs), and how much.
    const auto sizes = store.output_sizes(detail.task.id);
    if (format == Format::json) {
      std::string text = task_json(detail.task, now, &detail.events);
      text.pop_back(); // its closing '}'
      text += ",\"output\":[";
      for (const auto& o : sizes) {
        text += text.back() == '[' ? "" : ",";
        text += ObjectWriter()
                    .field("attempt", o.attempt)
                    .field("stream", o.stream)
                    .field("kept", o.kept)
                    .field("printed", o.total)
                    .finish();
      }
      text += "]}\n";
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      print_task_detail(detail, now);
      if (!sizes.empty()) {
        std::printf("\noutput (%zu):\n", sizes.size());
        std::vector<std::vector<std::string>> rows;
        for (const auto& o : sizes) {
          rows.push_back({"  " + std::to_string(o.attempt), o.stream,
                          core::format_size(o.kept),
                          core::format_size(o.total)});
        }
        print_table({"  ATTEMPT", "STREAM", "KEPT", "PRINTED"}, rows);
      }
    }
  });

  auto lo = std::make_shared<ListOptions>();
  CLI::App* list = add_command(
      app, "list",
      "List tasks, oldest first (running ones with worker and elapsed time, "
      "failed ones with their last error)",
      "taskq list --state failed,killed --newest --limit 10");
  list->add_option("--queue", lo->queue, "only QUEUE")->type_name("QUEUE");
  list->add_option("--state", lo->state,
                   "only these states, comma-separated: runnable, sleeping, "
                   "paused, completed, failed, killed, running (leased), "
                   "ready (eligible) or erred (last attempt failed)")
      ->type_name("S,...");
  list->add_option("--match", lo->match,
                   "only tasks with labels matching K=V (repeatable)")
      ->type_name("K=V");
  list->add_option("--limit", lo->limit, "at most N tasks")->type_name("N");
  list->add_flag("--newest", lo->newest, "newest first (default: oldest)");
  list->add_flag("--wide", lo->wide,
                 "every column, nothing cut (default: fit $COLUMNS, the "
                 "terminal or 80 columns)");
  list->callback([lo, &ctx] { run_list(*lo, ctx); });

  auto sq = std::make_shared<std::optional<std::string>>();
  CLI::App* stats = add_command(
      app, "stats",
      "Per queue: counts per state, running, ready, delayed, oldest ready "
      "age, completions in the last minute and hour",
      "taskq stats --queue thumbs");
  stats->add_option("--queue", *sq, "only QUEUE")->type_name("QUEUE");
  stats->callback([sq, &ctx] { run_stats(*sq, ctx); });

  add_command(app, "metrics",
              "Print Prometheus metrics (text exposition): tasks per queue "
              "and state, ready, running, oldest ready age, errors, expired "
              "leases",
              "cd /var/lib/node_exporter   # the textfile collector's folder\n"
              "  taskq metrics >taskq.prom.$$ && mv taskq.prom.$$ taskq.prom")
      ->callback([&ctx] {
        if (ctx.output_option && *ctx.output_option != "table") {
          throw Error(ErrorKind::usage,
                      "metrics prints Prometheus text only; for JSON, use "
                      "taskq stats -o json");
        }
        auto& store = ctx.store(storage::OpenMode::read);
        print_metrics(store.metrics(ctx.now()));
        print_flow_metrics(store.flow_counts());
      });

  auto since = std::make_shared<OptText>();
  CLI::App* workers = add_command(
      app, "workers",
      "List the workers seen recently: those holding a lease now, or that "
      "leased, completed or failed a task within --since (default 1h), with "
      "their tasks and last heartbeat",
      "taskq workers -o json | jq -r '.worker'");
  workers->add_option("--since", *since, "seen within DUR (default 1h)")
      ->type_name("DUR");
  workers->callback([since, &ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json, Format::id});
    const core::Time now = ctx.now();
    const auto within =
        parse_duration_arg(*since, "--since").value_or(std::chrono::hours(1));
    const auto seen =
        ctx.store(storage::OpenMode::read).workers(now - within, now);
    if (format == Format::id) {
      for (const auto& w : seen) {
        std::puts(w.name.c_str());
      }
      return;
    }
    const auto opt_time = [](const std::optional<core::Time>& t) {
      return t ? Json(core::format_time(*t)) : Json(nullptr);
    };
    if (format == Format::json) {
      for (const auto& w : seen) {
        Json running = Json::array();
        for (const auto& t : w.running) {
          running.push_back({{"id", t.id},
                             {"queue", t.queue},
                             {"started_at", opt_time(t.started_at)},
                             {"expires_at", core::format_time(t.expires_at)}});
        }
        print_json(Json{{"worker", w.name},
                        {"running", running},
                        {"last_seen", core::format_time(w.last_seen)},
                        {"last_heartbeat", opt_time(w.last_heartbeat)}});
      }
      return;
    }
    const TableTimes times = table_times(now);
    std::vector<std::vector<std::string>> rows;
    for (const auto& w : seen) {
      std::string tasks, queues;
      for (const auto& t : w.running) {
        tasks += (tasks.empty() ? "" : ",") + std::to_string(t.id);
        if (("," + queues + ",").find("," + t.queue + ",")
            == std::string::npos) {
          queues += (queues.empty() ? "" : ",") + t.queue;
        }
      }
      rows.push_back({w.name, std::to_string(w.running.size()),
                      tasks.empty() ? "-" : tasks,
                      queues.empty() ? "-" : queues,
                      w.last_heartbeat ? times(*w.last_heartbeat) : "-",
                      times(w.last_seen)});
    }
    print_table({"WORKER", "RUNNING", "TASKS", "QUEUES", "HEARTBEAT", "SEEN"},
                rows);
  });

  auto wid = std::make_shared<std::string>();
  CLI::App* why = add_command(app, "why",
                              "Say why a task is not running now, one line "
                              "per reason",
                              "taskq why 42");
  why->add_option("id", *wid, "task id")->required()->type_name("ID");
  why->callback([wid, &ctx] {
    const Format format =
        ctx.format(Format::table, {Format::table, Format::json});
    const int64_t id = parse_id(*wid);
    auto& store = ctx.store(storage::OpenMode::read);
    const auto reasons = store.why(id, ctx.now(), ctx.worker());
    if (format == Format::json) {
      const auto line = flow_line(store.find(id));
      print_json(Json{{"id", id},
                      {"eligible", reasons.empty()},
                      {"reasons", reasons},
                      {"flow", line ? Json(*line) : Json(nullptr)}});
      return;
    }
    if (const auto line = flow_line(store.find(id))) {
      std::puts(line->c_str());
    }
    if (reasons.empty()) {
      std::printf("task %lld is eligible: the next lease of its queue can "
                  "take it\n",
                  static_cast<long long>(id));
    }
    for (const auto& r : reasons) {
      std::puts(r.c_str());
    }
  });
}

} // namespace taskq::cli
