#include "core/duration.hpp"

#include <array>
#include <cstdint>

namespace taskq::core {

namespace {

struct Unit {
  std::string_view suffix; // the short name, which format_duration writes
  int64_t ms;
  std::array<std::string_view, 4> words; // its other names, read only
};

// Largest first: the order parse_duration requires and format_duration uses.
constexpr std::array<Unit, 6> k_units{{
    {"w", 7 * 24 * 3600 * 1000LL, {"wk", "wks", "week", "weeks"}},
    {"d", 24 * 3600 * 1000LL, {"day", "days", "", ""}},
    {"h", 3600 * 1000LL, {"hr", "hrs", "hour", "hours"}},
    {"m", 60 * 1000LL, {"min", "mins", "minute", "minutes"}},
    {"s", 1000LL, {"sec", "secs", "second", "seconds"}},
    {"ms", 1LL, {"msec", "msecs", "millisecond", "milliseconds"}},
}};

// 100 years of 365.2425 days; anything longer is a typo, not a delay.
constexpr int64_t k_max_ms =
    std::chrono::duration_cast<Millis>(std::chrono::years(100)).count();

// At most this many digits after a decimal point (1.5h, 0.25s).
constexpr std::size_t k_max_fraction_digits = 9;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool same_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) {
      return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    };
    if (lower(a[i]) != lower(b[i])) {
      return false;
    }
  }
  return true;
}

// The index in k_units of the unit named `name`: its short name exactly
// (`m` is a minute, `M` nothing), or one of its words in any case.
std::optional<std::size_t> unit_named(std::string_view name) {
  for (std::size_t i = 0; i < k_units.size(); ++i) {
    if (name == k_units[i].suffix) {
      return i;
    }
    for (const auto word : k_units[i].words) {
      if (!word.empty() && same_ignoring_case(name, word)) {
        return i;
      }
    }
  }
  return std::nullopt;
}

// A number as text: digits, then optionally '.' and more digits.
struct Number {
  int64_t whole = 0;
  int64_t fraction = 0;    // the digits after the point, as an integer
  int64_t fraction_of = 1; // 10 to the number of those digits
};

// Reads a number at `pos`; nullopt when there is none or it is too long.
std::optional<Number> read_number(std::string_view text, std::size_t& pos) {
  Number n;
  const std::size_t start = pos;
  while (pos < text.size() && is_digit(text[pos])) {
    // Capping it at k_max_ms keeps every product below overflow.
    n.whole = n.whole * 10 + (text[pos] - '0');
    if (n.whole > k_max_ms) {
      return std::nullopt;
    }
    ++pos;
  }
  if (pos == start) {
    return std::nullopt;
  }
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const std::size_t digits = pos;
    while (pos < text.size() && is_digit(text[pos])) {
      if (pos - digits == k_max_fraction_digits) {
        return std::nullopt;
      }
      n.fraction = n.fraction * 10 + (text[pos] - '0');
      n.fraction_of *= 10;
      ++pos;
    }
    if (pos == digits) {
      return std::nullopt; // "5." is no number
    }
  }
  return n;
}

// `n` of a unit of `unit_ms`, in whole milliseconds; nullopt when that is
// not whole (1.5ms) or beyond k_max_ms.
std::optional<int64_t> in_ms(const Number& n, int64_t unit_ms) {
  if (n.whole > k_max_ms / unit_ms) {
    return std::nullopt;
  }
  // fraction < 10^9 and unit_ms <= a week: the product fits.
  const int64_t part = n.fraction * unit_ms;
  if (part % n.fraction_of != 0) {
    return std::nullopt;
  }
  const int64_t total = n.whole * unit_ms + part / n.fraction_of;
  if (total > k_max_ms) {
    return std::nullopt;
  }
  return total;
}

void skip_spaces(std::string_view text, std::size_t& pos) {
  while (pos < text.size() && text[pos] == ' ') {
    ++pos;
  }
}

} // namespace

std::optional<Millis> parse_duration(std::string_view text) {
  if (text.empty() || text.front() == ' ' || text.back() == ' ') {
    return std::nullopt;
  }
  int64_t total = 0;
  std::size_t pos = 0;
  std::size_t next_unit = 0; // units must come in k_units order, once each
  while (pos < text.size()) {
    const auto n = read_number(text, pos);
    if (!n) {
      return std::nullopt;
    }
    if (pos == text.size() && next_unit == 0) {
      const auto ms = in_ms(*n, 1000); // a bare number of seconds
      if (!ms) {
        return std::nullopt;
      }
      total = *ms;
      break;
    }
    skip_spaces(text, pos);
    const std::size_t name_start = pos;
    while (pos < text.size() && is_letter(text[pos])) {
      ++pos;
    }
    const auto u = unit_named(text.substr(name_start, pos - name_start));
    if (!u || *u < next_unit) {
      return std::nullopt;
    }
    const auto ms = in_ms(*n, k_units[*u].ms);
    if (!ms) {
      return std::nullopt;
    }
    total += *ms;
    if (total > k_max_ms) {
      return std::nullopt;
    }
    next_unit = *u + 1;
    skip_spaces(text, pos);
  }
  return Millis(total);
}

bool is_duration_unit(std::string_view word) {
  return unit_named(word).has_value();
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
