#pragma once

#include "core/task.hpp"
#include "storage/task_store.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::cli {

using Json = nlohmann::ordered_json;

// Compact JSON text of `value`; invalid UTF-8 in strings is replaced.
std::string dump_json(const Json& value);

// Writes a JSON object field by field; raw() embeds JSON text as it is, so
// a stored payload keeps every digit. Keys are plain words (not escaped).
class ObjectWriter {
public:
  ObjectWriter& field(std::string_view key, const Json& value) {
    return raw(key, dump_json(value));
  }
  // The same text as field() gives for a number, a string (null when
  // absent) and labels, without building a Json value: task_json runs
  // once a task for `run --stream`.
  ObjectWriter& number(std::string_view key, int64_t value);
  ObjectWriter& number_or_null(std::string_view key,
                               const std::optional<int64_t>& value);
  ObjectWriter& text(std::string_view key, std::string_view value);
  ObjectWriter& text_or_null(std::string_view key,
                             const std::optional<std::string>& value);
  ObjectWriter& labels(std::string_view key, const core::Labels& value);
  ObjectWriter& raw(std::string_view key, std::string_view json) {
    m_out += m_out.empty() ? '{' : ',';
    m_out += '"';
    m_out += key;
    m_out += "\":";
    m_out += json;
    return *this;
  }
  std::string finish() {
    m_out += m_out.empty() ? "{}" : "}";
    return std::move(m_out);
  }

private:
  std::string m_out;
};

// The task's JSON form of SPEC §2 as one line of text (`lease` is null
// unless live at `now`), with `events` appended when given. The payload,
// checkpoint and result are embedded as stored, so numbers keep every digit.
std::string task_json(const core::Task& task, core::Time now,
                      const std::vector<core::Event>* events = nullptr);
void print_task_json(const core::Task& task, core::Time now,
                     const std::vector<core::Event>* events = nullptr);

// Writes one compact JSON value and a newline to stdout.
void print_json(const Json& value);

// `lease -o env` and the environment of `run`'s handlers. Pure functions,
// which tests/fuzz calls; their contract:
// - shell_quote(text) is one single-quoted POSIX shell word whose value is
//   exactly `text` (each ' written as '\''), for any bytes except NUL,
//   which no shell variable can hold: NUL bytes are left out, so the result
//   stays eval-safe (the callers never pass one: see payload_env_value).
// - env_lines(task) is the text `lease -o env` prints: one
//   `export NAME=VALUE` line per variable, each VALUE shell_quote()d (or a
//   decimal number), and nothing else; so after
//   `sh -c 'eval "$out"; printf %s "$TASKQ_PAYLOAD"'` the output is exactly
//   payload_env_value(task.payload), for any stored payload.
// - payload_env_value(json), for a valid minified JSON text `json` (as
//   stored): the decoded string when `json` is a JSON string whose value
//   holds no NUL (\u0000); otherwise `json` itself, the JSON text, like
//   every non-string payload. TASKQ_PAYLOAD is this, in `lease -o env` and
//   in `run`'s environment alike. (A JSON string that is not valid throws
//   nlohmann::json::parse_error; stored payloads passed core::json_error.)
std::string shell_quote(std::string_view text);
// An argv as one line a POSIX shell reads back as the same words: each
// word as it is when it holds only letters, digits and %+,-./:=@_, else
// shell_quote()d.
std::string command_line(const std::vector<std::string>& argv);
std::string payload_env_value(const std::string& payload_json);
std::string env_lines(const core::Task& task);
// Writes env_lines(task) to stdout.
void print_env(const core::Task& task);
// For an atom's task, the line that names its flow and atom: "it is the
// execute task of atom 'build' of flow 3".
std::optional<std::string> flow_line(const std::optional<core::Task>& task);
// An atom's task: TASKQ_FLOW, TASKQ_ATOM, TASKQ_ACTION and TASKQ_ARGS
// (SPEC §3), as (name, value); empty for other tasks.
std::vector<std::pair<std::string, std::string>>
flow_env(const core::Task& task);
// The task's sync state (from its schedule) as a JSON object, {} when none:
// TASKQ_SYNC.
std::string sync_json(const core::Task& task);
// The payload as a handler reads it on stdin: a JSON string's contents
// (NULs and all), else its JSON text.
std::string payload_text(const std::string& payload_json);

// The display state: `running` for a runnable task with a live lease.
std::string display_state(const core::Task& task, core::Time now);

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

void print_task_table(const std::vector<core::Task>& tasks, core::Time now);
void print_task_detail(const storage::TaskDetail& detail, core::Time now);

} // namespace taskq::cli
