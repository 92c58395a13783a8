// TaskStore: adding tasks, leasing them, and the worker writes that need the
// lease token (heartbeat, complete, release, sleep). Each test runs on a real
// SQLite file.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <set>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

TEST_CASE("an added task reads back exactly as it was given") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task(
      "thumbs", R"({"file": "a.png",  "sizes":[1, 2.50,3e2], "z":null})");
  spec.labels = {{"kind", "image"}, {"tier", ""}};
  spec.priority = -3;
  spec.run_at = t0 + 90s + 5ms; // millisecond precision
  spec.max_attempts = 4;
  const int64_t id = store.add(spec, t0, k_operator);

  const auto task = store.find(id);
  REQUIRE(task);
  CHECK(task->id == id);
  CHECK(task->queue == "thumbs");
  CHECK(task->state == TaskState::runnable);
  // The JSON text is kept as given: spacing, key order and number spelling.
  CHECK(task->payload
        == R"({"file": "a.png",  "sizes":[1, 2.50,3e2], "z":null})");
  CHECK(task->labels == core::Labels{{"kind", "image"}, {"tier", ""}});
  CHECK(task->priority == -3);
  CHECK(task->run_at == t0 + 90s + 5ms);
  CHECK(task->max_attempts == 4);
  CHECK(task->attempts == 0);
  CHECK(task->created_at == t0);
  CHECK(task->updated_at == t0);
  CHECK(task->rev >= 1);
  CHECK_FALSE(task->lease);
  CHECK(task->errors.empty());
  CHECK_FALSE(task->checkpoint);
  CHECK_FALSE(task->result);
  CHECK_FALSE(task->retry_of);
}

TEST_CASE("an added task without run_at is due at once and has a null "
          "payload by default") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec;
  spec.queue = "q";
  const int64_t id = store.add(spec, t0, k_operator);
  const auto task = store.find(id);
  REQUIRE(task);
  CHECK(task->payload == "null");
  CHECK(task->labels.empty());
  CHECK(task->run_at == t0);
  CHECK_FALSE(task->max_attempts);
}

TEST_CASE("payloads with quotes, unicode and newlines round-trip exactly") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const std::string payload =
      "\"it's a \\\"quoted\\\" string\\nwith \xC3\xA9 and \\u0000 and ;--\"";
  const int64_t id = add_task(store, "q", t0, payload);
  REQUIRE(store.find(id));
  CHECK(store.find(id)->payload == payload);
}

TEST_CASE("ids are distinct and increase") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = add_task(store, "q");
  const int64_t b = add_task(store, "q");
  const int64_t c = add_task(store, "other");
  CHECK(a < b);
  CHECK(b < c);
}

TEST_CASE("tasks survive closing and reopening the database") {
  TempDb db;
  int64_t id = 0;
  {
    TaskStore store(db.path(), OpenMode::write);
    id = add_task(store, "q", t0, R"({"n":1})");
  }
  TaskStore reopened(db.path(), OpenMode::write);
  const auto task = reopened.find(id);
  REQUIRE(task);
  CHECK(task->payload == R"({"n":1})");
}

TEST_CASE("find of a missing task is empty and show of it is not_found") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q");
  CHECK_FALSE(store.find(4242));
  CHECK(error_kind([&] { store.show(4242); }) == ErrorKind::not_found);
}

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

TEST_CASE("an expired token is refused even when nobody leased the task "
          "again") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0, 1min);
  REQUIRE(leased);
  const auto before = store.find(id);
  REQUIRE(before);
  CHECK(error_kind([&] {
          store.complete(id, *token_of(*leased), std::nullopt, t0 + 1min);
        })
        == ErrorKind::conflict);
  CHECK(error_kind([&] {
          store.heartbeat(id, *token_of(*leased), std::nullopt, std::nullopt,
                          t0 + 1min);
        })
        == ErrorKind::conflict);
  const auto after = store.find(id);
  REQUIRE(after);
  check_unchanged(*before, *after);
}

TEST_CASE("heartbeat extends the lease") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0, 1min);
  REQUIRE(leased);
  const std::string token = *token_of(*leased);

  const auto beat = store.heartbeat(id, token, 5min, std::nullopt, t0 + 50s);
  CHECK(beat.expires_at == t0 + 50s + 5min);
  CHECK_FALSE(beat.checkpoint_requested);
  const auto stored = store.find(id);
  REQUIRE(stored);
  REQUIRE(stored->lease);
  CHECK(stored->lease->expires_at == t0 + 50s + 5min);
  CHECK(stored->lease->token == token);
  CHECK(stored->attempts == 1);

  // Past the original expiry, the task is still held and the token valid.
  CHECK_FALSE(lease_one(store, "q", t0 + 2min));
  const auto done = store.complete(id, token, std::nullopt, t0 + 5min);
  CHECK(done.state == TaskState::completed);
}

