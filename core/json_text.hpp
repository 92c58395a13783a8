#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskq::core {

// Why `text` is not exactly one JSON value as RFC 8259 defines it, or
// std::nullopt when it is. This is the check every JSON text from outside
// taskq passes (--payload, --payload-file, --result, --checkpoint, `add
// --jsonl` lines, `tx` documents, `import` lines, a handler's stdout).
//
// Contract (relied on by tests/fuzz):
// - Accepts exactly RFC 8259's grammar: one value, optionally surrounded by
//   space, tab, LF and CR; literals true/false/null in lower case; numbers
//   `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
// - Numbers are checked as text, never converted: 400 digits or 1e309
//   are valid.
// - Strings: no raw control character (below 0x20); escapes are
//   \" \\ \/ \b \f \n \r \t and \uXXXX; a \u escape of a surrogate must be
//   a high one (D800-DBFF) followed at once by an escaped low one
//   (DC00-DFFF) - a lone surrogate escape is refused; raw bytes are
//   well-formed UTF-8 (no overlong forms, no encoded surrogates, nothing
//   above U+10FFFF). \u0000 is valid.
// - A UTF-8 byte-order mark at the start is refused (RFC 8259 §8.1 lets a
//   parser refuse it; taskq would otherwise store it and print invalid
//   JSON).
// - No depth limit: it is iterative, with memory of one byte per open
//   container, so a 200,000-deep array is fine; it never recurses.
// - Linear time; the reason is one line of ASCII naming a 1-based byte
//   offset, never echoing the text.
std::optional<std::string> json_error(std::string_view text);
inline bool json_valid(std::string_view text) {
  return !json_error(text).has_value();
}

// Readers over JSON text that keep each value's exact bytes, so a payload
// taken from a larger document (`tx`, `import`) is stored as written: every
// digit of every number, every escape. Each requires well-formed JSON
// (check it first with json_error); on other text the
// results are unspecified but stay within `text`.

// The JSON type a value's first byte announces.
enum class JsonKind { object, array, string, number, literal };
JsonKind json_kind(std::string_view value);

// `text` without the white space around it.
std::string_view json_trim(std::string_view text);

// The members of an object, in document order: each key as its quoted
// JSON text (escapes not decoded) and its value's text, both trimmed.
std::vector<std::pair<std::string_view, std::string_view>>
json_members(std::string_view object);

// The items of an array, in order, each trimmed.
std::vector<std::string_view> json_items(std::string_view array);

// `text`, known to be valid JSON, without white space outside strings
// (numbers and strings kept exactly as written).
std::string minify_json(std::string_view text);
// The same into `out`, replacing its contents and reusing its buffer.
void minify_json_into(std::string_view text, std::string& out);

// A JSON number that is an integer (no fraction, no exponent) in int64's
// range; std::nullopt otherwise.
std::optional<int64_t> json_integer(std::string_view text);
// The contents of a JSON string (valid JSON); std::nullopt when `text` is
// not a string.
std::optional<std::string> json_string_value(std::string_view text);

} // namespace taskq::core
