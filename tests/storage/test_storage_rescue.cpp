// rescue's producing features in storage: dependencies (`--after`), roots,
// addressing (`--to`, `--broadcast`), schedules and gates. Each test runs on
// a real SQLite file.
#include "core/schedule.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

int64_t add_after(TaskStore& store, const std::string& queue,
                  std::vector<int64_t> after) {
  storage::NewTask spec = new_task(queue);
  spec.after = std::move(after);
  return store.add(spec, t0, k_operator);
}

core::Task task_of(TaskStore& store, int64_t id) {
  const auto t = store.find(id);
  REQUIRE(t);
  return *t;
}

// Leases task `id` (it must be next in its queue) and completes it.
void finish(TaskStore& store, int64_t id, Time now) {
  const auto leased = lease_one(store, task_of(store, id).queue, now);
  REQUIRE(leased);
  REQUIRE(leased->id == id);
  store.complete(id, leased->lease->token, std::nullopt, now);
}

storage::ScheduleSpec every(const std::string& name, const std::string& queue,
                            const std::string& text) {
  storage::ScheduleSpec spec;
  spec.name = name;
  spec.queue = queue;
  const auto when = core::parse_every(text);
  REQUIRE(when);
  spec.when = *when;
  return spec;
}

} // namespace

TEST_CASE("after: a dependent waits until every dependency completes") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = add_task(store, "deps");
  const int64_t b = add_task(store, "deps");
  const int64_t c = add_after(store, "deps", {a, b});
  CHECK(task_of(store, c).waiting);
  CHECK(task_of(store, c).after == std::vector<int64_t>{a, b});
  CHECK(contains(store.why(c, t0, k_worker).at(0), "tasks 1 and 2"));

  finish(store, a, t0);
  CHECK(task_of(store, c).waiting);
  const auto why = store.why(c, t0, k_worker);
  REQUIRE(why.size() == 1);
  CHECK(contains(why[0], "task 2 to complete"));
  CHECK(store.anything_due({"deps"}, t0, k_worker)); // b is due

  CHECK(store.check().ok);
  finish(store, b, t0);
  CHECK_FALSE(task_of(store, c).waiting);
  CHECK(store.check().ok);
  const auto leased = lease_one(store, "deps", t0);
  REQUIRE(leased);
  CHECK(leased->id == c);
}

TEST_CASE("after: a waiting task is not leased, not even when alone") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t dep = add_task(store, "other");
  add_after(store, "deps", {dep});
  CHECK_FALSE(lease_one(store, "deps", t0));
  CHECK_FALSE(store.anything_due({"deps"}, t0, k_worker));
  CHECK_FALSE(store.next_due({"deps"}, t0));
}

TEST_CASE("after: a failed or killed dependency pauses the dependent") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t failing = add_task(store, "deps");
  const int64_t killed = add_task(store, "other");
  const int64_t on_failing = add_after(store, "waits", {failing});
  const int64_t on_killed = add_after(store, "waits", {killed});

  const auto leased = lease_one(store, "deps", t0);
  REQUIRE(leased);
  store.fail(failing, leased->lease->token,
             fail_request("boom", storage::FailMode::no_retry), t0);
  const core::Task paused = task_of(store, on_failing);
  CHECK(paused.state == TaskState::paused);
  CHECK(paused.reason == "dependency 1 failed");
  CHECK_FALSE(paused.waiting);

  send_one(store, killed, Message::kill, t0);
  CHECK(task_of(store, on_killed).reason == "dependency 2 was killed");

  // resume runs it anyway
  send_one(store, on_failing, Message::run, t0);
  const auto next = lease_one(store, "waits", t0);
  REQUIRE(next);
  CHECK(next->id == on_failing);
}

