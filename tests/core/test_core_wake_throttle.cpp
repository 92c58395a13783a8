#include "core/wake_throttle.hpp"

#include <doctest/doctest.h>

using taskq::core::WakeThrottle;
using namespace std::chrono_literals;

TEST_CASE("a commit after a quiet spell wakes at once; one within the spell "
          "owes a wake-up at its end") {
  WakeThrottle w(20ms);
  const WakeThrottle::Clock::time_point t0{1s};
  CHECK(w.commit(t0));
  CHECK_FALSE(w.owed());
  CHECK_FALSE(w.due());
  // Within 20 ms: owed, due when the spell ends.
  CHECK_FALSE(w.commit(t0 + 5ms));
  CHECK(w.owed());
  CHECK(w.due() == t0 + 20ms);
  // More commits within it owe the same one.
  CHECK_FALSE(w.commit(t0 + 19ms));
  CHECK(w.due() == t0 + 20ms);
  // Sent late (the caller was busy): the next spell counts from then.
  w.sent(t0 + 25ms);
  CHECK_FALSE(w.owed());
  CHECK_FALSE(w.commit(t0 + 30ms));
  CHECK(w.due() == t0 + 45ms);
  // The next commit after the spell wakes itself and clears the debt.
  CHECK(w.commit(t0 + 45ms));
  CHECK_FALSE(w.owed());
}

TEST_CASE("quiet commits wake the others once per longer spell, unless a "
          "commit that is not quiet comes") {
  WakeThrottle w(20ms, 100ms);
  const WakeThrottle::Clock::time_point t0{1s};
  CHECK(w.commit(t0, true));
  CHECK_FALSE(w.commit(t0 + 30ms, true)); // within 100 ms
  CHECK(w.due() == t0 + 100ms);
  // One not quiet: the wake-up owed is due at the short spell's end.
  CHECK_FALSE(w.commit(t0 + 10ms));
  CHECK(w.due() == t0 + 20ms);
  w.sent(t0 + 20ms);
  // Past the short spell, a commit not quiet wakes at once even within
  // the long one.
  CHECK_FALSE(w.commit(t0 + 50ms, true));
  CHECK(w.commit(t0 + 60ms));
  CHECK_FALSE(w.owed());
}

TEST_CASE("a wake-up that cannot go out stays owed, due a spell later") {
  WakeThrottle w(20ms, 100ms);
  const WakeThrottle::Clock::time_point t0{1s};
  CHECK(w.commit(t0));
  CHECK_FALSE(w.commit(t0 + 5ms));
  w.postpone(t0 + 20ms); // the connection was down when it was due
  CHECK(w.owed());
  CHECK(w.due() == t0 + 40ms);
  w.sent(t0 + 40ms);
  CHECK_FALSE(w.owed());
  w.postpone(t0 + 50ms); // nothing owed: nothing changes
  CHECK_FALSE(w.owed());
  CHECK(w.commit(t0 + 60ms));
}

TEST_CASE("a busy writer wakes the others once per spell") {
  WakeThrottle w(20ms);
  const WakeThrottle::Clock::time_point t0{1s};
  int woke = 0;
  // A commit every millisecond for a second, the owed wake-up sent as
  // soon as it is due.
  for (int ms = 0; ms < 1000; ++ms) {
    const auto now = t0 + std::chrono::milliseconds(ms);
    if (const auto due = w.due(); due && now >= *due) {
      w.sent(now);
      ++woke;
    }
    if (w.commit(now)) {
      ++woke;
    }
  }
  CHECK(woke >= 45);
  CHECK(woke <= 51);
}
