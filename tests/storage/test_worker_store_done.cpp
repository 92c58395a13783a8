// A worker's done in apply_outcomes (storage/features/worker_store.cpp):
// one guarded UPDATE that checks the lease in its WHERE and returns the row
// (move_task_if, storage/model/state_writer.cpp), and, when it writes
// nothing, the checked path: a lost lease reported as complete() reports
// it, a broadcast's delivery recorded. Its followers (dependents, the
// label index), its event and its output are as the checked path's; a
// dependent added while the done waits for the task's row is woken.
#include "core/reconnect.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

// The last event of task `id`.
core::Event last_event(TaskStore& store, int64_t id) {
  const auto events = store.show(id).events;
  REQUIRE_FALSE(events.empty());
  return events.back();
}

// A done of `leased` (with output), applied at `now`, after `spoil` did
// something to the task: lost, with complete()'s message for the same
// token at that time, and nothing written (state, events, output).
void check_lost(TaskStore& store, const core::Task& leased, Time now,
                const std::function<void()>& spoil,
                const std::string& expected) {
  spoil();
  const auto before = store.find(leased.id);
  const size_t events =
      before ? store.show(leased.id).events.size() : size_t{0};
  auto o = done(leased, R"({"late":true})");
  o.output.chunks = {chunk(leased.id, "late output")};
  o.output.keep = 1000;
  const auto r = store.apply_outcomes({o}, std::nullopt, now);
  REQUIRE(r.outcomes.size() == 1);
  CHECK_FALSE(r.outcomes[0].task);
  CHECK(r.outcomes[0].lost == expected);
  CHECK(r.outcomes[0].lost == error_message([&] {
          store.complete(leased.id, leased.lease->token, "{}", now);
        }));
  const auto after = store.find(leased.id);
  REQUIRE(after.has_value() == before.has_value());
  if (after) {
    check_unchanged(*before, *after);
    CHECK(store.show(leased.id).events.size() == events);
    CHECK(store.output(leased.id, 1, std::nullopt).empty());
  }
}

} // namespace

TEST_CASE("a done records the completion, its event and its output") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  auto spec = new_task("q");
  spec.labels = {{"kind", "thumb"}};
  const int64_t id = store.add(spec, t0, k_operator);
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  const int64_t rev = store.find(id)->rev;

  auto o = done(*leased, R"({"ok":1})");
  o.output.chunks = {chunk(id, "hello")};
  o.output.keep = 1000;
  const auto r = store.apply_outcomes({o}, std::nullopt, t0 + 2s);
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].lost.empty());
  REQUIRE(r.outcomes[0].task);
  const core::Task& t = *r.outcomes[0].task;
  CHECK(t.id == id);
  CHECK(t.state == TaskState::completed);
  CHECK_FALSE(t.lease);
  CHECK(t.result == R"({"ok":1})");
  CHECK(t.labels == spec.labels);

  const auto stored = store.find(id);
  REQUIRE(stored);
  CHECK(stored->state == TaskState::completed);
  CHECK(stored->rev == rev + 1);
  CHECK(stored->updated_at == t0 + 2s);
  CHECK_FALSE(stored->lease);
  CHECK(stored->result == R"({"ok":1})");
  const auto e = last_event(store, id);
  CHECK(e.message == "complete");
  CHECK(e.from == "runnable");
  CHECK(e.to == "completed");
  CHECK(e.actor == k_worker);
  const auto out = store.output(id, 1, "stdout");
  REQUIRE(out.size() == 1);
  CHECK(out[0].data == "hello");
  CHECK(store.check().ok);
}

TEST_CASE("a done logs the lease's worker, whatever worker the outcome "
          "names") {
  // The UPDATE clears lease_worker and RETURNING gives its new value: the
  // worker the event names is the outcome's, guarded to be the lease's.
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (const std::string named : {"someone-else", ""}) {
    CAPTURE(named);
    const int64_t id = add_task(store, "q");
    const auto leased = lease_one(store, "q", t0, 5min, "w7");
    REQUIRE(leased);
    REQUIRE(leased->id == id);
    auto o = done(*leased, "1");
    o.worker = named;
    const auto r = store.apply_outcomes({o}, std::nullopt, t0 + 1s);
    REQUIRE(r.outcomes.size() == 1);
    REQUIRE(r.outcomes[0].task);
    CHECK(r.outcomes[0].task->state == TaskState::completed);
    CHECK(store.find(id)->state == TaskState::completed);
    CHECK(last_event(store, id).actor == "w7");
  }
}

