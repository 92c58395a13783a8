#include "cli/command_table.hpp"
#include "cli/commands.hpp"
#include "cli/help.hpp"
#include "core/error.hpp"
#include "core/suggestion.hpp"
#include "core/text.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::cli {

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

namespace {

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

// `taskq help [CMD [SUB]]`: argv rewritten as `taskq [CMD [SUB]] --help`
// (global options kept); an unknown CMD gets its suggestion from
// check_command_words. The rewritten words live in `store`.
void rewrite_help(CLI::App& app, int& argc, char**& argv,
                  std::vector<char*>& store) {
  const int at = subcommand_index(argc, argv);
  if (at == 0 || std::string_view(argv[at]) != "help") {
    return;
  }
  store.assign(argv, argv + argc);
  store.erase(store.begin() + at);
  // The words after `help` must name commands: `taskq help list extra` is
  // not `taskq list extra --help`.
  const CLI::App* cmd = &app;
  for (size_t i = static_cast<size_t>(at); i < store.size(); ++i) {
    const std::string_view word(store[i]);
    if (!word.empty() && word.front() == '-') {
      continue;
    }
    if (cmd->get_subcommands({}).empty()) {
      throw Error(ErrorKind::usage, "taskq help takes a command and its "
                                    "subcommand, not '"
                                        + std::string(word) + "'");
    }
    try {
      cmd = cmd->get_subcommand(std::string(word));
    } catch (const CLI::OptionNotFound&) {
      break; // check_command_words names it
    }
  }
  static char help_flag[] = "--help";
  store.push_back(help_flag);
  argc = static_cast<int>(store.size());
  argv = store.data();
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

namespace {

using Register = void (*)(CLI::App& app, Context& ctx);

// The function that registers command `word` alone (with the others of its
// cli/cmd_*.cpp); nullptr when it needs the whole tree or is no command.
Register register_of(std::string_view word) {
  const CommandRow* row = command_row(word);
  return row != nullptr ? row->add : nullptr;
}

// Whether `arg` may ask CLI11 for help or the version (-h in a cluster of
// short flags too).
bool asks_help(std::string_view arg) {
  if (arg.rfind("--", 0) == 0) {
    return arg.rfind("--help", 0) == 0 || arg.rfind("--version", 0) == 0;
  }
  return arg.size() > 1 && arg.front() == '-'
         && arg.find('h') != std::string_view::npos;
}

// Start-up: building every command's options costs more than the rest of
// an `add`. The one group to register when argv names a command of it and
// nothing that needs the whole tree (help, --version, an unknown command,
// another command's name anywhere: CLI11 may take it as a command);
// nullptr for the whole tree. What the command then does and prints is the
// same either way.
Register lone_group(int argc, char** argv) {
  const int sub = subcommand_index(argc, argv);
  const Register group = sub > 0 ? register_of(argv[sub]) : nullptr;
  if (group == nullptr) {
    return nullptr;
  }
  const std::string_view name(argv[sub]);
  const bool runs_command = name == "run" || name == "add";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (i > sub && runs_command && arg == "--") {
      break; // CMD [ARG...]: never parsed
    }
    if (asks_help(arg) || (i != sub && command_row(arg) != nullptr)) {
      return nullptr;
    }
  }
  return group;
}

bool has_subcommand(CLI::App& app, std::string_view name) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == name) {
      return true;
    }
  }
  return false;
}

// The names of the commands `add` registers, hidden ones too.
std::vector<std::string> names_registered(Register add) {
  CLI::App app;
  Context ctx;
  add(app, ctx);
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) {
    names.push_back(sub->get_name());
  }
  return names;
}

// taskq __command-table (hidden): the commands of the tree CLI11 was given, one
// a line, `NAME<TAB>SUMMARY` in the order of `taskq --help`: what the
// completion scripts offer. Checks first that the table is the tree:
// every command has a row, every row a command, and each row's function
// registers its command alone (else start-up would build the whole tree
// for it); an internal error naming the first difference otherwise.
void add_commands_listing(CLI::App& app) {
  CLI::App* cmd = add_command(app, "__command-table",
                              "Print the commands shell completion offers", "");
  cmd->group("");
  cmd->callback([&app] {
    const auto fail = [](const std::string& why) {
      throw Error(ErrorKind::internal,
                  "the command table (cli/command_table.cpp) is not the "
                  "command tree: "
                      + why);
    };
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (command_row(sub->get_name()) == nullptr) {
        fail("'" + sub->get_name() + "' has no row");
      }
    }
    for (const CommandRow& row : command_table()) {
      const std::string name(row.name);
      if (app.get_subcommands(
                 [&](const CLI::App* sub) { return sub->get_name() == name; })
              .empty()) {
        fail("its row '" + name + "' is no command");
      }
      if (row.add != nullptr) {
        const auto names = names_registered(row.add);
        if (std::find(names.begin(), names.end(), name) == names.end()) {
          fail("the function of row '" + name + "' does not register it");
        }
      }
    }
    for (const CommandRow& row : command_table()) {
      if (!row.heading.empty()) {
        std::printf("%.*s\t%.*s\n", static_cast<int>(row.name.size()),
                    row.name.data(), static_cast<int>(row.summary.size()),
                    row.summary.data());
      }
    }
  });
}

