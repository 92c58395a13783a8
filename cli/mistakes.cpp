// The command line's mistakes as one line each: unknown commands and
// options with the nearest name (or the command another tool's word means),
// words CLI11 would misread (a split duration, a number where a command
// goes), and CLI11's parse errors reworded to name the command, with a
// suggestion rebuilt from what was typed (core/suggestion.hpp).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/duration.hpp"
#include "core/suggestion.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <array>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::cli {

namespace {

// Edit distance, for suggesting the command a typo meant: letters changed,
// added or left out, and two neighbours swapped (lsit for list) as one edit
// (the optimal string alignment distance), so a swap is not a tie with two
// changes (lsit and wait).
size_t distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) {
    d[i][0] = i;
  }
  for (size_t j = 0; j <= b.size(); ++j) {
    d[0][j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return out;
}

} // namespace

// The nearest of `names` to `word` (at most 2 edits away, or a name it
// begins), "" when none is near.
std::string nearest_name(std::string_view word,
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

namespace {

// "<what>; did you mean '<best>'?", else "<what> (see taskq <path>--help)".
std::string with_suggestion(const std::string& what, const std::string& best,
                            const std::string& path) {
  if (!best.empty()) {
    return what + "; did you mean '" + best + "'?";
  }
  return what + " (see taskq " + path + "--help)";
}

// Words users bring from tsp, nq, pueue, systemctl, git and other queues
// for what a taskq command does, checked before the edit distance, which
// would take `rm` for `db`, `rerun` for `run`, `start` for `stats` and
// `follow` for `flow`: what taskq calls it, as a question. These hints name
// command words in English ("'kill' or 'purge'"), not command lines to
// paste, so they are not suggestions (core/suggestion.hpp); `version`'s
// whole command line is one.
std::optional<std::string> habit_word(std::string_view word) {
  struct Habit {
    std::string_view word;
    std::string_view hint;
  };
  static constexpr std::string_view k_kill_or_purge =
      "did you mean 'kill' (stop tasks for good) or 'purge' (delete finished "
      "ones)?";
  static constexpr std::string_view k_add = "did you mean 'add'?";
  static constexpr std::string_view k_retry =
      "did you mean 'retry' (run an ended task again, or a sleeping one "
      "now)?";
  static constexpr std::string_view k_follow =
      "did you mean 'logs --follow' (a task's output), 'events --follow' "
      "or 'top'?";
  static constexpr std::string_view k_purge =
      "did you mean 'purge' (delete finished tasks)?";
  static constexpr std::array<Habit, 32> k_habits{{
      // removing: tsp -r, pueue remove/clean, git rm
      {"rm", k_kill_or_purge},
      {"remove", k_kill_or_purge},
      {"delete", k_kill_or_purge},
      {"del", k_kill_or_purge},
      {"clear", k_purge},
      {"clean", k_purge},
      {"prune", k_purge},
      {"cancel", "did you mean 'kill'?"},
      {"stop", "did you mean 'kill' (for good), 'pause' (until resumed) or "
               "'freeze' (where it is)?"},
      // adding: pueue add, nq, job queues' enqueue/submit/push
      {"enqueue", k_add},
      {"submit", k_add},
      {"push", k_add},
      // running again: pueue restart, systemctl restart
      {"rerun", k_retry},
      {"restart", k_retry},
      {"redo", k_retry},
      // starting: systemctl start, pueue start (resumes paused tasks)
      {"start", "did you mean 'run' (start a worker on a queue) or 'resume' "
                "(paused tasks)?"},
      {"work", "did you mean 'run' (start a worker on a queue)?"},
      {"unpause", "did you mean 'resume'?"},
      {"suspend", "did you mean 'freeze' (stop it where it is) or 'pause' "
                  "(stop it until resumed)?"},
      // watching: pueue follow/log, tail -f, watch
      {"follow", k_follow},
      {"watch", k_follow},
      {"tail", "did you mean 'logs' (--follow waits for more)?"},
      {"log", "did you mean 'logs'?"},
      {"output", "did you mean 'logs'?"},
      {"cat", "did you mean 'logs'?"},
      {"status", "did you mean 'list' (or 'stats', per queue)?"},
      {"ls", "did you mean 'list'?"},
      {"ps", "did you mean 'list'?"},
      {"jobs", "did you mean 'list'?"},
      {"info", "did you mean 'show'?"},
      {"inspect", "did you mean 'show'?"},
      {"history", "did you mean 'events'?"},
  }};
  const std::string typed = lower(word);
  if (typed == "version") {
    return "the version is: " + core::suggest({"--version"});
  }
  for (const auto& h : k_habits) {
    if (typed == h.word) {
      return std::string(h.hint);
    }
  }
  return std::nullopt;
}

// "unknown command 'ad'; did you mean 'add'?" for a word that names no
// subcommand of `parent` (whose own name, if any, is `prefix`).
[[noreturn]] void unknown_command(CLI::App& parent, std::string_view word,
                                  const std::string& prefix) {
  std::vector<std::string> names;
  for (const CLI::App* sub : parent.get_subcommands({})) {
    names.push_back(sub->get_name());
  }
  if (prefix.empty()) {
    if (const auto habit = habit_word(word)) {
      throw Error(ErrorKind::usage,
                  "unknown command '" + std::string(word) + "'; " + *habit);
    }
  }
  const std::string best = nearest_name(word, names);
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
    best = nearest_name(name.substr(2), longs);
    if (!best.empty()) {
      best = "--" + best;
    }
  }
  const std::string where =
      path.empty() ? "" : " for " + path.substr(0, path.size() - 1);
  return with_suggestion("unknown option '" + name + "'" + where, best, path);
}

// Whether `cmd` (or a command it is under) takes the option `name`.
bool has_option(const CLI::App* cmd, std::string_view name) {
  const auto names = option_names(cmd);
  return std::find(names.begin(), names.end(), name) != names.end();
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

} // namespace

// Where the subcommand's name is in argv (0 when none).
int subcommand_index(int argc, char** argv) {
  const int i = next_word(1, argc, argv);
  return i < argc ? i : 0;
}

// Before CLI11 parses: a command or group subcommand that does not exist is
// named as such (CLI11 would only say that a subcommand is required).
namespace {

bool is_number(std::string_view text) {
  const size_t point = text.find('.');
  const auto digits = [](std::string_view part) {
    return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) {
      return c >= '0' && c <= '9';
    });
  };
  return point == std::string_view::npos
             ? digits(text)
             : digits(text.substr(0, point)) && digits(text.substr(point + 1));
}

