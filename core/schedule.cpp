#include "core/schedule.hpp"

#include "core/calendar.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <span>
#include <vector>

namespace taskq::core {

namespace {

using Unit = Every::Unit;

struct UnitInfo {
  std::string_view name;
  int64_t seconds; // nominal length, only to bound the quantity
};

constexpr std::array<UnitInfo, 5> k_units{{
    {"minute", 60},
    {"hour", 3600},
    {"day", 86400},
    {"week", 604800},   // 7 days
    {"month", 2592000}, // 30 days, as rescue's durations
}};

// 100 years of 365.2425 days, as for durations.
constexpr int64_t k_max_seconds = 3'155'695'200;

constexpr std::array<std::string_view, 7> k_weekdays{
    "Monday", "Tuesday",  "Wednesday", "Thursday",
    "Friday", "Saturday", "Sunday"};

const UnitInfo& info(Unit u) {
  return k_units[static_cast<std::size_t>(u)];
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
         || c == '\v';
}

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

char upper(char c) {
  return c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) {
      return false;
    }
  }
  return true;
}

std::vector<std::string_view> split(std::string_view text, char sep,
                                    bool on_space) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  bool in_word = false;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const bool end = i == text.size();
    if (on_space) {
      const bool space = end || is_space(text[i]);
      if (!space && !in_word) {
        start = i;
        in_word = true;
      } else if (space && in_word) {
        out.push_back(text.substr(start, i - start));
        in_word = false;
      }
    } else if (end || text[i] == sep) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

// Decimal digits only (no sign), at most `max`; std::nullopt otherwise.
std::optional<int64_t> parse_number(std::string_view text, int64_t max) {
  if (text.empty()) {
    return std::nullopt;
  }
  int64_t n = 0;
  for (const char c : text) {
    if (!is_digit(c)) {
      return std::nullopt;
    }
    n = n * 10 + (c - '0');
    if (n > max) {
      return std::nullopt;
    }
  }
  return n;
}

// --- parse_every ---------------------------------------------------------

// `HH:MM` (HH in one or two digits) as minutes of the day.
std::optional<int> parse_clock(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 2
      || text.size() != colon + 3) {
    return std::nullopt;
  }
  const auto h = parse_number(text.substr(0, colon), 23);
  const auto m = parse_number(text.substr(colon + 1), 59);
  if (!h || !m) {
    return std::nullopt;
  }
  return static_cast<int>(*h * 60 + *m);
}

// `**:MM` as minutes of the hour.
std::optional<int> parse_minute_of_hour(std::string_view text) {
  if (text.size() != 5 || text.substr(0, 3) != "**:") {
    return std::nullopt;
  }
  const auto m = parse_number(text.substr(3), 59);
  if (!m) {
    return std::nullopt;
  }
  return static_cast<int>(*m);
}

std::optional<int> parse_weekday(std::string_view text) {
  for (std::size_t i = 0; i < k_weekdays.size(); ++i) {
    if (iequals(text, k_weekdays[i])
        || iequals(text, k_weekdays[i].substr(0, 3))) {
      return static_cast<int>(i);
    }
  }
  return std::nullopt;
}

std::string_view ordinal_suffix(int n) {
  if (n % 100 >= 11 && n % 100 <= 13) {
    return "th";
  }
  switch (n % 10) {
  case 1:
    return "st";
  case 2:
    return "nd";
  case 3:
    return "rd";
  default:
    return "th";
  }
}

// `1st` ... `31st`, with the right suffix and no leading zero.
std::optional<int> parse_ordinal(std::string_view text) {
  if (text.size() < 3 || text[0] == '0') {
    return std::nullopt;
  }
  const auto n = parse_number(text.substr(0, text.size() - 2), 31);
  if (!n || *n < 1) {
    return std::nullopt;
  }
  const int day = static_cast<int>(*n);
  if (text.substr(text.size() - 2) != ordinal_suffix(day)) {
    return std::nullopt;
  }
  return day;
}

std::string two_digits(int n) {
  return std::string{static_cast<char>('0' + n / 10),
                     static_cast<char>('0' + n % 10)};
}

// --- parse_cron ----------------------------------------------------------

struct Field {
  int min;
  int max;
  const std::array<std::string_view, 12>* names; // value = min + index
  std::size_t name_count;
};

constexpr std::array<std::string_view, 12> k_month_names{
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN",
    "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr std::array<std::string_view, 12> k_day_names{
    "SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "", "", "", "", ""};

std::optional<int> parse_cron_value(std::string_view text, const Field& f) {
  if (f.names != nullptr) {
    for (std::size_t i = 0; i < f.name_count; ++i) {
      if (iequals(text, (*f.names)[i])) {
        return f.min + static_cast<int>(i);
      }
    }
  }
  const auto n = parse_number(text, f.max);
  if (!n || *n < f.min) {
    return std::nullopt;
  }
  return static_cast<int>(*n);
}

// Sets the bits of one field; bits are indexed by value (0-60 at most).
// std::nullopt when malformed, else whether the field starts with `*`.
std::optional<bool> parse_cron_field(std::string_view text, const Field& f,
                                     std::bitset<64>& bits) {
  for (const auto item : split(text, ',', false)) {
    std::string_view range = item;
    int step = 1;
    const auto slash = item.find('/');
    const bool slash_found = slash != std::string_view::npos;
    if (slash_found) {
      const auto s = parse_number(item.substr(slash + 1), f.max);
      if (!s || *s < 1) {
        return std::nullopt;
      }
      step = static_cast<int>(*s);
      range = item.substr(0, slash);
    }
    int lo = f.min;
    int hi = f.max;
    if (range != "*") {
      const auto dash = range.find('-');
      const auto a = parse_cron_value(range.substr(0, dash), f);
      if (!a) {
        return std::nullopt;
      }
      lo = hi = *a;
      if (dash != std::string_view::npos) {
        const auto b = parse_cron_value(range.substr(dash + 1), f);
        if (!b || *b < *a) {
          return std::nullopt;
        }
        hi = *b;
      } else if (slash_found) {
        return std::nullopt; // `N/S`: not standard
      }
    }
    for (int v = lo; v <= hi; v += step) {
      bits.set(static_cast<std::size_t>(v));
    }
  }
  return !text.empty() && text[0] == '*';
}

template <std::size_t N> std::bitset<N> narrow(const std::bitset<64>& bits) {
  std::bitset<N> out;
  for (std::size_t i = 0; i < N; ++i) {
    out[i] = bits[i];
  }
  return out;
}

} // namespace

