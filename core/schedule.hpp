#pragma once

#include "core/time.hpp"

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace taskq::core {

// An `--every` schedule: rescue's interval DSL plus taskq's time and day forms.
// Words are split on whitespace (any amount, leading and trailing ignored):
//
//   every  := unit | "1" unit | Q units              (Q >= 2, decimal digits)
//   unit   := minute | hour | day | week | month     (units: the same + "s")
//   hour   forms may add  `at **:MM`                 (`hour at **:30`)
//   day    forms may add  `at HH:MM`                 (`2 days at 08:00`)
//   week   forms may add  `on DAY`, then `at HH:MM`  (`week on Wednesday`)
//   month  forms may add  `on the NTH`, then `at HH:MM`
//                                                   (`month on the 15th`)
//
// Units and the words `at`, `on`, `the` are lower case, as in rescue. DAY is
// a weekday's full English name or its 3-letter abbreviation, any case
// (`Wednesday`, `wed`, `WED`). NTH is 1st-31st with its correct English suffix
// (1st 2nd 3rd 4th ... 11th 12th 13th ... 21st 22nd 23rd ... 31st), no
// leading zero. HH is 0-23 in one or two digits, MM is two digits 00-59.
// Q is at most what fits in 100 years (a month counting 30 days, as rescue's
// durations do): 52594920 minutes, 876582 hours, 36524 days, 5217 weeks,
// 1217 months. Anything else, e.g. `3 hour`, `hours`, `0 days`, `+2 days`,
// `20 seconds`, `day at 24:00`, `minute at **:30`, is refused.
// The fields hold what parse_every accepts; ticks and to_string expect that.
struct Every {
  enum class Unit { minute, hour, day, week, month };

  Unit unit = Unit::day;
  int64_t quantity = 1;
  // week: 0 = Monday ... 6 = Sunday; std::nullopt (Monday) when not given.
  std::optional<int> weekday;
  // month: 1-31. A month without that day uses its last day instead
  // (`month on the 31st` ticks on Feb 28, or Feb 29 in a leap year, Apr 30).
  std::optional<int> day;
  // hour: the minute within the hour (`at **:MM`, 0-59); day, week and month:
  // the minute within the day (`at HH:MM`, 0-1439). std::nullopt: 0.
  std::optional<int> at;

  bool operator==(const Every&) const = default;
};

// A `--cron` schedule: five whitespace-separated fields, minute (0-59), hour
// (0-23), day of month (1-31), month (1-12 or JAN-DEC) and day of week (0-7,
// 0 and 7 both Sunday, or SUN-SAT); names in any case. Each field is a
// comma-separated list of `*`, `N`, `A-B` (A <= B), `*/S` or `A-B/S`
// (1 <= S <= the field's largest value). Day names sit at 0-6, so `MON-SUN` is
// refused; write `MON-SAT,SUN` or `1-7`. A day matches as in Vixie cron: if
// the day-of-month or the day-of-week field starts with `*`, both must match;
// otherwise (both restricted) either may. Expressions that can never match
// (`0 0 30 2 *`, `0 0 31 4,6 *`) are refused, so every parsed Cron has ticks.
struct Cron {
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> days;    // 1-31; bit 0 unused
  std::bitset<13> months;  // 1-12; bit 0 unused
  std::bitset<7> weekdays; // 0 = Sunday ... 6 = Saturday
  bool any_day = true;     // the day-of-month field starts with `*`
  bool any_weekday = true; // the day-of-week field starts with `*`
  std::string text;        // canonical: single spaces, names upper case

  bool operator==(const Cron&) const = default;
};

using Schedule = std::variant<Every, Cron>;

// Parses `--every` text (see Every); std::nullopt when malformed.
std::optional<Schedule> parse_every(std::string_view text);

// Parses `--cron` text (see Cron); std::nullopt when malformed or when it
// can never match.
std::optional<Schedule> parse_cron(std::string_view text);

struct Ticks {
  Time prev; // the last tick strictly before now
  Time next; // the tick to emit next, strictly after now

  bool operator==(const Ticks&) const = default;
};

// The ticks around `now`, in UTC.
//
// Every: ticks sit on a grid. Minutes restart every hour, hours every day,
// months every year (`5 months` = Jan, Jun, Nov, then Jan; a quantity of at
// least 60 minutes, 24 hours or 12 months leaves one tick per hour, day or
// year); days count from 1970-01-01 and weeks from Monday 1970-01-05, without
// restarting. The time and day forms shift every grid point by the same
// offset within its period (`2 days at 08:00` = 08:00 on the 2-day grid).
// prev is the last grid point strictly before now. next is, as rescue does
// (doc/reference/schedules.md#ticks), one period after prev, and one more if
// that equals now: so at exactly 14:23:00.000 `minute` gives 14:22 and 14:24,
// and `7 minutes` at :58 gives :56 and :03 of the next hour. Where the grid
// restarts, next is therefore not always a grid point (`5 hours` at 23:00 gives
// 20:00 and 01:00; `5 months` in December gives Nov and April); once now passes
// it, prev is the restarted grid's point again.
//
// Cron: prev is the last matching whole minute strictly before now, next the
// first strictly after. The search skips whole months, days and hours, and
// stops after 400 years (one Gregorian cycle, in which every Cron that
// parse_cron accepts matches); a hand-built Cron that never matches gives
// {Time::min(), Time::max()}.
Ticks ticks(const Schedule& schedule, Time now);

// The canonical text, which the matching parse_* reads back to an equal
// Schedule: `15 minutes`, `hour at **:30`, `2 days at 08:00`,
// `week on Wednesday at 06:00`, `month on the 15th at 17:00`,
// `*/5 9-17 * JAN,JUL MON-FRI`.
std::string to_string(const Schedule& schedule);

} // namespace taskq::core
