#include "core/time.hpp"

#include <cstddef>

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
// formatting state, so concurrent callers never interfere.
void append_padded(std::string& out, long long value, int width) {
  if (value < 0) {
    out += '-';
    value = -value;
  }
  char buf[24];
  int n = 0;
  do {
    buf[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0);
  for (int i = n; i < width; ++i) {
    out += '0';
  }
  while (n > 0) {
    out += buf[--n];
  }
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

  // Local time minus its offset is UTC: 10:00+02:00 is 08:00Z.
  return Time(sys_days(date)) + hours(*h) + minutes(*mi) + seconds(*s)
         + Millis(ms) - offset;
}

std::string format_time(Time t) {
  const auto day_start = floor<days>(t);
  const year_month_day date{day_start};
  const hh_mm_ss<Millis> clock{t - day_start};
  std::string out;
  out.reserve(24);
  append_padded(out, static_cast<int>(date.year()), 4);
  out += '-';
  append_padded(out, static_cast<unsigned>(date.month()), 2);
  out += '-';
  append_padded(out, static_cast<unsigned>(date.day()), 2);
  out += 'T';
  append_padded(out, clock.hours().count(), 2);
  out += ':';
  append_padded(out, clock.minutes().count(), 2);
  out += ':';
  append_padded(out, clock.seconds().count(), 2);
  if (clock.subseconds().count() != 0) {
    out += '.';
    append_padded(out, clock.subseconds().count(), 3);
  }
  out += 'Z';
  return out;
}

} // namespace taskq::core