// Whether `name` (--for) is an option of `app` or a command under it that
// takes a duration.
bool takes_duration(const CLI::App& app, std::string_view name) {
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& l : opt->get_lnames()) {
      if (name == "--" + l && opt->get_type_name() == "DUR") {
        return true;
      }
    }
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (takes_duration(*sub, name)) {
      return true;
    }
  }
  return false;
}

// `--for 5 minutes`: an option that takes a duration, a number and a
// duration's unit as words of their own, which the shell split; refused
// with how to quote it, before the unit is taken for a task id or a queue.
// The hint is an option and its value, not a command line (not a
// suggestion, core/suggestion.hpp): its words are a number and a unit,
// which need no quoting but the one shown.
void check_split_durations(const CLI::App& app, int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string_view unit(argv[i]);
    if (unit == "--" || std::string_view(argv[i - 1]) == "--") {
      return;
    }
    if (!core::is_duration_unit(unit)) {
      continue;
    }
    std::string option;
    std::string number(argv[i - 1]);
    const size_t eq = number.find('=');
    if (number.rfind("--", 0) == 0 && eq != std::string::npos) {
      option = number.substr(0, eq);
      number = number.substr(eq + 1);
    } else if (std::string_view(argv[i - 2]).rfind("--", 0) == 0) {
      option = argv[i - 2];
    }
    if (option.empty() || !is_number(number) || !takes_duration(app, option)) {
      continue;
    }
    const std::string words = number + " " + std::string(unit);
    throw Error(ErrorKind::usage,
                "'" + option + " " + words + "': the shell split the duration;"
                    + " quote it: " + option + " '" + words + "' (or " + option
                    + " " + number + std::string(unit) + ")");
  }
}

} // namespace

void check_command_words(CLI::App& app, int argc, char** argv) {
  check_split_durations(app, argc, argv);
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

namespace {

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

} // namespace

// A CLI11 parse error as one line that names the command and points to
// its help.
std::string parse_error_message(CLI::App& app, const CLI::ParseError& e,
                                const std::vector<std::string>& given) {
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
      // `add jobs echo hi`: a command without the -- that marks it.
      // A one-word shell line (`add jobs 'cd /srv && make'`) is meant
      // for --sh: pasted after --, the shell would run the rest here.
      // A word with a control character would break the one-line
      // message: then the usage form is shown instead.
      const CLI::Option* queue = cmd->get_option_no_throw("queue");
      if (path == "add " && queue != nullptr && queue->count() > 0) {
        const auto args = core::add_args(queue->results().front(), left);
        const auto meant = core::rebuilt(
            given, left,
            std::vector<std::string>(args.begin() + 2, args.end()));
        return what + "; to add it as a task: "
               + (core::one_line(left) && meant
                      ? core::suggest(*meant)
                      : "taskq add QUEUE -- CMD [ARG...]");
      }
      // `stats jobs`: a queue's name where the command takes it as --queue.
      if (left.size() == 1 && has_option(cmd, "--queue")
          && core::one_line(left)) {
        const auto meant =
            core::rebuilt(given, left, {"--queue", left.front()});
        if (meant) {
          return what
                 + "; a queue is named with --queue: " + core::suggest(*meant);
        }
      }
    }
  }
  return what + help;
}

} // namespace taskq::cli
