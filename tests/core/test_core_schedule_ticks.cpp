// ticks(): the ticks around now of every grids and crons.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <variant>

#include "schedule_helpers.hpp"

using namespace taskq::test::schedule_helpers;

// --- ticks of the plain grids ------------------------------------------------

TEST_CASE("minute: exactly on a tick gives the ticks either side") {
  check_every("minute", "2026-11-21T14:23:00Z", "2026-11-21T14:22:00Z",
              "2026-11-21T14:24:00Z");
  check_every("1 minute", "2026-11-21T14:23:00Z", "2026-11-21T14:22:00Z",
              "2026-11-21T14:24:00Z");
  check_every("minute", "2026-11-21T14:23:00.001Z", "2026-11-21T14:23:00Z",
              "2026-11-21T14:24:00Z");
  check_every("minute", "2026-11-21T14:22:59.999Z", "2026-11-21T14:22:00Z",
              "2026-11-21T14:23:00Z");
  check_every("minute", "2026-12-31T23:59:30Z", "2026-12-31T23:59:00Z",
              "2027-01-01T00:00:00Z");
}

TEST_CASE("minutes restart every hour") {
  // `7 minutes` at :58 gives :56 and then :03
  // (doc/reference/schedules.md#ticks).
  check_every("7 minutes", "2026-11-21T14:58:00Z", "2026-11-21T14:56:00Z",
              "2026-11-21T15:03:00Z");
  check_every("7 minutes", "2026-11-21T14:57:00Z", "2026-11-21T14:56:00Z",
              "2026-11-21T15:03:00Z");
  check_every("7 minutes", "2026-11-21T14:56:00Z", "2026-11-21T14:49:00Z",
              "2026-11-21T15:03:00Z");
  // The top of the hour is the restarted grid's first point.
  check_every("7 minutes", "2026-11-21T15:00:00Z", "2026-11-21T14:56:00Z",
              "2026-11-21T15:03:00Z");
  check_every("7 minutes", "2026-11-21T15:00:00.001Z", "2026-11-21T15:00:00Z",
              "2026-11-21T15:07:00Z");
  check_every("7 minutes", "2026-11-21T15:03:00Z", "2026-11-21T15:00:00Z",
              "2026-11-21T15:07:00Z");
  check_every("15 minutes", "2026-11-21T14:07:00Z", "2026-11-21T14:00:00Z",
              "2026-11-21T14:15:00Z");
  check_every("15 minutes", "2026-11-21T14:45:00Z", "2026-11-21T14:30:00Z",
              "2026-11-21T15:00:00Z");
  check_every("15 minutes", "2026-11-21T14:59:59.999Z", "2026-11-21T14:45:00Z",
              "2026-11-21T15:00:00Z");
  check_every("2 minutes", "2026-11-21T14:59:00Z", "2026-11-21T14:58:00Z",
              "2026-11-21T15:00:00Z");
  // 60 minutes or more: one grid point per hour, the next one period on.
  check_every("60 minutes", "2026-11-21T14:30:00Z", "2026-11-21T14:00:00Z",
              "2026-11-21T15:00:00Z");
  check_every("90 minutes", "2026-11-21T14:30:00Z", "2026-11-21T14:00:00Z",
              "2026-11-21T15:30:00Z");
}

