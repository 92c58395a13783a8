// The environment a handler of `run` gets, and the text `lease -o env`
// prints: pure functions of a task (tests/fuzz/fuzz_env checks them).
#pragma once

#include "core/task.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskq::core {

// Contract:
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
std::string env_lines(const Task& task);
// The payload as a handler reads it on stdin: a JSON string's contents
// (NULs and all), else its JSON text.
std::string payload_text(const std::string& payload_json);
// An atom's task: TASKQ_FLOW, TASKQ_ATOM, TASKQ_ACTION and TASKQ_ARGS, as
// (name, value); empty for other tasks.
std::vector<std::pair<std::string, std::string>> flow_env(const Task& task);
// The task's sync state (from its schedule) as a JSON object, {} when none:
// TASKQ_SYNC.
std::string sync_json(const Task& task);

// Which handler an environment is for: one started per task, or a
// `run --stream` handler that serves many tasks (and gets TASKQ_HANDLER).
enum class HandlerKind { per_task, stream };

// What a handler inherits of `run`'s environment `envp` (KEY=VALUE
// strings, null-terminated, as `environ`): all of it but the variables
// `run` sets itself, whose inherited values are dropped. A per-task
// handler's inherited TASKQ_HANDLER is kept; a stream handler's is not.
std::vector<std::string> inherited_environment(const char* const* envp,
                                               HandlerKind kind);

// Linux refuses to start a program whose environment holds one string of
// more than 128 KiB (MAX_ARG_STRLEN, counting its NUL): execve fails with
// E2BIG, so every attempt of the task would fail the same way.
constexpr size_t k_max_env_entry = 128 * 1024 - 1;

// A variable left out of a handler's environment, being too long for one.
struct LeftOut {
  std::string name;
  size_t bytes = 0;
};

struct TaskEnvironment {
  std::vector<std::string> env; // the whole environment, KEY=VALUE
  std::vector<LeftOut> left_out;
};

// A per-task handler's environment: `inherited`, then TASKQ_ID,
// TASKQ_LEASE, TASKQ_QUEUE, TASKQ_ATTEMPT, TASKQ_PAYLOAD (payload_env_value),
// TASKQ_CHECKPOINT (when there is one), TASKQ_SYNC, an atom's flow_env,
// TASKQ_DB and TASKQ_WORKER. A payload, checkpoint, sync state or flow
// variable too large for the environment is left out rather than failing
// the task: the payload is on stdin whatever its size, and `taskq show`
// has the rest.
TaskEnvironment task_environment(const Task& task,
                                 std::vector<std::string> inherited,
                                 std::string_view db_path,
                                 std::string_view worker);

// The line `run` prints on stderr (with its newline) for a variable left
// out of task `id`'s environment.
std::string left_out_message(int64_t id, const LeftOut& what);

// A stream handler's environment: `inherited`, TASKQ_DB, TASKQ_WORKER and
// TASKQ_HANDLER (its number, from 1).
std::vector<std::string> stream_environment(std::vector<std::string> inherited,
                                            std::string_view db_path,
                                            std::string_view worker,
                                            int handler);

} // namespace taskq::core
