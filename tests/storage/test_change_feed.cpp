// The change feed (storage/seam/change_feed.cpp): it wakes on another
// connection's commit, not on a look that writes nothing, survives being
// moved, and on PostgreSQL leaves out the store's own commits, looks
// again when a wake-up owed is never sent, and delays the wake-up of a
// commit that concerns only those watching, not of one that may give a
// waiting worker work.
#include "core/wake_throttle.hpp"
#include "storage/seam/change_feed.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <poll.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

// Whether a commit's wake-up reaches `feed` within `within`: heard, not
// only looked for (drain() is true for a wake-up; a PostgreSQL wait also
// ends after ChangeFeed::k_listen_poll with none).
bool heard(storage::ChangeFeed& feed, std::chrono::milliseconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (!feed.drain()) {
    if (std::chrono::steady_clock::now() >= until) {
      return false;
    }
    pollfd p{feed.fd(), POLLIN, 0};
    ::poll(&p, 1, 50);
  }
  return true;
}

} // namespace

TEST_CASE("the change feed wakes on another connection's commit") {
  TempDb db;
  TaskStore waiter(db.path(), OpenMode::write);
  storage::ChangeFeed feed = waiter.changes();
  REQUIRE_FALSE(feed.polling()); // inotify works here
  feed.drain();
  CHECK_FALSE(feed.wait(50ms)); // nothing happened

  TaskStore other(db.path(), OpenMode::write);
  add_task(other, "q");
  CHECK(heard(feed, 10s));
  // One commit, one wake-up: drained, it is quiet again.
  CHECK_FALSE(feed.wait(50ms));
}

TEST_CASE("a look that finds nothing writes nothing, so idle workers do not "
          "wake each other") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_at(store, "q", t0 + 1h); // something to look at, not yet due
  storage::ChangeFeed feed = store.changes();
  feed.drain();
  CHECK(store.lease(lease_request("q"), t0).empty());
  CHECK_FALSE(store.next_due({"q"}, t0) == std::nullopt);
  CHECK(store.lease_held(1, "token", t0) == false);
  CHECK(store.find(1));
  CHECK_FALSE(feed.wait(100ms));
}

TEST_CASE("a change feed and its waits survive being moved") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::ChangeFeed first = store.changes();
  storage::ChangeFeed moved = std::move(first);
  moved.drain();
  TaskStore other(db.path(), OpenMode::write);
  add_task(other, "q");
  CHECK(heard(moved, 10s));
}

// A commit within core::k_wake_every of the store's last wake-up (opening
// it may make one) owes its wake-up, sent once due: as a worker's loop
// does, send it.
void send_owed_wake(TaskStore& store) {
  if (const auto due = store.wake_due()) {
    std::this_thread::sleep_until(*due);
    store.wake_owed();
  }
  CHECK_FALSE(store.wake_due());
}

TEST_CASE("on PostgreSQL a commit's wake-up is sent at once or owed and sent "
          "when due") {
  TempDb db;
  if (!on_postgresql()) {
    return;
  }
  TaskStore store(db.path(), OpenMode::write);
  storage::ChangeFeed all(db.path());
  all.drain();
  // Commits one after another: each wakes the feed, at once or, within
  // k_wake_every of the last wake-up, once the owed one is sent.
  for (int i = 0; i < 3; ++i) {
    add_task(store, "q");
    send_owed_wake(store);
    REQUIRE(heard(all, 10s));
  }
}

TEST_CASE("on PostgreSQL a store's feed leaves out the store's own commits") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::ChangeFeed own = store.changes();
  if (!on_postgresql()) {
    CHECK_FALSE(own.skips_own()); // inotify cannot tell who wrote
    return;
  }
  REQUIRE(own.skips_own());
  // A feed that reports every commit, to know when the server has sent
  // the notification of ours.
  storage::ChangeFeed all(db.path());
  REQUIRE_FALSE(all.skips_own());
  own.drain();
  all.drain();
  add_task(store, "q");
  send_owed_wake(store);
  REQUIRE(heard(all, 10s));
  CHECK_FALSE(own.wait(500ms));
  TaskStore other(db.path(), OpenMode::write);
  add_task(other, "q");
  CHECK(heard(own, 10s));
}

