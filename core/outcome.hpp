#pragma once

#include "core/time.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace taskq::core {

// How a handler process run by `taskq run` ended.
struct ChildExit {
  bool signaled = false; // killed by a signal (`code` is its number)
  int code = 0;          // the exit status, or the signal number
};

// Why `run` stopped a handler before it ended by itself, if it did.
enum class StopCause {
  none,     // it ended by itself
  timeout,  // it ran past --timeout
  shutdown, // `run` itself was asked to stop (SIGINT/SIGTERM)
  revoked,  // an operator's message revoked its lease
};

enum class Verdict {
  complete, // `done`
  release,  // give the task back untouched
  fail,     // report `error` to the error policy
  none,     // write nothing: the lease is no longer ours
};

struct Outcome {
  Verdict verdict = Verdict::none;
  std::string error; // with Verdict::fail
};

// The most bytes a handler's error (`exit status 3: ` and its stderr tail,
// doc/reference/commands.md#run) takes when stored.
inline constexpr size_t k_max_error_bytes = 2000;

// A handler's end (doc/reference/commands.md#run): exit 0 completes, 75
// releases, any other exit or a signal fails with the status and the tail of
// its stderr, the whole at most k_max_error_bytes of valid UTF-8 (the tail
// cut at its front, on a character). A handler stopped at --timeout fails with
// `timed out after DUR`; one stopped by a shutdown of `run` is released unless
// it still exited 0; one whose lease an operator revoked gets nothing written,
// since the task is already in the state the operator asked for.
Outcome judge(const ChildExit& exit, StopCause cause,
              std::optional<Millis> timeout, std::string_view stderr_tail);

// `SIGKILL` for 9, or `signal N` for a number without a name.
std::string signal_name(int signal);
// A signal by name (`USR1`, `SIGUSR1`, any case) or number (`10`);
// std::nullopt for anything else.
std::optional<int> parse_signal(std::string_view text);

// Keeps the last lines written to a stream, within a byte bound, for an
// error message: "the tail of stderr".
class OutputTail {
public:
  static constexpr size_t k_max_lines = 5;
  static constexpr size_t k_max_bytes = k_max_error_bytes;

  void append(std::string_view data);
  // The last k_max_lines non-blank lines, joined by '\n', trailing
  // whitespace removed, valid UTF-8 (stray bytes become U+FFFD), and at
  // most k_max_bytes bytes after that repair (cut at the front, on a
  // character). The same however the output was split into append() calls.
  std::string text() const;

private:
  std::string m_buffer; // the last 2 * k_max_bytes bytes, roughly
};

} // namespace taskq::core
