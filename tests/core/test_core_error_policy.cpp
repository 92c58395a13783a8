#include "core/error_policy.hpp"
#include "core/time.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <vector>

using namespace std::chrono_literals;
using taskq::core::Backoff;
using taskq::core::ErrorEntry;
using taskq::core::ErrorPolicy;
using taskq::core::Millis;
using taskq::core::PolicyOverrides;
using taskq::core::Time;
namespace core = taskq::core;

namespace {

const Time k_now = *core::parse_time("2026-11-21T08:00:00Z");

// `n` errors, the newest at `newest`, each `step` older than the next.
std::vector<ErrorEntry> errors_at(int n, Time newest, Millis step = 1min) {
  std::vector<ErrorEntry> out;
  for (int i = n - 1; i >= 0; --i) {
    out.push_back({newest - i * step, "boom"});
  }
  return out;
}

} // namespace

TEST_CASE("the defaults are Metafora's") {
  const ErrorPolicy p;
  CHECK(p.max_errors == 8);
  CHECK(p.window == 4h);
  CHECK(p.retry_delay == 10min);
  CHECK(p.backoff == Backoff::constant);
  CHECK(p.max_delay == 24h);
  CHECK(core::k_exceeded_error_rate == "exceeded error rate");
}

TEST_CASE("a first error sleeps the task for the retry delay") {
  const auto d = core::decide(errors_at(1, k_now), k_now, ErrorPolicy{});
  CHECK_FALSE(d.fail);
  REQUIRE(d.until);
  CHECK(*d.until == k_now + 10min);
}

TEST_CASE("seven errors in the window sleep until now + 10 minutes") {
  const auto d = core::decide(errors_at(7, k_now), k_now, ErrorPolicy{});
  CHECK_FALSE(d.fail);
  REQUIRE(d.until);
  CHECK(*d.until == k_now + 10min);
}

TEST_CASE("the eighth error in the window fails the task") {
  const auto d = core::decide(errors_at(8, k_now), k_now, ErrorPolicy{});
  CHECK(d.fail);
  CHECK_FALSE(d.until);
}

TEST_CASE("more errors than the maximum also fail the task") {
  CHECK(core::decide(errors_at(20, k_now), k_now, ErrorPolicy{}).fail);
}

TEST_CASE("an error exactly `window` old does not count") {
  // Seven recent errors plus one at exactly now - 4h: only seven count.
  auto errors = errors_at(7, k_now);
  errors.insert(errors.begin(), ErrorEntry{k_now - 4h, "old"});
  const auto d = core::decide(errors, k_now, ErrorPolicy{});
  CHECK_FALSE(d.fail);
  CHECK(d.until == k_now + 10min);
}

TEST_CASE("an error 1 ms younger than `window` counts") {
  auto errors = errors_at(7, k_now);
  errors.insert(errors.begin(), ErrorEntry{k_now - 4h + 1ms, "old"});
  CHECK(core::decide(errors, k_now, ErrorPolicy{}).fail);
}

TEST_CASE("errors older than the window never fail the task") {
  // 100 errors, all long ago, and the one just reported.
  auto errors = errors_at(100, k_now - 5h);
  errors.push_back({k_now, "new"});
  const auto d = core::decide(errors, k_now, ErrorPolicy{});
  CHECK_FALSE(d.fail);
  CHECK(d.until == k_now + 10min);
}

TEST_CASE("the window and maximum come from the policy") {
  ErrorPolicy p;
  p.max_errors = 3;
  p.window = 10min;
  CHECK_FALSE(core::decide(errors_at(2, k_now), k_now, p).fail);
  CHECK(core::decide(errors_at(3, k_now), k_now, p).fail);
  // Three errors 5 minutes apart span exactly 10 minutes: the oldest is out.
  CHECK_FALSE(core::decide(errors_at(3, k_now, 5min), k_now, p).fail);
  CHECK(core::decide(errors_at(3, k_now, 5min - 1ms), k_now, p).fail);
}

TEST_CASE("a maximum of one fails on the first error") {
  ErrorPolicy p;
  p.max_errors = 1;
  CHECK(core::decide(errors_at(1, k_now), k_now, p).fail);
}

TEST_CASE("retry_in overrides the retry delay") {
  const auto d = core::decide(errors_at(3, k_now), k_now, ErrorPolicy{}, 42s);
  CHECK_FALSE(d.fail);
  CHECK(d.until == k_now + 42s);
}

TEST_CASE("retry_in overrides exponential backoff and its cap") {
  ErrorPolicy p;
  p.backoff = Backoff::exponential;
  p.max_delay = 1h;
  CHECK(core::decide(errors_at(5, k_now), k_now, p, 3h).until == k_now + 3h);
}

TEST_CASE("retry_in does not save a task over the error rate") {
  const auto d = core::decide(errors_at(8, k_now), k_now, ErrorPolicy{}, 1s);
  CHECK(d.fail);
  CHECK_FALSE(d.until);
}

