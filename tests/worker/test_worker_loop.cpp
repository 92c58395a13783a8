// The loop both kinds of handler share (worker/loop.hpp), with a fake
// clock, a fake store and fake handlers: a lost connection, its tries and
// its give-up; the signals and the stop; when to look for tasks; the
// summary's --max-tasks. No database, no process, no sleep.
#include "worker/loop.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <utility>
#include <vector>

using namespace taskq;
using namespace taskq::worker;
using core::Millis;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// Both clocks move together, by hand.
struct FakeClock final : LoopClock {
  Instant t = Instant{} + seconds(1000);
  core::Time w = core::Time{} + seconds(1'800'000'000);
  Instant steady() override { return t; }
  core::Time wall() override { return w; }
  void advance(Millis d) {
    t += d;
    w += d;
  }
};

// A server that is up or away; what it was asked.
struct FakeStore final : LoopStore {
  bool away = false;
  bool due = false;
  bool woke = false; // the change feed has a wake-up that may take a lease
  std::optional<core::Time> next;
  uint64_t losses = 0;
  int probes = 0;
  int drained = 0;
  std::vector<std::optional<Instant>> limits;
  std::optional<core::Time> asked_since;

  bool anything_due(core::Time) override {
    ++probes;
    if (away) {
      throw ConnectionLost("server closed the connection");
    }
    return due;
  }
  std::optional<core::Time> next_due(core::Time seen) override {
    asked_since = seen;
    return next;
  }
  uint64_t connection_losses() override { return losses; }
  std::string last_connection_loss() override { return "swallowed loss"; }
  bool drain_feed() override {
    ++drained;
    return std::exchange(woke, false);
  }
  void limit_waits(std::optional<Instant> at) override { limits.push_back(at); }
};

// What the loop asked of the handlers, in order.
struct FakeHandlers final : Handlers {
  std::vector<std::string> calls;
  std::optional<Instant> kill_at;
  std::optional<Instant> reconnected_at;
  bool signalled = false;

  void reap() override { calls.emplace_back("reap"); }
  void stop(bool s, Instant at) override {
    calls.emplace_back("stop");
    signalled = s;
    kill_at = at;
  }
  void kill() override { calls.emplace_back("kill"); }
  void changed() override { calls.emplace_back("changed"); }
  void reconnected(Instant now) override {
    calls.emplace_back("reconnected");
    reconnected_at = now;
  }
};

RunOptions options(std::optional<Millis> reconnect_for = seconds(60)) {
  RunOptions o;
  o.queues = {"q"};
  o.grace = seconds(10);
  o.reconnect_for = reconnect_for;
  return o;
}

// A loop over the fakes, with `o` as run's options.
struct Fixture {
  RunOptions o;
  FakeClock clock;
  FakeStore store;
  FakeHandlers handlers;
  Loop loop{o, clock, store, handlers};

  explicit Fixture(RunOptions opts = options()) : o(std::move(opts)) {}

  void lose() { loop.lost(ConnectionLost("server closed the connection")); }
};

} // namespace

// --- the connection -------------------------------------------------------

TEST_CASE("a lost connection puts the loop down and sets the first try") {
  Fixture f;
  CHECK_FALSE(f.loop.down());
  CHECK_FALSE(f.loop.next_try());
  f.lose();
  CHECK(f.loop.down());
  CHECK(f.loop.why_down() == "server closed the connection");
  REQUIRE(f.loop.next_try());
  CHECK(*f.loop.next_try() == f.clock.t + milliseconds(100));
  CHECK(f.handlers.calls.empty()); // handlers keep working
}

TEST_CASE("no try is made before the back-off says") {
  Fixture f;
  f.lose();
  f.store.away = true;
  f.clock.advance(milliseconds(99));
  f.loop.check_connection();
  CHECK(f.store.probes == 0);
  CHECK(f.loop.down());
}

