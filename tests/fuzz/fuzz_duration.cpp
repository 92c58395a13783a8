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

bool is_space(char c) {
  return c == ' ';
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c;
}

// The grammar read independently: `N` (seconds) or `N unit`... with units
// w d h m s ms (exactly so) or their words (in any case), each unit at most
// once and largest first, spaces allowed before a unit and between pairs, N
// with up to nine digits after a point when the value is whole
// milliseconds; at most 100 years.
std::optional<int64_t> reference(std::string_view text) {
  struct Named {
    std::string_view name;
    size_t unit;
  };
  constexpr std::array<int64_t, 6> unit_ms{604'800'000, 86'400'000, 3'600'000,
                                           60'000,      1'000,      1};
  constexpr std::array<Named, 6> short_names{
      {{"w", 0}, {"d", 1}, {"h", 2}, {"m", 3}, {"s", 4}, {"ms", 5}}};
  constexpr std::array<Named, 19> words{{
      {"wk", 0},   {"wks", 0},    {"week", 0},    {"weeks", 0},   {"day", 1},
      {"days", 1}, {"hr", 2},     {"hrs", 2},     {"hour", 2},    {"hours", 2},
      {"min", 3},  {"mins", 3},   {"minute", 3},  {"minutes", 3}, {"sec", 4},
      {"secs", 4}, {"second", 4}, {"seconds", 4}, {"msec", 5},
  }};
  constexpr std::array<Named, 3> more_words{
      {{"msecs", 5}, {"millisecond", 5}, {"milliseconds", 5}}};
  const auto find_unit = [&](std::string_view name) -> std::optional<size_t> {
    for (const auto& n : short_names) {
      if (n.name == name) {
        return n.unit;
      }
    }
    std::string folded;
    for (const char c : name) {
      folded += lower(c);
    }
    for (const auto& n : words) {
      if (n.name == folded) {
        return n.unit;
      }
    }
    for (const auto& n : more_words) {
      if (n.name == folded) {
        return n.unit;
      }
    }
    return std::nullopt;
  };
  if (text.empty() || is_space(text.front()) || is_space(text.back())) {
    return std::nullopt;
  }
  __int128 total = 0;
  size_t pos = 0;
  size_t next_unit = 0;
  bool bare = true;
  while (pos < text.size()) {
    __int128 n = 0;
    __int128 scale = 1;
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
    if (pos < text.size() && text[pos] == '.') {
      const size_t point = ++pos;
      for (; pos < text.size() && is_digit(text[pos]); ++pos) {
        if (pos - point == 9) {
          return std::nullopt; // a tenth digit after the point
        }
        n = n * 10 + (text[pos] - '0');
        scale *= 10;
      }
      if (pos == point) {
        return std::nullopt;
      }
    }
    if (pos == text.size() && bare) {
      if ((n * 1000) % scale != 0) {
        return std::nullopt;
      }
      total = n * 1000 / scale;
      break;
    }
    bare = false;
    while (pos < text.size() && is_space(text[pos])) {
      ++pos;
    }
    size_t end = pos;
    while (end < text.size() && !is_digit(text[end]) && !is_space(text[end])
           && text[end] != '.') {
      ++end;
    }
    const auto u = find_unit(text.substr(pos, end - pos));
    if (!u || *u < next_unit) {
      return std::nullopt;
    }
    const __int128 part = n * unit_ms[*u];
    if (part % scale != 0) {
      return std::nullopt;
    }
    total += part / scale;
    if (total > k_max_ms) {
      return std::nullopt;
    }
    next_unit = *u + 1;
    pos = end;
    while (pos < text.size() && is_space(text[pos])) {
      ++pos;
    }
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
