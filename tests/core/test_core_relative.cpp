// Relative times and elapsed times, as tables show them on a terminal.
#include "core/time.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace std::chrono_literals;
using taskq::core::Millis;
using taskq::core::Time;
namespace core = taskq::core;

namespace {

const Time k_now = core::from_unix_ms(1'795'000'000'000);

} // namespace

TEST_CASE("a time within a second of now reads as now") {
  CHECK(core::format_relative(k_now, k_now) == "now");
  CHECK(core::format_relative(k_now - 999ms, k_now) == "now");
  CHECK(core::format_relative(k_now + 999ms, k_now) == "now");
}

TEST_CASE("a past time reads as its distance ago in its largest unit") {
  CHECK(core::format_relative(k_now - 1s, k_now) == "1s ago");
  CHECK(core::format_relative(k_now - 59s, k_now) == "59s ago");
  CHECK(core::format_relative(k_now - 60s, k_now) == "1m ago");
  CHECK(core::format_relative(k_now - 3min - 59s, k_now) == "3m ago");
  CHECK(core::format_relative(k_now - 2h - 59min, k_now) == "2h ago");
  CHECK(core::format_relative(k_now - 24h, k_now) == "1d ago");
  CHECK(core::format_relative(k_now - 24h * 400, k_now) == "400d ago");
}

TEST_CASE("a future time reads as in its distance") {
  CHECK(core::format_relative(k_now + 1s, k_now) == "in 1s");
  CHECK(core::format_relative(k_now + 2h + 30min, k_now) == "in 2h");
  CHECK(core::format_relative(k_now + 72h, k_now) == "in 3d");
}

TEST_CASE("an elapsed time keeps its two largest units, in whole seconds") {
  CHECK(core::format_elapsed(Millis(0)) == "0s");
  CHECK(core::format_elapsed(Millis(999)) == "0s");
  CHECK(core::format_elapsed(45s) == "45s");
  CHECK(core::format_elapsed(3min + 12s) == "3m12s");
  CHECK(core::format_elapsed(3min) == "3m");
  CHECK(core::format_elapsed(2h + 5min + 9s) == "2h5m");
  CHECK(core::format_elapsed(2h + 9s) == "2h");
  CHECK(core::format_elapsed(76h + 59min) == "3d4h");
  CHECK(core::format_elapsed(-5s) == "0s");
}
