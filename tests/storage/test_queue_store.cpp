// Operating queues as a whole (storage/features/queue_store.cpp): redrive,
// purge, the event stream and the metrics counters. Each test runs on a real
// SQLite file.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

const storage::QueueMetrics*
metrics_of(const std::vector<storage::QueueMetrics>& all,
           const std::string& queue) {
  for (const auto& m : all) {
    if (m.stats.queue == queue) {
      return &m;
    }
  }
  return nullptr;
}

} // namespace

TEST_CASE("metrics: errors and expired leases count, and purge keeps them") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t failing = add_task(store, "q");
  const int64_t lapsing = add_task(store, "q");
  const auto first = lease_one(store, "q", t0);
  REQUIRE(first);
  REQUIRE(first->id == failing);
  store.fail(failing, first->lease->token,
             fail_request("boom", storage::FailMode::no_retry), t0);
  const auto second = lease_one(store, "q", t0, 1min);
  REQUIRE(second);
  REQUIRE(second->id == lapsing);

  auto all = store.metrics(t0 + 30s);
  const auto* m = metrics_of(all, "q");
  REQUIRE(m);
  CHECK(m->errors_total == 1);
  CHECK(m->leases_expired_total == 0);
  CHECK(m->stats.running == 1);
  CHECK(m->stats.failed == 1);

  // Run out, then reclaimed by the next lease: counted once either way.
  all = store.metrics(t0 + 2min);
  CHECK(metrics_of(all, "q")->leases_expired_total == 1);
  REQUIRE(lease_one(store, "q", t0 + 2min));
  all = store.metrics(t0 + 2min);
  CHECK(metrics_of(all, "q")->leases_expired_total == 1);

  storage::PurgeRequest purge;
  purge.queue = "q";
  CHECK(store.purge(purge, t0 + 3min) == 1);
  all = store.metrics(t0 + 3min);
  CHECK(metrics_of(all, "q")->errors_total == 1);
  CHECK(metrics_of(all, "q")->stats.failed == 0);
}

TEST_CASE("purge: finished only, dry run changes nothing") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t open = add_task(store, "q");
  const int64_t killed = add_task(store, "q");
  send_one(store, killed, Message::kill, t0);
  storage::PurgeRequest req;
  req.dry_run = true;
  CHECK(store.purge(req, t0) == 1);
  CHECK(store.find(killed));
  req.dry_run = false;
  req.states = {core::TaskState::runnable};
  CHECK(error_kind([&] { store.purge(req, t0); }) == ErrorKind::usage);
  req.states.clear();
  CHECK(store.purge(req, t0) == 1);
  CHECK_FALSE(store.find(killed));
  CHECK(store.find(open));
}

TEST_CASE("redrive: unleased tasks move, errors kept, attempts numbered on "
          "and counted afresh") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "work");
  const auto leased = lease_one(store, "work", t0);
  REQUIRE(leased);
  storage::FailRequest dead = fail_request("bad input");
  dead.mode = storage::FailMode::move_to;
  dead.move_to = "work.dead";
  store.fail(id, leased->lease->token, dead, t0);
  CHECK(store.redrive("work.dead", "work", k_operator, t0 + 1min) == 1);
  const auto t = store.find(id);
  REQUIRE(t);
  CHECK(t->queue == "work");
  CHECK(t->attempts == 1); // its runs keep their numbers
  CHECK(t->run_at == t0 + 1min);
  CHECK(store.show(id).task.errors.size() == 1);
  CHECK(error_kind([&] { store.redrive("a", "a", k_operator, t0); })
        == ErrorKind::usage);
}

TEST_CASE("events: creations and log rows merged by time, behind a cursor") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = add_task(store, "q", t0);
  const auto leased = lease_one(store, "q", t0 + 1s);
  REQUIRE(leased);
  const int64_t b = add_task(store, "other", t0 + 2s);
  storage::EventCursor cursor;
  auto events = store.events(std::nullopt, std::nullopt, cursor, 10);
  REQUIRE(events.size() == 3);
  CHECK(events[0].event.message == "add");
  CHECK(events[0].event.task_id == a);
  CHECK(events[1].event.message == "lease");
  CHECK(events[2].event.task_id == b);
  CHECK(events[2].queue == "other");
  CHECK(store.events(std::nullopt, std::nullopt, cursor, 10).empty());

  // A limit takes a prefix, and the cursor picks up after it.
  storage::EventCursor paged;
  CHECK(store.events(std::nullopt, std::nullopt, paged, 2).size() == 2);
  const auto rest = store.events(std::nullopt, std::nullopt, paged, 2);
  REQUIRE(rest.size() == 1);
  CHECK(rest[0].event.task_id == b);

  storage::EventCursor by_queue;
  CHECK(store.events("other", std::nullopt, by_queue, 10).size() == 1);
  storage::EventCursor since;
  CHECK(store.events(std::nullopt, t0 + 1s, since, 10).size() == 2);
  const auto end = store.events_end();
  CHECK(end.task_id == b);
}