TEST_CASE("after: dependencies already finished when the task is added") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t done = add_task(store, "deps");
  finish(store, done, t0);
  const int64_t ok = add_after(store, "deps", {done});
  CHECK_FALSE(task_of(store, ok).waiting);
  CHECK(task_of(store, ok).state == TaskState::runnable);

  const int64_t dead = add_task(store, "deps");
  send_one(store, ok, Message::kill, t0);
  send_one(store, dead, Message::kill, t0);
  const int64_t late = add_after(store, "deps", {done, dead});
  CHECK(task_of(store, late).state == TaskState::paused);
  CHECK(task_of(store, late).reason == "dependency 3 was killed");
}

TEST_CASE("after: an unknown dependency adds nothing") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t dep = add_task(store, "deps");
  CHECK(error_kind([&] {
          add_after(store, "deps", {dep, 99});
        })
        == ErrorKind::not_found);
  CHECK(error_kind([&] { add_after(store, "deps", {0}); }) == ErrorKind::usage);
  CHECK(store.list(by_queue("deps"), t0).size() == 1);
}

TEST_CASE("after: a bulk add makes every task wait") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t dep = add_task(store, "gate");
  storage::NewTask proto = new_task("bulk");
  proto.after = {dep};
  int left = 100;
  const auto next = [&](std::string& payload) {
    payload = std::to_string(left);
    return left-- > 0;
  };
  CHECK(store.add_many(proto, next, nullptr, t0, k_operator) == 100);
  CHECK_FALSE(lease_one(store, "bulk", t0));
  finish(store, dep, t0);
  const auto all = store.lease(
      [] {
        auto req = lease_request("bulk");
        req.count = 200;
        return req;
      }(),
      t0);
  CHECK(all.size() == 100);
}

TEST_CASE("root: discarded at add while a live task has the labels") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask live = new_task("q");
  live.labels = {{"job", "sync"}, {"env", "prod"}};
  const int64_t first = store.add(live, t0, k_operator);

  storage::NewTask dup = new_task("q");
  dup.root = {{"job", "sync"}, {"env", "prod"}};
  const storage::Added added = store.add_unique(dup, t0, k_operator);
  CHECK(added.id == 0);
  CHECK(added.obsoleted_by == first);

  storage::NewTask partial = new_task("q");
  partial.root = {{"job", "sync"}, {"env", "test"}};
  CHECK(store.add_unique(partial, t0, k_operator).id > 0);

  finish(store, first, t0);
  const storage::Added later = store.add_unique(dup, t0, k_operator);
  CHECK(later.id > 0);
  CHECK_FALSE(later.obsoleted_by);
}

TEST_CASE("root: a task that became obsolete is killed, never leased") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask rooted = new_task("q");
  rooted.root = {{"kind", "full"}};
  const int64_t old = store.add(rooted, t0, k_operator);
  storage::NewTask newer = new_task("other");
  newer.labels = {{"kind", "full"}};
  const int64_t by = store.add(newer, t0, k_operator);
  CHECK(contains(store.why(old, t0, k_worker).at(0), "obsolete"));

  CHECK(store.check().ok);
  CHECK_FALSE(lease_one(store, "q", t0));
  CHECK(store.check().ok);
  const core::Task killed = task_of(store, old);
  CHECK(killed.state == TaskState::killed);
  CHECK(killed.reason == "obsoleted by task " + std::to_string(by));
}

TEST_CASE("root: a task's own labels do not make it obsolete") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask self = new_task("q");
  self.labels = {{"job", "sync"}};
  self.root = {{"job", "sync"}};
  const int64_t id = store.add(self, t0, k_operator);
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  CHECK(leased->id == id);
}

TEST_CASE("to: only the addressed worker leases the task") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask addressed = new_task("q");
  addressed.to_worker = "w2";
  const int64_t id = store.add(addressed, t0, k_operator);
  CHECK_FALSE(lease_one(store, "q", t0, 5min, "w1"));
  CHECK(store.why(id, t0, "w1").at(0) == "it is addressed to worker w2");
  CHECK(store.why(id, t0, "w2").empty());
  const auto leased = lease_one(store, "q", t0, 5min, "w2");
  REQUIRE(leased);
  CHECK(leased->id == id);
}

