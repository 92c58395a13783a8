#pragma once

#include "cli/context.hpp"
#include "cli/entry.hpp"
#include "core/error.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace taskq::cli {

// Adds subcommand `name` that also accepts the global options (--db,
// --worker, -o) after its own arguments.
CLI::App* add_command(CLI::App& parent, const std::string& name,
                      const std::string& description,
                      const std::string& example);

// The error-policy options shared by `add` and `queue set`.
struct PolicyArgs {
  std::optional<int64_t> max_errors;
  OptText error_window, retry_delay, backoff, max_delay;
};
void add_policy_options(CLI::App* cmd, PolicyArgs& args);
// Validates the options (usage errors) into overrides.
core::PolicyOverrides to_overrides(const PolicyArgs& args);

// Queue, schedule and gate names appear in shell scripts and tables: 1-128
// letters, digits and . _ : / - (usage error otherwise, naming `what`).
void check_name(const std::string& name, std::string_view what);
void check_queue_name(const std::string& name);

// The nearest of `names` to `word` (at most 2 edits away, or a name it
// begins, case ignored), "" when none is near.
std::string nearest_name(std::string_view word,
                         const std::vector<std::string>& names);

// A queue an operator names (kill --queue, list --queue, ...) that has no
// tasks, settings or history: not_found, naming the nearest queue there is
// ("no queue 'jbos': ...; did you mean 'jobs'?").
void require_queue(storage::TaskStore& store, const std::string& queue);

// The same for queues a worker waits on (run, lease), which may rightly
// start before the first `add`: a one-line note on stderr per unknown
// queue, then nothing. Notes::typos (-q) says only the notes on a likely
// typo (a name of 3 or more characters one slip from a known queue's: a
// letter changed, added or left out, two swapped): a typo is a mistake on
// the command line, which -q does not hide; a queue before its first task
// is normal.
enum class Notes { all, typos };
void note_unknown_queues(storage::TaskStore& store,
                         const std::vector<std::string>& queues,
                         Notes notes = Notes::all);

// `queue pause/set` of a queue that no task, setting, schedule, gate or
// history names: when it is a likely typo of one that is (as for
// Notes::typos), not_found with "did you mean", unless `create`
// (--create); else it is made, said on stderr (with the nearest name).
void check_new_queue(storage::TaskStore& store, const std::string& queue,
                     bool create);

// `taskq run thumbs ./handler.sh`: a forgotten -- makes the handler a
// second queue. A queue word that is a path (./, ../, /), or, without --,
// names no queue the database knows and names a file here or a program on
// $PATH, is a usage error naming the command line meant (taskq run thumbs
// -- ./handler.sh); a number that names no queue, one naming `retry`.
void check_not_a_program(const std::vector<std::string>& words, Context& ctx);

// `--state a,b`: state names, `running` or `ready`, separated by commas
// (usage error for an empty or unknown one).
std::vector<std::string> parse_states(const std::string& text);

// The payload of --payload JSON or --text STR (at most one), checked and
// minified; std::nullopt when neither is given.
std::optional<std::string> payload_arg(const OptText& payload,
                                       const OptText& text);

// One function per command group (cli/cmd_<group>.cpp); a worker's
// commands one each (cli/cmd_work.cpp), the commonest invocations.
void register_produce(CLI::App& app, Context& ctx); // add
void register_lease(CLI::App& app, Context& ctx);
void register_heartbeat(CLI::App& app, Context& ctx);
void register_done(CLI::App& app, Context& ctx);
void register_fail(CLI::App& app, Context& ctx);
void register_operate(CLI::App& app, Context& ctx); // pause, kill, ...
void register_inspect(CLI::App& app, Context& ctx); // show, list, ...
void register_queue(CLI::App& app, Context& ctx);   // queue ...
void register_db(CLI::App& app, Context& ctx);      // db ...
void register_completion(CLI::App& app, Context& ctx);
void register_run(CLI::App& app, Context& ctx);      // run, wait, progress
void register_schedule(CLI::App& app, Context& ctx); // schedule, gate, tick
void register_events(CLI::App& app, Context& ctx);   // events
void register_tx(CLI::App& app, Context& ctx);       // tx
void register_transfer(CLI::App& app, Context& ctx); // export, import
void register_flow(CLI::App& app, Context& ctx);     // flow ...
void register_top(CLI::App& app, Context& ctx);      // top
void register_logs(CLI::App& app, Context& ctx);     // logs
void register_serve(CLI::App& app, Context& ctx);    // serve (web/)

// Where the subcommand's name is in argv (0 when none).
int subcommand_index(int argc, char** argv);
// Before CLI11 parses: a command or group subcommand that does not exist is
// named as such (a usage error, with the nearest name when there is one).
void check_command_words(CLI::App& app, int argc, char** argv);
// A CLI11 parse error as one line that names the command and points to
// its help.
std::string parse_error_message(CLI::App& app, const CLI::ParseError& e,
                                const std::vector<std::string>& given);

} // namespace taskq::cli