// run() with the command tree of `only` (every command's when nullptr).
int run_tree(int argc, char** argv, Register only) {
  CLI::App app{"taskq: a task queue in one database (SQLite, or PostgreSQL).",
               "taskq"};
  app.footer(
      "Example:\n  taskq add jobs -- echo hello   # prints the new task's id\n"
      "  taskq run jobs --until-empty   # runs it (and every other), then "
      "exits\n  taskq list\n\nEach command explains itself: taskq help "
      "COMMAND (or taskq COMMAND --help)");
  app.require_subcommand(1);
  auto formatter = std::make_shared<HelpFormatter>();
  app.formatter(formatter);
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

  std::vector<std::string> help_words;
  if (only != nullptr) {
    only(app, ctx);
    if (!has_subcommand(app, argv[subcommand_index(argc, argv)])) {
      return run_tree(argc, argv, nullptr); // the table is out of date
    }
  } else {
    std::vector<Register> added;
    for (const CommandRow& row : command_table()) {
      if (row.add != nullptr
          && std::find(added.begin(), added.end(), row.add) == added.end()) {
        row.add(app, ctx);
        added.push_back(row.add);
      }
    }
    // Listed for --help; rewrite_help() turns it into CMD --help.
    add_command(app, "help", "Print a command's help, as taskq CMD --help does",
                "taskq help queue set")
        ->add_option("command", help_words, "a command and its subcommand")
        ->type_name("CMD [SUB]");
    add_commands_listing(app);
  }
  check_option_values(app);
  if (only == nullptr) { // help is shown from the whole tree only
    formatter->usages[app.get_subcommand("run")] =
        "taskq run [OPTIONS] QUEUE... [-- CMD [ARG...]]";
    formatter->usages[app.get_subcommand("add")] =
        "taskq add [OPTIONS] QUEUE [-- CMD [ARG...]]";
    add_help_footers(app);
  }
  std::vector<char*> help_argv;
  rewrite_help(app, argc, argv, help_argv);

  // `taskq run QUEUE... -- CMD ARG...` and `taskq add QUEUE -- CMD
  // ARG...`: what follows the -- is a program's argv, not taskq's, so it
  // never reaches CLI11.
  const int sub = subcommand_index(argc, argv);
  if (sub > 0) {
    ctx.typed.assign(argv + sub, argv + argc);
    // A suggestion acts on the database this command line named. A
    // password in a URL is never printed: it is shown as ***, so that the
    // pasted line fails to log in rather than act on another database.
    for (int i = 1; i < sub; ++i) {
      const std::string_view word(argv[i]);
      std::optional<std::string> db;
      if (word == "--db" && i + 1 < sub) {
        db = argv[i + 1];
      } else if (word.rfind("--db=", 0) == 0) {
        db = std::string(word.substr(5));
      }
      if (db) {
        core::set_suggestion_prefix({"--db", storage::redact_url(*db)});
      }
    }
  }
  if (sub > 0
      && (std::string_view(argv[sub]) == "run"
          || std::string_view(argv[sub]) == "add")) {
    for (int i = sub + 1; i < argc; ++i) {
      if (std::string_view(argv[i]) == "--") {
        ctx.command.assign(argv + i + 1, argv + argc);
        ctx.command_given = true;
        argc = i;
        break;
      }
    }
  }

  check_command_words(app, argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    print_error(parse_error_message(app, e, ctx.typed));
    return 2;
  } catch (const Error& e) {
    if (ctx.output_option == "env") {
      // `eval "$(taskq lease q -o env)" || exit` must fail on an error too
      // (a missing database), not eval nothing and carry on.
      std::printf("(exit %d)\n", exit_code_for(e.kind()));
    }
    throw;
  }
  return ctx.exit_code;
}

} // namespace

int run(int argc, char** argv) {
  return run_tree(argc, argv, lone_group(argc, argv));
}

} // namespace taskq::cli