TEST_CASE("a done whose task carries errors returns them") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto first = lease_one(store, "q", t0);
  REQUIRE(first);
  auto retried = failed(*first, "once");
  retried.fail.mode = storage::FailMode::policy;
  const auto f = store.apply_outcomes({retried}, std::nullopt, t0 + 1s);
  REQUIRE(f.outcomes[0].task);
  REQUIRE(f.outcomes[0].task->state == TaskState::sleeping);
  const auto second = lease_one(store, "q", t0 + 1h);
  REQUIRE(second);
  REQUIRE(second->id == id);
  const auto r =
      store.apply_outcomes({done(*second, "1")}, std::nullopt, t0 + 1h + 1s);
  REQUIRE(r.outcomes[0].task);
  CHECK(r.outcomes[0].task->state == TaskState::completed);
  REQUIRE(r.outcomes[0].task->errors.size() == 1);
  CHECK(r.outcomes[0].task->errors[0].message == "once");
}

TEST_CASE("a done whose lease was lost is reported as complete() reports "
          "it, and writes nothing") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const auto lease_new = [&](Time now, Millis lease_for = 5min) {
    const int64_t id = add_task(store, "q", now);
    const auto leased = lease_one(store, "q", now, lease_for);
    REQUIRE(leased);
    REQUIRE(leased->id == id);
    return *leased;
  };
  const auto ref = [](const core::Task& t) {
    return "task " + std::to_string(t.id);
  };

  SUBCASE("a wrong token") {
    auto t = lease_new(t0);
    t.lease->token = "not-the-token";
    check_lost(
        store, t, t0 + 1s, [] {},
        "lease lost: " + ref(t) + " is leased by another worker (w1)");
  }
  SUBCASE("an expired lease") {
    const auto t = lease_new(t0, 1min);
    check_lost(
        store, t, t0 + 1min, [] {},
        "lease lost: the lease on " + ref(t) + " expired at "
            + core::format_time(t0 + 1min));
  }
  SUBCASE("an expired lease another worker took") {
    const auto t = lease_new(t0, 1min);
    check_lost(
        store, t, t0 + 2min,
        [&] { REQUIRE(lease_one(store, "q", t0 + 2min, 5min, "w2")); },
        "lease lost: " + ref(t) + " is leased by another worker (w2)");
  }
  SUBCASE("paused by an operator before the outcome") {
    const auto t = lease_new(t0);
    check_lost(
        store, t, t0 + 2s,
        [&] { send_one(store, t.id, Message::pause, t0 + 1s); },
        "lease lost: " + ref(t) + " was revoked (pause by " + k_operator + ")");
  }
  SUBCASE("killed by an operator before the outcome") {
    const auto t = lease_new(t0);
    check_lost(
        store, t, t0 + 2s,
        [&] { send_one(store, t.id, Message::kill, t0 + 1s); },
        "lease lost: " + ref(t) + " was revoked (kill by " + k_operator + ")");
  }
  SUBCASE("deleted before the outcome") {
    const auto t = lease_new(t0);
    check_lost(
        store, t, t0 + 2s,
        [&] {
          storage::TxRequest req;
          req.remove = {{t.id, t.lease->token}};
          store.apply_tx(req, t0 + 1s, k_operator);
          REQUIRE_FALSE(store.find(t.id));
        },
        "no " + ref(t));
  }
  SUBCASE("already done") {
    const auto t = lease_new(t0);
    check_lost(
        store, t, t0 + 2s,
        [&] {
          REQUIRE(store.apply_outcomes({done(t, "1")}, std::nullopt, t0 + 1s)
                      .outcomes[0]
                      .task);
        },
        "lease lost: " + ref(t) + " is not leased with this token");
  }
}

TEST_CASE("a broadcast delivery's done is still recorded") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask b = new_task("q");
  b.broadcast_ttl = 1h;
  const int64_t id = store.add(b, t0, k_operator);
  const auto got = lease_one(store, "q", t0, 5min, "w1");
  REQUIRE(got);
  REQUIRE(got->id == id);
  const auto r = store.apply_outcomes({done(*got, "1")}, std::nullopt, t0 + 1s);
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].lost.empty());
  REQUIRE(r.outcomes[0].task);
  // A broadcast needs no done: it stays runnable for the other workers.
  CHECK(r.outcomes[0].task->state == TaskState::runnable);
  CHECK(store.find(id)->state == TaskState::runnable);
  const auto e = last_event(store, id);
  CHECK(e.message == "complete");
  CHECK(e.actor == "w1");
  CHECK(e.detail == "broadcast delivery: done");
  CHECK(lease_one(store, "q", t0 + 1s, 5min, "w2"));
}