TEST_CASE("metrics: a lapsed lease cleared by an operator, redrive or purge "
          "stays counted") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 3; ++i) {
    add_task(store, "q");
  }
  for (int i = 0; i < 3; ++i) {
    REQUIRE(lease_one(store, "q", t0, 1min));
  }
  const auto expired = [&](Time now) {
    return metrics_of(store.metrics(now), "q")->leases_expired_total;
  };
  const Time later = t0 + 2min;
  CHECK(expired(later) == 3);
  send_one(store, 1, Message::kill, later);
  CHECK(expired(later) == 3);
  CHECK(store.redrive("q", "elsewhere", k_operator, later) == 2);
  CHECK(expired(later) == 3);
  add_task(store, "q");
  REQUIRE(lease_one(store, "q", t0, 1min));
  CHECK(expired(later) == 4);
  storage::PurgeRequest purge;
  purge.queue = "q";
  purge.force = true;
  CHECK(store.purge(purge, later) == 2);
  CHECK(expired(later) == 4);
}

TEST_CASE("redrive and purge --force go past a batch: each task once, "
          "logged, counted, and what waits for a purged task paused") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  constexpr int n = 2500; // two and a half batches of 1,000
  int left = n;
  std::vector<int64_t> ids;
  store.add_many(
      new_task("dead", "null"),
      [&left](std::string& payload) {
        payload = std::to_string(left);
        return left-- > 0;
      },
      [&ids](int64_t id) { ids.push_back(id); }, t0, k_operator);
  REQUIRE(ids.size() == n);
  // Three leases that lapse (moved, counted as expired) and one that does
  // not (stays).
  for (int i = 0; i < 3; ++i) {
    REQUIRE(lease_one(store, "dead", t0, 1min));
  }
  REQUIRE(lease_one(store, "dead", t0, 1h));
  // Waits for a task of the last batch.
  auto spec = new_task("w");
  spec.after = {ids[2100]};
  const int64_t waiter = store.add(spec, t0, k_operator);

  const Time later = t0 + 2min;
  CHECK(store.redrive("dead", "live", k_operator, later) == n - 1);
  const auto stats_of = [&](const std::string& q) {
    const auto all = store.stats(q, later);
    REQUIRE(all.size() <= 1);
    return all.empty() ? storage::QueueStats{} : all[0];
  };
  CHECK(stats_of("dead").runnable == 1);
  CHECK(stats_of("live").runnable == n - 1);
  CHECK(stats_of("live").ready == n - 1);
  CHECK(metrics_of(store.metrics(later), "dead")->leases_expired_total == 3);
  for (const size_t i :
       {size_t{0}, size_t{999}, size_t{1000}, size_t{2001}, ids.size() - 1}) {
    const auto d = store.show(ids[i]);
    CHECK(d.task.queue == "live");
    CHECK(d.task.attempts == (i == 0 ? 1 : 0)); // kept: ids[0]'s lease lapsed
    CHECK_FALSE(d.task.lease);
    int redrives = 0;
    for (const auto& e : d.events) {
      redrives += e.message == "redrive" ? 1 : 0;
    }
    CHECK(redrives == 1);
  }

  storage::PurgeRequest purge;
  purge.queue = "live";
  purge.force = true;
  CHECK(store.purge(purge, later) == n - 1);
  CHECK(stats_of("live").runnable == 0);
  CHECK_FALSE(store.find(ids[0]));
  CHECK_FALSE(store.find(ids[2100]));
  // Its dependency ended as if killed: an operator decides.
  CHECK(store.find(waiter)->state == TaskState::paused);
  CHECK(store.find(ids[3])->queue == "dead"); // the one still leased
}
