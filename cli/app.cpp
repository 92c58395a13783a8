#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
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

// An error is one line of text, whatever the input it quotes: control
// characters (a newline would split the message, an escape sequence would
// drive the terminal) and bytes that are not UTF-8 are shown escaped, as
// \n, \t, \r, \xNN or \u0080-\u009f.
std::string printable(std::string_view text) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += text[i++];
      continue;
    }
    if (byte == '\n' || byte == '\t' || byte == '\r') {
      out += byte == '\n' ? "\\n" : byte == '\t' ? "\\t" : "\\r";
      ++i;
      continue;
    }
    size_t length = 0;
    if (byte >= 0xc2 && byte <= 0xf4) {
      length = byte < 0xe0 ? 2 : byte < 0xf0 ? 3 : 4;
      if (!core::is_valid_utf8(text.substr(i, length))) {
        length = 0;
      }
    }
    if (length == 2 && byte == 0xc2
        && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      const auto c1 = static_cast<unsigned char>(text[i + 1]);
      out += "\\u00";
      out += k_hex[c1 >> 4];
      out += k_hex[c1 & 0xf];
      i += 2;
    } else if (length > 0) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out += "\\x";
      out += k_hex[byte >> 4];
      out += k_hex[byte & 0xf];
      ++i;
    }
  }
  return out;
}

} // namespace

void print_error(std::string_view message) {
  const std::string line = "taskq: " + printable(message) + "\n";
  std::fputs(line.c_str(), stderr);
}

namespace {

// Edit distance, for suggesting the command a typo meant.
size_t distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return out;
}

// The nearest of `names` to `word` (at most 2 edits away, or a name it
// begins), "" when none is near.
std::string nearest(std::string_view word,
                    const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = 3; // suggest only what is at most 2 edits away
  const std::string typed = lower(word);
  for (const std::string& name : names) {
    if (typed.empty()) {
      break;
    }
    const size_t d = distance(typed, name);
    if (d < best_distance || (best.empty() && name.rfind(typed, 0) == 0)) {
      best = name;
      best_distance = std::min(d, best_distance);
    }
  }
  return best;
}

// "<what>; did you mean '<best>'?", else "<what> (see taskq <path>--help)".
std::string with_suggestion(const std::string& what, const std::string& best,
                            const std::string& path) {
  if (!best.empty()) {
    return what + "; did you mean '" + best + "'?";
  }
  return what + " (see taskq " + path + "--help)";
}

// "unknown command 'ad'; did you mean 'add'?" for a word that names no
// subcommand of `parent` (whose own name, if any, is `prefix`).
[[noreturn]] void unknown_command(CLI::App& parent, std::string_view word,
                                  const std::string& prefix) {
  std::vector<std::string> names;
  for (const CLI::App* sub : parent.get_subcommands({})) {
    names.push_back(sub->get_name());
  }
  const std::string best = nearest(word, names);
  throw Error(
      ErrorKind::usage,
      with_suggestion("unknown command '" + prefix + std::string(word) + "'",
                      best.empty() ? "" : prefix + best, prefix));
}

// The option names a command takes: its own and those of the commands it
// is under (global options such as --db work after the command too).
std::vector<std::string> option_names(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (; cmd != nullptr; cmd = cmd->get_parent()) {
    for (const CLI::Option* opt : cmd->get_options()) {
      for (const std::string& l : opt->get_lnames()) {
        names.push_back("--" + l);
      }
      for (const std::string& s : opt->get_snames()) {
        names.push_back("-" + s);
      }
    }
  }
  return names;
}

// "unknown option '--stat' for list; did you mean '--state'?" for `arg`
// (as typed: --name, --name=value, -x or -xVALUE) given to `cmd` (whose
// path after "taskq " is `path`, "" for the top level).
std::string unknown_option(const CLI::App* cmd, std::string_view arg,
                           const std::string& path) {
  std::string name(arg.substr(0, arg.find('=')));
  const bool is_short = name.size() > 1 && name[1] != '-';
  if (is_short) {
    name = name.substr(0, 2);
  }
  std::string best;
  const auto names = option_names(cmd);
  if (is_short) {
    // One letter is one edit from every other: only a change of case.
    for (const std::string& n : names) {
      if (n.size() == 2 && lower(n) == lower(name)) {
        best = n;
      }
    }
  } else {
    std::vector<std::string> longs;
    for (const std::string& n : names) {
      if (n.size() > 2) {
        longs.push_back(n.substr(2));
      }
    }
    best = nearest(name.substr(2), longs);
    if (!best.empty()) {
      best = "--" + best;
    }
  }
  const std::string where =
      path.empty() ? "" : " for " + path.substr(0, path.size() - 1);
  return with_suggestion("unknown option '" + name + "'" + where, best, path);
}