TEST_CASE("a reconnect that heals: feed drained, a look owed, handlers told") {
  Fixture f;
  f.lose();
  f.loop.looks().look = false;
  f.clock.advance(milliseconds(100));
  f.loop.check_connection();
  CHECK(f.store.probes == 1);
  CHECK_FALSE(f.loop.down());
  CHECK_FALSE(f.loop.next_try());
  CHECK(f.store.drained == 1);
  CHECK(f.loop.looks().look);
  CHECK(f.loop.looks().if_due);
  CHECK(f.handlers.calls == std::vector<std::string>{"reconnected"});
  CHECK(f.handlers.reconnected_at == f.clock.t);
}

TEST_CASE("a try that fails again stays down and backs off further") {
  Fixture f;
  f.lose();
  f.store.away = true;
  f.clock.advance(milliseconds(100));
  f.loop.check_connection();
  CHECK(f.store.probes == 1);
  CHECK(f.loop.down());
  REQUIRE(f.loop.next_try());
  CHECK(*f.loop.next_try() == f.clock.t + milliseconds(200));
  CHECK(f.handlers.calls.empty());
}

TEST_CASE("a call that finds the server still away backs off further") {
  Fixture f;
  f.lose();
  f.clock.advance(milliseconds(50));
  f.lose(); // a call found the server still away: it counts as a try
  CHECK(f.loop.down());
  REQUIRE(f.loop.next_try());
  CHECK(*f.loop.next_try() == f.clock.t + milliseconds(200));
  CHECK(f.loop.why_down() == "server closed the connection"); // the first
}

TEST_CASE("a loss the store swallowed is heard at the next turn") {
  Fixture f;
  f.loop.check_connection();
  CHECK_FALSE(f.loop.down());
  f.store.losses = 1; // a read whose failure changed nothing
  f.store.away = true;
  f.loop.check_connection();
  CHECK(f.loop.down());
  CHECK(f.loop.why_down() == "swallowed loss");
  CHECK(f.store.probes == 0); // its first try waits for the back-off
}

TEST_CASE("a loss already heard is not heard again from the store's count") {
  Fixture f;
  f.lose();
  f.store.losses = 1; // the same loss, counted by the store
  f.clock.advance(milliseconds(100));
  f.loop.check_connection(); // the try heals
  CHECK_FALSE(f.loop.down());
  f.loop.check_connection();
  CHECK_FALSE(f.loop.down());
}

TEST_CASE("past --reconnect-for the loop gives up and stops as on a signal") {
  Fixture f(options(seconds(1)));
  f.lose();
  f.store.away = true;
  f.clock.advance(seconds(1));
  f.loop.check_connection();
  CHECK(f.store.probes == 0); // no try past the limit
  REQUIRE(f.loop.summary().unreachable);
  CHECK(*f.loop.summary().unreachable == "server closed the connection");
  CHECK(f.loop.stopping());
  CHECK(f.handlers.calls == std::vector<std::string>{"reap", "stop"});
  CHECK(f.handlers.signalled);
  CHECK(f.loop.write_until() == f.clock.t + seconds(10));
  CHECK_FALSE(f.loop.next_try()); // nothing is tried again
}

TEST_CASE("a give-up happens once") {
  Fixture f(options(seconds(1)));
  f.lose();
  f.clock.advance(seconds(2));
  f.loop.check_connection();
  f.loop.check_connection();
  f.lose();
  CHECK(f.handlers.calls == std::vector<std::string>{"reap", "stop"});
}

TEST_CASE("--reconnect-for 0 gives up at the first loss") {
  Fixture f(options(Millis{0}));
  f.lose();
  CHECK(f.loop.summary().unreachable);
  CHECK(f.loop.stopping());
}

TEST_CASE("--reconnect-for forever keeps trying") {
  Fixture f(options(std::nullopt));
  f.lose();
  f.store.away = true;
  for (int i = 0; i < 100; ++i) {
    f.clock.advance(seconds(5));
    f.loop.check_connection();
  }
  CHECK(f.store.probes == 100);
  CHECK_FALSE(f.loop.summary().unreachable);
  CHECK_FALSE(f.loop.stopping());
}