TEST_CASE("broadcast: once to every worker, no done needed, gone after ttl") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask b = new_task("q", R"({"reload":true})");
  b.broadcast_ttl = 1h;
  const int64_t id = store.add(b, t0, k_operator);
  for (const std::string w : {"w1", "w2", "w3"}) {
    CAPTURE(w);
    CHECK(store.anything_due({"q"}, t0, w));
    const auto got = lease_one(store, "q", t0, 5min, w);
    REQUIRE(got);
    CHECK(got->id == id);
    REQUIRE(got->lease);
    CHECK(store.lease_held(id, got->lease->token, t0));
    CHECK_FALSE(lease_one(store, "q", t0, 5min, w));
    CHECK_FALSE(store.anything_due({"q"}, t0, w));
    if (w == "w2") {
      store.heartbeat(id, got->lease->token, std::nullopt, std::nullopt, t0);
      CHECK(store.complete(id, got->lease->token, std::nullopt, t0).state
            == TaskState::runnable);
    }
  }
  CHECK(error_kind(
            [&] { store.complete(id, "not-a-delivery", std::nullopt, t0); })
        == ErrorKind::conflict);
  CHECK_FALSE(lease_one(store, "q", t0 + 2h, 5min, "w4"));
  CHECK(task_of(store, id).state == TaskState::completed);
}

TEST_CASE("broadcast: a killed broadcast ends its deliveries") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask b = new_task("q");
  b.broadcast_ttl = 1h;
  const int64_t id = store.add(b, t0, k_operator);
  const auto got = lease_one(store, "q", t0, 5min, "w1");
  REQUIRE(got);
  send_one(store, id, Message::kill, t0);
  CHECK_FALSE(store.lease_held(id, got->lease->token, t0));
  CHECK(error_kind(
            [&] { store.complete(id, got->lease->token, std::nullopt, t0); })
        == ErrorKind::conflict);
  CHECK_FALSE(lease_one(store, "q", t0, 5min, "w2"));
}

TEST_CASE("broadcast: refused with --to, --after, --root or --unique") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask b = new_task("q");
  b.broadcast_ttl = 1h;
  b.to_worker = "w1";
  CHECK(error_kind([&] { store.add(b, t0, k_operator); }) == ErrorKind::usage);
  b.to_worker.reset();
  b.unique_key = "k";
  CHECK(error_kind([&] { store.add(b, t0, k_operator); }) == ErrorKind::usage);
  CHECK(store.list(by_queue("q"), t0).empty());
}

TEST_CASE("lease: the skip list passes tasks by") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t first = add_task(store, "q");
  const int64_t second = add_task(store, "q");
  auto req = lease_request("q");
  req.skip = {first};
  const auto leased = store.lease(req, t0);
  REQUIRE(leased.size() == 1);
  CHECK(leased[0].id == second);
  req.skip = {first, second};
  CHECK(store.lease(req, t0).empty());
}

TEST_CASE("lease: a due task behind a higher priority of future tasks") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 50; ++i) {
    storage::NewTask later = new_task("q");
    later.priority = 10;
    later.run_at = t0 + 1h;
    store.add(later, t0, k_operator);
  }
  const int64_t low = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  CHECK(leased->id == low);
  const auto top = lease_one(store, "q", t0 + 1h);
  REQUIRE(top);
  CHECK(top->priority == 10);
}