TEST_CASE("hours restart every day") {
  check_every("hour", "2026-11-21T14:23:00Z", "2026-11-21T14:00:00Z",
              "2026-11-21T15:00:00Z");
  check_every("hour", "2026-11-21T14:00:00Z", "2026-11-21T13:00:00Z",
              "2026-11-21T15:00:00Z");
  check_every("1 hour", "2026-11-21T00:00:00Z", "2026-11-20T23:00:00Z",
              "2026-11-21T01:00:00Z");
  // doc/reference/schedules.md#ticks: `6 hours` = 00:00, 06:00, 12:00, 18:00.
  check_every("6 hours", "2026-11-21T13:00:00Z", "2026-11-21T12:00:00Z",
              "2026-11-21T18:00:00Z");
  check_every("6 hours", "2026-11-21T18:00:00Z", "2026-11-21T12:00:00Z",
              "2026-11-22T00:00:00Z");
  check_every("6 hours", "2026-11-21T23:59:59.999Z", "2026-11-21T18:00:00Z",
              "2026-11-22T00:00:00Z");
  // `5 hours` = 00, 05, 10, 15, 20; the tick after 20:00 is one period on.
  check_every("5 hours", "2026-11-21T23:00:00Z", "2026-11-21T20:00:00Z",
              "2026-11-22T01:00:00Z");
  check_every("5 hours", "2026-11-22T00:00:00Z", "2026-11-21T20:00:00Z",
              "2026-11-22T01:00:00Z");
  check_every("5 hours", "2026-11-22T00:30:00Z", "2026-11-22T00:00:00Z",
              "2026-11-22T05:00:00Z");
  check_every("24 hours", "2026-11-21T08:00:00Z", "2026-11-21T00:00:00Z",
              "2026-11-22T00:00:00Z");
  check_every("30 hours", "2026-11-21T08:00:00Z", "2026-11-21T00:00:00Z",
              "2026-11-22T06:00:00Z");
}

TEST_CASE("days count from 1970-01-01 across years") {
  check_every("day", "2026-11-21T08:00:00Z", "2026-11-21T00:00:00Z",
              "2026-11-22T00:00:00Z");
  check_every("day", "2026-11-21T00:00:00Z", "2026-11-20T00:00:00Z",
              "2026-11-22T00:00:00Z");
  check_every("day", "2026-12-31T23:59:59.999Z", "2026-12-31T00:00:00Z",
              "2027-01-01T00:00:00Z");
  check_every("1 day", "2027-01-01T00:00:00.001Z", "2027-01-01T00:00:00Z",
              "2027-01-02T00:00:00Z");
  // doc/reference/schedules.md#ticks (the day row): `3 days` created 2022-12-31
  // has tick+1 2023-01-02.
  check_every("3 days", "2022-12-31T12:00:00Z", "2022-12-30T00:00:00Z",
              "2023-01-02T00:00:00Z");
  check_every("3 days", "2023-01-02T00:00:00Z", "2022-12-30T00:00:00Z",
              "2023-01-05T00:00:00Z");
  // 2026-11-21 is day 20778, a multiple of 3 and of 2.
  check_every("3 days", "2026-11-21T08:00:00Z", "2026-11-21T00:00:00Z",
              "2026-11-24T00:00:00Z");
  check_every("2 days", "2026-11-21T00:00:00Z", "2026-11-19T00:00:00Z",
              "2026-11-23T00:00:00Z");
  check_every("2 days", "1970-01-01T00:00:00.001Z", "1970-01-01T00:00:00Z",
              "1970-01-03T00:00:00Z");
  check_every("day", "1969-12-31T12:00:00Z", "1969-12-31T00:00:00Z",
              "1970-01-01T00:00:00Z");
}

TEST_CASE("days cross leap days") {
  check_every("day", "2024-02-28T12:00:00Z", "2024-02-28T00:00:00Z",
              "2024-02-29T00:00:00Z");
  check_every("day", "2024-02-29T12:00:00Z", "2024-02-29T00:00:00Z",
              "2024-03-01T00:00:00Z");
  check_every("day", "2100-02-28T12:00:00Z", "2100-02-28T00:00:00Z",
              "2100-03-01T00:00:00Z"); // 2100 is not a leap year
  check_every("day", "2000-02-28T12:00:00Z", "2000-02-28T00:00:00Z",
              "2000-02-29T00:00:00Z"); // 2000 is
  check_every("day", "2023-02-28T12:00:00Z", "2023-02-28T00:00:00Z",
              "2023-03-01T00:00:00Z");
}