TEST_CASE("a give-up after a signal's stop keeps the signal's grace") {
  Fixture f(options(seconds(1)));
  f.loop.on_signal(SIGTERM);
  const auto until = f.loop.write_until();
  f.lose();
  f.clock.advance(seconds(1));
  f.loop.check_connection();
  CHECK(f.loop.summary().unreachable);
  CHECK(f.loop.write_until() == until);
  CHECK(f.handlers.calls == std::vector<std::string>{"reap", "stop"});
  CHECK_FALSE(f.loop.writes_on(f.clock.t)); // not past --reconnect-for
}

// --- signals and the stop ---------------------------------------------------

TEST_CASE("SIGTERM with running handlers: reaped, then given the grace") {
  Fixture f;
  f.loop.on_signal(SIGTERM);
  CHECK(f.handlers.calls == std::vector<std::string>{"reap", "stop"});
  CHECK(f.handlers.signalled);
  CHECK(f.handlers.kill_at == f.clock.t + seconds(10));
  CHECK(f.loop.stopping());
  // No wait for the server goes on past the grace.
  REQUIRE(f.store.limits.size() == 1);
  CHECK(f.store.limits[0] == f.clock.t + seconds(10));
}

TEST_CASE("a signal while stopping kills the handlers") {
  Fixture f;
  f.loop.on_signal(SIGINT);
  f.loop.on_signal(SIGTERM);
  CHECK(f.handlers.calls
        == std::vector<std::string>{"reap", "stop", "reap", "kill"});
}

TEST_CASE("SIGCHLD only reaps") {
  Fixture f;
  f.loop.on_signal(SIGCHLD);
  CHECK(f.handlers.calls == std::vector<std::string>{"reap"});
  CHECK_FALSE(f.loop.stopping());
}

TEST_CASE("a stop of --until-empty gives the grace but bounds no wait") {
  Fixture f;
  f.loop.begin_stop(false);
  CHECK(f.handlers.calls == std::vector<std::string>{"stop"});
  CHECK_FALSE(f.handlers.signalled);
  CHECK_FALSE(f.loop.write_until());
  CHECK(f.store.limits.empty());
  f.loop.begin_stop(false);
  CHECK(f.handlers.calls.size() == 1); // once
}

TEST_CASE("a give-up after a stop of --until-empty bounds the waits") {
  Fixture f(options(seconds(1)));
  f.loop.begin_stop(false);
  f.lose();
  f.clock.advance(seconds(1));
  f.loop.check_connection();
  CHECK(f.loop.summary().unreachable);
  CHECK(f.loop.write_until() == f.clock.t + seconds(10));
  REQUIRE(f.store.limits.size() == 1);
  CHECK(f.handlers.calls == std::vector<std::string>{"stop", "reap"});
}

TEST_CASE("outcomes kept across a loss are tried until the grace is over") {
  Fixture f;
  CHECK_FALSE(f.loop.writes_on(f.clock.t)); // not stopping
  f.lose();
  f.loop.on_signal(SIGTERM);
  CHECK(f.loop.writes_on(f.clock.t));
  f.clock.advance(milliseconds(9999));
  CHECK(f.loop.writes_on(f.clock.t));
  f.clock.advance(milliseconds(1));
  CHECK_FALSE(f.loop.writes_on(f.clock.t));
}

// --- when to look for tasks
// ---------------------------------------------------

TEST_CASE("a task due later wakes the look when it is due") {
  Fixture f;
  const core::Time seen = f.clock.w;
  f.store.next = seen + seconds(5);
  f.clock.advance(seconds(1)); // the read took a second
  f.loop.wake_when_due(seen);
  CHECK(f.store.asked_since == seen);
  CHECK(f.loop.looks().wake_at == f.clock.t + seconds(4));
}

TEST_CASE("a task due by now wakes the look at once, never in the past") {
  Fixture f;
  f.store.next = f.clock.w - seconds(3);
  f.loop.wake_when_due(f.clock.w);
  CHECK(f.loop.looks().wake_at == f.clock.t);
}

TEST_CASE("nothing due sets no timer") {
  Fixture f;
  f.loop.looks().begin();
  f.loop.wake_when_due(f.clock.w);
  CHECK_FALSE(f.loop.looks().wake_at);
}

