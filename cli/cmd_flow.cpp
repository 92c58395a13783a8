// Flows: flow submit|list|show|wait|suspend|resume|rerun
// (doc/flows.md#commands).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/flow.hpp"
#include "core/time.hpp"

#include <chrono>
#include <cstdio>
#include <memory>

namespace taskq::cli {
namespace {

int64_t parse_flow_id(const std::string& text) {
  try {
    return parse_id(text);
  } catch (const Error&) {
    throw Error(ErrorKind::usage,
                "invalid flow id '" + text + "': expected a positive integer");
  }
}

std::string summary_json(const storage::FlowSummary& f) {
  return ObjectWriter()
      .field("id", f.id)
      .field("name", f.name)
      .field("state", f.state)
      .field("created_at", core::format_time(f.created_at))
      .field("updated_at", core::format_time(f.updated_at))
      .finish();
}

void print_detail_json(const storage::FlowDetail& d) {
  Json atoms = Json::array();
  for (const auto& a : d.atoms) {
    Json j = {{"name", a.name},
              {"kind", a.kind},
              {"flow", a.flow},
              {"state", a.state},
              {"intention", a.intention},
              {"task", a.task ? Json(*a.task) : Json(nullptr)}};
    if (a.result) {
      j["result"] = Json::parse(*a.result);
    }
    if (a.failure) {
      j["failure"] = *a.failure;
    }
    if (a.history) {
      j["history"] = Json::parse(*a.history);
    }
    atoms.push_back(std::move(j));
  }
  Json events = Json::array();
  for (const auto& e : d.events) {
    Json j = {{"time", core::format_time(e.time)},
              {"name", e.name},
              {"kind", e.kind},
              {"state", e.state}};
    if (e.result) {
      j["result"] = Json::parse(*e.result);
    }
    events.push_back(std::move(j));
  }
  const std::string line =
      ObjectWriter()
          .field("id", d.flow.id)
          .field("name", d.flow.name)
          .field("state", d.flow.state)
          .raw("store", d.store)
          .field("created_at", core::format_time(d.flow.created_at))
          .field("updated_at", core::format_time(d.flow.updated_at))
          .field("atoms", atoms)
          .field("events", events)
          .finish();
  std::puts(line.c_str());
}

// A JSON value as a table cell: strings bare, the rest as JSON, cut short.
std::string cell(const std::optional<std::string>& json_text) {
  if (!json_text) {
    return "-";
  }
  const Json v = Json::parse(*json_text);
  std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  if (text.size() > 60) {
    text = text.substr(0, 57) + "...";
  }
  return text;
}

void print_detail_table(const storage::FlowDetail& d) {
  std::printf("flow %lld: %s  %s\n", static_cast<long long>(d.flow.id),
              d.flow.name.c_str(), d.flow.state.c_str());
  std::printf("store: %s\n\n", d.store.c_str());
  std::vector<std::vector<std::string>> rows;
  for (const auto& a : d.atoms) {
    rows.push_back({a.name, a.kind, a.flow, a.state, a.intention,
                    a.task ? std::to_string(*a.task) : "-",
                    a.failure ? *a.failure : cell(a.result)});
  }
  print_table(
      {"ATOM", "KIND", "FLOW", "STATE", "INTENTION", "TASK", "RESULT/FAILURE"},
      rows);
  rows.clear();
  for (const auto& e : d.events) {
    rows.push_back(
        {core::format_time(e.time), e.name, e.kind, e.state, cell(e.result)});
  }
  std::puts("");
  print_table({"TIME", "ELEMENT", "KIND", "STATE", "RESULT"}, rows);
}

void run_submit(const std::string& file, Context& ctx) {
  const Format format = ctx.format(Format::id, {Format::id, Format::json});
  const std::string document = read_input(file);
  const int64_t id = ctx.store(storage::OpenMode::write)
                         .submit_flow(document, ctx.now(), ctx.actor());
  if (format == Format::json) {
    print_json(Json{{"id", id}});
  } else {
    std::printf("%lld\n", static_cast<long long>(id));
  }
}

void run_list(const OptText& state, Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json, Format::id});
  if (state && !core::flow::parse_flow_state(*state)) {
    throw Error(ErrorKind::usage, "invalid --state '" + *state
                                      + "': expected PENDING, RUNNING, "
                                        "SUCCESS, FAILURE, REVERTED, "
                                        "SUSPENDING, SUSPENDED or RESUMING");
  }
  const auto flows = ctx.store(storage::OpenMode::read).flows(state);
  std::vector<std::vector<std::string>> rows;
  for (const auto& f : flows) {
    if (format == Format::json) {
      std::puts(summary_json(f).c_str());
    } else if (format == Format::id) {
      std::printf("%lld\n", static_cast<long long>(f.id));
    } else {
      rows.push_back({std::to_string(f.id), f.name, f.state,
                      core::format_time(f.updated_at)});
    }
  }
  if (format == Format::table) {
    print_table({"ID", "NAME", "STATE", "UPDATED"}, rows);
  }
}

void run_show(const std::string& id_arg, Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json});
  const int64_t id = parse_flow_id(id_arg);
  const auto detail = ctx.store(storage::OpenMode::read).flow(id);
  if (format == Format::json) {
    print_detail_json(detail);
  } else {
    print_detail_table(detail);
  }
}