TEST_CASE("schedule: one task per tick, never early, none while one runs") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  // t0 is 08:00:00 exactly: `hour` ticks at 09:00.
  store.add_schedule(every("hourly", "cron", "hour"), t0, k_operator);
  CHECK(store.schedule("hourly").due_at == t0 + 1h);
  CHECK(store.next_due({"cron"}, t0) == t0 + 1h);
  CHECK_FALSE(store.anything_due({"cron"}, t0 + 1h - 1ms, k_worker));
  CHECK_FALSE(lease_one(store, "cron", t0 + 1h - 1ms));
  CHECK(store.anything_due({"cron"}, t0 + 1h, k_worker));

  const auto first = lease_one(store, "cron", t0 + 1h);
  REQUIRE(first);
  CHECK(first->schedule == "hourly");
  CHECK_FALSE(lease_one(store, "cron", t0 + 1h)); // one per tick
  CHECK(store.schedule("hourly").last_task == first->id);
  CHECK(store.schedule("hourly").due_at == t0 + 2h);

  // Still running at the next two ticks: nothing new, the tick moves on.
  store.heartbeat(first->id, first->lease->token, 4h, std::nullopt,
                  t0 + 1h + 1min);
  CHECK(store.tick(std::nullopt, t0 + 2h + 1min, k_operator).empty());
  CHECK(store.schedule("hourly").due_at == t0 + 3h);
  store.complete(first->id, first->lease->token, std::nullopt, t0 + 2h + 30min);
  // 10:00 was missed while it ran; nothing is back-filled.
  CHECK_FALSE(lease_one(store, "cron", t0 + 2h + 30min));
  CHECK(store.tick("cron", t0 + 3h - 1ms, k_operator).empty());
  const auto ids = store.tick("cron", t0 + 3h, k_operator);
  CHECK(ids.size() == 1);
  CHECK(store.tick("cron", t0 + 3h, k_operator).empty());
}

TEST_CASE("schedule: a tick that passed while the last task ran is skipped, "
          "seen or not") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  store.add_schedule(every("s", "q", "minute"), t0 + 30s, k_operator);
  const auto first = lease_one(store, "q", t0 + 1min + 5s);
  REQUIRE(first);
  // 08:02 passes while it runs; nobody looks then.
  store.complete(first->id, first->lease->token, std::nullopt, t0 + 2min + 30s);
  CHECK(store.tick(std::nullopt, t0 + 2min + 40s, k_operator).empty());
  CHECK(store.schedule("s").due_at == t0 + 3min);
  CHECK(store.tick(std::nullopt, t0 + 3min, k_operator).size() == 1);
}

TEST_CASE("schedule: where the grid restarts, the off-grid tick emits") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  // `5 hours` restarts at midnight (00, 05, 10, 15, 20): after 20:00 the
  // next tick is one period later, 01:00, off the grid.
  const Time eight_pm = t0 + 12h;
  store.add_schedule(every("s", "q", "5 hours"), eight_pm - 1h, k_operator);
  CHECK(store.schedule("s").due_at == eight_pm);
  const auto leased = lease_one(store, "q", eight_pm, 6h);
  REQUIRE(leased);
  CHECK(store.schedule("s").due_at == eight_pm + 5h);
  // It finishes at 00:30, after the grid's 00:00 but before 01:00.
  store.complete(leased->id, leased->lease->token, std::nullopt,
                 eight_pm + 4h + 30min);
  CHECK(store.tick(std::nullopt, eight_pm + 5h, k_operator).size() == 1);
}

TEST_CASE("schedule: sync state flows from one task to the next") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  store.add_schedule(every("page", "q", "minute"), t0, k_operator);
  const auto first = lease_one(store, "q", t0 + 1min);
  REQUIRE(first);
  CHECK(first->sync.empty());
  store.complete(first->id, first->lease->token, std::nullopt, t0 + 1min,
                 {{"cursor", "42"}});
  CHECK(task_of(store, first->id).sync == core::Labels{{"cursor", "42"}});
  CHECK(store.schedule("page").sync == core::Labels{{"cursor", "42"}});
  const auto second = lease_one(store, "q", t0 + 2min);
  REQUIRE(second);
  CHECK(second->sync == core::Labels{{"cursor", "42"}});
  store.complete(second->id, second->lease->token, std::nullopt, t0 + 2min,
                 {{"more", "yes"}});
  CHECK(store.schedule("page").sync
        == core::Labels{{"cursor", "42"}, {"more", "yes"}});

  const int64_t plain = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0 + 2min);
  REQUIRE(leased);
  REQUIRE(leased->id == plain);
  CHECK(error_kind([&] {
          store.complete(plain, leased->lease->token, std::nullopt, t0 + 2min,
                         {{"k", "v"}});
        })
        == ErrorKind::conflict);
  CHECK(task_of(store, plain).state == TaskState::runnable);
}

