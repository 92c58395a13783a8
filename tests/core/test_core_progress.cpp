#include "core/progress.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace std::chrono_literals;
namespace core = taskq::core;

namespace {
const core::Time t0 = *core::parse_time("2026-11-21T08:00:00Z");
}

TEST_CASE("no rate until two samples at different times") {
  core::RateMeter meter;
  CHECK_FALSE(meter.per_second());
  CHECK_FALSE(meter.eta(10));
  meter.sample(t0, 5);
  CHECK_FALSE(meter.per_second());
  meter.sample(t0, 6); // same instant
  CHECK_FALSE(meter.per_second());
}

TEST_CASE("the rate is tasks per second between the window's ends") {
  core::RateMeter meter(30s);
  meter.sample(t0, 0);
  meter.sample(t0 + 2s, 10);
  REQUIRE(meter.per_second());
  CHECK(*meter.per_second() == doctest::Approx(5.0));
  CHECK(meter.eta(100) == 20s);
  CHECK(meter.eta(1) == 1s); // rounded up to whole seconds
  CHECK(meter.eta(0) == 0ms);
}

TEST_CASE("old samples leave the window, so the rate follows recent work") {
  core::RateMeter meter(10s);
  meter.sample(t0, 0);
  meter.sample(t0 + 5s, 500); // a fast start: 100/s
  meter.sample(t0 + 20s, 500);
  meter.sample(t0 + 30s, 510); // then 1/s over the last 10 s
  REQUIRE(meter.per_second());
  CHECK(*meter.per_second() == doctest::Approx(1.0));
}

TEST_CASE("a stalled queue has no ETA") {
  core::RateMeter meter;
  meter.sample(t0, 7);
  meter.sample(t0 + 3s, 7);
  CHECK(meter.per_second() == doctest::Approx(0.0));
  CHECK_FALSE(meter.eta(5));
}

TEST_CASE("the progress line") {
  core::ProgressView v;
  v.done = 120;
  v.total = 200;
  v.rate = 12.5;
  v.eta = 7s;
  CHECK(core::format_progress(v, 0) == "120/200 60% 12.5/s ETA 7s");
  CHECK(core::format_progress(v, 10)
        == "[######----] 120/200 60% 12.5/s ETA 7s");
  v.failed = 3;
  CHECK(core::format_progress(v, 0) == "120/200 60% 12.5/s ETA 7s (3 failed)");
}

TEST_CASE("the progress line before a rate is known, and when done") {
  core::ProgressView v;
  v.done = 0;
  v.total = 4;
  CHECK(core::format_progress(v, 4) == "[----] 0/4 0% ETA ?");
  v.done = 4;
  CHECK(core::format_progress(v, 4) == "[####] 4/4 100%");
  core::ProgressView empty;
  CHECK(core::format_progress(empty, 0) == "0/0 100%");
}