TEST_CASE("constant backoff keeps the same delay however many errors") {
  ErrorPolicy p;
  p.retry_delay = 30s;
  for (int n = 1; n <= 7; ++n) {
    CAPTURE(n);
    CHECK(core::decide(errors_at(n, k_now), k_now, p).until == k_now + 30s);
  }
}

TEST_CASE("exponential backoff doubles for each counted error") {
  ErrorPolicy p;
  p.backoff = Backoff::exponential;
  p.retry_delay = 1min;
  p.max_errors = 100;
  CHECK(core::decide(errors_at(1, k_now), k_now, p).until == k_now + 1min);
  CHECK(core::decide(errors_at(2, k_now), k_now, p).until == k_now + 2min);
  CHECK(core::decide(errors_at(3, k_now), k_now, p).until == k_now + 4min);
  CHECK(core::decide(errors_at(4, k_now), k_now, p).until == k_now + 8min);
  CHECK(core::decide(errors_at(7, k_now), k_now, p).until == k_now + 64min);
}

TEST_CASE("exponential backoff stops at max_delay") {
  ErrorPolicy p;
  p.backoff = Backoff::exponential;
  p.retry_delay = 1min;
  p.max_delay = 5min;
  p.max_errors = 1000;
  CHECK(core::decide(errors_at(3, k_now), k_now, p).until == k_now + 4min);
  CHECK(core::decide(errors_at(4, k_now), k_now, p).until == k_now + 5min);
  CHECK(core::decide(errors_at(5, k_now), k_now, p).until == k_now + 5min);
  // A long history must not overflow the doubling.
  CHECK(core::decide(errors_at(500, k_now, 1ms), k_now, p).until
        == k_now + 5min);
}

TEST_CASE("exponential backoff counts only errors inside the window") {
  ErrorPolicy p;
  p.backoff = Backoff::exponential;
  p.retry_delay = 1min;
  auto errors = errors_at(5, k_now - 4h); // all outside the window
  errors.push_back({k_now - 1min, "recent"});
  errors.push_back({k_now, "new"});
  CHECK(core::decide(errors, k_now, p).until == k_now + 2min);
}

TEST_CASE("resolve_policy with no overrides gives the defaults") {
  const auto p = core::resolve_policy({}, {});
  const ErrorPolicy defaults;
  CHECK(p.max_errors == defaults.max_errors);
  CHECK(p.window == defaults.window);
  CHECK(p.retry_delay == defaults.retry_delay);
  CHECK(p.backoff == defaults.backoff);
  CHECK(p.max_delay == defaults.max_delay);
}

TEST_CASE("resolve_policy: queue settings override the defaults") {
  PolicyOverrides queue;
  queue.max_errors = 3;
  queue.window = 1h;
  queue.retry_delay = 1min;
  queue.backoff = Backoff::exponential;
  queue.max_delay = 2h;
  const auto p = core::resolve_policy(queue, {});
  CHECK(p.max_errors == 3);
  CHECK(p.window == 1h);
  CHECK(p.retry_delay == 1min);
  CHECK(p.backoff == Backoff::exponential);
  CHECK(p.max_delay == 2h);
}

TEST_CASE("resolve_policy: task settings override the queue's") {
  PolicyOverrides queue;
  queue.max_errors = 3;
  queue.window = 1h;
  queue.retry_delay = 1min;
  queue.backoff = Backoff::exponential;
  queue.max_delay = 2h;
  PolicyOverrides task;
  task.max_errors = 5;
  task.window = 2h;
  task.retry_delay = 30s;
  task.backoff = Backoff::constant;
  task.max_delay = 3h;
  const auto p = core::resolve_policy(queue, task);
  CHECK(p.max_errors == 5);
  CHECK(p.window == 2h);
  CHECK(p.retry_delay == 30s);
  CHECK(p.backoff == Backoff::constant);
  CHECK(p.max_delay == 3h);
}

TEST_CASE("resolve_policy falls through field by field") {
  PolicyOverrides queue;
  queue.window = 1h;
  queue.retry_delay = 1min;
  PolicyOverrides task;
  task.retry_delay = 30s;
  task.max_delay = 3h;
  const auto p = core::resolve_policy(queue, task);
  CHECK(p.max_errors == core::k_default_max_errors); // neither: default
  CHECK(p.window == 1h);                             // queue only
  CHECK(p.retry_delay == 30s);                       // both: task wins
  CHECK(p.backoff == Backoff::constant);             // neither: default
  CHECK(p.max_delay == 3h);                          // task only
}

TEST_CASE("backoff names round-trip and others are refused") {
  CHECK(core::parse_backoff("constant") == Backoff::constant);
  CHECK(core::parse_backoff("exponential") == Backoff::exponential);
  CHECK(core::to_string(Backoff::constant) == "constant");
  CHECK(core::to_string(Backoff::exponential) == "exponential");
  for (const auto* text : {"", "Exponential", "exp", "linear", "constant "}) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_backoff(text));
  }
}
