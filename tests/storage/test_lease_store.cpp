// TaskStore::lease and what it reads (storage/features/lease_store.cpp): lease
// order, counts, queues, labels and addressing, tokens and expired leases,
// attempt and running limits, roots made obsolete and broadcast
// deliveries. When to look again: test_lease_store_due.cpp.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <set>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

TEST_CASE("lease order is priority descending, then run_at, then id") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  auto add = [&](int64_t priority, Time run_at) {
    storage::NewTask spec = new_task("q");
    spec.priority = priority;
    spec.run_at = run_at;
    return store.add(spec, t0 - 1h, k_operator);
  };
  // Added in an order that matches none of the keys.
  const int64_t low_early = add(0, t0 - 30min);
  const int64_t high_late = add(5, t0 - 1min);
  const int64_t mid_late_a = add(1, t0 - 5min);
  const int64_t high_early = add(5, t0 - 20min);
  const int64_t mid_late_b = add(1, t0 - 5min);
  const int64_t negative = add(-1, t0 - 50min);
  const int64_t mid_early = add(1, t0 - 10min);

  std::vector<int64_t> order;
  while (const auto task = lease_one(store, "q", t0)) {
    order.push_back(task->id);
  }
  CHECK(order
        == std::vector<int64_t>{high_early, high_late, mid_early, mid_late_a,
                                mid_late_b, low_early, negative});
}

TEST_CASE("lease with a count returns up to that many tasks in order") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = add_task(store, "q");
  const int64_t b = add_task(store, "q");
  const int64_t c = add_task(store, "q");
  auto req = lease_request("q");
  req.count = 2;
  const auto first = store.lease(req, t0);
  CHECK(ids_of(first) == std::vector<int64_t>{a, b});
  const auto second = store.lease(req, t0);
  CHECK(ids_of(second) == std::vector<int64_t>{c});
  CHECK(store.lease(req, t0).empty());
  REQUIRE(first.size() == 2);
  CHECK(first[0].lease->token != first[1].lease->token);
}

TEST_CASE("a task whose run_at is in the future is not leased until then") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q");
  spec.run_at = t0 + 10min;
  const int64_t id = store.add(spec, t0, k_operator);

  CHECK_FALSE(lease_one(store, "q", t0));
  CHECK_FALSE(lease_one(store, "q", t0 + 10min - 1ms));
  const auto leased = lease_one(store, "q", t0 + 10min); // run_at <= now
  REQUIRE(leased);
  CHECK(leased->id == id);
}

TEST_CASE("lease only takes tasks of the requested queues") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "a");
  const int64_t b = add_task(store, "b");
  CHECK_FALSE(lease_one(store, "c", t0));
  auto req = lease_request("b");
  req.queues = {"c", "b"};
  const auto leased = store.lease(req, t0);
  CHECK(ids_of(leased) == std::vector<int64_t>{b});
}

TEST_CASE("lease matches labels against --match patterns") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask image = new_task("q");
  image.labels = {{"kind", "image"}};
  storage::NewTask video = new_task("q");
  video.labels = {{"kind", "video"}};
  const int64_t image_id = store.add(image, t0, k_operator);
  const int64_t video_id = store.add(video, t0, k_operator);

  auto req = lease_request("q");
  req.match = {core::LabelPattern{"kind", "video"}};
  CHECK(ids_of(store.lease(req, t0)) == std::vector<int64_t>{video_id});
  CHECK(store.lease(req, t0).empty());
  req.match = {core::LabelPattern{"kind", "*"}};
  CHECK(ids_of(store.lease(req, t0)) == std::vector<int64_t>{image_id});
}

TEST_CASE("lease increments attempts and sets a fresh token, the worker and "
          "the expiry") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto before = store.find(id);
  REQUIRE(before);

  const auto leased = lease_one(store, "q", t0, 2min, "worker-7");
  REQUIRE(leased);
  CHECK(leased->id == id);
  CHECK(leased->state == TaskState::runnable);
  CHECK(leased->attempts == 1);
  CHECK(leased->rev > before->rev);
  REQUIRE(leased->lease);
  CHECK_FALSE(leased->lease->token.empty());
  CHECK(leased->lease->worker == "worker-7");
  CHECK(leased->lease->expires_at == t0 + 2min);
  CHECK(leased->leased(t0));

  // What lease returned is what is stored.
  const auto stored = store.find(id);
  REQUIRE(stored);
  CHECK(stored->attempts == 1);
  CHECK(token_of(*stored) == token_of(*leased));
  CHECK(stored->rev == leased->rev);

  // A leased task is not leased again while the lease is live.
  CHECK_FALSE(lease_one(store, "q", t0 + 2min - 1ms));
}

TEST_CASE("each lease of a task gets a different token") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q");
  std::set<std::string> tokens;
  Time now = t0;
  for (int i = 0; i < 5; ++i) {
    const auto leased = lease_one(store, "q", now, 1min);
    REQUIRE(leased);
    CHECK(leased->attempts == i + 1);
    tokens.insert(*token_of(*leased));
    now += 1min; // the lease expires
  }
  CHECK(tokens.size() == 5);
}