// Whether argv[i] is a global option that takes the next word as its value.
bool takes_value(std::string_view arg) {
  return arg == "--db" || arg == "--worker" || arg == "-o" || arg == "--output";
}

// The first word from argv[from] on that is neither an option nor the
// value of a global option (argc when none).
int next_word(int from, int argc, char** argv) {
  for (int i = from; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--") {
      return argc;
    }
    if (takes_value(arg)) {
      ++i;
    } else if (arg.empty() || arg.front() != '-') {
      return i;
    }
  }
  return argc;
}

// Where the subcommand's name is in argv (0 when none).
int subcommand_index(int argc, char** argv) {
  const int i = next_word(1, argc, argv);
  return i < argc ? i : 0;
}

// Before CLI11 parses: a command or group subcommand that does not exist is
// named as such (CLI11 would only say that a subcommand is required).
void check_command_words(CLI::App& app, int argc, char** argv) {
  const int first = next_word(1, argc, argv);
  for (int i = 1; i < first && i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--") {
      break;
    }
    if (takes_value(arg)) {
      ++i;
      continue;
    }
    const std::string_view name = arg.substr(0, arg.find('='));
    const bool global = name == "--db" || name == "--worker"
                        || name == "--output" || name == "--help"
                        || name == "--version" || arg == "-h"
                        || arg.rfind("-o", 0) == 0;
    if (!global) {
      throw Error(ErrorKind::usage, unknown_option(&app, arg, ""));
    }
  }
  if (first >= argc) {
    return;
  }
  CLI::App* cmd = nullptr;
  try {
    cmd = app.get_subcommand(argv[first]);
  } catch (const CLI::OptionNotFound&) {
    unknown_command(app, argv[first], "");
  }
  if (cmd->get_subcommands({}).empty()) {
    return;
  }
  const int second = next_word(first + 1, argc, argv);
  if (second < argc) {
    try {
      cmd->get_subcommand(argv[second]);
    } catch (const CLI::OptionNotFound&) {
      unknown_command(*cmd, argv[second], cmd->get_name() + " ");
    }
  }
}

// The command line's deepest (sub)command CLI11 got to, as typed after
// "taskq " ("" for the top level, else e.g. "queue set ").
CLI::App* deepest(CLI::App& app, std::string& path) {
  CLI::App* cur = &app;
  for (;;) {
    const auto subs = cur->get_subcommands();
    if (subs.empty()) {
      return cur;
    }
    cur = subs.front();
    path += cur->get_name() + " ";
  }
}

// A CLI11 parse error as one line that names the command and points to
// its help.
std::string parse_error_message(CLI::App& app, const CLI::ParseError& e) {
  std::string path;
  CLI::App* cmd = deepest(app, path);
  const std::string help = " (see taskq " + path + "--help)";
  std::string what = e.what();
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr
      && what == "A subcommand is required") {
    if (cmd == &app) {
      return "a command is required" + help;
    }
    std::string names;
    for (const CLI::App* sub : cmd->get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    return path.substr(0, path.size() - 1) + " needs a subcommand: " + names
           + help;
  }
  // CLI11's "The following argument was not expected: X" (the words in
  // reverse order when there are several): name them in order instead.
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    const std::vector<std::string> left = app.remaining();
    const std::string where =
        path.empty() ? "" : " for " + path.substr(0, path.size() - 1);
    if (!left.empty() && left.front().size() > 1
        && left.front().front() == '-') {
      return unknown_option(cmd, left.front(), path);
    }
    if (!left.empty()) {
      what = left.size() == 1 ? "unexpected argument" : "unexpected arguments";
      for (const std::string& arg : left) {
        what += " '" + arg + "'";
      }
      what += where;
    }
  }
  return what + help;
}

// Help text: a usage line of our own where CLI11's cannot say it (run's
// `-- CMD [ARG...]`), else CLI11's.
class HelpFormatter : public CLI::Formatter {
public:
  std::map<const CLI::App*, std::string> usages;

  std::string make_usage(const CLI::App* app, std::string name) const override {
    if (const auto it = usages.find(app); it != usages.end()) {
      return "Usage: " + it->second + "\n";
    }
    return CLI::Formatter::make_usage(app, std::move(name));
  }
};

