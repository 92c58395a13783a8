#include "core/duration.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using namespace std::chrono_literals;
using taskq::core::Millis;
namespace core = taskq::core;

TEST_CASE("single units parse") {
  CHECK(core::parse_duration("90s") == 90s);
  CHECK(core::parse_duration("5m") == 5min);
  CHECK(core::parse_duration("3h") == 3h);
  CHECK(core::parse_duration("2d") == 48h);
  CHECK(core::parse_duration("1w") == 168h);
  CHECK(core::parse_duration("1500ms") == 1500ms);
}

TEST_CASE("a bare number is seconds") {
  CHECK(core::parse_duration("90") == 90s);
  CHECK(core::parse_duration("1") == 1s);
  CHECK(core::parse_duration("007") == 7s);
  CHECK(core::parse_duration("86400") == 24h);
}

TEST_CASE("zero is allowed") {
  CHECK(core::parse_duration("0") == 0ms);
  CHECK(core::parse_duration("0s") == 0ms);
  CHECK(core::parse_duration("0ms") == 0ms);
  CHECK(core::parse_duration("0h0m") == 0ms);
}

TEST_CASE("units combine largest first") {
  CHECK(core::parse_duration("1h30m") == 90min);
  CHECK(core::parse_duration("1m30s") == 90s);
  CHECK(core::parse_duration("1s500ms") == 1500ms);
  CHECK(core::parse_duration("1m1ms") == 60001ms);
  CHECK(core::parse_duration("2d12h") == 60h);
  CHECK(core::parse_duration("1w2d3h4m5s6ms")
        == 168h + 48h + 3h + 4min + 5s + 6ms);
  CHECK(core::parse_duration("1w1s") == 168h + 1s); // units may be skipped
}

TEST_CASE("units may be spelt as words, in any case") {
  CHECK(core::parse_duration("5min") == 5min);
  CHECK(core::parse_duration("5mins") == 5min);
  CHECK(core::parse_duration("5 minutes") == 5min);
  CHECK(core::parse_duration("1 minute") == 1min);
  CHECK(core::parse_duration("2 Hours") == 2h);
  CHECK(core::parse_duration("3hr") == 3h);
  CHECK(core::parse_duration("3 hrs") == 3h);
  CHECK(core::parse_duration("1 day") == 24h);
  CHECK(core::parse_duration("2days") == 48h);
  CHECK(core::parse_duration("1wk") == 168h);
  CHECK(core::parse_duration("2 weeks") == 336h);
  CHECK(core::parse_duration("30sec") == 30s);
  CHECK(core::parse_duration("30 SECONDS") == 30s);
  CHECK(core::parse_duration("250msec") == 250ms);
  CHECK(core::parse_duration("250 milliseconds") == 250ms);
}

TEST_CASE("spaces may separate a number from its unit and the pairs") {
  CHECK(core::parse_duration("5 m") == 5min);
  CHECK(core::parse_duration("1h 30m") == 90min);
  CHECK(core::parse_duration("1 hour 30 minutes") == 90min);
  CHECK(core::parse_duration("1h  30m") == 90min);
}

TEST_CASE("a fraction that comes to whole milliseconds") {
  CHECK(core::parse_duration("1.5h") == 90min);
  CHECK(core::parse_duration("1.5") == 1500ms);
  CHECK(core::parse_duration("0.25s") == 250ms);
  CHECK(core::parse_duration("0.5 minutes") == 30s);
  CHECK(core::parse_duration("1.001s") == 1001ms);
  CHECK(core::parse_duration("2.000000000") == 2s); // nine digits
  CHECK(core::parse_duration("1.5h30m") == 2h);
}

TEST_CASE("unit words are known as such") {
  for (const auto* word : {"m", "min", "minutes", "Hours", "s", "ms", "w"}) {
    CAPTURE(word);
    CHECK(core::is_duration_unit(word));
  }
  for (const auto* word : {"", "M", "x", "12", "minutess", "jobs"}) {
    CAPTURE(word);
    CHECK_FALSE(core::is_duration_unit(word));
  }
}

TEST_CASE("a unit may exceed the next larger one") {
  CHECK(core::parse_duration("90m") == 90min);
  CHECK(core::parse_duration("36h") == 36h);
  CHECK(core::parse_duration("2000ms") == 2s);
}