TEST_CASE("heartbeat without a duration extends by the leased duration") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0, 3min);
  REQUIRE(leased);
  const auto beat = store.heartbeat(id, *token_of(*leased), std::nullopt,
                                    std::nullopt, t0 + 1min);
  CHECK(beat.expires_at == t0 + 1min + 3min);
}

TEST_CASE("heartbeat stores a checkpoint that is kept across attempts") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0, 1min);
  REQUIRE(leased);
  store.heartbeat(id, *token_of(*leased), std::nullopt,
                  std::string(R"({"step": 3})"), t0 + 10s);
  REQUIRE(store.find(id));
  CHECK(store.find(id)->checkpoint == std::string(R"({"step": 3})"));

  const auto again = lease_one(store, "q", t0 + 2min); // first lease expired
  REQUIRE(again);
  CHECK(again->checkpoint == std::string(R"({"step": 3})"));
}

TEST_CASE("an operator checkpoint request reaches the worker's heartbeat "
          "without revoking the lease") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  const std::string token = *token_of(*leased);

  send_one(store, id, Message::checkpoint, t0 + 1s);
  REQUIRE(store.find(id));
  CHECK(store.find(id)->checkpoint_requested);
  CHECK(store.find(id)->state == TaskState::runnable);

  const auto beat =
      store.heartbeat(id, token, std::nullopt, std::nullopt, t0 + 2s);
  CHECK(beat.checkpoint_requested);
  // Storing a checkpoint answers the request.
  const auto answered = store.heartbeat(id, token, std::nullopt,
                                        std::string(R"({"at":1})"), t0 + 3s);
  CHECK_FALSE(answered.checkpoint_requested);
  REQUIRE(store.find(id));
  CHECK_FALSE(store.find(id)->checkpoint_requested);
  CHECK(store.complete(id, token, std::nullopt, t0 + 4s).state
        == TaskState::completed);
}

TEST_CASE("complete with the lease token completes the task and stores the "
          "result") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  const auto done = store.complete(id, *token_of(*leased),
                                   std::string(R"({"ok": true})"), t0 + 1s);
  CHECK(done.state == TaskState::completed);
  CHECK(done.result == std::string(R"({"ok": true})"));
  CHECK_FALSE(done.leased(t0 + 1s));
  const auto stored = store.find(id);
  REQUIRE(stored);
  CHECK(stored->state == TaskState::completed);
  CHECK(stored->result == std::string(R"({"ok": true})"));
  CHECK(stored->updated_at == t0 + 1s);
  CHECK_FALSE(lease_one(store, "q", t0 + 1h));
}

TEST_CASE("complete with a wrong token is a conflict and changes nothing") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  const auto before = store.find(id);
  REQUIRE(before);
  CHECK(error_kind(
            [&] { store.complete(id, "not-the-token", std::nullopt, t0 + 1s); })
        == ErrorKind::conflict);
  CHECK(error_kind([&] { store.complete(id, "", std::nullopt, t0 + 1s); })
        == ErrorKind::conflict);
  const auto after = store.find(id);
  REQUIRE(after);
  check_unchanged(*before, *after);
}

TEST_CASE("a task is completed at most once") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  const std::string token = *token_of(*leased);
  store.complete(id, token, std::string("1"), t0 + 1s);
  const auto before = store.find(id);
  REQUIRE(before);
  CHECK(
      error_kind([&] { store.complete(id, token, std::string("2"), t0 + 2s); })
      == ErrorKind::conflict);
  const auto after = store.find(id);
  REQUIRE(after);
  check_unchanged(*before, *after);
  CHECK(after->result == std::string("1"));
}

TEST_CASE("a worker write to a task that does not exist is not_found") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q");
  CHECK(error_kind([&] { store.complete(999, "tok", std::nullopt, t0); })
        == ErrorKind::not_found);
  CHECK(error_kind([&] {
          store.heartbeat(999, "tok", std::nullopt, std::nullopt, t0);
        })
        == ErrorKind::not_found);
}