void run_request(const std::string& id_arg, storage::FlowRequest req,
                 Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json});
  const int64_t id = parse_flow_id(id_arg);
  const auto reply =
      ctx.store(storage::OpenMode::update).flow_request(id, req, ctx.now());
  if (reply.ignored) {
    std::fprintf(stderr, "taskq: note: %s\n", reply.note.c_str());
  }
  if (format == Format::json) {
    print_json(
        Json{{"id", id}, {"state", reply.state}, {"ignored", reply.ignored}});
  } else {
    std::printf("flow %lld: %s\n", static_cast<long long>(id),
                reply.state.c_str());
  }
}

void run_wait(const std::string& id_arg, const OptText& timeout_arg,
              Context& ctx) {
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json});
  const int64_t id = parse_flow_id(id_arg);
  const auto timeout = parse_duration_arg(timeout_arg, "--timeout");
  auto& store = ctx.store(storage::OpenMode::read);
  storage::FlowSummary last;
  const bool finished = watch(store, timeout, [&] {
    const auto f = store.find_flow(id);
    if (!f) {
      throw Error(ErrorKind::not_found, "no flow " + std::to_string(id));
    }
    last = *f;
    const auto state = core::flow::parse_flow_state(f->state);
    return state && core::flow::is_final(*state);
  });
  if (!finished) {
    std::fprintf(stderr, "taskq: timed out after %s; flow %lld is %s\n",
                 core::format_duration(*timeout).c_str(),
                 static_cast<long long>(id), last.state.c_str());
    ctx.exit_code = k_exit_nothing;
    return;
  }
  if (format == Format::json) {
    std::puts(summary_json(last).c_str());
  } else {
    std::printf("%s\n", last.state.c_str());
  }
  ctx.exit_code =
      last.state == core::flow::to_string(core::flow::FlowState::success)
          ? k_exit_ok
          : k_exit_task_failed;
}

} // namespace

void register_flow(CLI::App& app, Context& ctx) {
  CLI::App* group = add_command(
      app, "flow",
      "Flows: graphs of atoms with data flow, revert and retry controllers "
      "(TaskFlow)",
      "taskq flow submit deploy.json");
  group->require_subcommand(1);

  auto file = std::make_shared<std::string>();
  CLI::App* submit =
      add_command(*group, "submit",
                  "Submit a flow document (JSON); prints the new flow's id",
                  "taskq flow submit deploy.json");
  submit->add_option("file", *file, "the document; - reads stdin")
      ->required()
      ->type_name("FILE|-");
  submit->callback([file, &ctx] { run_submit(*file, ctx); });

  auto state = std::make_shared<OptText>();
  CLI::App* list = add_command(*group, "list", "List flows",
                               "taskq flow list --state RUNNING");
  list->add_option("--state", *state, "only flows in this state")
      ->type_name("STATE");
  list->callback([state, &ctx] { run_list(*state, ctx); });

  auto show_id = std::make_shared<std::string>();
  CLI::App* show = add_command(
      *group, "show",
      "Show a flow: its store, each atom's state, intention, task and "
      "result, each controller's history, and its event history",
      "taskq flow show 3 -o json");
  show->add_option("id", *show_id, "flow id")->required()->type_name("ID");
  show->callback([show_id, &ctx] { run_show(*show_id, ctx); });

  auto wait_id = std::make_shared<std::string>();
  auto timeout = std::make_shared<OptText>();
  CLI::App* wait = add_command(
      *group, "wait",
      "Block until the flow finishes; exit 0 on SUCCESS, 6 on REVERTED or "
      "FAILURE, 75 on --timeout",
      "taskq flow wait 3 --timeout 10m");
  wait->add_option("id", *wait_id, "flow id")->required()->type_name("ID");
  wait->add_option("--timeout", *timeout, "give up after DUR (exit 75)")
      ->type_name("DUR");
  wait->callback(
      [wait_id, timeout, &ctx] { run_wait(*wait_id, *timeout, ctx); });

  struct Request {
    const char* name;
    const char* help;
    const char* example;
  };
  for (const Request& r :
       {Request{"suspend",
                "Suspend a RUNNING flow: nothing new is leased, running atoms "
                "finish, then it is SUSPENDED",
                "taskq flow suspend 3"},
        Request{"resume", "Resume a SUSPENDED flow", "taskq flow resume 3"},
        Request{"rerun",
                "Run a finished flow again: SUCCESS executes nothing unless "
                "--reset, REVERTED is reset first, FAILURE asks its "
                "controllers again",
                "taskq flow rerun 3 --reset"}}) {
    auto id = std::make_shared<std::string>();
    auto reset = std::make_shared<bool>(false);
    CLI::App* cmd = add_command(*group, r.name, r.help, r.example);
    cmd->add_option("id", *id, "flow id")->required()->type_name("ID");
    const std::string name = r.name;
    if (name == "rerun") {
      cmd->add_flag("--reset", *reset,
                    "reset every atom and the store first: run it all again");
    }
    cmd->callback([id, reset, name, &ctx] {
      const storage::FlowRequest req =
          name == "suspend"  ? storage::FlowRequest::suspend
          : name == "resume" ? storage::FlowRequest::resume
          : *reset           ? storage::FlowRequest::rerun_reset
                             : storage::FlowRequest::rerun;
      run_request(*id, req, ctx);
    });
  }
}

} // namespace taskq::cli
