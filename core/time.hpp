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

// The times taskq keeps: years 0000 to 9999, the years RFC 3339 writes.
// Every time that enters the database is within these, inclusive.
inline constexpr Time k_min_time{Millis(-62'167'219'200'000)}; // 0000-01-01
inline constexpr Time k_max_time{Millis(253'402'300'799'999)}; // 9999-12-31
                                                               // 23:59:59.999
constexpr bool in_range(Time t) {
  return t >= k_min_time && t <= k_max_time;
}

// `t + d` when `t` and the sum are both within years 0000-9999, else
// std::nullopt (never overflows, whatever `d` is).
std::optional<Time> add_checked(Time t, Millis d);

// Parses an RFC 3339 date-time: `2026-11-21T08:00:00Z`, lower-case `t`/`z`
// or a space separator, an optional fraction (digits beyond milliseconds are
// truncated) and a `Z` or `+HH:MM`/`-HH:MM` offset. The date must exist
// (2026-02-29 is refused) and the offset is required. std::nullopt when
// malformed, or when the UTC instant is outside years 0000-9999
// (`9999-12-31T23:59:59-23:59` is in year 10000).
std::optional<Time> parse_time(std::string_view text);

// Formats as RFC 3339 UTC: `2026-11-21T08:00:00Z`, with `.mmm` only when the
// milliseconds are not zero. Defined for any count of milliseconds: outside
// years 0000-9999 the year is written in full with its sign
// (`10000-01-01T00:00:00Z`, `-0001-12-31T23:59:59.999Z`), which parse_time
// refuses.
std::string format_time(Time t);

// How a table shows time `t` to a person at `now`: `now` within a second
// either way, else the distance in its largest whole unit (s, m, h, d,
// truncated): `3m ago` in the past, `in 2h` in the future.
std::string format_relative(Time t, Time now);

// A length of time for a table, in whole seconds and at most its two
// largest units: `0s`, `45s`, `3m12s`, `2h`, `2h5m`, `3d4h`. Negative
// lengths (a clock that went back) read as `0s`.
std::string format_elapsed(Millis d);

// Milliseconds since the Unix epoch, and back.
inline int64_t to_unix_ms(Time t) {
  return t.time_since_epoch().count();
}
inline Time from_unix_ms(int64_t ms) {
  return Time(Millis(ms));
}

} // namespace taskq::core