namespace {

int64_t runnable(TaskStore& store) {
  const auto stats = store.stats("q", t0);
  return stats.empty() ? 0 : count_of(stats.front(), "runnable");
}

// A writer in a child process: once its opening's wake-ups are out, it
// reports on `told` and waits for a byte on `go`; then it commits two
// tasks, one right after the other (the first wakes the waiters at once,
// the second owes its wake-up: within core::k_wake_every), and is gone
// like a SIGKILLed worker: _exit, so nothing sends what it owes. Exits 0
// when the second's wake-up was owed, 3 when it went out.
[[noreturn]] void write_and_vanish(const std::string& db, int told, int go) {
  try {
    TaskStore store(db, OpenMode::write);
    if (const auto due = store.wake_due()) {
      std::this_thread::sleep_until(*due);
      store.wake_owed();
    }
    char c = 'a';
    if (::write(told, &c, 1) == 1 && ::read(go, &c, 1) == 1) {
      add_task(store, "q");
      add_task(store, "q");
      ::_exit(store.wake_due() ? 0 : 3); // before the store closes
    }
  } catch (...) {
  }
  ::_exit(4);
}

} // namespace

TEST_CASE("on PostgreSQL a waiter looks again when a writer dies owing its "
          "wake-up") {
  TempDb db;
  if (!on_postgresql()) {
    return;
  }
  TaskStore reader(db.path(), OpenMode::write); // makes the schema
  storage::ChangeFeed feed = reader.changes();  // as `taskq wait` waits
  // The case to make: the waiter hears the first commit and looks before
  // the second, whose wake-up is owed and never sent. Tried again when
  // the look came after the second commit, or the second was not owed.
  bool made = false;
  int64_t before = 0;
  for (int attempt = 0; attempt < 50 && !made; ++attempt) {
    int told[2];
    int go[2];
    REQUIRE(::pipe(told) == 0);
    REQUIRE(::pipe(go) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      write_and_vanish(db.path(), told[1], go[0]);
    }
    ::close(told[1]);
    ::close(go[0]);
    char c = 0;
    REQUIRE(::read(told[0], &c, 1) == 1);
    while (feed.wait(200ms)) { // what the opening and earlier tries sent
      feed.drain();
    }
    before = runnable(reader);
    REQUIRE(::write(go[1], &c, 1) == 1);
    REQUIRE(heard(feed, 10s));
    const int64_t looked = runnable(reader);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    ::close(told[0]);
    ::close(go[1]);
    REQUIRE(WIFEXITED(status));
    REQUIRE((WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3));
    made = WEXITSTATUS(status) == 0 && looked == before + 1;
  }
  REQUIRE(made);
  // Back to waiting after its look, the waiter still looks again (within
  // k_listen_poll) and finds the second task.
  CHECK(feed.wait(5s));
  CHECK(runnable(reader) == before + 2);
}

namespace {

using Clock = std::chrono::steady_clock;

// Runs `write` right after a wake-up of `store`'s (an add of its own, and
// what it owes sent): the wake-up `write`'s commit owes is due
// core::k_wake_every after that one for a commit that may give a waiting
// worker work, core::k_quiet_wake_every for one that concerns only those
// watching. Returns when it is due (std::nullopt: none owed, as when the
// machine took longer than the spell between the two) and the time span
// in which that wake-up went out.
struct Owed {
  std::optional<Clock::time_point> due;
  Clock::time_point woke_from, woke_by;
};
template <typename F> Owed owed_after_wake(TaskStore& store, F&& write) {
  Owed o;
  o.woke_from = Clock::now();
  add_task(store, "other");
  send_owed_wake(store);
  o.woke_by = Clock::now();
  write();
  o.due = store.wake_due();
  send_owed_wake(store);
  return o;
}

} // namespace

