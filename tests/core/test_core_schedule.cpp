// parse_every, parse_cron and to_string.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <variant>

#include "schedule_helpers.hpp"

using namespace taskq::test::schedule_helpers;

// --- parse_every ---------------------------------------------------------

TEST_CASE("every unit parses alone, with 1, and plural with 2 or more") {
  using U = core::Every::Unit;
  const std::pair<std::string_view, U> units[] = {
      {"minute", U::minute}, {"hour", U::hour},   {"day", U::day},
      {"week", U::week},     {"month", U::month},
  };
  for (const auto& [name, unit] : units) {
    const std::string singular(name);
    const std::string plural = singular + "s";
    for (const auto& form :
         {std::pair{singular, 1}, std::pair{"1 " + singular, 1},
          std::pair{"2 " + plural, 2}, std::pair{"15 " + plural, 15}}) {
      const std::string& text = form.first;
      const int quantity = form.second;
      CAPTURE(text);
      const auto e = every_of(text);
      CHECK(e.unit == unit);
      CHECK(e.quantity == quantity);
      CHECK_FALSE(e.weekday);
      CHECK_FALSE(e.day);
      CHECK_FALSE(e.at);
    }
    CHECK_FALSE(core::parse_every(plural));          // `hours`
    CHECK_FALSE(core::parse_every("1 " + plural));   // `1 hours`
    CHECK_FALSE(core::parse_every("3 " + singular)); // `3 hour`
    CHECK_FALSE(core::parse_every("0 " + plural));   // `0 hours`
    CHECK_FALSE(core::parse_every("0 " + singular)); // `0 hour`
    CHECK_FALSE(core::parse_every("-1 " + plural));  // negative
    CHECK_FALSE(core::parse_every("-2 " + plural));  // negative
    CHECK_FALSE(core::parse_every("+2 " + plural));  // sign
    CHECK_FALSE(core::parse_every(plural + " 5"));   // `hours 5`
    CHECK_FALSE(core::parse_every("2"));             // no unit
  }
}

TEST_CASE("the DSL examples of doc/reference/schedules.md parse") {
  CHECK(every_of("15 minutes").quantity == 15);
  CHECK(every_of("6 hours").unit == core::Every::Unit::hour);
  CHECK(every_of("3 days").quantity == 3);
  CHECK(every_of("2 weeks").unit == core::Every::Unit::week);
  CHECK(every_of("5 months").quantity == 5);
}

TEST_CASE("words are split on any whitespace") {
  CHECK(every_of("  15\tminutes \n").quantity == 15);
  CHECK(every_of(" day ").unit == core::Every::Unit::day);
  CHECK(every_of("2  days   at  08:00").at == 8 * 60);
  CHECK(every_of("007 days").quantity == 7); // decimal, leading zeros read
}

TEST_CASE("malformed every texts are refused") {
  for (const auto* text : {
           "",
           " ",
           "\t\n",
           "foo",
           "second",
           "seconds",
           "20 seconds",
           "1 second",
           "years",
           "8 years",
           "1 year",
           "year",
           "3 hour",
           "hours",
           "days",
           "0 days",
           "00 days",
           "eight hours",
           "5 day",
           "weeks 5",
           "18 4",
           "-1 days",
           "+2 days",
           "2.5 days",
           "1e3 minutes",
           "0x10 minutes",
           "Minute", // units are lower case, as in rescue
           "2 Hours",
           "MONTH",
           "2 days extra",
           "day day",
           "minutes5",
           "5minutes",
           "2 minutess",
           "mins",
           "99999999999999999999999 minutes", // would overflow
       }) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_every(text));
  }
}

TEST_CASE("quantities are bounded by 100 years") {
  CHECK(every_of("52594920 minutes").quantity == 52594920);
  CHECK_FALSE(core::parse_every("52594921 minutes"));
  CHECK(every_of("876582 hours").quantity == 876582);
  CHECK_FALSE(core::parse_every("876583 hours"));
  CHECK(every_of("36524 days").quantity == 36524);
  CHECK_FALSE(core::parse_every("36525 days"));
  CHECK(every_of("5217 weeks").quantity == 5217);
  CHECK_FALSE(core::parse_every("5218 weeks"));
  CHECK(every_of("1217 months").quantity == 1217);
  CHECK_FALSE(core::parse_every("1218 months"));
}