TEST_CASE("weeks start on Monday, counted from 1970-01-05") {
  // 2026-11-21 is a Saturday; 2026-11-16 and 2026-11-23 are Mondays.
  check_every("week", "2026-11-21T08:00:00Z", "2026-11-16T00:00:00Z",
              "2026-11-23T00:00:00Z");
  check_every("1 week", "2026-11-23T00:00:00Z", "2026-11-16T00:00:00Z",
              "2026-11-30T00:00:00Z");
  check_every("week", "2026-11-22T23:59:59.999Z", "2026-11-16T00:00:00Z",
              "2026-11-23T00:00:00Z");
  check_every("week", "1970-01-05T00:00:00.001Z", "1970-01-05T00:00:00Z",
              "1970-01-12T00:00:00Z");
  check_every("week", "1970-01-04T00:00:00Z", "1969-12-29T00:00:00Z",
              "1970-01-05T00:00:00Z");
  // Week 2967 since 1970-01-05 starts 2026-11-16: odd, so `2 weeks` ticks
  // on the Mondays before and after it.
  check_every("2 weeks", "2026-11-21T08:00:00Z", "2026-11-09T00:00:00Z",
              "2026-11-23T00:00:00Z");
  check_every("2 weeks", "2026-11-23T00:00:00Z", "2026-11-09T00:00:00Z",
              "2026-12-07T00:00:00Z");
  // Across a year end: 2026-12-28 and 2027-01-04 are Mondays.
  check_every("week", "2026-12-31T12:00:00Z", "2026-12-28T00:00:00Z",
              "2027-01-04T00:00:00Z");
  check_every("2 weeks", "2026-12-31T12:00:00Z", "2026-12-21T00:00:00Z",
              "2027-01-04T00:00:00Z");
}

TEST_CASE("months restart every year") {
  check_every("month", "2026-11-21T08:00:00Z", "2026-11-01T00:00:00Z",
              "2026-12-01T00:00:00Z");
  check_every("month", "2026-11-01T00:00:00Z", "2026-10-01T00:00:00Z",
              "2026-12-01T00:00:00Z");
  check_every("1 month", "2026-12-31T23:59:59.999Z", "2026-12-01T00:00:00Z",
              "2027-01-01T00:00:00Z");
  check_every("month", "2024-02-29T12:00:00Z", "2024-02-01T00:00:00Z",
              "2024-03-01T00:00:00Z");
  check_every("month", "2026-01-01T00:00:00Z", "2025-12-01T00:00:00Z",
              "2026-02-01T00:00:00Z");
  // doc/reference/schedules.md#ticks: `5 months` = Jan, Jun, Nov, then Jan; the
  // tick after Nov is one period on, and once past it prev is January's again.
  check_every("5 months", "2026-03-10T00:00:00Z", "2026-01-01T00:00:00Z",
              "2026-06-01T00:00:00Z");
  check_every("5 months", "2026-06-01T00:00:00Z", "2026-01-01T00:00:00Z",
              "2026-11-01T00:00:00Z");
  check_every("5 months", "2026-08-15T00:00:00Z", "2026-06-01T00:00:00Z",
              "2026-11-01T00:00:00Z");
  check_every("5 months", "2026-12-15T00:00:00Z", "2026-11-01T00:00:00Z",
              "2027-04-01T00:00:00Z");
  check_every("5 months", "2027-01-01T00:00:00Z", "2026-11-01T00:00:00Z",
              "2027-04-01T00:00:00Z");
  check_every("5 months", "2027-01-01T00:00:00.001Z", "2027-01-01T00:00:00Z",
              "2027-06-01T00:00:00Z");
  check_every("5 months", "2027-04-01T00:00:00Z", "2027-01-01T00:00:00Z",
              "2027-06-01T00:00:00Z");
  check_every("12 months", "2026-11-21T08:00:00Z", "2026-01-01T00:00:00Z",
              "2027-01-01T00:00:00Z");
  check_every("13 months", "2026-11-21T08:00:00Z", "2026-01-01T00:00:00Z",
              "2027-02-01T00:00:00Z");
}

// --- ticks of the time and day forms ---------------------------------------