TEST_CASE("while the server is away the timer asks it nothing") {
  // An outcome lost to a silence leaves finish_exited setting the timer:
  // a read then would be a try outside the back-off (with a stop signal
  // pending, one more k_stop_allowance before the signal is acted on).
  Fixture f;
  f.store.next = f.clock.w + seconds(2);
  f.lose();
  f.loop.looks().look = false;
  f.loop.wake_when_due(f.clock.w);
  CHECK_FALSE(f.store.asked_since);
  CHECK_FALSE(f.loop.looks().wake_at);
  // The try that finds the server back owes the look instead.
  f.clock.advance(milliseconds(100));
  f.loop.check_connection();
  CHECK_FALSE(f.loop.down());
  CHECK(f.loop.looks().look);
}

TEST_CASE("a due look: the timer's time makes the next turn look at once") {
  Fixture f;
  Looks& looks = f.loop.looks();
  CHECK(looks.begin() == false); // the first look, whatever is due
  f.store.next = f.clock.w + seconds(2);
  f.loop.wake_when_due(f.clock.w);
  f.clock.advance(seconds(1));
  looks.wake(f.clock.t);
  CHECK_FALSE(looks.look);
  f.clock.advance(seconds(1));
  looks.wake(f.clock.t);
  CHECK(looks.look);
  CHECK_FALSE(looks.if_due);
}

TEST_CASE("a change elsewhere makes a look only if something is due") {
  Fixture f;
  Looks& looks = f.loop.looks();
  looks.begin();
  looks.changed();
  CHECK(looks.look);
  CHECK(looks.begin()); // only if due
  looks.now();
  looks.changed(); // a look is due anyway: whatever is due
  CHECK_FALSE(looks.begin());
}

TEST_CASE("--max-tasks is reached when as many were leased") {
  RunOptions o = options();
  o.max_tasks = 2;
  Fixture f(o);
  CHECK_FALSE(f.loop.max_reached());
  f.loop.summary().leased = 1;
  CHECK_FALSE(f.loop.max_reached());
  f.loop.summary().leased = 2;
  CHECK(f.loop.max_reached());
  Fixture unbounded;
  unbounded.loop.summary().leased = 1'000'000;
  CHECK_FALSE(unbounded.loop.max_reached());
}

TEST_CASE("a try probes the store at the wall clock's now") {
  Fixture f;
  f.lose();
  f.clock.advance(milliseconds(100));
  f.store.due = true;
  f.loop.check_connection();
  CHECK(f.store.probes == 1);
  // the loop asked nothing else of the store for the try
  CHECK_FALSE(f.store.asked_since);
}

// --- a look for tasks
// ---------------------------------------------------------

TEST_CASE("the first look leases whatever is due, at one now") {
  Fixture f;
  const auto at = f.loop.begin_look(false);
  REQUIRE(at);
  CHECK(*at == f.clock.w);
  CHECK(f.store.probes == 0); // no read first
  CHECK_FALSE(f.loop.looks().look);
}

TEST_CASE("a due look after a change: nothing due sets the timer") {
  Fixture f;
  f.loop.looks().begin();
  f.loop.looks().changed();
  f.store.next = f.clock.w + seconds(30);
  CHECK_FALSE(f.loop.begin_look(false));
  CHECK(f.store.probes == 1);
  CHECK(f.loop.looks().wake_at == f.clock.t + seconds(30));
}

TEST_CASE("a due look after a change: something due is leased") {
  Fixture f;
  f.loop.looks().begin();
  f.loop.looks().changed();
  f.store.due = true;
  CHECK(f.loop.begin_look(false) == f.clock.w);
  CHECK(f.store.probes == 1);
}

TEST_CASE("a look with outcomes waiting asks nothing first") {
  Fixture f;
  f.loop.looks().begin();
  f.loop.looks().changed();
  CHECK(f.loop.begin_look(true) == f.clock.w);
  CHECK(f.store.probes == 0);
}

TEST_CASE("a change before a look makes the handlers check their leases") {
  Fixture f;
  f.loop.begin_look(false);
  CHECK(f.handlers.calls.empty()); // the feed had not woken
  f.store.woke = true;
  f.loop.begin_look(false);
  CHECK(f.handlers.calls == std::vector<std::string>{"changed"});
}