TEST_CASE("a worker write to a task that was never leased is a conflict") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto before = store.find(id);
  REQUIRE(before);
  CHECK(error_kind([&] { store.complete(id, "tok", std::nullopt, t0); })
        == ErrorKind::conflict);
  const auto after = store.find(id);
  REQUIRE(after);
  check_unchanged(*before, *after);
}

TEST_CASE("a worker release gives the task back with its attempt") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  CHECK(leased->attempts == 1);

  const auto released =
      store.release(id, *token_of(*leased), std::nullopt, t0 + 1s);
  CHECK(released.state == TaskState::runnable);
  CHECK(released.attempts == 0);
  CHECK(released.errors.empty());
  CHECK_FALSE(released.leased(t0 + 1s));
  const auto stored = store.find(id);
  REQUIRE(stored);
  CHECK(stored->attempts == 0);
  CHECK(stored->errors.empty());

  // Eligible again at once, and the old token is spent.
  const auto again = lease_one(store, "q", t0 + 1s);
  REQUIRE(again);
  CHECK(again->id == id);
  CHECK(again->attempts == 1);
  CHECK(error_kind([&] {
          store.complete(id, *token_of(*leased), std::nullopt, t0 + 2s);
        })
        == ErrorKind::conflict);
}

TEST_CASE("a worker release with a delay makes the task due later") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  store.release(id, *token_of(*leased), 30s, t0 + 1s);
  REQUIRE(store.find(id));
  CHECK(store.find(id)->run_at == t0 + 31s);
  CHECK_FALSE(lease_one(store, "q", t0 + 30s));
  CHECK(lease_one(store, "q", t0 + 31s));
}

TEST_CASE("a released task never trips max_attempts") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q");
  spec.max_attempts = 1;
  const int64_t id = store.add(spec, t0, k_operator);
  for (int i = 0; i < 3; ++i) {
    const auto leased = lease_one(store, "q", t0);
    REQUIRE(leased);
    store.release(id, *token_of(*leased), std::nullopt, t0);
  }
  REQUIRE(store.find(id));
  CHECK(store.find(id)->state == TaskState::runnable);
  CHECK(lease_one(store, "q", t0));
}

TEST_CASE("a worker sleep puts the task to sleep until the given time") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  const auto slept = store.worker_sleep(id, *token_of(*leased), t0 + 1h, t0);
  CHECK(slept.state == TaskState::sleeping);
  CHECK(slept.run_at == t0 + 1h);
  CHECK_FALSE(slept.leased(t0));
  CHECK_FALSE(lease_one(store, "q", t0 + 1h - 1ms));
  const auto woken = lease_one(store, "q", t0 + 1h);
  REQUIRE(woken);
  CHECK(woken->id == id);
  // Leasing a sleeping task whose time has come runs it.
  CHECK(woken->state == TaskState::runnable);
  CHECK(store.complete(id, *token_of(*woken), std::nullopt, t0 + 1h).state
        == TaskState::completed);
}

TEST_CASE("a task over max_attempts is paused with a reason instead of "
          "leased, and resume resets its attempts") {
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

  // resume (the run message) resets the attempts.
  send_one(store, id, Message::run, t0 + 1h);
  const auto resumed = store.find(id);
  REQUIRE(resumed);
  CHECK(resumed->state == TaskState::runnable);
  CHECK(resumed->attempts == 0);
  const auto leased = lease_one(store, "q", t0 + 1h);
  REQUIRE(leased);
  CHECK(leased->attempts == 1);
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

TEST_CASE("add_many adds every payload and reports each id") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const std::vector<std::string> payloads = {R"({"n":1})", R"("two")", "3",
                                             "[4]", "null"};
  std::size_t next_index = 0;
  std::vector<int64_t> seen;
  storage::NewTask proto = new_task("bulk");
  proto.labels = {{"batch", "7"}};
  proto.priority = 2;
  const int64_t count = store.add_many(
      proto,
      [&](std::string& payload) {
        if (next_index == payloads.size()) {
          return false;
        }
        payload = payloads[next_index++];
        return true;
      },
      [&](int64_t id) { seen.push_back(id); }, t0, k_operator);

  CHECK(count == 5);
  REQUIRE(seen.size() == 5);
  CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == 5);
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  for (std::size_t i = 0; i < seen.size(); ++i) {
    const auto task = store.find(seen[i]);
    REQUIRE(task);
    CHECK(task->payload == payloads[i]);
    CHECK(task->queue == "bulk");
    CHECK(task->labels == core::Labels{{"batch", "7"}});
    CHECK(task->priority == 2);
    CHECK(task->state == TaskState::runnable);
  }
  CHECK(store.list(by_queue("bulk"), t0).size() == 5);
}

