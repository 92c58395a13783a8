#pragma once

#include "core/json_text.hpp"
#include "core/labels.hpp"
#include "core/time.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace taskq::cli {

// Exit codes (doc/reference/invocation.md#exit-codes) that are outcomes,
// not errors.
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_failure = 1;
inline constexpr int k_exit_task_failed = 6;
inline constexpr int k_exit_nothing = 75;

enum class Format { table, json, id, env };

// What every command shares: global options, the clock, the database.
// `now()` is read once per invocation (TASKQ_NOW or the system clock);
// the store's writes read live_now() once they hold the write lock.
class Context {
public:
  std::optional<std::string> db_option;     // --db
  std::optional<std::string> worker_option; // --worker
  std::optional<std::string> output_option; // -o/--output
  int exit_code = k_exit_ok;        // set by commands whose outcome is not 0
  std::vector<std::string> command; // `taskq run|add ... -- CMD ARG...`
  bool command_given = false;       // a `--` was given (CMD may be missing)
  // The command's words as typed, from its name on, `--` and all: what a
  // suggestion rebuilds so that it keeps every option the user gave.
  std::vector<std::string> typed;

  core::Time now();
  // For commands that run on (run, wait, progress, lease --wait): the time
  // now, read afresh at each call, unless TASKQ_NOW freezes it.
  core::Time live_now();
  // --db, else TASKQ_DB, else $XDG_DATA_HOME/taskq/taskq.db (falling back
  // to ~/.local/share/taskq/taskq.db).
  std::string db_path() const;
  // The worker name: --worker, TASKQ_WORKER, else HOSTNAME:PID.
  std::string worker() const;
  // Who an operator command is logged as: --worker, TASKQ_WORKER, else
  // USER@HOSTNAME.
  std::string actor() const;
  // The -o format, or `fallback` when none was given; a format not in
  // `allowed` is a usage error.
  Format format(Format fallback, std::initializer_list<Format> allowed) const;

  storage::TaskStore& store(storage::OpenMode mode);

private:
  std::optional<core::Time> m_now;
  std::unique_ptr<storage::TaskStore> m_store;
};

// An option's value; std::nullopt when the option was not given (an empty
// value is given, and malformed for most options).
using OptText = std::optional<std::string>;

// Argument parsing shared by the commands; each throws a usage Error that
// names `what` when the text is malformed. The OptText forms pass an absent
// option through as std::nullopt.
int64_t parse_id(const std::string& text);
std::vector<int64_t> parse_ids(const std::vector<std::string>& texts);
core::Millis parse_duration_arg(const std::string& text,
                                const std::string& what);
std::optional<core::Millis> parse_duration_arg(const OptText& text,
                                               const std::string& what);
core::Time parse_time_arg(const std::string& text, const std::string& what);
// `now + d` for option `what`; usage error when that leaves years
// 0000-9999, the times taskq keeps.
core::Time time_after(core::Time now, core::Millis d, const std::string& what);
std::optional<core::Time> parse_time_arg(const OptText& text,
                                         const std::string& what);
// Checks that `text` is one JSON value; returns it minified (whitespace
// outside strings removed; numbers and strings kept exactly as written).
std::string parse_json_arg(const std::string& text, const std::string& what);
std::optional<std::string> parse_json_arg(const OptText& text,
                                          const std::string& what);
// `text`, known to be valid JSON, without whitespace outside strings
// (core/json_text.hpp).
using core::minify_json;
using core::minify_json_into;
core::Labels parse_labels(const std::vector<std::string>& texts);
std::vector<core::LabelPattern>
parse_patterns(const std::vector<std::string>& texts);

// `--trigger a,b --trigger c` of add and schedule add: the gate keys of all,
// sorted and once each ("a,b,c"); std::nullopt when none is given. A bad
// key is a usage error naming it.
std::optional<std::string> parse_trigger(const std::vector<std::string>& texts);
// The whole contents of file `path`, or of stdin when it is `-` (usage
// error when it cannot be read).
std::string read_input(const std::string& path);
// Calls `look` until it returns true, waiting on the database's change feed
// between looks (never polling); false when `timeout` ran out first.
bool watch(storage::TaskStore& store, std::optional<core::Millis> timeout,
           const std::function<bool()>& look);
// A JSON string holding `text`.
std::string json_string(const std::string& text);

// The task id and lease token of a worker command: the given values, else
// TASKQ_ID and TASKQ_LEASE.
struct WorkerRef {
  int64_t id;
  std::string token;
};
WorkerRef worker_ref(const OptText& id_arg, const OptText& lease_arg);

} // namespace taskq::cli