TEST_CASE("a done wakes the task that waits for it") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t first = add_task(store, "q");
  const int64_t second = add_after(store, "dep", {first});
  CHECK(store.find(second)->waiting);
  CHECK_FALSE(lease_one(store, "dep", t0));
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  const auto r =
      store.apply_outcomes({done(*leased, "1")}, std::nullopt, t0 + 1s);
  REQUIRE(r.outcomes[0].task);
  CHECK_FALSE(store.find(second)->waiting);
  const auto next = lease_one(store, "dep", t0 + 1s);
  REQUIRE(next);
  CHECK(next->id == second);
}

// It failed while apply_outcomes' begin did not lock the held rows:
// Db::begin_holding's statement (pg::with_tasks_locked) selected the row
// lock as a column its outer SELECT never read, and PostgreSQL (15)
// planned it away (EXPLAIN VERBOSE: "Output: NULL::bigint"), so the done
// waited at its UPDATE instead, whose snapshot predated the add's commit.
// The checked path (load_full, then the UPDATE) failed the same way.
TEST_CASE("a dependent added while a done waits for the task's row is "
          "woken by it"
          * doctest::skip(!on_postgresql())) {
  // `add --after X` holds X's row shared while it inserts its task_deps
  // row; a done of X waits for the row at its begin. Whether X has
  // dependents must be read after that wait (the guarded UPDATE, a later
  // statement): read in a snapshot taken before it, the dependent would
  // stay blocked for ever.
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t x = add_task(store, "q");
  const int64_t y = add_task(store, "dep");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  REQUIRE(leased->id == x);
  // The begin's statement, its ids written in, on a connection's first
  // turns; from its third on, prepared in the session with the ids as its
  // parameter (pg::prepare_tasks_locked): both must lock the rows.
  std::string begin = "BEGIN; SELECT";
  SUBCASE("the begin's statement as text") {}
  SUBCASE("the begin's statement prepared") {
    for (int i = 0; i < 3; ++i) {
      add_task(store, "warm");
      const auto w = lease_one(store, "warm", t0);
      REQUIRE(w);
      const auto r = store.apply_outcomes({done(*w, "")}, std::nullopt, t0);
      REQUIRE(r.outcomes[0].task);
    }
    begin = "BEGIN; EXECUTE taskq_begin_holding(";
  }

  PsqlSession adder(db);
  adder.run("BEGIN;");
  adder.run("SELECT 1 FROM tasks WHERE id = " + std::to_string(x)
            + " FOR SHARE;");
  adder.run("INSERT INTO task_deps (dep_id, task_id) VALUES ("
            + std::to_string(x) + ", " + std::to_string(y) + ");");
  adder.run("UPDATE tasks SET blockers = 1, after_ids = '[" + std::to_string(x)
            + "]' WHERE id = " + std::to_string(y) + ";");

  std::atomic<bool> applied{false};
  storage::BatchResult r;
  std::thread worker([&] {
    auto o = done(*leased, "1");
    r = store.apply_outcomes({o}, std::nullopt, t0 + 1s);
    applied = true;
  });
  const bool waited = PsqlSession::await([&] {
    return applied
           || db.value("SELECT count(*) FROM pg_stat_activity WHERE datname "
                       "= current_database() AND wait_event_type = 'Lock'")
                  != "0";
  });
  CHECK(waited);
  CHECK_FALSE(applied); // it waits for the adder's row lock
  // At its begin, which locks the row, not at a later statement.
  CHECK(db.value("SELECT string_agg(left(query, " + std::to_string(begin.size())
                 + "), ',') FROM pg_stat_activity WHERE datname = "
                   "current_database() AND wait_event_type = 'Lock'")
        == begin);
  adder.run("COMMIT;");
  worker.join();
  REQUIRE(r.outcomes.size() == 1);
  REQUIRE(r.outcomes[0].task);
  CHECK(r.outcomes[0].task->state == TaskState::completed);
  CHECK(db.value("SELECT blockers FROM tasks WHERE id = " + std::to_string(y))
        == "0");
  CHECK_FALSE(store.find(y)->waiting);
  const auto next = lease_one(store, "dep", t0 + 2s);
  REQUIRE(next);
  CHECK(next->id == y);
}

