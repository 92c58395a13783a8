// TaskStore's producing calls (storage/features/add_store.cpp): add, add_unique
// and add_many, what a task carries and reads back, dependencies and roots
// at add, the options a broadcast refuses, retry, and the add event.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <set>
#include <tuple>

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

TEST_CASE("retry creates a new linked task with the same spec") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q", R"({"file":"a.png"})");
  spec.labels = {{"kind", "image"}};
  spec.priority = 4;
  spec.max_attempts = 3;
  const int64_t old_id = store.add(spec, t0, k_operator);
  send_one(store, old_id, Message::kill, t0);
  const auto old_before = store.find(old_id);
  REQUIRE(old_before);

  const int64_t new_id = store.retry(old_id, k_operator, t0 + 1h);
  CHECK(new_id != old_id);
  const auto fresh = store.find(new_id);
  REQUIRE(fresh);
  CHECK(fresh->retry_of == old_id);
  CHECK(fresh->queue == "q");
  CHECK(fresh->payload == R"({"file":"a.png"})");
  CHECK(fresh->labels == core::Labels{{"kind", "image"}});
  CHECK(fresh->priority == 4);
  CHECK(fresh->max_attempts == 3);
  CHECK(fresh->state == TaskState::runnable);
  CHECK(fresh->attempts == 0);
  CHECK(fresh->errors.empty());
  CHECK(fresh->created_at == t0 + 1h);
  // The old task stays as it was: terminal is final.
  check_unchanged(*old_before, *store.find(old_id));
  const auto leased = lease_one(store, "q", t0 + 1h);
  REQUIRE(leased);
  CHECK(leased->id == new_id);
}

TEST_CASE("a task's command is stored as given, in bulk too, and retry "
          "copies it") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const std::vector<std::string> argv = {"convert", "a b.png",    "$(x)",
                                         "",        "h\u00e9llo", "*"};
  storage::NewTask spec = new_task("q");
  spec.command = argv;
  const int64_t id = store.add(spec, t0, k_operator);
  CHECK(store.find(id)->command == argv);
  CHECK(store.find(add_task(store, "q"))->command.empty());

  std::vector<std::string> payloads = {"1", "2", "3"};
  size_t next = 0;
  std::vector<int64_t> bulk;
  store.add_many(
      spec,
      [&](std::string& out) {
        if (next == payloads.size()) {
          return false;
        }
        out = payloads[next++];
        return true;
      },
      [&](int64_t added) { bulk.push_back(added); }, t0, k_operator);
  REQUIRE(bulk.size() == 3);
  for (const int64_t added : bulk) {
    CHECK(store.find(added)->command == argv);
  }

  send_one(store, id, Message::kill, t0);
  const int64_t again = store.retry(id, k_operator, t0 + 1h);
  CHECK(store.find(again)->command == argv);
}

TEST_CASE("retry of a failed task works; of a live or missing task it is "
          "refused") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t failed = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  store.fail(failed, *token_of(*leased),
             fail_request("bad input", storage::FailMode::no_retry), t0);
  const int64_t live = add_task(store, "q");

  const int64_t retried = store.retry(failed, k_operator, t0);
  REQUIRE(store.find(retried));
  CHECK(store.find(retried)->retry_of == failed);
  CHECK(error_kind([&] { store.retry(live, k_operator, t0); })
        == ErrorKind::conflict);
  CHECK(error_kind([&] { store.retry(4242, k_operator, t0); })
        == ErrorKind::not_found);
}

TEST_CASE("adding a task records an add event by its actor") {
  // core::Event: message is "a Message name, or `add`, `lease`, ...", and
  // `from` is "empty when none"; add() takes the actor for this record.
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = store.add(new_task("q"), t0, "alice@host");
  int64_t bulk_id = 0;
  bool produced = false;
  store.add_many(
      new_task("q"),
      [&](std::string& payload) {
        if (produced) {
          return false;
        }
        produced = true;
        payload = "1";
        return true;
      },
      [&](int64_t new_id) { bulk_id = new_id; }, t0 + 1s, "bob@host");

  for (const auto& [task_id, actor, time] :
       {std::tuple{id, std::string("alice@host"), t0},
        std::tuple{bulk_id, std::string("bob@host"), t0 + 1s}}) {
    const int64_t shown = task_id; // clang 14 cannot CAPTURE a binding
    CAPTURE(shown);
    const auto events = store.show(task_id).events;
    REQUIRE_FALSE(events.empty());
    CHECK(events.front().message == "add");
    CHECK(events.front().from == "");
    CHECK(events.front().to == "runnable");
    CHECK(events.front().actor == actor);
    CHECK(events.front().time == time);
  }
}
