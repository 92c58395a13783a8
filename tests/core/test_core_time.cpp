#include "core/time.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono;
using namespace std::chrono_literals;
using taskq::core::Millis;
using taskq::core::Time;
namespace core = taskq::core;

namespace {

// The instant for a UTC calendar date and time, built independently of
// parse_time.
Time utc(int y, unsigned mo, unsigned d, int h = 0, int mi = 0, int s = 0,
         int ms = 0) {
  return Time(sys_days(year(y) / month(mo) / day(d))) + hours(h) + minutes(mi)
         + seconds(s) + Millis(ms);
}

} // namespace

TEST_CASE("a UTC time with Z parses") {
  CHECK(core::parse_time("2026-11-21T08:00:00Z") == utc(2026, 11, 21, 8));
  CHECK(core::parse_time("1970-01-01T00:00:00Z") == Time(0ms));
  CHECK(core::parse_time("2026-11-21T23:59:59Z")
        == utc(2026, 11, 21, 23, 59, 59));
}

TEST_CASE("the unix epoch helpers agree with parse_time") {
  CHECK(core::to_unix_ms(*core::parse_time("1970-01-01T00:00:01.5Z")) == 1500);
  CHECK(core::to_unix_ms(*core::parse_time("2026-11-21T08:00:00Z"))
        == 1795248000000);
  CHECK(core::from_unix_ms(1795248000000) == utc(2026, 11, 21, 8));
  CHECK(core::to_unix_ms(core::from_unix_ms(-1)) == -1);
}

TEST_CASE("lower-case t and z and a space separator are accepted") {
  const auto expected = utc(2026, 11, 21, 8, 30);
  CHECK(core::parse_time("2026-11-21t08:30:00z") == expected);
  CHECK(core::parse_time("2026-11-21 08:30:00Z") == expected);
  CHECK(core::parse_time("2026-11-21T08:30:00z") == expected);
}

TEST_CASE("offsets are converted to UTC") {
  CHECK(core::parse_time("2026-11-21T10:00:00+02:00") == utc(2026, 11, 21, 8));
  CHECK(core::parse_time("2026-11-21T03:00:00-05:00") == utc(2026, 11, 21, 8));
  CHECK(core::parse_time("2026-11-21T08:00:00+00:00") == utc(2026, 11, 21, 8));
  CHECK(core::parse_time("2026-11-21T08:00:00-00:00") == utc(2026, 11, 21, 8));
  CHECK(core::parse_time("2026-11-21T13:45:00+05:45") == utc(2026, 11, 21, 8));
  CHECK(core::parse_time("2026-11-20T22:30:00-09:30") == utc(2026, 11, 21, 8));
}

TEST_CASE("offsets may cross the day, month and year") {
  CHECK(core::parse_time("2027-01-01T01:00:00+02:00") == utc(2026, 12, 31, 23));
  CHECK(core::parse_time("2026-12-31T23:00:00-01:00") == utc(2027, 1, 1, 0));
  CHECK(core::parse_time("2026-03-01T00:30:00+01:00")
        == utc(2026, 2, 28, 23, 30));
  CHECK(core::parse_time("2026-01-01T00:00:00+23:59")
        == utc(2025, 12, 31, 0, 1));
}

TEST_CASE("fractions of a second keep milliseconds and truncate the rest") {
  CHECK(core::parse_time("2026-11-21T08:00:00.5Z")
        == utc(2026, 11, 21, 8, 0, 0, 500));
  CHECK(core::parse_time("2026-11-21T08:00:00.25Z")
        == utc(2026, 11, 21, 8, 0, 0, 250));
  CHECK(core::parse_time("2026-11-21T08:00:00.123Z")
        == utc(2026, 11, 21, 8, 0, 0, 123));
  CHECK(core::parse_time("2026-11-21T08:00:00.1239Z")
        == utc(2026, 11, 21, 8, 0, 0, 123));
  CHECK(core::parse_time("2026-11-21T08:00:00.999999999Z")
        == utc(2026, 11, 21, 8, 0, 0, 999));
  CHECK(core::parse_time("2026-11-21T08:00:00.000Z") == utc(2026, 11, 21, 8));
  CHECK(core::parse_time("2026-11-21T10:00:00.042+02:00")
        == utc(2026, 11, 21, 8, 0, 0, 42));
}

TEST_CASE("leap days exist only in leap years") {
  CHECK(core::parse_time("2028-02-29T00:00:00Z") == utc(2028, 2, 29));
  CHECK(core::parse_time("2000-02-29T00:00:00Z") == utc(2000, 2, 29));
  CHECK_FALSE(core::parse_time("2026-02-29T00:00:00Z"));
  CHECK_FALSE(core::parse_time("2100-02-29T00:00:00Z"));
  CHECK_FALSE(core::parse_time("2028-02-30T00:00:00Z"));
}

