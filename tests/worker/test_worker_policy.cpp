// The engine's decisions that are pure: heartbeat cadence, poll timeouts,
// the lease-ahead hold, how many prefetched tasks a handler holds, when
// group commit writes the outcomes that wait, how a dying stream handler
// is restarted, and a handler's stdout as a result.
#include "core/error.hpp"
#include "worker/lease_source.hpp"
#include "worker/outcome.hpp"
#include "worker/policy.hpp"
#include "worker/supervise.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <string>

using namespace std::chrono_literals;
namespace core = taskq::core;
namespace worker = taskq::worker;
using worker::Instant;

TEST_CASE("a held lease is renewed at a third of its length") {
  CHECK(worker::heartbeat_every(core::Millis{5min}) == core::Millis{100s});
  CHECK(worker::heartbeat_every(core::Millis{30s}) == core::Millis{10s});
  CHECK(worker::heartbeat_every(core::Millis{3000}) == core::Millis{1000});
}

TEST_CASE("run waits for the server's answer a third of its lease, 1s to "
          "30s") {
  CHECK(worker::answer_timeout_for(core::Millis{6s}) == core::Millis{2s});
  CHECK(worker::answer_timeout_for(core::Millis{30s}) == core::Millis{10s});
  CHECK(worker::answer_timeout_for(core::Millis{5min}) == core::Millis{30s});
  CHECK(worker::answer_timeout_for(core::Millis{1s}) == core::Millis{1s});
  // Within a heartbeat's period: a silent network is noticed, and a fresh
  // connection made, before the lease lapses.
  for (const auto lease : {3s, 6s, 30s, 90s}) {
    CAPTURE(lease.count());
    CHECK(worker::answer_timeout_for(core::Millis{lease})
          <= worker::heartbeat_every(core::Millis{lease}));
  }
}

TEST_CASE("a very short lease is renewed every millisecond, never faster") {
  CHECK(worker::heartbeat_every(core::Millis{2}) == core::Millis{1});
  CHECK(worker::heartbeat_every(core::Millis{1}) == core::Millis{1});
}

TEST_CASE("a poll without a deadline waits until something happens") {
  CHECK(worker::poll_timeout(Instant{}, std::nullopt) == -1);
}

TEST_CASE("a poll past its deadline does not wait") {
  const Instant now{10s};
  CHECK(worker::poll_timeout(now, now - 1s) == 0);
  CHECK(worker::poll_timeout(now, now) == 0);
}

TEST_CASE("a poll's wait is rounded up to whole milliseconds") {
  const Instant now{10s};
  CHECK(worker::poll_timeout(now, now + 1200us) == 2);
  CHECK(worker::poll_timeout(now, now + 1ns) == 1);
  CHECK(worker::poll_timeout(now, now + 3s) == 3000);
  CHECK(worker::poll_timeout(now, now + 24h * 365) == 1 << 30);
}

TEST_CASE("a task leased ahead is held 250 ms unless told otherwise") {
  CHECK(worker::lease_ahead_hold(nullptr) == core::Millis{250});
  CHECK(worker::lease_ahead_hold("0") == core::Millis{0});
  CHECK(worker::lease_ahead_hold("40") == core::Millis{40});
  CHECK(worker::lease_ahead_hold("3600000") == core::Millis{3600000});
}

TEST_CASE("the lease-ahead hold takes whole milliseconds up to an hour") {
  for (const char* bad : {"", "-1", "3600001", "12ms", " 5", "1.5", "x"}) {
    CAPTURE(bad);
    try {
      worker::lease_ahead_hold(bad);
      FAIL("accepted");
    } catch (const taskq::Error& e) {
      CHECK(e.kind() == taskq::ErrorKind::usage);
      CHECK(std::string(e.what())
            == "TASKQ_LEASE_AHEAD_MS: expected whole milliseconds from 0 to "
               "3600000, got \""
                   + std::string(bad) + "\"");
    }
  }
}

TEST_CASE("without --prefetch no task waits behind a handler's own") {
  CHECK(worker::lookahead(1, 1) == 0);
  CHECK(worker::lookahead(0, 4) == 0);
}

TEST_CASE("prefetched tasks are shared among the handlers, one each at least") {
  CHECK(worker::lookahead(2, 1) == 1);
  CHECK(worker::lookahead(9, 2) == 4);
  CHECK(worker::lookahead(64, 1) == 63);
  CHECK(worker::lookahead(2, 8) == 1);
}

TEST_CASE("without --prefetch each outcome is written at once") {
  worker::FlushState s;
  s.prefetch = 1;
  s.pending = 1;
  CHECK(worker::flush_due(s, Instant{}));
}

TEST_CASE("group commit writes a full batch at once") {
  worker::FlushState s;
  s.prefetch = 4;
  s.flush_at = Instant{10s};
  s.pending = 3;
  CHECK_FALSE(worker::flush_due(s, Instant{1s}));
  s.pending = 4;
  CHECK(worker::flush_due(s, Instant{1s}));
}

TEST_CASE("group commit writes a batch at most --flush after its first") {
  worker::FlushState s;
  s.prefetch = 64;
  s.pending = 1;
  s.flush_at = Instant{5ms};
  CHECK_FALSE(worker::flush_due(s, Instant{4ms}));
  CHECK(worker::flush_due(s, Instant{5ms}));
  CHECK(worker::flush_due(s, Instant{6ms}));
}