TEST_CASE("hour at **:MM shifts the hour grid") {
  check_every("hour at **:30", "2026-11-21T14:23:00Z", "2026-11-21T13:30:00Z",
              "2026-11-21T14:30:00Z");
  check_every("hour at **:30", "2026-11-21T14:30:00Z", "2026-11-21T13:30:00Z",
              "2026-11-21T15:30:00Z");
  check_every("hour at **:30", "2026-11-21T00:10:00Z", "2026-11-20T23:30:00Z",
              "2026-11-21T00:30:00Z");
  check_every("5 hours at **:30", "2026-11-21T23:00:00Z",
              "2026-11-21T20:30:00Z", "2026-11-22T01:30:00Z");
  check_every("6 hours at **:15", "2026-11-21T06:15:00.001Z",
              "2026-11-21T06:15:00Z", "2026-11-21T12:15:00Z");
}

TEST_CASE("day at HH:MM shifts the day grid") {
  check_every("day at 08:00", "2026-11-21T08:00:00Z", "2026-11-20T08:00:00Z",
              "2026-11-22T08:00:00Z");
  check_every("day at 08:00", "2026-11-21T07:59:59.999Z",
              "2026-11-20T08:00:00Z", "2026-11-21T08:00:00Z");
  check_every("day at 08:00", "2026-11-21T08:00:00.001Z",
              "2026-11-21T08:00:00Z", "2026-11-22T08:00:00Z");
  check_every("day at 23:59", "2026-12-31T23:59:30Z", "2026-12-31T23:59:00Z",
              "2027-01-01T23:59:00Z");
  // Day 20778 (2026-11-21) is even: the 2-day grid's.
  check_every("2 days at 08:00", "2026-11-21T08:00:00Z", "2026-11-19T08:00:00Z",
              "2026-11-23T08:00:00Z");
  check_every("2 days at 08:00", "2026-11-22T12:00:00Z", "2026-11-21T08:00:00Z",
              "2026-11-23T08:00:00Z");
  check_every("2 days at 08:00", "2026-11-21T07:00:00Z", "2026-11-19T08:00:00Z",
              "2026-11-21T08:00:00Z");
}

TEST_CASE("week on DAY at HH:MM shifts the week grid") {
  check_every("week on Wednesday", "2026-11-21T08:00:00Z",
              "2026-11-18T00:00:00Z", "2026-11-25T00:00:00Z");
  check_every("week on Wednesday at 06:00", "2026-11-18T06:00:00Z",
              "2026-11-11T06:00:00Z", "2026-11-25T06:00:00Z");
  check_every("week on Wednesday at 06:00", "2026-11-18T05:59:59.999Z",
              "2026-11-11T06:00:00Z", "2026-11-18T06:00:00Z");
  check_every("week on Sunday", "2026-11-21T08:00:00Z", "2026-11-15T00:00:00Z",
              "2026-11-22T00:00:00Z");
  check_every("week on Monday", "2026-11-21T08:00:00Z", "2026-11-16T00:00:00Z",
              "2026-11-23T00:00:00Z");
  check_every("week at 06:00", "2026-11-21T08:00:00Z", "2026-11-16T06:00:00Z",
              "2026-11-23T06:00:00Z");
  // The 2-week grid's Mondays are 2026-11-09 and 2026-11-23.
  check_every("2 weeks on Wednesday", "2026-11-21T08:00:00Z",
              "2026-11-11T00:00:00Z", "2026-11-25T00:00:00Z");
  check_every("2 weeks on Sun at 23:00", "2026-11-21T08:00:00Z",
              "2026-11-15T23:00:00Z", "2026-11-29T23:00:00Z");
}

TEST_CASE("month on the NTH at HH:MM shifts the month grid") {
  check_every("month on the 15th at 17:00", "2026-11-21T08:00:00Z",
              "2026-11-15T17:00:00Z", "2026-12-15T17:00:00Z");
  check_every("month on the 15th at 17:00", "2026-12-20T08:00:00Z",
              "2026-12-15T17:00:00Z", "2027-01-15T17:00:00Z");
  check_every("month on the 15th at 17:00", "2026-11-15T17:00:00Z",
              "2026-10-15T17:00:00Z", "2026-12-15T17:00:00Z");
  check_every("month on the 15th", "2026-11-10T00:00:00Z",
              "2026-10-15T00:00:00Z", "2026-11-15T00:00:00Z");
  check_every("month at 17:00", "2026-11-01T17:00:00Z", "2026-10-01T17:00:00Z",
              "2026-12-01T17:00:00Z");
  check_every("5 months on the 2nd", "2026-12-15T00:00:00Z",
              "2026-11-02T00:00:00Z", "2027-04-02T00:00:00Z");
  check_every("5 months on the 2nd", "2027-01-01T00:00:00Z",
              "2026-11-02T00:00:00Z", "2027-04-02T00:00:00Z");
  check_every("5 months on the 2nd", "2027-01-03T00:00:00Z",
              "2027-01-02T00:00:00Z", "2027-06-02T00:00:00Z");
}

