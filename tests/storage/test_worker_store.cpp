// A worker's writes on what it leased (storage/features/worker_store.cpp):
// heartbeat, complete, release and sleep under the lease token,
// revoked_reason and lease_held, and apply_outcomes, several outcomes and
// the next lease in one transaction, each fenced by its own token. The
// error policy of fail is in test_worker_store_fail.cpp.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

std::vector<core::Task> lease_n(TaskStore& store, int n, Time now) {
  auto req = lease_request("q");
  req.count = n;
  return store.lease(req, now);
}

} // namespace

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

TEST_CASE("revoked_reason is empty for a live or unknown token") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  CHECK_FALSE(store.revoked_reason(id, *token_of(*leased)));
  CHECK_FALSE(store.revoked_reason(id, "never-issued"));
}

TEST_CASE("lease_held follows the lease") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0, 5min);
  REQUIRE(leased);
  const std::string token = leased->lease->token;
  CHECK(store.lease_held(id, token, t0));
  CHECK(store.lease_held(id, token, t0 + 5min - 1ms));
  CHECK_FALSE(store.lease_held(id, token, t0 + 5min)); // expired
  CHECK_FALSE(store.lease_held(id, "not-the-token", t0));
  CHECK_FALSE(store.lease_held(id + 1, token, t0)); // no such task

  send_one(store, id, Message::kill, t0 + 1s);
  CHECK_FALSE(store.lease_held(id, token, t0 + 1s));
  CHECK(store.revoked_reason(id, token) == "kill");
}

TEST_CASE("a batch with one lost lease applies the others and writes nothing "
          "for the lost one") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 4; ++i) {
    add_task(store, "q");
  }
  const auto leased = lease_n(store, 4, t0);
  REQUIRE(leased.size() == 4);
  // An operator revokes the third one's lease.
  send_one(store, leased[2].id, Message::pause, t0 + 1s);
  const auto before = store.show(leased[2].id);

  std::vector<storage::Outcome> batch = {
      done(leased[0], R"({"n":0})"), failed(leased[1], "boom"),
      done(leased[2], R"({"n":2})"), released(leased[3])};
  for (auto& o : batch) {
    o.output.chunks = {chunk(o.id, "out " + std::to_string(o.id))};
    o.output.keep = 1000;
  }
  const auto r = store.apply_outcomes(batch, std::nullopt, t0 + 2s);

  REQUIRE(r.outcomes.size() == 4);
  CHECK(r.leased.empty());
  for (size_t i = 0; i < 4; ++i) {
    CHECK(r.outcomes[i].id == leased[i].id);
  }
  REQUIRE(r.outcomes[0].task);
  CHECK(r.outcomes[0].task->state == TaskState::completed);
  CHECK(r.outcomes[0].task->result == R"({"n":0})");
  CHECK(r.outcomes[0].lost.empty());
  REQUIRE(r.outcomes[1].task);
  CHECK(r.outcomes[1].task->state == TaskState::failed);
  REQUIRE(r.outcomes[3].task);
  CHECK(r.outcomes[3].task->state == TaskState::runnable);
  CHECK_FALSE(r.outcomes[3].task->lease);
  CHECK(r.outcomes[3].task->run_at == t0 + 12s);
  // Given back, but its output is kept under attempt 1: the number stays.
  CHECK(r.outcomes[3].task->attempts == 1);

  // The lost one: the message complete() would give, and nothing written.
  CHECK_FALSE(r.outcomes[2].task);
  CHECK(contains(r.outcomes[2].lost, "lease lost"));
  CHECK(contains(r.outcomes[2].lost, "revoked"));
  CHECK(r.outcomes[2].lost == error_message([&] {
          store.complete(leased[2].id, leased[2].lease->token, "{}", t0 + 2s);
        }));
  const auto after = store.show(leased[2].id);
  CHECK(after.task.state == TaskState::paused);
  CHECK_FALSE(after.task.result);
  CHECK(after.events.size() == before.events.size());
  CHECK(store.output(leased[2].id, 1, std::nullopt).empty());
  // The others' output was stored with them.
  for (const size_t i : {size_t{0}, size_t{1}, size_t{3}}) {
    const auto out = store.output(leased[i].id, 1, "stdout");
    REQUIRE(out.size() == 1);
    CHECK(out[0].data == "out " + std::to_string(leased[i].id));
  }
}

