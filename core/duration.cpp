#include "core/duration.hpp"

#include <array>
#include <cstdint>

namespace taskq::core {

namespace {

struct Unit {
  std::string_view suffix;
  int64_t ms;
};

// Largest first: the order parse_duration requires and format_duration uses.
constexpr std::array<Unit, 6> k_units{{
    {"w", 7 * 24 * 3600 * 1000LL},
    {"d", 24 * 3600 * 1000LL},
    {"h", 3600 * 1000LL},
    {"m", 60 * 1000LL},
    {"s", 1000LL},
    {"ms", 1LL},
}};

// 100 years of 365.2425 days; anything longer is a typo, not a delay.
constexpr int64_t k_max_ms =
    std::chrono::duration_cast<Millis>(std::chrono::years(100)).count();

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

} // namespace

std::optional<Millis> parse_duration(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  int64_t total = 0;
  std::size_t pos = 0;
  std::size_t next_unit = 0; // units must come in k_units order, once each
  while (pos < text.size()) {
    // The number; capping it at k_max_ms keeps every product below overflow.
    int64_t n = 0;
    const std::size_t start = pos;
    while (pos < text.size() && is_digit(text[pos])) {
      n = n * 10 + (text[pos] - '0');
      if (n > k_max_ms) {
        return std::nullopt;
      }
      ++pos;
    }
    if (pos == start) {
      return std::nullopt;
    }
    if (pos == text.size() && start == 0) {
      total = n * 1000; // a bare number of seconds
      break;
    }
    // `ms` before `m`: the longest suffix that matches wins.
    std::size_t u = next_unit;
    std::size_t len = 0;
    for (std::size_t i = 0; i < k_units.size(); ++i) {
      const auto suffix = k_units[i].suffix;
      if (text.substr(pos, suffix.size()) == suffix && suffix.size() > len) {
        u = i;
        len = suffix.size();
      }
    }
    if (len == 0 || u < next_unit || n > k_max_ms / k_units[u].ms) {
      return std::nullopt;
    }
    total += n * k_units[u].ms;
    if (total > k_max_ms) {
      return std::nullopt;
    }
    pos += len;
    next_unit = u + 1;
  }
  if (total > k_max_ms) {
    return std::nullopt;
  }
  return Millis(total);
}

std::string format_duration(Millis d) {
  std::string out;
  // Unsigned, so that negating the most negative value is defined.
  uint64_t rest = static_cast<uint64_t>(d.count());
  if (d.count() < 0) {
    out += '-';
    rest = 0 - rest;
  }
  if (rest == 0) {
    return out + "0s";
  }
  for (const auto& unit : k_units) {
    const auto size = static_cast<uint64_t>(unit.ms);
    if (rest >= size) {
      out += std::to_string(rest / size);
      out += unit.suffix;
      rest %= size;
    }
  }
  return out;
}

} // namespace taskq::core
