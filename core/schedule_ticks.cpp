// ticks(): the last tick of a schedule before now and the next one after
// it, for `--every` grids and cron expressions.
#include "core/calendar.hpp"
#include "core/schedule.hpp"

#include <algorithm>
#include <bitset>
#include <chrono>
#include <optional>

namespace taskq::core {

namespace {

using std::chrono::days;
using std::chrono::floor;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::sys_days;
using Unit = Every::Unit;

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// --- ticks: every --------------------------------------------------------

// The grid point `j` units after the start of cycle `cycle`, shifted by the
// schedule's offset. Cycles: hours for minutes, days for hours, years for
// months; days and weeks use one cycle starting at their origin.
Time every_point(const Every& e, int64_t cycle, int64_t j) {
  const int64_t at = e.at.value_or(0);
  switch (e.unit) {
  case Unit::minute:
    return Time(hours(cycle)) + minutes(j);
  case Unit::hour:
    return Time(days(cycle)) + hours(j) + minutes(at);
  case Unit::day:
    return Time(days(j)) + minutes(at);
  case Unit::week:
    // 1970-01-05, the first Monday, is day 4.
    return Time(days(4 + 7 * j + e.weekday.value_or(0))) + minutes(at);
  case Unit::month: {
    using namespace std::chrono;
    const int64_t index = cycle * 12 + j;
    const int y = static_cast<int>(floor_div(index, 12));
    const auto m = static_cast<unsigned>(index - floor_div(index, 12) * 12 + 1);
    const unsigned d =
        std::min(static_cast<unsigned>(e.day.value_or(1)), last_day(y, m));
    return Time(sys_days(year(y) / month(m) / day(d))) + minutes(at);
  }
  }
  return Time{};
}

Ticks every_ticks(const Every& e, Time now) {
  const int64_t q = std::max<int64_t>(e.quantity, 1); // never loop on 0

  int64_t cycle = 0;
  int64_t j = 0;
  if (e.unit == Unit::day || e.unit == Unit::week) {
    // Continuous grid: points origin + k·period; the last one before now.
    const Time origin = every_point(e, 0, 0);
    const int64_t period = std::chrono::duration_cast<Millis>(
                               days(e.unit == Unit::day ? q : 7 * q))
                               .count();
    j = floor_div((now - origin).count() - 1, period) * q;
  } else {
    // Restarting grid: points at j = 0, q, 2q, ... below the cycle length,
    // in the cycle of now, else the last of the cycle before.
    const int64_t length = e.unit == Unit::minute ? 60
                           : e.unit == Unit::hour ? 24
                                                  : 12;
    if (e.unit == Unit::minute) {
      cycle = floor<hours>(now).time_since_epoch().count();
    } else if (e.unit == Unit::hour) {
      cycle = floor<days>(now).time_since_epoch().count();
    } else {
      const std::chrono::year_month_day ymd(floor<days>(now));
      cycle = static_cast<int>(ymd.year());
    }
    const int64_t last = (length - 1) / q * q;
    j = -1;
    for (int64_t k = last; k >= 0; k -= q) {
      if (every_point(e, cycle, k) < now) {
        j = k;
        break;
      }
    }
    if (j < 0) {
      --cycle;
      j = last;
    }
  }
  Ticks t{every_point(e, cycle, j), every_point(e, cycle, j + q)};
  if (t.next == now) {
    t.next = every_point(e, cycle, j + 2 * q);
  }
  return t;
}

// --- ticks: cron ---------------------------------------------------------

constexpr int k_search_days = 146097 + 366; // 400 Gregorian years, and a bit

bool day_matches(const Cron& c, sys_days d) {
  const std::chrono::year_month_day ymd(d);
  const bool dom = c.days[static_cast<unsigned>(ymd.day())];
  const bool dow = c.weekdays[std::chrono::weekday(d).c_encoding()];
  if (c.any_day || c.any_weekday) {
    return dom && dow;
  }
  return dom || dow;
}

// The first set bit at or after `from`, or the last at or before it.
template <std::size_t N>
std::optional<int64_t> first_set(const std::bitset<N>& bits, int64_t from) {
  for (auto i = static_cast<std::size_t>(from); i < N; ++i) {
    if (bits[i]) {
      return static_cast<int64_t>(i);
    }
  }
  return std::nullopt;
}
template <std::size_t N>
std::optional<int64_t> last_set(const std::bitset<N>& bits, int64_t from) {
  for (auto i = static_cast<std::size_t>(from) + 1; i-- > 0;) {
    if (bits[i]) {
      return static_cast<int64_t>(i);
    }
  }
  return std::nullopt;
}

// The first matching minute at or after t (a whole minute). Each step jumps
// to the start of the next month, day or hour that may match.
std::optional<Time> cron_at_or_after(const Cron& c, Time t) {
  const Time limit = t + days(k_search_days);
  while (t <= limit) {
    const sys_days d = floor<days>(t);
    const std::chrono::year_month_day ymd(d);
    if (!c.months[static_cast<unsigned>(ymd.month())]) {
      t = Time(sys_days((ymd.year() / ymd.month() + std::chrono::months(1))
                        / std::chrono::day(1)));
      continue;
    }
    if (!day_matches(c, d)) {
      t = Time(d + days(1));
      continue;
    }
    const auto h = floor<hours>(t - d).count();
    const auto hour = first_set(c.hours, h);
    if (!hour) {
      t = Time(d + days(1));
      continue;
    }
    if (*hour != h) {
      t = Time(d + hours(*hour));
      continue;
    }
    const auto minute =
        first_set(c.minutes, floor<minutes>(t - d - hours(h)).count());
    if (!minute) {
      t = Time(d + hours(h + 1));
      continue;
    }
    return Time(d + hours(h) + minutes(*minute));
  }
  return std::nullopt;
}

// The last matching minute at or before t (a whole minute), jumping back to
// the end of the previous month, day or hour that may match.
std::optional<Time> cron_at_or_before(const Cron& c, Time t) {
  const Time limit = t - days(k_search_days);
  while (t >= limit) {
    const sys_days d = floor<days>(t);
    const std::chrono::year_month_day ymd(d);
    if (!c.months[static_cast<unsigned>(ymd.month())]) {
      t = Time(sys_days(ymd.year() / ymd.month() / std::chrono::day(1)))
          - minutes(1);
      continue;
    }
    if (!day_matches(c, d)) {
      t = Time(d) - minutes(1);
      continue;
    }
    const auto h = floor<hours>(t - d).count();
    const auto hour = last_set(c.hours, h);
    if (!hour) {
      t = Time(d) - minutes(1);
      continue;
    }
    if (*hour != h) {
      t = Time(d + hours(*hour + 1)) - minutes(1);
      continue;
    }
    const auto minute =
        last_set(c.minutes, floor<minutes>(t - d - hours(h)).count());
    if (!minute) {
      t = Time(d + hours(h)) - minutes(1);
      continue;
    }
    return Time(d + hours(h) + minutes(*minute));
  }
  return std::nullopt;
}

Ticks cron_ticks(const Cron& c, Time now) {
  if (c.minutes.none() || c.hours.none() || c.months.none()) {
    return {Time::min(), Time::max()}; // a hand-built Cron; don't search
  }
  const Time minute = floor<minutes>(now);
  // Strictly before now: the minute now is in only counts if now is past it.
  const Time before = minute == now ? minute - minutes(1) : minute;
  const auto prev = cron_at_or_before(c, before);
  const auto next = cron_at_or_after(c, minute + minutes(1));
  return {prev.value_or(Time::min()), next.value_or(Time::max())};
}

} // namespace

Ticks ticks(const Schedule& schedule, Time now) {
  if (const auto* e = std::get_if<Every>(&schedule)) {
    return every_ticks(*e, now);
  }
  return cron_ticks(std::get<Cron>(schedule), now);
}

} // namespace taskq::core