TEST_CASE("dates that do not exist are refused") {
  for (const auto* text : {
           "2026-02-30T00:00:00Z",
           "2026-04-31T00:00:00Z",
           "2026-13-01T00:00:00Z",
           "2026-00-01T00:00:00Z",
           "2026-01-00T00:00:00Z",
           "2026-01-32T00:00:00Z",
           "2026-11-31T00:00:00Z",
       }) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_time(text));
  }
  CHECK(core::parse_time("2026-01-31T00:00:00Z"));
  CHECK(core::parse_time("2026-12-31T00:00:00Z"));
}

TEST_CASE("times of day that do not exist are refused") {
  for (const auto* text : {
           "2026-11-21T25:00:00Z",
           "2026-11-21T24:00:00Z",
           "2026-11-21T08:60:00Z",
           "2026-11-21T08:00:60Z",
           "2026-11-21T08:00:61Z",
           "2026-11-21T99:99:99Z",
       }) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_time(text));
  }
}

TEST_CASE("malformed offsets are refused") {
  for (const auto* text : {
           "2026-11-21T08:00:00",        // missing offset
           "2026-11-21T08:00:00.5",      // missing offset after a fraction
           "2026-11-21T08:00:00+0200",   // no colon
           "2026-11-21T08:00:00+02",     // no minutes
           "2026-11-21T08:00:00+2:00",   // one-digit hour
           "2026-11-21T08:00:00+24:00",  // hour out of range
           "2026-11-21T08:00:00+02:60",  // minute out of range
           "2026-11-21T08:00:00Z+02:00", // both
           "2026-11-21T08:00:00ZZ",      // doubled
           "2026-11-21T08:00:00UTC",     // a zone name
           "2026-11-21T08:00:00 Z",      // space before Z
       }) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_time(text));
  }
}

TEST_CASE("garbage and partial times are refused") {
  for (const auto* text : {
           "",
           "garbage",
           "2026-11-21",             // date only
           "08:00:00Z",              // time only
           "2026-11-21T08:00Z",      // no seconds
           "2026-11-21T8:00:00Z",    // one-digit hour
           "2026-1-21T08:00:00Z",    // one-digit month
           "26-11-21T08:00:00Z",     // two-digit year
           "+2026-11-21T08:00:00Z",  // signed year
           "2026/11/21T08:00:00Z",   // slashes
           "2026-11-21X08:00:00Z",   // bad separator
           "2026-11-21T08.00.00Z",   // dots
           "2026-11-21T08:00:00.Z",  // empty fraction
           "2026-11-21T08:00:00,5Z", // comma fraction
           " 2026-11-21T08:00:00Z",  // leading space
           "2026-11-21T08:00:00Z ",  // trailing space
           "2026-11-21T08:00:00Zjunk",
           "2026-11-21T08:00:00Z\n",
           "2026-11-21T08:00:00.5aZ", // letter in the fraction
           "1795248000",              // unix seconds
       }) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_time(text));
  }
  // A NUL byte inside a string_view is not the end of the text.
  CHECK_FALSE(core::parse_time(std::string_view("2026-11-21T08:00:00Z\0", 21)));
}

TEST_CASE("format prints UTC without milliseconds when they are zero") {
  CHECK(core::format_time(utc(2026, 11, 21, 8)) == "2026-11-21T08:00:00Z");
  CHECK(core::format_time(Time(0ms)) == "1970-01-01T00:00:00Z");
  CHECK(core::format_time(utc(2028, 2, 29, 23, 59, 59))
        == "2028-02-29T23:59:59Z");
  CHECK(core::format_time(utc(999, 1, 2, 3, 4, 5)) == "0999-01-02T03:04:05Z");
}

TEST_CASE("format prints three digits of milliseconds when not zero") {
  CHECK(core::format_time(utc(2026, 11, 21, 8, 0, 0, 500))
        == "2026-11-21T08:00:00.500Z");
  CHECK(core::format_time(utc(2026, 11, 21, 8, 0, 0, 1))
        == "2026-11-21T08:00:00.001Z");
  CHECK(core::format_time(utc(2026, 11, 21, 8, 0, 0, 999))
        == "2026-11-21T08:00:00.999Z");
}

TEST_CASE("format handles times before the epoch") {
  CHECK(core::format_time(Time(-1ms)) == "1969-12-31T23:59:59.999Z");
  CHECK(core::format_time(utc(1900, 3, 1, 12)) == "1900-03-01T12:00:00Z");
}

TEST_CASE("format and parse round-trip") {
  for (const Time t :
       {Time(0ms), Time(-1ms), utc(2026, 11, 21, 8), utc(2028, 2, 29, 12),
        utc(2026, 12, 31, 23, 59, 59, 999), utc(2000, 1, 1, 0, 0, 0, 1),
        utc(9999, 12, 31, 23, 59, 59, 999), utc(0, 1, 1)}) {
    const auto text = core::format_time(t);
    CAPTURE(text);
    CHECK(core::parse_time(text) == t);
  }
  for (const auto* text : {"2026-11-21T08:00:00Z", "2026-11-21T08:00:00.123Z",
                           "2028-02-29T00:00:00.010Z"}) {
    const auto t = core::parse_time(text);
    REQUIRE(t);
    CHECK(core::format_time(*t) == text);
  }
}