TEST_CASE("an expired lease makes the task leasable again and the old token "
          "is refused without changing anything") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto first = lease_one(store, "q", t0, 1min, "crashed");
  REQUIRE(first);
  const std::string old_token = *token_of(*first);

  // The lease is live until expires_at, and expired from then on.
  CHECK_FALSE(lease_one(store, "q", t0 + 1min - 1ms));
  const auto second = lease_one(store, "q", t0 + 1min, 5min, "w2");
  REQUIRE(second);
  CHECK(second->id == id);
  CHECK(second->attempts == 2);
  CHECK(*token_of(*second) != old_token);

  const Time now = t0 + 2min;
  const auto before = store.find(id);
  REQUIRE(before);
  CHECK(error_kind([&] {
          store.complete(id, old_token, std::string(R"("late")"), now);
        })
        == ErrorKind::conflict);
  CHECK(error_kind(
            [&] { store.heartbeat(id, old_token, 10min, std::nullopt, now); })
        == ErrorKind::conflict);
  CHECK(error_kind([&] {
          store.fail(id, old_token, fail_request("late failure"), now);
        })
        == ErrorKind::conflict);
  CHECK(error_kind([&] { store.release(id, old_token, std::nullopt, now); })
        == ErrorKind::conflict);
  CHECK(error_kind([&] { store.worker_sleep(id, old_token, now + 1h, now); })
        == ErrorKind::conflict);
  const auto after = store.find(id);
  REQUIRE(after);
  check_unchanged(*before, *after);
  CHECK(after->lease->worker == "w2");

  // The current holder is unaffected.
  const auto done =
      store.complete(id, *token_of(*second), std::string("1"), now);
  CHECK(done.state == TaskState::completed);
}

TEST_CASE("a task over max_attempts is paused with a reason instead of "
          "leased, and resume starts the limit's count afresh") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q");
  spec.max_attempts = 2;
  const int64_t id = store.add(spec, t0, k_operator);

  // Two attempts whose leases expire (a crashing worker).
  REQUIRE(lease_one(store, "q", t0, 1min));
  REQUIRE(lease_one(store, "q", t0 + 1min, 1min));
  // The third lease would be attempt 3 > 2.
  CHECK_FALSE(lease_one(store, "q", t0 + 2min, 1min));
  const auto paused = store.find(id);
  REQUIRE(paused);
  CHECK(paused->state == TaskState::paused);
  CHECK(paused->attempts == 2);
  CHECK_FALSE(paused->leased(t0 + 2min));
  CHECK(contains(paused->reason, "reached max attempts (2)"));
  CHECK_FALSE(lease_one(store, "q", t0 + 1h));

  // resume (the run message) starts the limit's count afresh; the
  // attempts go on numbering the runs.
  send_one(store, id, Message::run, t0 + 1h);
  const auto resumed = store.find(id);
  REQUIRE(resumed);
  CHECK(resumed->state == TaskState::runnable);
  CHECK(resumed->attempts == 2);
  const auto leased = lease_one(store, "q", t0 + 1h, 1min);
  REQUIRE(leased);
  CHECK(leased->attempts == 3);
  const auto again = lease_one(store, "q", t0 + 1h + 2min, 1min);
  REQUIRE(again);
  CHECK(again->attempts == 4);
  // Two since resume: the third is refused again.
  CHECK_FALSE(lease_one(store, "q", t0 + 1h + 4min, 1min));
  CHECK(store.find(id)->state == TaskState::paused);
  CHECK(store.find(id)->attempts == 4);
}

TEST_CASE("a task over its attempt limit does not keep the next task from "
          "being leased") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask limited = new_task("q");
  limited.max_attempts = 1;
  limited.priority = 10;
  const int64_t limited_id = store.add(limited, t0, k_operator);
  const int64_t plain_id = add_task(store, "q");

  const auto first = lease_one(store, "q", t0, 1min);
  REQUIRE(first);
  CHECK(first->id == limited_id);
  const auto second = lease_one(store, "q", t0 + 1min, 1min);
  REQUIRE(second);
  CHECK(second->id == plain_id);
  REQUIRE(store.find(limited_id));
  CHECK(store.find(limited_id)->state == TaskState::paused);
}

TEST_CASE("a queue's max_running limits how many of its tasks are leased") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::QueueSettings settings;
  settings.max_running = 2;
  store.set_queue("q", settings);
  for (int i = 0; i < 4; ++i) {
    add_task(store, "q");
  }
  auto req = lease_request("q", 1min);
  req.count = 3;
  CHECK(store.lease(req, t0).size() == 2);
  CHECK(store.lease(req, t0).empty());
  // Expired leases no longer count.
  CHECK(store.lease(req, t0 + 1min).size() == 2);
}