TEST_CASE("the time and day forms parse") {
  auto e = every_of("hour at **:30");
  CHECK(e.unit == core::Every::Unit::hour);
  CHECK(e.at == 30);
  CHECK(every_of("6 hours at **:05").at == 5);
  CHECK(every_of("1 hour at **:00").at == 0);

  CHECK(every_of("day at 08:00").at == 8 * 60);
  CHECK(every_of("day at 8:00").at == 8 * 60);
  CHECK(every_of("day at 23:59").at == 23 * 60 + 59);
  CHECK(every_of("day at 00:00").at == 0);
  e = every_of("2 days at 08:00");
  CHECK(e.quantity == 2);
  CHECK(e.at == 8 * 60);

  e = every_of("week on Wednesday");
  CHECK(e.weekday == 2);
  CHECK_FALSE(e.at);
  e = every_of("week on Wednesday at 06:00");
  CHECK(e.weekday == 2);
  CHECK(e.at == 6 * 60);
  CHECK(every_of("2 weeks on sunday").weekday == 6);
  CHECK(every_of("week on MONDAY").weekday == 0);
  CHECK(every_of("week on Fri").weekday == 4);
  CHECK(every_of("week on tue").weekday == 1);
  CHECK(every_of("week at 06:00").at == 6 * 60);

  e = every_of("month on the 15th at 17:00");
  CHECK(e.day == 15);
  CHECK(e.at == 17 * 60);
  CHECK(every_of("month on the 1st").day == 1);
  CHECK(every_of("3 months on the 31st").day == 31);
  CHECK(every_of("month at 17:00").at == 17 * 60);
}

TEST_CASE("ordinals need their correct English suffix") {
  for (int n = 1; n <= 31; ++n) {
    const std::string_view right = (n % 10 == 1 && n != 11)   ? "st"
                                   : (n % 10 == 2 && n != 12) ? "nd"
                                   : (n % 10 == 3 && n != 13) ? "rd"
                                                              : "th";
    for (const std::string_view suffix : {"st", "nd", "rd", "th"}) {
      const std::string text =
          "month on the " + std::to_string(n) + std::string(suffix);
      CAPTURE(text);
      if (suffix == right) {
        CHECK(every_of(text).day == n);
      } else {
        CHECK_FALSE(core::parse_every(text));
      }
    }
  }
}

TEST_CASE("malformed time and day forms are refused") {
  for (const auto* text : {
           "day at 25:00",
           "day at 24:00",
           "day at 08:60",
           "day at 8:5",
           "day at 008:00",
           "day at 08",
           "day at 08:00:00",
           "day at",
           "day at **:30",
           "day at 08:00 at 09:00",
           "hour at 08:30",
           "hour at **:60",
           "hour at **:5",
           "hour at *:30",
           "hour at 30",
           "minute at **:30",
           "minute at 08:00",
           "15 minutes at **:30",
           "week on",
           "week on Wed at",
           "week on Wednesdays",
           "week on wednes",
           "week on the 3rd",
           "week at 06:00 on Wednesday",
           "week on 3",
           "day on Wednesday",
           "month on Wednesday",
           "month on the 0th",
           "month on the 32nd",
           "month on the 15",
           "month on the 05th",
           "month on 15th",
           "month on the 1th",
           "month on the 11st",
           "month on the 12nd",
           "month on the 13rd",
           "month on the 22th",
           "month on the 15TH",
           "month at 17:00 on the 15th",
           "hour on the 15th",
           "day at 08:00 on Monday",
           "week on Monday on Tuesday",
           "week ON Monday",
           "day AT 08:00",
       }) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_every(text));
  }
}

// --- parse_cron and its ticks ------------------------------------------------

TEST_CASE("cron fields parse to their sets") {
  const auto c = std::get<core::Cron>(cron("*/15 9-17 1,15 JAN-MAR mon-fri"));
  CHECK(c.minutes.count() == 4);
  CHECK(c.minutes[0]);
  CHECK(c.minutes[45]);
  CHECK(c.hours.count() == 9);
  CHECK(c.hours[9]);
  CHECK(c.hours[17]);
  CHECK(c.days.count() == 2);
  CHECK(c.months.count() == 3);
  CHECK(c.months[1]);
  CHECK(c.months[3]);
  CHECK(c.weekdays.count() == 5);
  CHECK_FALSE(c.weekdays[0]);
  CHECK_FALSE(c.any_day);
  CHECK_FALSE(c.any_weekday);

  const auto steps = std::get<core::Cron>(cron("10-40/10 */6 */10 * 1-7/2"));
  CHECK(steps.minutes.count() == 4); // 10 20 30 40
  CHECK(steps.hours.count() == 4);   // 0 6 12 18
  CHECK(steps.days.count() == 4);    // 1 11 21 31
  CHECK(steps.days[31]);
  CHECK(steps.weekdays.count() == 4); // 1 3 5 7=Sunday
  CHECK(steps.weekdays[0]);
  CHECK(steps.any_day);
  CHECK_FALSE(steps.any_weekday);
}

TEST_CASE("Sunday is 0, 7 and SUN alike") {
  const auto zero = std::get<core::Cron>(cron("0 12 * * 0"));
  const auto seven = std::get<core::Cron>(cron("0 12 * * 7"));
  const auto name = std::get<core::Cron>(cron("0 12 * * sun"));
  CHECK(zero.weekdays == seven.weekdays);
  CHECK(zero.weekdays == name.weekdays);
  // 2026-11-21 is a Saturday.
  for (const auto* text :
       {"0 12 * * 0", "0 12 * * 7", "0 12 * * SUN", "0 12 * * Sun"}) {
    check_cron(text, "2026-11-21T08:00:00Z", "2026-11-15T12:00:00Z",
               "2026-11-22T12:00:00Z");
  }
  check_cron("0 12 * * 6-7", "2026-11-22T08:00:00Z", "2026-11-21T12:00:00Z",
             "2026-11-22T12:00:00Z");
  check_cron("0 12 * * 5-7", "2026-11-23T08:00:00Z", "2026-11-22T12:00:00Z",
             "2026-11-27T12:00:00Z");
}

