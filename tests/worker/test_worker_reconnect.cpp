// When a waiting command connects again to a database server it lost, and
// when it gives up (core/reconnect.hpp, worker/reconnect.hpp): pure
// decisions, the clock passed in.
#include "core/reconnect.hpp"
#include "worker/reconnect.hpp"

#include <doctest/doctest.h>

using namespace taskq;
using core::Millis;

TEST_CASE("reconnect back-off: 100 ms, doubling, at most 5 s") {
  CHECK(core::reconnect_delay(1) == Millis{100});
  CHECK(core::reconnect_delay(2) == Millis{200});
  CHECK(core::reconnect_delay(3) == Millis{400});
  CHECK(core::reconnect_delay(6) == Millis{3200});
  CHECK(core::reconnect_delay(7) == Millis{5000});
  CHECK(core::reconnect_delay(1000) == Millis{5000});
  CHECK(core::reconnect_delay(0) == Millis{100});
}

TEST_CASE("reconnect limit: a duration, zero, or for ever") {
  CHECK(core::keep_reconnecting(Millis{0}, Millis{1000}));
  CHECK(core::keep_reconnecting(Millis{999}, Millis{1000}));
  CHECK_FALSE(core::keep_reconnecting(Millis{1000}, Millis{1000}));
  CHECK_FALSE(core::keep_reconnecting(Millis{0}, Millis{0}));
  CHECK(core::keep_reconnecting(Millis{1'000'000'000}, std::nullopt));
  CHECK(core::k_default_reconnect_for == Millis{5 * 60 * 1000});
}

TEST_CASE("only a lost connection is retried, never an SQL error") {
  for (const char* lost : {"08000", "08003", "08006", "08001", "08004", "57P01",
                           "57P02", "57P03"}) {
    CHECK_MESSAGE(core::connection_lost_state(lost), lost);
  }
  for (const char* sql : {"", "42P01", "23505", "55P03", "40001", "57014",
                          "28P01", "3D000", "53300", "XX000"}) {
    CHECK_FALSE_MESSAGE(core::connection_lost_state(sql), sql);
  }
  const ConnectionLost e("lost");
  CHECK(e.kind() == ErrorKind::unavailable); // one-shot commands: exit 5
}

TEST_CASE("--reconnect-for: durations, 0 and forever; anything else is usage") {
  CHECK(worker::parse_reconnect_for("5m") == Millis{300'000});
  CHECK(worker::parse_reconnect_for("0") == Millis{0});
  CHECK(worker::parse_reconnect_for("forever") == std::nullopt);
  for (const char* bad : {"soon", "", "-1s", "Forever"}) {
    try {
      worker::parse_reconnect_for(bad);
      FAIL("accepted " << bad);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::usage);
    }
  }
}

TEST_CASE("Reconnect: lost once, tries with back-off, back, gives up") {
  using worker::Instant;
  const Instant t0{};
  worker::Reconnect rc("test", Millis{1000});
  CHECK_FALSE(rc.down());
  CHECK_FALSE(rc.next_try());
  CHECK_FALSE(rc.ok(t0)); // nothing to say
  rc.lost(ConnectionLost("lost the connection"), t0);
  CHECK(rc.down());
  CHECK(*rc.next_try() == t0 + Millis{100});
  CHECK_FALSE(rc.try_due(t0 + Millis{99}));
  CHECK(rc.try_due(t0 + Millis{100}));
  rc.lost(ConnectionLost("still lost"), t0 + Millis{100});
  CHECK(*rc.next_try() == t0 + Millis{300});
  CHECK(rc.why() == "lost the connection"); // the first loss is the cause
  CHECK_FALSE(rc.gave_up(t0 + Millis{999}));
  CHECK(rc.gave_up(t0 + Millis{1000}));
  CHECK(rc.ok(t0 + Millis{400}));
  CHECK_FALSE(rc.down());
  CHECK_FALSE(rc.gave_up(t0 + Millis{5000}));
  // A new loss starts the back-off over.
  rc.lost(ConnectionLost("again"), t0 + Millis{6000});
  CHECK(*rc.next_try() == t0 + Millis{6100});
}

TEST_CASE("Reconnect: a loss the store counted but nobody said is heard "
          "once") {
  using worker::Instant;
  worker::Reconnect rc("test", Millis{60'000});
  CHECK_FALSE(rc.unheard_loss(0));
  CHECK(rc.unheard_loss(1)); // swallowed by a read: the caller says it
  CHECK_FALSE(rc.unheard_loss(1));
  // A loss that reached the engine (it is down) is no news afterwards.
  rc.lost(ConnectionLost("lost"), Instant{});
  CHECK_FALSE(rc.unheard_loss(2));
  CHECK(rc.ok(Instant{} + Millis{200}));
  CHECK_FALSE(rc.unheard_loss(2));
  CHECK(rc.unheard_loss(3));
}

TEST_CASE(
    "retrying: runs the look again after a loss, rethrows past the limit") {
  worker::Reconnect rc("test", Millis{60'000});
  int calls = 0;
  const int got = worker::retrying(rc, [&] {
    if (++calls < 3) {
      throw ConnectionLost("lost");
    }
    return 42;
  });
  CHECK(got == 42);
  CHECK(calls == 3);
  CHECK_FALSE(rc.down());

  worker::Reconnect never("test", Millis{0});
  calls = 0;
  CHECK_THROWS_AS(worker::retrying(never,
                                   [&] {
                                     ++calls;
                                     throw ConnectionLost("lost");
                                   }),
                  ConnectionLost);
  CHECK(calls == 1);

  // Any other error is not retried.
  worker::Reconnect rc2("test", Millis{60'000});
  calls = 0;
  CHECK_THROWS_AS(worker::retrying(rc2,
                                   [&] {
                                     ++calls;
                                     throw Error(ErrorKind::unavailable,
                                                 "locked");
                                   }),
                  Error);
  CHECK(calls == 1);
  CHECK_FALSE(rc2.down());
}