TEST_CASE("a queue named twice in one lease is still limited by its "
          "max_running") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::QueueSettings settings;
  settings.max_running = 1;
  store.set_queue("q", settings);
  for (int i = 0; i < 3; ++i) {
    add_task(store, "q");
  }
  auto req = lease_request("q");
  req.queues = {"q", "q"};
  req.count = 3;
  CHECK(store.lease(req, t0).size() == 1);
  CHECK(store.lease(req, t0).empty());
}

TEST_CASE("a queue's max_attempts applies to its tasks") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::QueueSettings settings;
  settings.max_attempts = 1;
  store.set_queue("q", settings);
  const int64_t id = add_task(store, "q");
  REQUIRE(lease_one(store, "q", t0, 1min));
  CHECK_FALSE(lease_one(store, "q", t0 + 1min));
  REQUIRE(store.find(id));
  CHECK(store.find(id)->state == TaskState::paused);
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

// A lease of many reads a page of candidates once and takes them in turn;
// each task it returns is the one it read with the lease's writes applied,
// not read again. Both must be invisible: the same tasks in the same
// order as leases of one, each equal to what a read of it gives.
TEST_CASE("one lease of many takes what leases of one take, in the same "
          "order, each task as stored") {
  TempDb many_db;
  TempDb one_db;
  TaskStore many(many_db.path(), OpenMode::write);
  TaskStore one(one_db.path(), OpenMode::write);
  const auto fill = [](TaskStore& store) {
    storage::QueueSettings limited;
    limited.max_running = 7;
    store.set_queue("b", limited);
    // More tasks that this worker may not take than a page of candidates
    // holds, first in lease order: labels it does not match, or addressed
    // to another worker.
    for (int i = 0; i < 20; ++i) {
      auto spec = new_task("a");
      spec.priority = 9;
      if (i % 2 == 0) {
        spec.labels = {{"kind", "other"}};
      } else {
        spec.to_worker = "w2";
      }
      store.add(spec, t0 - 1h, k_operator);
    }
    for (int i = 0; i < 40; ++i) {
      auto spec = new_task(i % 3 == 0 ? "b" : "a");
      spec.priority = i % 4;
      spec.run_at = t0 - 10min - std::chrono::minutes((i * 7) % 5);
      spec.labels = {{"kind", i % 5 == 0 ? "other" : "mine"}};
      if (i == 11) {
        spec.max_attempts = 1; // leased and failed below: paused when met
        spec.priority = 99;
      }
      if (i % 13 == 4) {
        spec.root = {{"batch", "late"}}; // obsolete once one is added
      }
      store.add(spec, t0 - 1h, k_operator);
    }
    auto late = new_task("c");
    late.labels = {{"batch", "late"}};
    store.add(late, t0 - 1h, k_operator);
    // Three that failed once, due again before t0: two are leased with
    // their errors, the one with max_attempts 1 is paused.
    auto first = lease_request("a", 1min);
    first.queues = {"a", "b"};
    first.match = {core::LabelPattern{"kind", "mine"}};
    first.count = 3;
    for (const auto& t : store.lease(first, t0 - 9min)) {
      storage::FailRequest fail;
      fail.error = "boom " + std::to_string(t.id);
      fail.retry_in = 1min;
      store.fail(t.id, t.lease->token, fail, t0 - 9min);
    }
  };
  fill(many);
  fill(one);

  auto req = lease_request("a", 10min);
  req.queues = {"b", "a"};
  req.match = {core::LabelPattern{"kind", "mine"}};
  req.count = 100; // more than there are
  const auto batch = many.lease(req, t0);
  req.count = 1;
  std::vector<core::Task> singles;
  while (true) {
    auto leased = one.lease(req, t0);
    if (leased.empty()) {
      break;
    }
    singles.push_back(std::move(leased.front()));
  }
  REQUIRE(batch.size() > 20);
  CHECK(ids_of(batch) == ids_of(singles));
  int with_errors = 0;
  for (const auto& t : batch) {
    const auto stored = many.find(t.id);
    REQUIRE(stored);
    CHECK(t.rev == stored->rev);
    CHECK(t.state == stored->state);
    CHECK(t.attempts == stored->attempts);
    CHECK(t.updated_at == stored->updated_at);
    REQUIRE(t.lease);
    CHECK(t.lease->token == stored->lease->token);
    CHECK(t.lease->expires_at == stored->lease->expires_at);
    CHECK(t.errors.size() == stored->errors.size());
    CHECK(t.payload == stored->payload);
    CHECK(t.labels == stored->labels);
    with_errors += t.errors.empty() ? 0 : 1;
  }
  CHECK(with_errors == 2);
  // The limit of queue b and the tasks ended on the way hold alike.
  CHECK(many.list(by_state("paused"), t0).size() == 1); // max_attempts
  CHECK(many.list(by_state("killed"), t0).size() == 2); // obsolete
  for (const char* state : {"runnable", "paused", "killed"}) {
    CHECK(ids_of(many.list(by_state(state), t0))
          == ids_of(one.list(by_state(state), t0)));
  }
}