TEST_CASE("malformed durations are refused") {
  for (const auto* text : {
           "",                    // empty
           "-5s",                 // negative
           "-5",                  // negative bare
           "+5s",                 // sign
           ".5s",                 // fraction without integer part
           "5.s",                 // a point without digits after it
           "1.5ms",               // not whole milliseconds
           "0.0001s",             // not whole milliseconds
           "1.0000000001h",       // more than nine digits after the point
           "5 M",                 // a one-letter unit is lower-case
           "5 mins5",             // a number after the last unit
           "5  ",                 // trailing spaces
           "5 minutes 5 minutes", // duplicated unit, in words
           "5 seconds 1 minute",  // wrong order, in words
           "5minutess",           // not a unit's word
           "5 fortnights",        // not a unit
           "5x",                  // unknown unit
           "5y",                  // years are not a unit
           "5M",                  // units are lower-case
           "5S",                  // units are lower-case
           "5H",                  // units are lower-case
           "m",                   // unit without number
           "ms",                  // unit without number
           "h5",                  // unit before number
           "5m1h",                // wrong order
           "1s1m",                // wrong order
           "1ms1s",               // wrong order
           "5m5m",                // duplicated unit
           "1h2h",                // duplicated unit
           "1ms1ms",              // duplicated unit
           "1h30",                // a bare number after a unit
           " 5m",                 // leading space
           "5m ",                 // trailing space
           "\t5m",                // tab
           "5m\n",                // newline
           "5ss",                 // unit doubled without a number
           "5mss",                // garbage after units
           "1h-30m",              // minus inside
           "0x10",                // hex
           "1e3",                 // exponent
           "5,5s",                // comma
           "abc",                 // garbage
           "*",                   // garbage
       }) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_duration(text));
  }
}

TEST_CASE("durations beyond 100 years are refused") {
  // 100 years of 365.2425 days is 3,155,695,200 s.
  CHECK(core::parse_duration("3155695200") == 3155695200s);
  CHECK_FALSE(core::parse_duration("3155695201"));
  CHECK(core::parse_duration("5200w") == 5200 * 168h);
  CHECK_FALSE(core::parse_duration("5218w"));
  CHECK(core::parse_duration("36524d6h") == 3155695200s);
  CHECK_FALSE(core::parse_duration("36524d6h1ms"));
  CHECK_FALSE(core::parse_duration("36524d5h60m1ms"));
  CHECK_FALSE(core::parse_duration("1000000h"));
}

TEST_CASE("numbers that would overflow 64 bits are refused") {
  CHECK_FALSE(core::parse_duration("9223372036854775807"));
  CHECK_FALSE(core::parse_duration("9223372036854775808"));
  CHECK_FALSE(core::parse_duration("99999999999999999999999999s"));
  CHECK_FALSE(core::parse_duration("99999999999999999999999999ms"));
  CHECK_FALSE(core::parse_duration("18446744073709551616w"));
}

TEST_CASE("format uses the largest units, each once") {
  CHECK(core::format_duration(90min) == "1h30m");
  CHECK(core::format_duration(48h) == "2d");
  CHECK(core::format_duration(45s) == "45s");
  CHECK(core::format_duration(1500ms) == "1s500ms");
  CHECK(core::format_duration(90s) == "1m30s");
  CHECK(core::format_duration(168h) == "1w");
  CHECK(core::format_duration(14 * 24h + 1ms) == "2w1ms");
  CHECK(core::format_duration(1ms) == "1ms");
  CHECK(core::format_duration(168h + 48h + 3h + 4min + 5s + 6ms)
        == "1w2d3h4m5s6ms");
  CHECK(core::format_duration(5min) == "5m");
}

TEST_CASE("format prints zero as 0s") {
  CHECK(core::format_duration(0ms) == "0s");
}

TEST_CASE("format marks negative durations with a minus") {
  CHECK(core::format_duration(-90s) == "-1m30s");
  CHECK(core::format_duration(-1ms) == "-1ms");
  CHECK(core::format_duration(Millis::min()).front() == '-');
  CHECK(core::format_duration(Millis::max()).front() != '-');
}

TEST_CASE("format and parse round-trip") {
  for (const Millis d :
       {Millis(0), Millis(1), Millis(999), Millis(1000), Millis(1001),
        Millis(59999), Millis(60000), Millis(3599999), Millis(86400000),
        Millis(604800000), Millis(604800001), Millis(123456789012),
        Millis(3155695200000)}) {
    CAPTURE(d.count());
    const auto text = core::format_duration(d);
    CHECK(core::parse_duration(text) == d);
  }
  for (const auto* text :
       {"1h30m", "2d", "45s", "1s500ms", "1w2d3h4m5s6ms", "0s", "5m", "1w"}) {
    CAPTURE(text);
    const auto d = core::parse_duration(text);
    REQUIRE(d);
    CHECK(core::format_duration(*d) == text);
  }
}