TEST_CASE("on PostgreSQL a worker's completion wakes the others later than "
          "what may give a waiting worker work") {
  TempDb db;
  if (!on_postgresql()) {
    return;
  }
  TaskStore store(db.path(), OpenMode::write);
  const auto lease = [&store] {
    const auto t = lease_one(store, "q", t0);
    REQUIRE(t);
    return *t;
  };
  const auto quiet = [](const Owed& o) {
    REQUIRE(o.due);
    CHECK(*o.due >= o.woke_from + core::k_quiet_wake_every);
  };
  const auto soon = [](const Owed& o) {
    CHECK((!o.due || *o.due <= o.woke_by + core::k_wake_every));
  };

  // A completion with nothing waiting for it: quiet.
  add_task(store, "q");
  auto t = lease();
  quiet(owed_after_wake(
      store, [&] { store.apply_outcomes({done(t, "1")}, std::nullopt, t0); }));
  // A worker's next lease alone: quiet too.
  add_task(store, "q");
  quiet(owed_after_wake(
      store, [&] { store.apply_outcomes({}, lease_request("q"), t0); }));
  // A completion its dependent waited for: the dependent may be ready.
  const int64_t first = add_task(store, "q");
  add_after(store, "q2", {first});
  t = lease();
  REQUIRE(t.id == first);
  soon(owed_after_wake(
      store, [&] { store.apply_outcomes({done(t, "1")}, std::nullopt, t0); }));
  // A failure and a release: the task may run again.
  add_task(store, "q");
  t = lease();
  soon(owed_after_wake(store, [&] {
    store.apply_outcomes({failed(t, "boom")}, std::nullopt, t0);
  }));
  add_task(store, "q");
  t = lease();
  soon(owed_after_wake(
      store, [&] { store.apply_outcomes({released(t)}, std::nullopt, t0); }));
  // A task added.
  soon(owed_after_wake(store, [&] { add_task(store, "q"); }));
}

namespace {

// What `feed` hears of the commits `write` makes with `store`: whether
// anything, and whether it may have taken a lease away
// (ChangeFeed::take_loud). What the store owed before, and what the feed
// heard of it, are done with first.
// `in_time`: within ChangeFeed::k_listen_poll of the start, after which
// take_loud() is true whatever was heard.
struct Hearing {
  bool heard = false;
  bool loud = false;
  bool in_time = false;
};
template <typename F>
Hearing hear(storage::ChangeFeed& feed, TaskStore& store, F&& write) {
  send_owed_wake(store);
  while (feed.wait(200ms)) {
    feed.drain();
  }
  const auto from = std::chrono::steady_clock::now();
  feed.assume_loud();
  feed.take_loud(); // done with, and a fresh k_listen_poll from now
  write();
  send_owed_wake(store);
  Hearing h;
  h.heard = heard(feed, 10s);
  // What `write` owed was sent before the first was heard: whatever else
  // is on its way comes within the wait (a loud wake-up owed behind a quiet
  // one sent at once).
  while (feed.wait(200ms)) {
    feed.drain();
  }
  h.loud = feed.take_loud();
  h.in_time = std::chrono::steady_clock::now()
              < from + storage::ChangeFeed::k_listen_poll;
  return h;
}

// Heard as quiet, or as loud; on a machine too slow to tell within
// k_listen_poll, the fallback's loud is all that can be asked, and a loud
// one would prove nothing.
void quiet(const Hearing& h) {
  CHECK(h.heard);
  if (h.in_time) {
    CHECK_FALSE(h.loud);
  } else {
    MESSAGE("slower than ChangeFeed::k_listen_poll: quiet not checked");
  }
}
void loud(const Hearing& h) {
  CHECK(h.heard);
  if (h.in_time) {
    CHECK(h.loud);
  } else {
    MESSAGE("slower than ChangeFeed::k_listen_poll: loud not checked");
  }
}

} // namespace