TEST_CASE("a day a month lacks is clamped to its last day") {
  check_every("month on the 29th", "2024-02-15T00:00:00Z",
              "2024-01-29T00:00:00Z", "2024-02-29T00:00:00Z");
  check_every("month on the 29th", "2024-03-01T00:00:00Z",
              "2024-02-29T00:00:00Z", "2024-03-29T00:00:00Z");
  check_every("month on the 29th", "2023-02-15T00:00:00Z",
              "2023-01-29T00:00:00Z", "2023-02-28T00:00:00Z");
  check_every("month on the 29th", "2023-03-01T00:00:00Z",
              "2023-02-28T00:00:00Z", "2023-03-29T00:00:00Z");
  check_every("month on the 29th", "2100-02-15T00:00:00Z",
              "2100-01-29T00:00:00Z", "2100-02-28T00:00:00Z");
  check_every("month on the 29th", "2000-02-15T00:00:00Z",
              "2000-01-29T00:00:00Z", "2000-02-29T00:00:00Z");
  check_every("month on the 31st at 17:00", "2026-04-15T00:00:00Z",
              "2026-03-31T17:00:00Z", "2026-04-30T17:00:00Z");
  check_every("month on the 31st", "2026-12-31T00:00:00Z",
              "2026-11-30T00:00:00Z", "2027-01-31T00:00:00Z");
  check_every("month on the 31st", "2026-02-28T00:00:00.001Z",
              "2026-02-28T00:00:00Z", "2026-03-31T00:00:00Z");
  check_every("2 months on the 30th", "2024-02-01T00:00:00Z",
              "2024-01-30T00:00:00Z", "2024-03-30T00:00:00Z");
}

TEST_CASE("far and small quantities stay exact") {
  check_every("36524 days", "2026-11-21T08:00:00Z", "1970-01-01T00:00:00Z",
              "2069-12-31T00:00:00Z");
  check_every("5217 weeks", "2026-11-21T08:00:00Z", "1970-01-05T00:00:00Z",
              "2069-12-30T00:00:00Z");
  check_every("1217 months", "2026-11-21T08:00:00Z", "2026-01-01T00:00:00Z",
              "2127-06-01T00:00:00Z");
  check_every("52594920 minutes", "2026-11-21T08:30:00Z",
              "2026-11-21T08:00:00Z", "2126-11-21T14:00:00Z");
}

TEST_CASE("every tick lies around now and on the grid, over two years") {
  for (const auto* text :
       {"minute", "7 minutes", "hour", "5 hours", "hour at **:30", "day",
        "3 days", "2 days at 08:00", "week", "2 weeks on Sunday at 23:00",
        "month", "5 months", "month on the 31st at 17:00",
        "2 months on the 29th"}) {
    const auto s = every(text);
    // An irregular stride visits many times of day, days and months.
    const auto stride = 7h + 13min + 17s + 1ms;
    for (Time now = at("2023-06-01T00:00:00Z");
         now < at("2025-06-01T00:00:00Z"); now += stride) {
      CAPTURE(text);
      CAPTURE(core::format_time(now));
      const auto t = core::ticks(s, now);
      CHECK(t.prev < now);
      CHECK(now < t.next);
      // prev is a grid point: just after it, it is the last one before.
      CHECK(core::ticks(s, t.prev + 1ms).prev == t.prev);
      // An earlier time never has a later prev.
      CHECK(core::ticks(s, now - 1ms).prev <= t.prev);
    }
  }
}