TEST_CASE("group commit does not wait when no lease can come first") {
  worker::FlushState s;
  s.prefetch = 64;
  s.pending = 1;
  s.flush_at = Instant{1h};
  s.idle = true;
  CHECK(worker::flush_due(s, Instant{}));
}

TEST_CASE("a stopping run writes what waits") {
  worker::FlushState s;
  s.prefetch = 64;
  s.pending = 1;
  s.flush_at = Instant{1h};
  s.stopping = true;
  CHECK(worker::flush_due(s, Instant{}));
}

TEST_CASE("a stream handler that dies once starts again at once") {
  worker::Restarts r;
  const Instant start{100s};
  const auto at = r.died(start, start + 1s);
  REQUIRE(at.has_value());
  CHECK(*at == start + 1s);
  CHECK(r.deaths == 1);
  CHECK(r.backoff == core::Millis{1s});
}

TEST_CASE("three deaths in ten seconds without an outcome end the run") {
  worker::Restarts r;
  Instant t{100s};
  REQUIRE(r.died(t, t + 1s));
  t += 2s;
  REQUIRE(r.died(t, t + 1s));
  t += 2s;
  CHECK_FALSE(r.died(t, t + 1s).has_value());
  CHECK(r.deaths == 3);
  CHECK(r.first_death == Instant{101s});
}

TEST_CASE("an outcome between two deaths makes them not in a row") {
  worker::Restarts r;
  Instant t{100s};
  REQUIRE(r.died(t, t + 1s));
  REQUIRE(r.died(t + 2s, t + 3s));
  r.answered();
  CHECK(r.died(t + 4s, t + 5s).has_value());
  CHECK(r.deaths == 1);
}

TEST_CASE("deaths further apart than the window do not end the run") {
  worker::Restarts r;
  Instant t{100s};
  for (int i = 0; i < 10; ++i) {
    CHECK(r.died(t, t + 1s).has_value());
    t += 12s;
  }
}

TEST_CASE("the restart back-off doubles up to a minute") {
  worker::Restarts r;
  Instant t{100s};
  std::vector<core::Millis> waits;
  for (int i = 0; i < 9; ++i) {
    const Instant now = t + 1s;
    const auto at = r.died(t, now);
    REQUIRE(at.has_value());
    waits.push_back(std::chrono::duration_cast<core::Millis>(*at - now));
    t += 20s; // outside the dying window, short of healthy
  }
  CHECK(waits
        == std::vector<core::Millis>{0s, 1s, 2s, 4s, 8s, 16s, 32s, 60s, 60s});
}

TEST_CASE("a handler that lived a minute starts again without back-off") {
  worker::Restarts r;
  Instant t{100s};
  REQUIRE(r.died(t, t + 1s));
  REQUIRE(r.died(t + 20s, t + 21s));
  CHECK(r.backoff == core::Millis{2s});
  const Instant now = t + 100s;
  const auto at = r.died(t + 30s, now); // lived 70 s
  REQUIRE(at.has_value());
  CHECK(*at == now);
  CHECK(r.backoff == core::Millis{1s});
}

TEST_CASE("stdout that is JSON is the result, minified") {
  CHECK(worker::result_from_stdout("{ \"n\" : 1 }\n") == R"({"n":1})");
  CHECK(worker::result_from_stdout("42") == "42");
}

TEST_CASE("other stdout is the result as a JSON string") {
  CHECK(worker::result_from_stdout("hello\n") == R"("hello")");
  CHECK(worker::result_from_stdout("a\nb\n\n") == R"("a\nb\n")");
  CHECK(worker::result_from_stdout("") == R"("")");
  CHECK(worker::result_from_stdout("\xff") == "\"\xef\xbf\xbd\"");
}

TEST_CASE("the first turn looks for tasks, whatever is due") {
  worker::Looks looks;
  CHECK(looks.look);
  CHECK_FALSE(looks.begin()); // not only if due
  CHECK_FALSE(looks.look);
}

TEST_CASE("a change of the database looks only if something is due") {
  worker::Looks looks;
  looks.begin();
  looks.changed();
  CHECK(looks.look);
  CHECK(looks.begin());
  // A look asked for anyway stays one whatever is due.
  looks.now();
  looks.changed();
  CHECK_FALSE(looks.begin());
}

TEST_CASE("a task coming due wakes a look at its time, not before") {
  worker::Looks looks;
  looks.begin();
  looks.wake_at = Instant{10s};
  looks.wake(Instant{9s});
  CHECK_FALSE(looks.look);
  looks.wake(Instant{10s});
  CHECK(looks.look);
  CHECK_FALSE(looks.begin());
  CHECK_FALSE(looks.wake_at.has_value());
}

TEST_CASE("SIGCHLD only reaps; a stop signal stops, a second one kills") {
  CHECK(worker::signal_asks(SIGCHLD, false) == worker::SignalAsks::reap);
  CHECK(worker::signal_asks(SIGCHLD, true) == worker::SignalAsks::reap);
  CHECK(worker::signal_asks(SIGTERM, false) == worker::SignalAsks::stop);
  CHECK(worker::signal_asks(SIGINT, false) == worker::SignalAsks::stop);
  CHECK(worker::signal_asks(SIGHUP, true) == worker::SignalAsks::kill);
  CHECK(worker::signal_asks(SIGTERM, true) == worker::SignalAsks::kill);
}