// Whether `cmd` has an option whose value is of the kind `type` (DUR, TIME).
bool takes_type(const CLI::App* cmd, std::string_view type) {
  for (const CLI::Option* opt : cmd->get_options()) {
    if (opt->get_type_name().find(type) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// Every command's help ends with the global options, and with the forms
// of DUR and TIME when it takes one.
void add_help_footers(CLI::App& cmd) {
  for (CLI::App* sub : cmd.get_subcommands({})) {
    std::string footer = sub->get_footer();
    footer += footer.empty() ? "" : "\n\n";
    footer +=
        "Global options (before or after the command):\n"
        "  --db PATH           database file or postgresql:// URL (default: "
        "$TASKQ_DB, else $XDG_DATA_HOME/taskq/taskq.db)\n"
        "  -o,--output FORMAT  table, json (JSON Lines for lists), id, or env "
        "(lease)\n"
        "  --worker NAME       worker name (default: $TASKQ_WORKER, else "
        "HOSTNAME:PID)";
    if (takes_type(sub, "DUR")) {
      footer += "\n\nDUR: 90s, 5m, 1h30m, 2d, 1w, 1500ms or a number of "
                "seconds (units w, d, h, m, s, ms in that order)";
    }
    if (takes_type(sub, "TIME")) {
      footer += std::string(takes_type(sub, "DUR") ? "\n" : "\n\n")
                + "TIME: RFC 3339, like 2026-11-24T09:00:00Z or "
                  "2026-11-24T10:00:00+01:00";
    }
    sub->footer(footer);
    add_help_footers(*sub);
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

// The command groups, in the order `taskq --help` lists them, with the
// top-level commands each registers (" name name ").
struct Group {
  void (*add)(CLI::App& app, Context& ctx);
  std::string_view names;
};
constexpr Group k_groups[] = {
    {register_produce, " add "},
    {register_lease, " lease "},
    {register_heartbeat, " heartbeat "},
    {register_done, " done "},
    {register_fail, " fail "},
    {register_operate, " pause resume sleep kill release checkpoint send "
                       "retry requeue purge "},
    {register_inspect, " show list stats metrics workers why "},
    {register_queue, " queue "},
    {register_db, " db "},
    {register_completion, " completion __ids "},
    {register_run, " run wait progress "},
    {register_schedule, " schedule gate tick "},
    {register_events, " events "},
    {register_tx, " tx "},
    {register_transfer, " export import "},
    {register_flow, " flow "},
    {register_top, " top "},
    {register_logs, " logs "},
};

const Group* group_of(std::string_view word) {
  if (word.empty() || word.find(' ') != std::string_view::npos) {
    return nullptr;
  }
  for (const Group& g : k_groups) {
    const size_t at = g.names.find(word);
    if (at != std::string_view::npos && g.names[at - 1] == ' '
        && g.names[at + word.size()] == ' ') {
      return &g;
    }
  }
  return nullptr;
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
const Group* lone_group(int argc, char** argv) {
  const int sub = subcommand_index(argc, argv);
  const Group* group = sub > 0 ? group_of(argv[sub]) : nullptr;
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
    if (asks_help(arg)
        || (i != sub && (arg == "help" || group_of(arg) != nullptr))) {
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

// run() with the command tree of `only` (all groups when nullptr).
int run_tree(int argc, char** argv, const Group* only) {
  CLI::App app{"taskq: a task queue in one SQLite database.", "taskq"};
  app.footer("Example:\n  id=$(taskq add thumbs --payload '{\"file\":"
             "\"a.png\"}')\n  eval \"$(taskq lease thumbs -o env)\" || exit 0"
             "\n\nEach command explains itself: taskq help COMMAND (or taskq "
             "COMMAND --help)");
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
    only->add(app, ctx);
    if (!has_subcommand(app, argv[subcommand_index(argc, argv)])) {
      return run_tree(argc, argv, nullptr); // k_groups is out of date
    }
  } else {
    for (const Group& g : k_groups) {
      g.add(app, ctx);
    }
    // Listed for --help; rewrite_help() turns it into CMD --help.
    add_command(app, "help", "Print a command's help, as taskq CMD --help does",
                "taskq help queue set")
        ->add_option("command", help_words, "a command and its subcommand")
        ->type_name("CMD [SUB]");
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
    print_error(parse_error_message(app, e));
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