TEST_CASE("schedule: pause, resume without back-fill, remove, errors") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  store.add_schedule(every("s", "q", "15 minutes"), t0, k_operator);
  CHECK(error_kind([&] {
          store.add_schedule(every("s", "q", "hour"), t0, k_operator);
        })
        == ErrorKind::conflict);
  store.set_schedule_paused("s", true, t0);
  CHECK(store.schedule("s").paused);
  CHECK(store.tick(std::nullopt, t0 + 1h, k_operator).empty());
  CHECK_FALSE(store.next_due({"q"}, t0));
  store.set_schedule_paused("s", false, t0 + 1h + 1min);
  CHECK(store.schedule("s").due_at == t0 + 1h + 15min);
  CHECK(store.tick(std::nullopt, t0 + 1h + 1min, k_operator).empty());
  CHECK(store.tick(std::nullopt, t0 + 1h + 15min, k_operator).size() == 1);
  store.remove_schedule("s");
  CHECK(store.schedules().empty());
  CHECK(error_kind([&] { store.schedule("s"); }) == ErrorKind::not_found);
  CHECK(error_kind([&] { store.remove_schedule("s"); })
        == ErrorKind::not_found);
  CHECK(error_kind([&] { store.set_schedule_paused("s", true, t0); })
        == ErrorKind::not_found);
}

TEST_CASE("gate: emits once every key is covered, then re-arms") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::GateSpec spec;
  spec.name = "nightly";
  spec.queue = "reports";
  spec.keys = {"b", "a", "a"};
  spec.payload = R"({"report":"all"})";
  store.add_gate(spec, t0, k_operator);
  CHECK(store.gate("nightly").spec.keys == std::vector<std::string>{"a", "b"});
  CHECK(error_kind([&] { store.add_gate(spec, t0, k_operator); })
        == ErrorKind::conflict);

  const auto trigger = [&](const std::string& key) {
    storage::NewTask t = new_task("work");
    t.trigger = key;
    return store.add(t, t0, k_operator);
  };
  for (int cycle = 1; cycle <= 2; ++cycle) {
    CAPTURE(cycle);
    finish(store, trigger("a"), t0);
    finish(store, trigger("a"), t0); // the same key twice covers it once
    CHECK(store.gate("nightly").covered == std::vector<std::string>{"a"});
    CHECK(store.list(by_queue("reports"), t0).size()
          == static_cast<size_t>(cycle - 1));

    // A failed trigger does not count.
    const int64_t bad = trigger("b");
    const auto leased = lease_one(store, "work", t0);
    REQUIRE(leased);
    REQUIRE(leased->id == bad);
    store.fail(bad, leased->lease->token,
               fail_request("no", storage::FailMode::no_retry), t0);
    CHECK(store.gate("nightly").covered == std::vector<std::string>{"a"});

    finish(store, trigger("b"), t0);
    const auto gate = store.gate("nightly");
    CHECK(gate.covered.empty());
    CHECK(gate.emitted == cycle);
    const auto emitted = store.list(by_queue("reports"), t0);
    REQUIRE(emitted.size() == static_cast<size_t>(cycle));
    CHECK(emitted.back().gate == "nightly");
    CHECK(emitted.back().payload == R"({"report":"all"})");
    CHECK(gate.last_task == emitted.back().id);
  }
  store.remove_gate("nightly");
  CHECK(store.gates().empty());
  CHECK(error_kind([&] { store.gate("nightly"); }) == ErrorKind::not_found);
}