// --- cron ticks -----------------------------------------------------------

TEST_CASE("cron ticks are whole minutes strictly around now") {
  check_cron("* * * * *", "2026-11-21T14:23:00Z", "2026-11-21T14:22:00Z",
             "2026-11-21T14:24:00Z");
  check_cron("* * * * *", "2026-11-21T14:23:00.001Z", "2026-11-21T14:23:00Z",
             "2026-11-21T14:24:00Z");
  check_cron("* * * * *", "2026-11-21T14:22:59.999Z", "2026-11-21T14:22:00Z",
             "2026-11-21T14:23:00Z");
  check_cron("0 * * * *", "2026-11-21T14:23:00Z", "2026-11-21T14:00:00Z",
             "2026-11-21T15:00:00Z");
  check_cron("0 * * * *", "2026-11-21T14:00:00Z", "2026-11-21T13:00:00Z",
             "2026-11-21T15:00:00Z");
  check_cron("*/7 * * * *", "2026-11-21T14:58:00Z", "2026-11-21T14:56:00Z",
             "2026-11-21T15:00:00Z"); // cron lists restart every hour
  check_cron("30 8 * * *", "2026-11-21T08:00:00Z", "2026-11-20T08:30:00Z",
             "2026-11-21T08:30:00Z");
  check_cron("0 0 1 1 *", "2026-11-21T08:00:00Z", "2026-01-01T00:00:00Z",
             "2027-01-01T00:00:00Z");
  check_cron("59 23 31 12 *", "2026-12-31T23:59:00Z", "2025-12-31T23:59:00Z",
             "2027-12-31T23:59:00Z");
  check_cron("0 0 * * *", "2026-12-31T12:00:00Z", "2026-12-31T00:00:00Z",
             "2027-01-01T00:00:00Z");
}

TEST_CASE("cron business hours skip nights and weekends") {
  // 2026-11-21 is a Saturday.
  check_cron("*/15 9-17 * * MON-FRI", "2026-11-21T08:00:00Z",
             "2026-11-20T17:45:00Z", "2026-11-23T09:00:00Z");
  check_cron("*/15 9-17 * * MON-FRI", "2026-11-23T09:00:00Z",
             "2026-11-20T17:45:00Z", "2026-11-23T09:15:00Z");
  check_cron("*/15 9-17 * * MON-FRI", "2026-11-23T12:07:00Z",
             "2026-11-23T12:00:00Z", "2026-11-23T12:15:00Z");
}

TEST_CASE("a restricted day of month and day of week match either") {
  // The 13th or any Friday. 2026-11-13 and 2026-11-20 are Fridays.
  check_cron("0 0 13 * FRI", "2026-11-21T08:00:00Z", "2026-11-20T00:00:00Z",
             "2026-11-27T00:00:00Z");
  // The 1st or any Monday: 2026-12-01 is a Tuesday.
  check_cron("0 0 1 * MON", "2026-11-30T08:00:00Z", "2026-11-30T00:00:00Z",
             "2026-12-01T00:00:00Z");
  check_cron("0 0 1 * MON", "2026-12-01T08:00:00Z", "2026-12-01T00:00:00Z",
             "2026-12-07T00:00:00Z");
  // Feb 30 never exists, but Fridays in February do.
  check_cron("0 0 30 2 FRI", "2026-11-21T08:00:00Z", "2026-02-27T00:00:00Z",
             "2027-02-05T00:00:00Z");
}

TEST_CASE("a field starting with * makes the days match both") {
  // Odd days that are Mondays (Vixie: `*/2` counts as `*`).
  check_cron("0 0 */2 * MON", "2026-11-21T08:00:00Z", "2026-11-09T00:00:00Z",
             "2026-11-23T00:00:00Z");
  // The 13th when it is a Sunday or a Friday (`*/5` = 0, 5).
  check_cron("0 0 13 * */5", "2026-11-21T08:00:00Z", "2026-11-13T00:00:00Z",
             "2026-12-13T00:00:00Z");
  // Only the day of month restricted: the day of week is any.
  check_cron("0 0 13 * *", "2026-11-21T08:00:00Z", "2026-11-13T00:00:00Z",
             "2026-12-13T00:00:00Z");
  check_cron("0 0 * * FRI", "2026-11-21T08:00:00Z", "2026-11-20T00:00:00Z",
             "2026-11-27T00:00:00Z");
}