TEST_CASE("a batch leases the next tasks after its outcomes, in the same "
          "transaction") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t first = add_task(store, "q");
  // Waits for `first`: eligible only once the batch's completion is in.
  auto spec = new_task("q");
  spec.after = {first};
  const int64_t second = store.add(spec, t0, k_operator);
  const auto leased = lease_n(store, 2, t0);
  REQUIRE(leased.size() == 1);
  REQUIRE(leased[0].id == first);

  auto next = lease_request("q", 1min);
  next.count = 2;
  const auto r = store.apply_outcomes({done(leased[0], "1")}, next, t0 + 1s);
  REQUIRE(r.outcomes.size() == 1);
  REQUIRE(r.outcomes[0].task);
  CHECK(r.outcomes[0].task->state == TaskState::completed);
  REQUIRE(r.leased.size() == 1);
  CHECK(r.leased[0].id == second);
  REQUIRE(r.leased[0].lease);
  CHECK(r.leased[0].lease->worker == k_worker);
  CHECK(r.leased[0].lease->expires_at == t0 + 1s + 1min);
  CHECK(r.leased[0].attempts == 1);
  // The new lease is a real one: its token completes the task.
  CHECK(store.complete(second, r.leased[0].lease->token, "2", t0 + 2s).state
        == TaskState::completed);

  // No outcomes: a plain lease; nothing to lease: empty.
  const auto none = store.apply_outcomes({}, next, t0 + 3s);
  CHECK(none.outcomes.empty());
  CHECK(none.leased.empty());
}

TEST_CASE("a batch's events are all logged, in order, with their states, "
          "actors and details") {
  // On PostgreSQL they ride the batch's UPDATEs of tasks
  // (pg::WriteBehind::riding), up to 16 at a time.
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  constexpr int k_n = 20;
  for (int i = 0; i < 2 * k_n; ++i) {
    add_task(store, "q");
  }
  const auto leased = lease_n(store, k_n, t0);
  REQUIRE(leased.size() == k_n);
  storage::EventCursor cursor = store.events_end();
  std::vector<storage::Outcome> outcomes;
  for (const auto& t : leased) {
    outcomes.push_back(done(t, "1"));
  }
  auto next = lease_request("q", 1min);
  next.count = k_n;
  const auto r = store.apply_outcomes(outcomes, next, t0 + 1s);
  REQUIRE(r.leased.size() == k_n);
  const auto events = store.events(std::nullopt, std::nullopt, cursor, 1000);
  REQUIRE(events.size() == 2 * k_n);
  for (int i = 0; i < k_n; ++i) {
    const core::Event& e = events[i].event;
    CAPTURE(i);
    CHECK(e.task_id == leased[i].id);
    CHECK(e.message == "complete");
    CHECK(e.from == "runnable");
    CHECK(e.to == "completed");
    CHECK(e.actor == k_worker);
    CHECK(e.detail.empty());
    CHECK(e.time == t0 + 1s);
    const core::Event& l = events[k_n + i].event;
    CHECK(l.task_id == r.leased[i].id);
    CHECK(l.message == "lease");
    CHECK(l.from == "runnable");
    CHECK(l.to == "runnable");
    CHECK(l.actor == k_worker);
    CHECK(l.detail == "attempt 1, until " + core::format_time(t0 + 1s + 1min));
    if (i > 0) {
      CHECK(l.id > events[k_n + i - 1].event.id);
    }
  }
}

TEST_CASE("a repeated outcome for a finished task is refused as lost") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q");
  add_task(store, "q");
  const auto leased = lease_n(store, 2, t0);
  REQUIRE(leased.size() == 2);

  // The same outcome twice in one batch: the second finds it finished.
  const auto r = store.apply_outcomes(
      {done(leased[0], "1"), done(leased[0], "again")}, std::nullopt, t0 + 1s);
  REQUIRE(r.outcomes.size() == 2);
  REQUIRE(r.outcomes[0].task);
  CHECK(r.outcomes[0].task->result == "1");
  CHECK_FALSE(r.outcomes[1].task);
  CHECK(contains(r.outcomes[1].lost, "lease lost"));
  const auto events = store.show(leased[0].id).events.size();

  // In a later batch too, beside an outcome that still holds its lease.
  const auto again = store.apply_outcomes(
      {failed(leased[0], "late"), done(leased[1], "2")}, std::nullopt, t0 + 2s);
  REQUIRE(again.outcomes.size() == 2);
  CHECK_FALSE(again.outcomes[0].task);
  CHECK(contains(again.outcomes[0].lost, "lease lost"));
  REQUIRE(again.outcomes[1].task);
  CHECK(again.outcomes[1].task->state == TaskState::completed);
  const auto detail = store.show(leased[0].id);
  CHECK(detail.task.state == TaskState::completed);
  CHECK(detail.task.result == "1");
  CHECK(detail.events.size() == events);
  CHECK(detail.task.errors.empty());

  // An expired lease and a task that no longer exists are lost too.
  const int64_t third = add_task(store, "q", t0 + 3s);
  const auto short_lease = store.lease(lease_request("q", 1s), t0 + 3s);
  REQUIRE(short_lease.size() == 1);
  REQUIRE(short_lease[0].id == third);
  auto ghost = done(short_lease[0], "x");
  ghost.id = 999999;
  const auto late = store.apply_outcomes({done(short_lease[0], "3"), ghost},
                                         std::nullopt, t0 + 10s);
  REQUIRE(late.outcomes.size() == 2);
  CHECK(contains(late.outcomes[0].lost, "expired"));
  CHECK_FALSE(late.outcomes[1].lost.empty());
  CHECK(store.find(third)->state == TaskState::runnable);
}