std::optional<Schedule> parse_every(std::string_view text) {
  const auto words = split(text, ' ', true);
  if (words.empty()) {
    return std::nullopt;
  }
  Every e;
  std::size_t pos = 0;
  bool plural = false;
  if (is_digit(words[0][0])) {
    const auto q = parse_number(words[0], k_max_seconds);
    if (!q || *q < 1 || words.size() < 2) {
      return std::nullopt;
    }
    e.quantity = *q;
    plural = *q >= 2;
    pos = 1;
  }
  bool found = false;
  for (std::size_t i = 0; i < k_units.size(); ++i) {
    const auto name = k_units[i].name;
    const std::string_view word = words[pos];
    if (word.substr(0, name.size()) == name
        && word.size() == name.size() + (plural ? 1 : 0)
        && (!plural || word.back() == 's')) {
      e.unit = static_cast<Unit>(i);
      found = true;
      break;
    }
  }
  if (!found || e.quantity > k_max_seconds / info(e.unit).seconds) {
    return std::nullopt;
  }
  // The extended forms, in the words after the unit.
  const auto rest = std::span(words).subspan(pos + 1);
  std::size_t r = 0;
  if (r + 1 < rest.size() && rest[r] == "on") {
    if (e.unit == Unit::week) {
      e.weekday = parse_weekday(rest[r + 1]);
      if (!e.weekday) {
        return std::nullopt;
      }
      r += 2;
    } else if (e.unit == Unit::month && r + 2 < rest.size()
               && rest[r + 1] == "the") {
      e.day = parse_ordinal(rest[r + 2]);
      if (!e.day) {
        return std::nullopt;
      }
      r += 3;
    } else {
      return std::nullopt;
    }
  }
  if (r + 1 < rest.size() && rest[r] == "at") {
    if (e.unit == Unit::hour) {
      e.at = parse_minute_of_hour(rest[r + 1]);
    } else if (e.unit != Unit::minute) {
      e.at = parse_clock(rest[r + 1]);
    }
    if (!e.at) {
      return std::nullopt;
    }
    r += 2;
  }
  if (r != rest.size()) {
    return std::nullopt;
  }
  return e;
}

std::optional<Schedule> parse_cron(std::string_view text) {
  const auto fields = split(text, ' ', true);
  if (fields.size() != 5) {
    return std::nullopt;
  }
  const std::array<Field, 5> specs{{
      {0, 59, nullptr, 0},
      {0, 23, nullptr, 0},
      {1, 31, nullptr, 0},
      {1, 12, &k_month_names, 12},
      {0, 7, &k_day_names, 7},
  }};
  std::array<std::bitset<64>, 5> bits{};
  std::array<bool, 5> star{};
  for (std::size_t i = 0; i < fields.size(); ++i) {
    const auto s = parse_cron_field(fields[i], specs[i], bits[i]);
    if (!s) {
      return std::nullopt;
    }
    star[i] = *s;
  }
  Cron c;
  c.minutes = narrow<60>(bits[0]);
  c.hours = narrow<24>(bits[1]);
  c.days = narrow<32>(bits[2]);
  c.months = narrow<13>(bits[3]);
  c.weekdays = narrow<7>(bits[4]);
  if (bits[4][7]) {
    c.weekdays.set(0); // 7 is Sunday too
  }
  c.any_day = star[2];
  c.any_weekday = star[4];
  // Only a restricted day of month that every chosen month lacks can make
  // the expression unmatchable; Feb 29 does exist (in leap years).
  if (c.any_day || c.any_weekday) {
    bool possible = false;
    for (unsigned m = 1; m <= 12 && !possible; ++m) {
      const unsigned length = m == 2 ? 29 : last_day(2001, m);
      for (unsigned d = 1; d <= length && !possible; ++d) {
        possible = c.months[m] && c.days[d];
      }
    }
    if (!possible) {
      return std::nullopt;
    }
  }
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i != 0) {
      c.text += ' ';
    }
    for (const char ch : fields[i]) {
      c.text += upper(ch);
    }
  }
  return c;
}

std::string to_string(const Schedule& schedule) {
  if (const auto* c = std::get_if<Cron>(&schedule)) {
    return c->text;
  }
  const auto& e = std::get<Every>(schedule);
  std::string out;
  if (e.quantity != 1) {
    out = std::to_string(e.quantity) + ' ';
  }
  out += info(e.unit).name;
  if (e.quantity != 1) {
    out += 's';
  }
  if (e.weekday) {
    out += " on ";
    out += k_weekdays[static_cast<std::size_t>(*e.weekday)];
  }
  if (e.day) {
    out += " on the " + std::to_string(*e.day);
    out += ordinal_suffix(*e.day);
  }
  if (e.at) {
    if (e.unit == Unit::hour) {
      out += " at **:" + two_digits(*e.at);
    } else {
      out += " at " + two_digits(*e.at / 60) + ':' + two_digits(*e.at % 60);
    }
  }
  return out;
}

} // namespace taskq::core
