// Recurring schedules and gates (storage/features/schedule_store.cpp): one task
// per tick, skipped and off-grid ticks, sync state, pause/resume/remove,
// and a gate that emits once every key is covered.
#include "core/schedule.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

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

TEST_CASE("gate: one task with several keys covers each, and emits once") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::GateSpec spec;
  spec.queue = "reports";
  for (const auto& [name, keys] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"ab", {"a", "b"}}, {"abc", {"a", "b", "c"}}, {"x", {"x"}}}) {
    spec.name = name;
    spec.keys = keys;
    store.add_gate(spec, t0, k_operator);
  }
  const auto trigger = [&](const std::string& keys) {
    storage::NewTask t = new_task("work");
    t.trigger = keys; // as add stores them: sorted, each once
    return store.add(t, t0, k_operator);
  };
  finish(store, trigger("a,b"), t0);
  CHECK(store.gate("ab").emitted == 1); // filled by one task: one task
  CHECK(store.gate("ab").covered.empty());
  CHECK(store.gate("abc").covered == std::vector<std::string>{"a", "b"});
  CHECK(store.gate("abc").emitted == 0);
  CHECK(store.gate("x").covered.empty()); // none of its keys
  CHECK(store.list(by_queue("reports"), t0).size() == 1);

  // Several gates filled by one task emit in the order of their names.
  finish(store, trigger("a,b"), t0);
  finish(store, trigger("c,x"), t0);
  CHECK(store.gate("abc").emitted == 1);
  CHECK(store.gate("x").emitted == 1);
  const auto emitted = store.list(by_queue("reports"), t0);
  REQUIRE(emitted.size() == 4);
  CHECK(emitted[2].gate == "abc");
  CHECK(emitted[3].gate == "x");
  CHECK(emitted[2].id < emitted[3].id);
}

TEST_CASE("schedule: the tasks it emits carry its trigger keys") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::GateSpec gate;
  gate.name = "deploy";
  gate.queue = "reports";
  gate.keys = {"build", "docs"};
  store.add_gate(gate, t0, k_operator);
  auto spec = every("builds", "cron", "hour");
  spec.trigger = "build,docs";
  store.add_schedule(spec, t0, k_operator);
  store.add_schedule(every("plain", "other", "hour"), t0, k_operator);
  CHECK(store.schedule("builds").spec.trigger == "build,docs");
  CHECK_FALSE(store.schedule("plain").spec.trigger);

  const auto first = lease_one(store, "cron", t0 + 1h);
  REQUIRE(first);
  CHECK(first->schedule == "builds");
  CHECK(first->trigger == "build,docs");
  const auto plain = lease_one(store, "other", t0 + 1h);
  REQUIRE(plain);
  CHECK_FALSE(plain->trigger);
  store.complete(first->id, first->lease->token, std::nullopt, t0 + 1h);
  CHECK(store.gate("deploy").emitted == 1);
  REQUIRE(store.list(by_queue("reports"), t0 + 1h).size() == 1);
}