TEST_CASE("on PostgreSQL a worker's quiet commit is heard as one that takes "
          "no lease away") {
  TempDb db;
  TaskStore watcher(db.path(), OpenMode::write);
  storage::ChangeFeed feed = watcher.changes(); // as a worker's
  if (!on_postgresql()) {
    // inotify cannot tell one commit from another: every change is loud.
    TaskStore other(db.path(), OpenMode::write);
    feed.drain();
    feed.take_loud();
    add_task(other, "q");
    CHECK(heard(feed, 10s));
    CHECK(feed.take_loud());
    return;
  }
  TaskStore worker(db.path(), OpenMode::write);
  const auto lease = [&worker](Time now, Millis lease_for = 5min) {
    const auto t = lease_one(worker, "q", now, lease_for);
    REQUIRE(t);
    return *t;
  };

  // A completion with nothing waiting for it, and a next lease: quiet.
  add_task(watcher, "q");
  auto t = lease(t0);
  Hearing h = hear(feed, worker, [&] {
    worker.apply_outcomes({done(t, "1")}, std::nullopt, t0);
  });
  quiet(h);
  add_task(watcher, "q");
  int64_t held = 0; // leased for 5 minutes and kept
  h = hear(feed, worker, [&] {
    const auto next = worker.apply_outcomes({}, lease_request("q"), t0).leased;
    REQUIRE(next.size() == 1);
    held = next.front().id;
  });
  quiet(h);

  // Quiet wake-ups alone, past k_listen_poll since the feed was last
  // loud: loud once, as a look with nothing heard would be (a loud
  // wake-up may have been owed by a writer killed before sending it).
  add_task(watcher, "q");
  t = lease(t0);
  h = hear(feed, worker, [&] {
    std::this_thread::sleep_for(storage::ChangeFeed::k_listen_poll);
    worker.apply_outcomes({done(t, "1")}, std::nullopt, t0);
  });
  CHECK(h.heard);
  CHECK(h.loud); // by the fallback: this one is never quiet

  // A quiet commit and a loud one within the same spell: the owed
  // wake-up is loud.
  add_task(watcher, "q");
  t = lease(t0);
  h = hear(feed, worker, [&] {
    worker.apply_outcomes({done(t, "1")}, std::nullopt, t0);
    add_task(worker, "q");
  });
  loud(h);

  // A lease that reclaims one that ran out takes it from another worker:
  // loud, though it is a worker's next lease.
  const core::Task short_lease = lease(t0, 1s);
  h = hear(feed, worker, [&] {
    const auto next =
        worker.apply_outcomes({}, lease_request("q"), t0 + 1h).leased;
    REQUIRE(next.size() == 1);
    // Both leases ran out by then; the older is taken first.
    CHECK(next.front().id == std::min(held, short_lease.id));
  });
  loud(h);

  // A lease that ends a broadcast past its time ends every other worker's
  // delivery of it: loud.
  // (Queue b has no lease to reclaim, which would be loud as well.)
  storage::NewTask b = new_task("b", "null");
  b.broadcast_ttl = 1h;
  const int64_t broadcast = watcher.add(b, t0, k_operator);
  REQUIRE(lease_one(watcher, "b", t0, 5min, "other"));
  h = hear(feed, worker, [&] {
    CHECK(
        worker.apply_outcomes({}, lease_request("b"), t0 + 2h).leased.empty());
  });
  CHECK(task_of(watcher, broadcast).state == TaskState::completed);
  loud(h);

  // A command: loud.
  h = hear(feed, worker, [&] { add_task(worker, "q"); });
  loud(h);
}

TEST_CASE("on PostgreSQL a loud wake-up still owed when a quiet commit's "
          "spell is over goes out with it, loud") {
  TempDb db;
  if (!on_postgresql()) {
    return;
  }
  TaskStore watcher(db.path(), OpenMode::write);
  storage::ChangeFeed feed = watcher.changes();
  TaskStore worker(db.path(), OpenMode::write);
  // The scene: two commands' commits, the second's wake-up owed (due
  // core::k_wake_every after the first's), then a worker's done that
  // begins before that is due and commits once a quiet spell is over (its
  // task's row held meanwhile by another session). Tried again, with a
  // task of its own, when the two commits were further apart or the done
  // began too late (its begin sent the owed wake-up: heard meanwhile).
  bool made = false;
  Hearing h;
  for (int attempt = 0; attempt < 20 && !made; ++attempt) {
    add_task(watcher, "q");
    const auto t = lease_one(worker, "q", t0);
    REQUIRE(t);
    PsqlSession holder(db);
    holder.run("BEGIN;");
    holder.run("SELECT 1 FROM tasks WHERE id = " + std::to_string(t->id)
               + " FOR UPDATE;");
    bool ran = false;
    h = hear(feed, worker, [&] {
      add_task(worker, "other");
      add_task(worker, "other");
      const auto due = worker.wake_due();
      if (!due) {
        return;
      }
      // The first command's wake-up, sent at once, heard and done with.
      CHECK(heard(feed, 10s));
      feed.take_loud();
      std::thread finish(
          [&] { worker.apply_outcomes({done(*t, "1")}, std::nullopt, t0); });
      ran = true;
      const bool waits = PsqlSession::await([&] {
        return db.value("SELECT count(*) FROM pg_stat_activity WHERE datname "
                        "= current_database() AND wait_event_type = 'Lock'")
               != "0";
      });
      const auto spell_over = *due + core::k_quiet_wake_every;
      const auto left =
          std::chrono::duration_cast<Millis>(spell_over - Clock::now());
      const bool silent = !feed.wait(std::max(left, Millis{0}) + 1ms);
      std::this_thread::sleep_until(spell_over);
      holder.run("COMMIT;");
      finish.join();
      made = waits && silent;
    });
    if (ran) {
      CHECK(task_of(watcher, t->id).state == TaskState::completed);
    }
  }
  REQUIRE(made);
  loud(h);
}