TEST_CASE("parse and format are safe to call from several threads") {
  // Each thread checks its own inputs; a shared buffer would mix them up.
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([i, &failures] {
      const Time t = utc(2026, 1, 1) + hours(i) + Millis(i + 1);
      for (int n = 0; n < 2000; ++n) {
        const auto text = core::format_time(t + minutes(n));
        if (core::parse_time(text) != t + minutes(n)) {
          ++failures[static_cast<std::size_t>(i)];
        }
      }
    });
  }
  for (auto& th : threads) {
    th.join();
  }
  for (const int f : failures) {
    CHECK(f == 0);
  }
}

TEST_CASE("an offset may not carry a time out of years 0000 to 9999") {
  // The UTC instant counts, not the digits written: these read as years
  // 0000-9999 but are 10000-01-01 and -0001-12-31 in UTC.
  for (const auto* text :
       {"9999-12-31T23:59:59-23:59", "9999-12-31T23:59:00-00:01",
        "9999-12-31T23:30:00-00:30", "0000-01-01T00:00:00+00:01",
        "0000-01-01T00:00:00.999+23:59"}) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_time(text));
  }
  // The edges themselves, and offsets that stay inside, are fine.
  CHECK(core::parse_time("9999-12-31T23:59:59.999Z")
        == utc(9999, 12, 31, 23, 59, 59, 999));
  CHECK(core::parse_time("9999-12-31T23:59:59.999-00:00")
        == utc(9999, 12, 31, 23, 59, 59, 999));
  CHECK(core::parse_time("0000-01-01T00:00:00Z") == utc(0, 1, 1));
  CHECK(core::parse_time("0000-01-01T23:59:00+23:59") == utc(0, 1, 1));
  CHECK(core::parse_time("9999-12-31T00:00:00-23:59")
        == utc(9999, 12, 31, 23, 59));
}

TEST_CASE("format is defined for every millisecond count") {
  // Far outside 0000-9999, where chrono's calendar arithmetic overflows:
  // the text is an expanded year, never undefined behaviour.
  CHECK(core::format_time(core::from_unix_ms(INT64_MIN))
        == "-292275055-05-16T16:47:04.192Z");
  CHECK(core::format_time(core::from_unix_ms(INT64_MAX))
        == "292278994-08-17T07:12:55.807Z");
  CHECK(core::format_time(core::from_unix_ms(253402300800000))
        == "10000-01-01T00:00:00Z");
  CHECK(core::format_time(core::from_unix_ms(-62167219200001))
        == "-0001-12-31T23:59:59.999Z");
  CHECK(core::format_time(core::from_unix_ms(-62167219200000))
        == "0000-01-01T00:00:00Z");
  for (int64_t ms = INT64_MIN; ms < INT64_MAX - 9'000'000'000'000'000;) {
    CHECK_FALSE(core::format_time(core::from_unix_ms(ms)).empty());
    ms += 1'000'000'000'000'003;
  }
}

TEST_CASE("add_checked keeps sums within years 0000 to 9999") {
  CHECK(core::in_range(core::k_min_time));
  CHECK(core::in_range(core::k_max_time));
  CHECK_FALSE(core::in_range(core::k_max_time + 1ms));
  CHECK_FALSE(core::in_range(core::k_min_time - 1ms));
  CHECK(core::format_time(core::k_min_time) == "0000-01-01T00:00:00Z");
  CHECK(core::format_time(core::k_max_time) == "9999-12-31T23:59:59.999Z");

  CHECK(core::add_checked(utc(2026, 1, 1), hours(1)) == utc(2026, 1, 1, 1));
  CHECK(core::add_checked(utc(2026, 1, 1), -hours(24)) == utc(2025, 12, 31));
  CHECK(core::add_checked(core::k_max_time, 0ms) == core::k_max_time);
  CHECK(core::add_checked(core::k_max_time - 1ms, 1ms) == core::k_max_time);
  CHECK_FALSE(core::add_checked(core::k_max_time, 1ms));
  CHECK_FALSE(core::add_checked(core::k_min_time, -1ms));
  CHECK_FALSE(core::add_checked(utc(9999, 1, 1), hours(24 * 366)));
  // Whatever the duration, nothing overflows.
  for (const Time t : {core::k_min_time, Time(0ms), core::k_max_time}) {
    CHECK_FALSE(core::add_checked(t, Millis(INT64_MAX)));
    CHECK_FALSE(core::add_checked(t, Millis(INT64_MIN)));
  }
  // A time already out of range stays refused.
  CHECK_FALSE(core::add_checked(core::from_unix_ms(INT64_MAX), Millis(-1)));
  CHECK_FALSE(core::add_checked(core::k_max_time + 1ms, -1ms));
}