TEST_CASE("cron names are case-insensitive") {
  CHECK(std::get<core::Cron>(cron("0 0 1 jan,Jul *")).months
        == std::get<core::Cron>(cron("0 0 1 1,7 *")).months);
  CHECK(std::get<core::Cron>(cron("0 0 * * Mon-fRI")).weekdays
        == std::get<core::Cron>(cron("0 0 * * 1-5")).weekdays);
  CHECK(std::get<core::Cron>(cron("0 0 1 dec *")).months[12]);
}

TEST_CASE("crons that can never match are refused") {
  CHECK_FALSE(core::parse_cron("0 0 30 2 *"));
  CHECK_FALSE(core::parse_cron("0 0 31 2 *"));
  CHECK_FALSE(core::parse_cron("0 0 30,31 2 *"));
  CHECK_FALSE(core::parse_cron("0 0 31 4,6,9,11 *"));
  CHECK_FALSE(core::parse_cron("0 0 31 APR *"));
  CHECK_FALSE(core::parse_cron("0 0 31 2 */1"));
  CHECK(core::parse_cron("0 0 31 4,5 *"));
  CHECK(core::parse_cron("0 0 29 2 *"));
}

TEST_CASE("malformed crons are refused") {
  for (const auto* text : {
           "",
           " ",
           "* * * *",
           "* * * * * *",
           "60 * * * *",
           "-1 * * * *",
           "* 24 * * *",
           "* * 0 * *",
           "* * 32 * *",
           "* * * 0 *",
           "* * * 13 *",
           "* * * * 8",
           "*/0 * * * *",
           "*/60 * * * *",
           "5-3 * * * *",
           "* * * DEC-JAN *",
           "* * * * MON-SUN",
           "5/2 * * * *",
           "/5 * * * *",
           "*/ * * * *",
           "1-2-3 * * * *",
           "*-5 * * * *",
           "1,,2 * * * *",
           ", * * * *",
           "1, * * * *",
           "a * * * *",
           "* * * JANUARY *",
           "* * * * MONDAY",
           "* * * JA *",
           "* JAN * * *",
           "* * * * 1.5",
           "+5 * * * *",
           "@daily",
           "*/5/2 * * * *",
           "1-5/0 * * * *",
           "99999999999999999999 * * * *",
       }) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_cron(text));
  }
}

// --- to_string -----------------------------------------------------------

TEST_CASE("to_string gives canonical text that parses back") {
  const std::pair<std::string_view, std::string_view> everys[] = {
      {"minute", "minute"},
      {"1 minute", "minute"},
      {" 15   minutes ", "15 minutes"},
      {"007 days", "7 days"},
      {"1 hour", "hour"},
      {"6 hours", "6 hours"},
      {"2 weeks", "2 weeks"},
      {"5 months", "5 months"},
      {"hour at **:30", "hour at **:30"},
      {"3 hours at **:05", "3 hours at **:05"},
      {"day at 8:00", "day at 08:00"},
      {"2 days at 08:00", "2 days at 08:00"},
      {"week on wed", "week on Wednesday"},
      {"week on WEDNESDAY at 6:00", "week on Wednesday at 06:00"},
      {"2 weeks at 23:59", "2 weeks at 23:59"},
      {"month on the 15th at 17:00", "month on the 15th at 17:00"},
      {"1 month on the 1st", "month on the 1st"},
      {"3 months on the 22nd", "3 months on the 22nd"},
      {"month on the 23rd", "month on the 23rd"},
      {"month on the 11th", "month on the 11th"},
      {"month at 00:00", "month at 00:00"},
  };
  for (const auto& pair : everys) {
    const std::string_view text = pair.first;
    const std::string_view canonical = pair.second;
    CAPTURE(text);
    const auto s = every(text);
    CHECK(core::to_string(s) == canonical);
    CHECK(core::parse_every(core::to_string(s)) == s);
  }
  const std::pair<std::string_view, std::string_view> crons[] = {
      {"* * * * *", "* * * * *"},
      {" */5  9-17\t* jan,Jul mon-fri ", "*/5 9-17 * JAN,JUL MON-FRI"},
      {"0 0 29 2 7", "0 0 29 2 7"},
  };
  for (const auto& pair : crons) {
    const std::string_view text = pair.first;
    const std::string_view canonical = pair.second;
    CAPTURE(text);
    const auto s = cron(text);
    CHECK(core::to_string(s) == canonical);
    CHECK(core::parse_cron(core::to_string(s)) == s);
  }
}
