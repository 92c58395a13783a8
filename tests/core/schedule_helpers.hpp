// Helpers for the schedule tests (test_core_schedule.cpp,
// test_core_schedule_ticks.cpp): parsed schedules and their ticks checked
// as RFC 3339 texts.
#pragma once

#include "core/schedule.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <string_view>
#include <variant>

using namespace std::chrono_literals;
using taskq::core::Time;
namespace core = taskq::core;

namespace taskq::test::schedule_helpers {

inline Time at(std::string_view text) {
  const auto t = core::parse_time(text);
  REQUIRE_MESSAGE(t, text);
  return *t;
}

inline core::Schedule every(std::string_view text) {
  const auto s = core::parse_every(text);
  REQUIRE_MESSAGE(s, text);
  return *s;
}

inline core::Schedule cron(std::string_view text) {
  const auto s = core::parse_cron(text);
  REQUIRE_MESSAGE(s, text);
  return *s;
}

// Checks the ticks of `schedule` at `now` against RFC 3339 texts, so that a
// failure prints readable times.
inline void check_ticks(const core::Schedule& schedule, std::string_view now,
                        std::string_view prev, std::string_view next) {
  const auto t = core::ticks(schedule, at(now));
  INFO("schedule: ", core::to_string(schedule), ", now: ", now);
  CHECK(core::format_time(t.prev) == prev);
  CHECK(core::format_time(t.next) == next);
}

inline void check_every(std::string_view text, std::string_view now,
                        std::string_view prev, std::string_view next) {
  check_ticks(every(text), now, prev, next);
}

inline void check_cron(std::string_view text, std::string_view now,
                       std::string_view prev, std::string_view next) {
  check_ticks(cron(text), now, prev, next);
}

inline core::Every every_of(std::string_view text) {
  return std::get<core::Every>(every(text));
}

} // namespace taskq::test::schedule_helpers