TEST_CASE("add_many keeps order and consecutive ids across full and "
          "partial batches") {
  // Bulk adds insert many rows per statement; these counts land exactly on,
  // just under and past a batch boundary.
  for (const int n : {1, 63, 64, 65, 128, 133}) {
    CAPTURE(n);
    TempDb db;
    TaskStore store(db.path(), OpenMode::write);
    const int64_t before = add_task(store, "bulk", t0, R"("before")");
    int produced = 0;
    std::vector<int64_t> seen;
    const int64_t count = store.add_many(
        new_task("bulk"),
        [&](std::string& payload) {
          if (produced == n) {
            return false;
          }
          payload = R"({"n":)" + std::to_string(produced++) + "}";
          return true;
        },
        [&](int64_t id) { seen.push_back(id); }, t0, k_operator);
    CHECK(count == n);
    REQUIRE(seen.size() == static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      const auto index = static_cast<std::size_t>(i);
      CHECK(seen[index] == before + 1 + i);
      const auto task = store.find(seen[index]);
      REQUIRE(task);
      CHECK(task->payload == R"({"n":)" + std::to_string(i) + "}");
    }
    CHECK(store.list(by_queue("bulk"), t0).size()
          == static_cast<std::size_t>(n + 1));
  }
}

TEST_CASE("add_many of nothing adds nothing") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t count = store.add_many(
      new_task("bulk"), [](std::string&) { return false; }, [](int64_t) {}, t0,
      k_operator);
  CHECK(count == 0);
  CHECK(store.list(by_queue("bulk"), t0).empty());
}

TEST_CASE("add_many adds nothing when the generator throws midway") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t existing = add_task(store, "bulk", t0, R"("before")");
  int produced = 0;
  CHECK_THROWS_AS(store.add_many(
                      new_task("bulk"),
                      [&](std::string& payload) {
                        if (produced == 1000) {
                          throw taskq::Error(ErrorKind::usage,
                                             "line 1001: not JSON");
                        }
                        ++produced;
                        payload = "{}";
                        return true;
                      },
                      [](int64_t) {}, t0, k_operator),
                  taskq::Error);
  CHECK(produced == 1000);
  const auto tasks = store.list(by_queue("bulk"), t0);
  CHECK(ids_of(tasks) == std::vector<int64_t>{existing});

  // The store is still usable after the rollback.
  const int64_t after = add_task(store, "bulk");
  CHECK(store.find(after));
  CHECK(store.list(by_queue("bulk"), t0).size() == 2);
}

TEST_CASE("a unique key adds one task until that task is finished") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q", R"({"n":1})");
  spec.unique_key = "nightly";
  const storage::Added first = store.add_unique(spec, t0, k_operator);
  CHECK_FALSE(first.existed);
  spec.payload = R"({"n":2})";
  const storage::Added again = store.add_unique(spec, t0 + 1s, k_operator);
  CHECK(again.existed);
  CHECK(again.id == first.id);
  CHECK(store.find(first.id)->payload == R"({"n":1})"); // untouched
  CHECK(store.list(by_queue("q"), t0).size() == 1);

  // The same key in another queue, and no key at all, are other tasks.
  storage::NewTask elsewhere = spec;
  elsewhere.queue = "other";
  CHECK_FALSE(store.add_unique(elsewhere, t0, k_operator).existed);
  CHECK(store.add(new_task("q"), t0, k_operator) != first.id);

  // Still unique while leased, sleeping or paused: only finishing frees it.
  const auto leased = lease_one(store, "q", t0 + 2s);
  REQUIRE(leased);
  REQUIRE(leased->id == first.id);
  CHECK(store.add_unique(spec, t0 + 3s, k_operator).id == first.id);
  store.fail(first.id, leased->lease->token, fail_request("boom"), t0 + 4s);
  REQUIRE(store.find(first.id)->state == TaskState::sleeping);
  CHECK(store.add_unique(spec, t0 + 5s, k_operator).existed);
  send_one(store, first.id, Message::pause, t0 + 6s);
  CHECK(store.add_unique(spec, t0 + 7s, k_operator).existed);
  send_one(store, first.id, Message::kill, t0 + 8s);
  const storage::Added fresh = store.add_unique(spec, t0 + 9s, k_operator);
  CHECK_FALSE(fresh.existed);
  CHECK(fresh.id > first.id);
  CHECK(store.add(spec, t0 + 10s, k_operator) == fresh.id);
}