// An operator's kill in flight when a worker's error for the same task
// comes: the error waits for the kill at its begin (Db::begin_holding locks
// the outcomes' rows) and then finds the lease gone. Before the begin's
// lock was read (pg::with_tasks_locked), the row was not locked there and
// check_held, told the row was held, read it unlocked: the error's writes
// waited for the kill's commit at their UPDATE and then overwrote it (the
// task retried, sleeping, its kill lost).
TEST_CASE("an error outcome waits for a kill in flight and is then refused"
          * doctest::skip(!on_postgresql())) {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t x = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  REQUIRE(leased->id == x);

  // The kill, as the state writer writes it, not yet committed.
  PsqlSession killer(db);
  killer.run("BEGIN;");
  killer.run("UPDATE tasks SET state = 'killed', rev = rev + 1, lease_token = "
             "NULL, lease_worker = NULL, lease_expires = NULL, revoked_token "
             "= lease_token, revoked_reason = 'kill' WHERE id = "
             + std::to_string(x) + ";");

  std::atomic<bool> applied{false};
  storage::BatchResult r;
  std::thread worker([&] {
    r = store.apply_outcomes({failed(*leased, "boom")}, std::nullopt, t0 + 1s);
    applied = true;
  });
  const bool waited = PsqlSession::await([&] {
    return applied
           || db.value("SELECT count(*) FROM pg_stat_activity WHERE datname "
                       "= current_database() AND wait_event_type = 'Lock'")
                  != "0";
  });
  CHECK(waited);
  // At its begin, which locks the row, not at a later statement.
  CHECK(db.value("SELECT string_agg(left(query, 6), ',') FROM "
                 "pg_stat_activity WHERE datname = current_database() AND "
                 "wait_event_type = 'Lock'")
        == "BEGIN;");
  killer.run("COMMIT;");
  worker.join();
  REQUIRE(r.outcomes.size() == 1);
  CHECK_FALSE(r.outcomes[0].task);
  CHECK(contains(r.outcomes[0].lost, "lease lost"));
  CHECK(store.find(x)->state == TaskState::killed);
  CHECK(db.value("SELECT count(*) FROM task_errors WHERE task_id = "
                 + std::to_string(x))
        == "0");
}

// A worker's begin is prepared in its session from the third turn on
// (pg::prepare_tasks_locked); a session made again after a lost connection
// has it no more. It failed while the begin took its prepared statement
// for granted on the new session ("prepared statement ... does not
// exist"): `run` then failed every turn after a reconnect
// (tests/cli/pg_silence.sh).
TEST_CASE("a worker's prepared begin is prepared again after a reconnect"
          * doctest::skip(!on_postgresql())) {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 8; ++i) {
    add_task(store, "q");
  }
  auto held = lease_one(store, "q", t0);
  REQUIRE(held);
  const auto next = lease_request("q");
  const auto turn = [&] {
    const auto r = store.apply_outcomes({done(*held, "")}, next, t0 + 1s);
    REQUIRE(r.outcomes.size() == 1);
    REQUIRE(r.outcomes[0].task);
    REQUIRE(r.leased.size() == 1);
    held = r.leased[0];
  };
  for (int i = 0; i < 4; ++i) {
    turn();
  }
  // The store's session ends (a server restart, a proxy's cut).
  REQUIRE(db.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                  "WHERE datname = current_database() "
                  "AND pid <> pg_backend_pid()"));
  bool lost = false;
  try {
    turn();
  } catch (const ConnectionLost&) {
    lost = true; // the loss is seen; the next begin connects again
  }
  CHECK(lost);
  turn();
  turn();
}

// A begin that fails after its BEGIN ran (here the lock of a held row
// times out) ends its transaction: the next one on the same connection
// works. It failed before: the session stayed in the aborted transaction,
// and every later begin was refused ("current transaction is aborted").
TEST_CASE("a begin whose row lock times out leaves the connection usable"
          * doctest::skip(!on_postgresql())) {
  TempDb db;
  // The lock timeout is read when the store connects.
  ::setenv("TASKQ_BUSY_TIMEOUT_MS", "200", 1);
  TaskStore store(db.path(), OpenMode::write);
  ::unsetenv("TASKQ_BUSY_TIMEOUT_MS");
  for (int i = 0; i < 6; ++i) {
    add_task(store, "q");
  }
  auto held = lease_one(store, "q", t0);
  REQUIRE(held);
  const auto next = lease_request("q");
  // Some turns first: the later begins run the session's prepared one.
  int runs = 0;
  SUBCASE("the begin's statement as text") {
    runs = 0;
  }
  SUBCASE("the begin's statement prepared") {
    runs = 3;
  }
  for (int i = 0; i < runs; ++i) {
    const auto r = store.apply_outcomes({done(*held, "")}, next, t0 + 1s);
    REQUIRE(r.leased.size() == 1);
    held = r.leased[0];
  }
  PsqlSession holder(db);
  holder.run("BEGIN;");
  holder.run("SELECT 1 FROM tasks WHERE id = " + std::to_string(held->id)
             + " FOR UPDATE;");
  CHECK_THROWS(store.apply_outcomes({done(*held, "")}, next, t0 + 1s));
  holder.run("ROLLBACK;");
  const auto r = store.apply_outcomes({done(*held, "")}, next, t0 + 1s);
  REQUIRE(r.outcomes.size() == 1);
  CHECK(r.outcomes[0].task);
  CHECK(r.leased.size() == 1);
}
