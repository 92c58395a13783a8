// Schedules (`--every`, `--cron`): to_string(parse(x)) parses back to an
// equal schedule, and the ticks around any instant bracket it: prev < now <
// next, both whole minutes; for cron, next is the prev of the instant just
// after it and prev the next of the instant just before it.
#include "core/schedule.hpp"

#include <string>

#include "fuzz.hpp"

namespace core = taskq::core;
using taskq::fuzz::Bytes;

namespace {

// 1600-01-01 and 9000-01-01 in Unix milliseconds: a clock far from both
// ends of the calendar the ticks are searched in.
constexpr int64_t k_first_now = -11'676'096'000'000;
constexpr int64_t k_last_now = 221'845'392'000'000;

bool whole_minute(core::Time t) {
  return core::to_unix_ms(t) % 60'000 == 0;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  const bool cron = in.byte() == 'c'; // `c...`: --cron, else --every
  const uint64_t span = static_cast<uint64_t>(k_last_now - k_first_now);
  const core::Time now =
      core::from_unix_ms(k_first_now + static_cast<int64_t>(in.u64() % span));
  const auto text = in.rest();

  const auto parse = cron ? core::parse_cron : core::parse_every;
  const auto schedule = parse(text);
  if (!schedule) {
    return 0;
  }
  FUZZ_REQUIRE(std::holds_alternative<core::Cron>(*schedule) == cron);
  const std::string printed = core::to_string(*schedule);
  const auto again = parse(printed);
  FUZZ_REQUIRE(again && *again == *schedule);
  FUZZ_REQUIRE(core::to_string(*again) == printed);

  const core::Ticks t = core::ticks(*schedule, now);
  FUZZ_REQUIRE(t.prev < now && now < t.next);
  FUZZ_REQUIRE(whole_minute(t.prev) && whole_minute(t.next));
  if (cron) {
    const core::Millis ms(1);
    FUZZ_REQUIRE(core::ticks(*schedule, t.next + ms).prev == t.next);
    FUZZ_REQUIRE(core::ticks(*schedule, t.prev - ms).next == t.prev);
  }
  return 0;
}
