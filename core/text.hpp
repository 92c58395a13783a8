#pragma once

#include <string>
#include <string_view>

namespace taskq::core {

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
