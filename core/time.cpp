#include "core/time.hpp"

#include <cstddef>
#include <cstdint>

namespace taskq::core {

namespace {

using namespace std::chrono;

// A cursor over the text; each read either consumes what it expects or
// reports failure, so the parser reads as the grammar.
class Reader {
public:
  explicit Reader(std::string_view text) : m_text(text) {}

  bool done() const { return m_pos == m_text.size(); }
  char peek() const { return done() ? '\0' : m_text[m_pos]; }

  // Exactly `n` decimal digits.
  std::optional<int> digits(std::size_t n) {
    if (m_text.size() - m_pos < n) {
      return std::nullopt;
    }
    int value = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const char c = m_text[m_pos + i];
      if (c < '0' || c > '9') {
        return std::nullopt;
      }
      value = value * 10 + (c - '0');
    }
    m_pos += n;
    return value;
  }

  // Consumes `c` if it is next.
  bool accept(char c) {
    if (peek() != c || done()) {
      return false;
    }
    ++m_pos;
    return true;
  }

  // One of the characters of `set`, returned; '\0' when none is next.
  char accept_any(std::string_view set) {
    const char c = peek();
    if (done() || set.find(c) == std::string_view::npos) {
      return '\0';
    }
    ++m_pos;
    return c;
  }

private:
  std::string_view m_text;
  std::size_t m_pos = 0;
};

// Appends `value` zero-padded to `width` digits, without locale or
// formatting state, so concurrent callers never interfere. A negative value
// (a year before 0000) gets its sign before the padding.
void append_padded(std::string& out, int64_t value, int width) {
  if (value < 0) {
    out += '-';
  }
  char buf[24];
  int n = 0;
  do {
    // Digit by digit from the remainder's magnitude, so even INT64_MIN
    // is never negated.
    const int64_t digit = value % 10;
    buf[n++] = static_cast<char>('0' + (digit < 0 ? -digit : digit));
    value /= 10;
  } while (value != 0);
  for (int i = n; i < width; ++i) {
    out += '0';
  }
  while (n > 0) {
    out += buf[--n];
  }
}

struct CivilDate {
  int64_t year;
  int64_t month; // 1-12
  int64_t day;   // 1-31
};

// The proleptic Gregorian date of a count of days since 1970-01-01 (Howard
// Hinnant's civil_from_days), for any count of days an int64 of
// milliseconds holds: the intermediate values stay below 2^40.
CivilDate civil_from_days(int64_t days) {
  const int64_t z = days + 719'468; // days since 0000-03-01
  const int64_t era = (z >= 0 ? z : z - 146'096) / 146'097;
  const int64_t doe = z - era * 146'097; // [0, 146096]
  const int64_t yoe =
      (doe - doe / 1460 + doe / 36'524 - doe / 146'096) / 365; // [0, 399]
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365]
  const int64_t mp = (5 * doy + 2) / 153;                      // [0, 11]
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  return {yoe + era * 400 + (month <= 2 ? 1 : 0), month,
          doy - (153 * mp + 2) / 5 + 1};
}

} // namespace

