#pragma once

#include "core/time.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace taskq::core {

// Parses a duration: a bare number of seconds (`90`, `1.5`), or one or
// more number-unit pairs with units w, d, h, m, s, ms in that order, each at
// most once (`90s`, `5m`, `1h30m`, `2d`, `1w`, `1500ms`). A unit may also be
// spelt as a word in any case (`5min`, `5 minutes`, `2 Hours`, `1wk`), with
// spaces before it and between pairs, and a number may have a fraction
// (`1.5h`) that comes to whole milliseconds. Negative values, empty text,
// leading or trailing space, unknown units and totals beyond 100 years are
// refused with std::nullopt. Zero (`0`, `0s`) is allowed.
std::optional<Millis> parse_duration(std::string_view text);

// Formats the shortest form parse_duration reads back exactly: `1h30m`,
// `2d`, `45s`, `1500ms` → `1s500ms`, zero → `0s`. Negative → `-` prefix.
std::string format_duration(Millis d);

// Whether `word` names a unit parse_duration reads (`m`, `minutes`, ...):
// such a word where a task id was expected is a duration left unquoted.
bool is_duration_unit(std::string_view word);

} // namespace taskq::core