TEST_CASE("Feb 29 crons skip to the next leap year") {
  check_cron("0 0 29 2 *", "2026-11-21T08:00:00Z", "2024-02-29T00:00:00Z",
             "2028-02-29T00:00:00Z");
  check_cron("0 0 29 2 *", "2097-01-01T00:00:00Z", "2096-02-29T00:00:00Z",
             "2104-02-29T00:00:00Z"); // 2100 is not a leap year
  check_cron("0 0 29 2 *", "2000-03-01T00:00:00Z", "2000-02-29T00:00:00Z",
             "2004-02-29T00:00:00Z"); // 2000 is
  // Feb 29 on a Sunday: 2004, then 2032.
  check_cron("0 0 29 2 */7", "2010-01-01T00:00:00Z", "2004-02-29T00:00:00Z",
             "2032-02-29T00:00:00Z");
}

TEST_CASE("a hand-built cron that never matches gives far sentinels") {
  core::Cron never; // no minute at all
  never.hours.set();
  never.days.set();
  never.months.set();
  never.weekdays.set();
  const auto t = core::ticks(core::Schedule(never), at("2026-11-21T08:00:00Z"));
  CHECK(t.prev == Time::min());
  CHECK(t.next == Time::max());

  // Feb 30, which parse_cron refuses: the search gives up after 400 years.
  core::Cron feb30;
  feb30.minutes.set(0);
  feb30.hours.set(0);
  feb30.days.set(30);
  feb30.months.set(2);
  feb30.weekdays.set();
  const auto u = core::ticks(core::Schedule(feb30), at("2026-11-21T08:00:00Z"));
  CHECK(u.prev == Time::min());
  CHECK(u.next == Time::max());
}

TEST_CASE("cron ticks agree with a minute-by-minute search") {
  // The brute force: every minute within a day either side, checked field by
  // field with the Vixie day rule.
  const auto matches = [](const core::Cron& c, Time t) {
    using namespace std::chrono;
    const auto d = floor<days>(t);
    const year_month_day ymd(d);
    const hh_mm_ss hms(t - d);
    const bool dom = c.days[static_cast<unsigned>(ymd.day())];
    const bool dow = c.weekdays[weekday(d).c_encoding()];
    const bool day = (c.any_day || c.any_weekday) ? dom && dow : dom || dow;
    return c.minutes[static_cast<std::size_t>(hms.minutes().count())]
           && c.hours[static_cast<std::size_t>(hms.hours().count())]
           && c.months[static_cast<unsigned>(ymd.month())] && day;
  };
  for (const auto* text :
       {"* * * * *", "*/7 * * * *", "5,35 */5 * * *", "0 22-23 * * *",
        "15 3 * * *", "0 0 * * *", "*/10 1-3 * * 6,0", "59 23 * * *"}) {
    const auto c = std::get<core::Cron>(cron(text));
    for (const auto* now :
         {"2026-11-21T08:00:00Z", "2026-11-21T08:00:30Z",
          "2026-12-31T23:59:00Z", "2027-01-01T00:00:00Z",
          "2024-02-29T23:30:00.001Z", "2026-11-22T03:00:00Z"}) {
      CAPTURE(text);
      CAPTURE(now);
      const Time n = at(now);
      const auto t = core::ticks(core::Schedule(c), n);
      Time prev = std::chrono::floor<std::chrono::minutes>(n);
      if (prev == n) {
        prev -= 1min;
      }
      while (!matches(c, prev)) {
        prev -= 1min;
      }
      Time next = std::chrono::floor<std::chrono::minutes>(n) + 1min;
      while (!matches(c, next)) {
        next += 1min;
      }
      CHECK(t.prev == prev);
      CHECK(t.next == next);
    }
  }
}
