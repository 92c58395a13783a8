// Durations (--for, --timeout, --backoff, ...): core::parse_duration agrees
// with a reference reading of its grammar, and format_duration prints every
// value in range as text that parses back to it.
#include "core/duration.hpp"

#include <array>
#include <chrono>
#include <string>

#include "fuzz.hpp"

namespace core = taskq::core;
using taskq::fuzz::as_text;
using taskq::fuzz::Bytes;

namespace {

constexpr int64_t k_max_ms =
    std::chrono::duration_cast<core::Millis>(std::chrono::years(100)).count();

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// The grammar read independently: `N` (seconds) or `N unit`... with units
// w d h m s ms, each at most once and largest first; at most 100 years.
std::optional<int64_t> reference(std::string_view text) {
  constexpr std::array<std::pair<std::string_view, int64_t>, 6> units{{
      {"w", 604'800'000},
      {"d", 86'400'000},
      {"h", 3'600'000},
      {"m", 60'000},
      {"s", 1'000},
      {"ms", 1},
  }};
  if (text.empty()) {
    return std::nullopt;
  }
  __int128 total = 0;
  size_t pos = 0;
  size_t next_unit = 0;
  bool bare = true;
  while (pos < text.size()) {
    __int128 n = 0;
    const size_t start = pos;
    for (; pos < text.size() && is_digit(text[pos]); ++pos) {
      n = n * 10 + (text[pos] - '0');
      if (n > k_max_ms) {
        n = k_max_ms + 1; // stays too large, without overflow
      }
    }
    if (pos == start) {
      return std::nullopt;
    }
    size_t end = pos;
    while (end < text.size() && !is_digit(text[end])) {
      ++end;
    }
    const auto unit = text.substr(pos, end - pos);
    if (unit.empty()) {
      if (!bare) {
        return std::nullopt; // a number without its unit after a pair
      }
      total = n * 1000;
      break;
    }
    bare = false;
    size_t u = 0;
    while (u < units.size() && units[u].first != unit) {
      ++u;
    }
    if (u == units.size() || u < next_unit) {
      return std::nullopt;
    }
    total += n * units[u].second;
    next_unit = u + 1;
    pos = end;
  }
  if (total > k_max_ms) {
    return std::nullopt;
  }
  return static_cast<int64_t>(total);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto text = as_text(data, size);

  // parse agrees with the reference; print(parse(x)) parses to the same
  // value and is the canonical text of that value.
  const auto parsed = core::parse_duration(text);
  const auto expected = reference(text);
  FUZZ_REQUIRE(parsed.has_value() == expected.has_value());
  if (parsed) {
    FUZZ_REQUIRE(parsed->count() == *expected);
    const std::string printed = core::format_duration(*parsed);
    FUZZ_REQUIRE(core::parse_duration(printed) == parsed);
    FUZZ_REQUIRE(core::format_duration(*core::parse_duration(printed))
                 == printed);
  }

  // Any value, printed: it parses back when in range, is refused when not.
  Bytes in(data, size);
  const auto ms = static_cast<int64_t>(in.u64());
  for (const int64_t v : {ms, ms % (k_max_ms + 1)}) {
    const std::string printed = core::format_duration(core::Millis(v));
    const auto back = core::parse_duration(printed);
    if (v >= 0 && v <= k_max_ms) {
      FUZZ_REQUIRE(back && back->count() == v);
    } else {
      FUZZ_REQUIRE(!back);
    }
  }
  return 0;
}
