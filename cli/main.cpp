#include "cli/commands.hpp"
#include "core/error.hpp"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>
#include <string_view>

namespace taskq::cli {
namespace {

int exit_code_for(ErrorKind kind) {
  switch (kind) {
  case ErrorKind::usage:
    return 2;
  case ErrorKind::not_found:
    return 3;
  case ErrorKind::conflict:
    return 4;
  case ErrorKind::unavailable:
    return 5;
  case ErrorKind::internal:
    return k_exit_failure;
  }
  return k_exit_failure;
}

// An empty value is malformed for every option but --text (an empty
// string is a fine payload) and --payload (whose own check explains
// --text): `--priority ''` must not mean 0. An integer option takes a
// plain decimal integer in int64's range: CLI11 alone would read
// 99999999999999999999 as the largest int64, and 0x10 as 16.
void check_option_values(CLI::App& app) {
  static const CLI::Validator non_empty(
      [](std::string& value) {
        return value.empty() ? std::string("an empty value is not allowed")
                             : std::string();
      },
      "", "non-empty");
  static const CLI::Validator integer(
      [](std::string& value) {
        int64_t n = 0;
        const char* end = value.data() + value.size();
        const auto [ptr, ec] = std::from_chars(value.data(), end, n);
        if (ec == std::errc::result_out_of_range) {
          return "'" + value + "' is out of range ("
                 + std::to_string(std::numeric_limits<int64_t>::min()) + " to "
                 + std::to_string(std::numeric_limits<int64_t>::max()) + ")";
        }
        return ec != std::errc() || ptr != end
                   ? "'" + value + "' is not an integer"
                   : std::string();
      },
      "", "integer");
  for (CLI::Option* opt : app.get_options()) {
    const std::string& name = opt->get_single_name();
    if (opt->get_type_size_max() > 0 && name != "text" && name != "payload"
        && name != "wait") {
      opt->check(non_empty);
    }
    const std::string type = opt->get_type_name();
    if (type == "INT" || type == "N") {
      opt->check(integer);
    }
  }
  for (CLI::App* sub : app.get_subcommands({})) {
    check_option_values(*sub);
  }
}

// Where the subcommand's name is in argv (0 when none): the first word
// that is neither an option nor the value of a global option.
int subcommand_index(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--db" || arg == "--worker" || arg == "-o"
        || arg == "--output") {
      ++i;
    } else if (arg.empty() || arg.front() != '-') {
      return i;
    }
  }
  return 0;
}

} // namespace

CLI::App* add_command(CLI::App& parent, const std::string& name,
                      const std::string& description,
                      const std::string& example) {
  CLI::App* cmd = parent.add_subcommand(name, description);
  cmd->fallthrough();
  if (!example.empty()) {
    cmd->footer("Example:\n  " + example);
  }
  return cmd;
}

int run(int argc, char** argv) {
  CLI::App app{"taskq: a task queue in one SQLite database.", "taskq"};
  app.footer("Example:\n  id=$(taskq add thumbs --payload '{\"file\":"
             "\"a.png\"}')\n  eval \"$(taskq lease thumbs -o env)\" || exit 0"
             "\n\nEach command explains itself: taskq COMMAND --help");
  app.require_subcommand(1);
  app.set_version_flag("--version", "taskq " TASKQ_VERSION);
  Context ctx;
  app.add_option("--db", ctx.db_option,
                 "database file (default: $TASKQ_DB, else "
                 "$XDG_DATA_HOME/taskq/taskq.db)")
      ->type_name("PATH");
  app.add_option("--worker", ctx.worker_option,
                 "worker name (default: $TASKQ_WORKER, else HOSTNAME:PID)")
      ->type_name("NAME");
  app.add_option("-o,--output", ctx.output_option,
                 "output format: table, json, id or env (lease)")
      ->type_name("FORMAT");

  register_produce(app, ctx);
  register_work(app, ctx);
  register_operate(app, ctx);
  register_inspect(app, ctx);
  register_queue(app, ctx);
  register_db(app, ctx);
  register_completion(app, ctx);
  register_run(app, ctx);
  register_schedule(app, ctx);
  register_events(app, ctx);
  register_tx(app, ctx);
  register_transfer(app, ctx);
  check_option_values(app);

  // `taskq run QUEUE... -- CMD ARG...`: what follows the -- is the
  // handler's argv, not taskq's, so it never reaches CLI11.
  const int sub = subcommand_index(argc, argv);
  if (sub > 0 && std::string_view(argv[sub]) == "run") {
    for (int i = sub + 1; i < argc; ++i) {
      if (std::string_view(argv[i]) == "--") {
        ctx.command.assign(argv + i + 1, argv + argc);
        argc = i;
        break;
      }
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "taskq: %s\n(see taskq --help)\n", e.what());
    return 2;
  }
  return ctx.exit_code;
}

} // namespace taskq::cli

int main(int argc, char** argv) {
  try {
    return taskq::cli::run(argc, argv);
  } catch (const taskq::Error& e) {
    std::fprintf(stderr, "taskq: %s\n", e.what());
    return taskq::cli::exit_code_for(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "taskq: internal error: %s\n", e.what());
    return taskq::cli::k_exit_failure;
  }
}