std::optional<Time> parse_time(std::string_view text) {
  Reader in(text);
  const auto y = in.digits(4);
  if (!y || !in.accept('-')) {
    return std::nullopt;
  }
  const auto mo = in.digits(2);
  if (!mo || !in.accept('-')) {
    return std::nullopt;
  }
  const auto d = in.digits(2);
  if (!d || !in.accept_any("Tt ")) {
    return std::nullopt;
  }
  const auto h = in.digits(2);
  if (!h || !in.accept(':')) {
    return std::nullopt;
  }
  const auto mi = in.digits(2);
  if (!mi || !in.accept(':')) {
    return std::nullopt;
  }
  const auto s = in.digits(2);
  // Leap seconds (:60) are refused: sys_time cannot represent them.
  if (!s || *h > 23 || *mi > 59 || *s > 59) {
    return std::nullopt;
  }
  const year_month_day date{year(*y), month(static_cast<unsigned>(*mo)),
                            day(static_cast<unsigned>(*d))};
  if (!date.ok()) {
    return std::nullopt;
  }

  int ms = 0;
  if (in.accept('.')) {
    int count = 0;
    while (const auto digit = in.digits(1)) {
      if (count < 3) {
        ms = ms * 10 + *digit;
      }
      ++count;
    }
    if (count == 0) {
      return std::nullopt;
    }
    for (; count < 3; ++count) {
      ms *= 10;
    }
  }

  Millis offset{0};
  if (const char sign = in.accept_any("+-"); sign != '\0') {
    const auto oh = in.digits(2);
    if (!oh || !in.accept(':')) {
      return std::nullopt;
    }
    const auto om = in.digits(2);
    if (!om || *oh > 23 || *om > 59) {
      return std::nullopt;
    }
    offset = hours(*oh) + minutes(*om);
    if (sign == '-') {
      offset = -offset;
    }
  } else if (in.accept_any("Zz") == '\0') {
    return std::nullopt;
  }
  if (!in.done()) {
    return std::nullopt;
  }

  // Local time minus its offset is UTC: 10:00+02:00 is 08:00Z. Years
  // 0000-9999 with offsets under a day are far from overflowing; the UTC
  // instant itself must stay within 0000-9999.
  const Time utc = Time(sys_days(date)) + hours(*h) + minutes(*mi) + seconds(*s)
                   + Millis(ms) - offset;
  if (!in_range(utc)) {
    return std::nullopt;
  }
  return utc;
}

std::optional<Time> add_checked(Time t, Millis d) {
  if (!in_range(t)) {
    return std::nullopt;
  }
  // Compared before adding, on the side the sum moves to, so nothing can
  // overflow: max - d and min - d stay within int64 for t in range.
  const int64_t ms = to_unix_ms(t);
  const int64_t step = d.count();
  if (step > 0 ? ms > to_unix_ms(k_max_time) - step
               : ms < to_unix_ms(k_min_time) - step) {
    return std::nullopt;
  }
  return from_unix_ms(ms + step);
}

std::string format_time(Time t) {
  // Plain int64 arithmetic rather than chrono's calendar types, whose year
  // and day counts overflow far outside 0000-9999: floor division splits
  // the count into days and the milliseconds of the day.
  const int64_t ms = to_unix_ms(t);
  constexpr int64_t k_day = 86'400'000;
  const int64_t rest = ms % k_day;
  const int64_t day_count = ms / k_day - (rest < 0 ? 1 : 0);
  const int64_t of_day = rest < 0 ? rest + k_day : rest; // [0, k_day)
  const CivilDate date = civil_from_days(day_count);
  std::string out;
  out.reserve(24);
  append_padded(out, date.year, 4);
  out += '-';
  append_padded(out, date.month, 2);
  out += '-';
  append_padded(out, date.day, 2);
  out += 'T';
  append_padded(out, of_day / 3'600'000, 2);
  out += ':';
  append_padded(out, of_day / 60'000 % 60, 2);
  out += ':';
  append_padded(out, of_day / 1000 % 60, 2);
  if (of_day % 1000 != 0) {
    out += '.';
    append_padded(out, of_day % 1000, 3);
  }
  out += 'Z';
  return out;
}

namespace {

struct Unit {
  int64_t seconds;
  const char* name;
};
constexpr Unit k_units[] = {{86400, "d"}, {3600, "h"}, {60, "m"}, {1, "s"}};

} // namespace

std::string format_relative(Time t, Time now) {
  const int64_t ms = (t - now).count();
  const int64_t secs = (ms < 0 ? -ms : ms) / 1000;
  if (secs == 0) {
    return "now";
  }
  std::string amount;
  for (const Unit& u : k_units) {
    if (secs >= u.seconds) {
      amount = std::to_string(secs / u.seconds) + u.name;
      break;
    }
  }
  return ms < 0 ? amount + " ago" : "in " + amount;
}

std::string format_elapsed(Millis d) {
  int64_t secs = d.count() < 0 ? 0 : d.count() / 1000;
  std::string out;
  int parts = 0;
  for (const Unit& u : k_units) {
    if (parts == 2 || (parts == 1 && secs == 0)) {
      break;
    }
    if (secs >= u.seconds || (parts == 1)) {
      const int64_t n = secs / u.seconds;
      secs %= u.seconds;
      if (n > 0) {
        out += std::to_string(n) + u.name;
      }
      ++parts;
    }
  }
  return out.empty() ? "0s" : out;
}

} // namespace taskq::core
