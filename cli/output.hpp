#pragma once

#include "core/handler_env.hpp"
#include "core/task.hpp"
#include "core/task_json.hpp"
#include "storage/task_store.hpp"
#include "worker/run.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskq::cli {

using core::dump_json;
using core::Json;
using core::ObjectWriter;
using core::task_json;
void print_task_json(const core::Task& task, core::Time now,
                     const std::vector<core::Event>* events = nullptr);

// Writes one compact JSON value and a newline to stdout.
void print_json(const Json& value);

// `lease -o env` and the environment of `run`'s handlers: pure functions
// of core/handler_env.hpp, whose contract tests/fuzz checks.
using core::command_line;
using core::env_lines;
using core::flow_env;
using core::payload_env_value;
using core::payload_text;
using core::shell_quote;
using core::sync_json;
// Writes env_lines(task) to stdout.
void print_env(const core::Task& task);
// For an atom's task, the line that names its flow and atom: "it is the
// execute task of atom 'build' of flow 3".
std::optional<std::string> flow_line(const std::optional<core::Task>& task);
// The display state: `running` for a runnable task with a live lease.
std::string display_state(const core::Task& task, core::Time now);

// What a table shows of what a task runs: its payload, or for a command
// task its command, shell-quoted after "$ ", or for a `--sh` one its line
// after "sh: " (and " < PAYLOAD" when it has one, the handler's stdin).
std::string what_it_runs(const core::Task& task);

// Whether the task's last attempt failed, whatever its state now: it has
// an error no older than its latest lease (lease_started, which list
// loads for tasks with errors) and is neither completed nor leased now.
// `list --state erred` selects the same tasks.
bool last_attempt_failed(const core::Task& task, core::Time now);
// The error of a task whose last attempt failed: failure_text for a
// failed one, else its latest error; shortened to `width` (0: no limit).
std::string last_error_text(const core::Task& task, size_t width = 0);
// What `show` and top say of a task's attempts: "2", "2 of 3", or when the
// attempt limit's count started afresh since its first run (a resume, a
// move, a lease given back with output kept) also the attempts the limit
// counts: "4 (1 of 3 counted)", "4 (1 counted)".
std::string attempts_text(const core::Task& task);
// How long the current lease's command has run: since its lease was
// taken, less the time it was frozen (a frozen one's time stops).
core::Millis running_time(const core::Task& task, core::Time now);

using core::failure_words;
using core::FailureWords;
// failure_words on one line: "exit status 3: oops (gave up after 1 error)",
// the cause shortened so that the whole fits `width` (0: no limit).
std::string failure_text(const core::Task& task, size_t width = 0);

// A finished task's exit ("0", "3", "SIGSEGV", "timeout"; "-" when not
// known), or that of the failed attempt of a task whose last attempt
// failed, and how long its last attempt ran ("-" when not known: it needs
// the task's lease_started).
std::pair<std::string, std::string> exit_and_took(const core::Task& t);

// How tables write times: relative to now (`3m ago`, `in 2h`) when stdout
// is a terminal, else RFC 3339 (as -o json always does). TASKQ_TIMES=
// relative or absolute decides instead (tests, scripts under `script`).
struct TableTimes {
  core::Time now;
  bool relative = false;
  std::string operator()(core::Time t) const {
    return relative ? core::format_relative(t, now) : core::format_time(t);
  }
};
TableTimes table_times(core::Time now);

// A human table with a header row; columns padded to the widest cell.
void print_table(const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows);

// The width a table fits (doc/reference/commands.md#list): $COLUMNS when
// it is a positive number, else the terminal's when stdout is one, else 80.
size_t table_width();

// The columns `s` takes on a terminal: its UTF-8 characters.
size_t display_width(const std::string& s);

// `text` on one line: newlines and tabs become spaces.
std::string one_line(std::string text);

// Shortens `text` to `width` characters (UTF-8 sequences, never cut in
// half) for a table cell, on one line, ending in "..." when cut.
std::string cell(std::string text, size_t width);

// How print_task_table lays out: fitted to table_width() (columns that say
// nothing dropped, then the least needed while too wide, the payload and
// error cut to share the rest), or `wide`: every column, nothing cut.
struct TableOptions {
  bool wide = false;
};
void print_task_table(const std::vector<core::Task>& tasks, core::Time now,
                      const TableOptions& opts = {});
void print_task_detail(const storage::TaskDetail& detail, core::Time now);

// The summary line `run` prints: "leased 4: 2 completed, 1 failed for good
// (task 7), 1 will retry at T (task 9), 0 released, 0 revoked".
std::string summary_line(const worker::RunSummary& s);

} // namespace taskq::cli
