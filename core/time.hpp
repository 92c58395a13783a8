#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace taskq::core {

// All times are UTC instants with millisecond precision; durations likewise.
using Millis = std::chrono::milliseconds;
using Time = std::chrono::sys_time<Millis>;

// Parses an RFC 3339 date-time: `2026-11-21T08:00:00Z`, lower-case `t`/`z`
// or a space separator, an optional fraction (digits beyond milliseconds are
// truncated) and a `Z` or `+HH:MM`/`-HH:MM` offset. The date must exist
// (2026-02-29 is refused) and the offset is required. std::nullopt when
// malformed.
std::optional<Time> parse_time(std::string_view text);

// Formats as RFC 3339 UTC: `2026-11-21T08:00:00Z`, with `.mmm` only when the
// milliseconds are not zero.
std::string format_time(Time t);

// Milliseconds since the Unix epoch, and back.
inline int64_t to_unix_ms(Time t) {
  return t.time_since_epoch().count();
}
inline Time from_unix_ms(int64_t ms) {
  return Time(Millis(ms));
}

} // namespace taskq::core
