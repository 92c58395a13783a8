// The line protocol of `run --stream` handlers, read side: what one line a
// handler wrote on its stdout says. Pure functions (no I/O, no exceptions
// for bad input), exercised by tests/fuzz/fuzz_stream.
#pragma once

#include "core/time.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace taskq::core {

// A line a handler writes may hold at most this much (a result).
constexpr size_t k_max_handler_line = 16 * 1024 * 1024;
// How much of a bad line a message quotes.
constexpr size_t k_handler_quote = 200;

// The first k_handler_quote bytes of a line, as one printable line of
// valid UTF-8 (control characters as '?', "..." when cut).
std::string quote_line(std::string_view line);

// One line, without its newline, first read: blank lines are skipped; a
// line that is not a JSON object, or has no integer "id" (or a field given
// twice), is garbage; anything else is a message about task `id`.
struct HandlerLine {
  enum class Kind { blank, garbage, message } kind = Kind::blank;
  std::string why;       // garbage: "not a JSON object", "no \"id\""
  int64_t id = 0;        // message
  std::string_view body; // message: the object's text, trimmed
};
// A final carriage return is dropped first.
HandlerLine read_handler_line(std::string_view line);

enum class HandlerVerb { done, fail, release, heartbeat, checkpoint };

// What a message asks, read from its body. It names exactly one verb, or
// it is malformed and `verb` is empty. A verb whose value is malformed has
// `error` set: whether that matters is the caller's call (an answer about
// a cancelled task is ignored whatever it holds).
struct HandlerMessage {
  std::optional<HandlerVerb> verb;
  std::string error; // why the message is malformed; empty when it is not
  // done: the result, minified (none for null); checkpoint: the value,
  // minified; fail: the error text.
  std::optional<std::string> value;
  bool no_retry = false; // fail: "retry": false
  // release: the delay asked for; none means `run`'s --release-delay
  // ("release": true, or an object without "delay").
  std::optional<Millis> delay;
};
// `body` is a message's HandlerLine::body.
HandlerMessage read_handler_message(std::string_view body);

} // namespace taskq::core
