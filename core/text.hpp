#pragma once

#include <string>
#include <string_view>

namespace taskq::core {

// The UTF-8 sequence at text[i]: its length, or what is wrong with it.
struct Utf8Sequence {
  enum class Problem {
    none,
    invalid,    // a continuation byte first, 0xf8..0xff, a bad follower
    cut_short,  // the text ends inside it
    overlong,   // a longer form than its code point needs
    surrogate,  // U+D800..U+DFFF
    beyond_max, // above U+10FFFF
  };
  size_t length = 0; // 0 unless problem is none
  Problem problem = Problem::none;
};
// `i` < text.size().
Utf8Sequence utf8_sequence(std::string_view text, size_t i);

// True when `text` is well-formed UTF-8: no stray continuation bytes, no
// truncated or overlong sequences, no surrogates, nothing above U+10FFFF.
// Everything taskq stores as JSON text must be.
bool is_valid_utf8(std::string_view text);

// True for well-formed UTF-8 without control characters (C0 and DEL): text
// that prints on one line, such as a label value or a --unique key.
bool is_plain_text(std::string_view text);

// `text` with each byte that is not part of a well-formed sequence replaced
// by U+FFFD, for text taskq did not write (a handler's stderr or stdout).
std::string to_valid_utf8(std::string_view text);

// True for a queue, schedule or gate name: 1-128 letters, digits and
// . _ : / -, so that it reads the same in shell scripts and tables.
bool is_valid_name(std::string_view name);

} // namespace taskq::core
