// What an operator reads of tasks (storage/features/read_store.cpp): find,
// show with its events and actors, why a task is not leased, and list with
// its filters (reading partial indexes, no finished task).
#include "core/error.hpp"
#include "storage/features/select.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>
#include <sqlite3.h>

#include <chrono>
#include <string>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

TEST_CASE("find of a missing task is empty and show of it is not_found") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q");
  CHECK_FALSE(store.find(4242));
  CHECK(error_kind([&] { store.show(4242); }) == ErrorKind::not_found);
}

TEST_CASE("show returns the task's events in order with from, to and "
          "actor") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  REQUIRE(lease_one(store, "q", t0 + 1s, 5min, "w1"));
  store.send(by_ids({id}), Message::pause, std::nullopt, "alice@host", t0 + 2s);
  store.send(by_ids({id}), Message::run, std::nullopt, "bob@host", t0 + 3s);
  store.send(by_ids({id}), Message::kill, std::nullopt, "carol@host", t0 + 4s);
  // A refused message records nothing.
  CHECK_THROWS(store.send(by_ids({id}), Message::run, std::nullopt, "dave@host",
                          t0 + 5s));

  const auto detail = store.show(id);
  CHECK(detail.task.id == id);
  CHECK(detail.task.state == TaskState::killed);
  const auto& events = detail.events;
  REQUIRE(events.size() >= 4);
  for (std::size_t i = 1; i < events.size(); ++i) {
    CHECK(events[i - 1].id < events[i].id);
    CHECK(events[i - 1].time <= events[i].time);
  }
  for (const auto& e : events) {
    CHECK(e.task_id == id);
    CHECK(e.actor != "dave@host");
  }

  // The operator messages, in order, exactly.
  std::vector<core::Event> operator_events;
  bool saw_lease_by_worker = false;
  for (const auto& e : events) {
    if (e.message == "pause" || e.message == "run" || e.message == "kill") {
      operator_events.push_back(e);
    }
    if (e.message == "lease" && e.actor == "w1") {
      saw_lease_by_worker = true;
    }
  }
  CHECK(saw_lease_by_worker);
  REQUIRE(operator_events.size() == 3);
  CHECK(operator_events[0].message == "pause");
  CHECK(operator_events[0].from == "runnable");
  CHECK(operator_events[0].to == "paused");
  CHECK(operator_events[0].actor == "alice@host");
  CHECK(operator_events[0].time == t0 + 2s);
  CHECK(operator_events[1].message == "run");
  CHECK(operator_events[1].from == "paused");
  CHECK(operator_events[1].to == "runnable");
  CHECK(operator_events[1].actor == "bob@host");
  CHECK(operator_events[2].message == "kill");
  CHECK(operator_events[2].from == "runnable");
  CHECK(operator_events[2].to == "killed");
  CHECK(operator_events[2].actor == "carol@host");
  CHECK(operator_events[2].time == t0 + 4s);
}

TEST_CASE("show records the worker as the actor of complete") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0, 5min, "host-a:123");
  REQUIRE(leased);
  store.complete(id, *token_of(*leased), std::nullopt, t0 + 1s);
  const auto detail = store.show(id);
  int completes = 0;
  for (const auto& e : detail.events) {
    if (e.message == "complete") {
      ++completes;
      CHECK(e.from == "runnable");
      CHECK(e.to == "completed");
      CHECK(e.actor == "host-a:123");
      CHECK(e.time == t0 + 1s);
    }
  }
  CHECK(completes == 1);
}

TEST_CASE("why is empty for an eligible task and names each reason "
          "otherwise") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t ready = add_task(store, "q");
  CHECK(store.why(ready, t0, "w").empty());

  storage::NewTask later = new_task("q");
  later.run_at = t0 + 1h;
  const int64_t delayed = store.add(later, t0, k_operator);
  const auto delayed_why = store.why(delayed, t0, "w");
  REQUIRE(delayed_why.size() == 1);
  CHECK(contains(delayed_why[0], core::format_time(t0 + 1h)));
  CHECK(store.why(delayed, t0 + 1h, "w").empty());

  const auto leased = lease_one(store, "q", t0, 5min, "host-b:9");
  REQUIRE(leased);
  REQUIRE(leased->id == ready);
  const auto leased_why = store.why(ready, t0, "w");
  REQUIRE(leased_why.size() == 1);
  CHECK(contains(leased_why[0], "host-b:9"));

  send_one(store, delayed, Message::pause, t0);
  const auto paused_why = store.why(delayed, t0 + 2h, "w");
  REQUIRE(paused_why.size() == 1);
  CHECK(contains(paused_why[0], "paused"));

  CHECK(error_kind([&] { store.why(4242, t0, "w"); }) == ErrorKind::not_found);
}

TEST_CASE("list filters by queue, state, running, ready, labels and limit") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const Time now = t0 + 1h;
  storage::NewTask image = new_task("q");
  image.labels = {{"kind", "image"}};
  const int64_t running = store.add(image, t0, k_operator);
  REQUIRE(lease_one(store, "q", t0, 90min)); // live at `now`
  const int64_t ready_a = store.add(image, t0, k_operator);
  const int64_t ready_b = add_task(store, "q");
  storage::NewTask later = new_task("q");
  later.run_at = now + 1h;
  const int64_t delayed = store.add(later, t0, k_operator);
  const int64_t paused = add_task(store, "q");
  send_one(store, paused, Message::pause, t0);
  const int64_t killed = add_task(store, "q");
  send_one(store, killed, Message::kill, t0);
  const int64_t other = add_task(store, "other");

  CHECK(sorted(ids_of(store.list(by_queue("q"), now)))
        == std::vector<int64_t>{running, ready_a, ready_b, delayed, paused,
                                killed});
  CHECK(sorted(ids_of(store.list(storage::Selector{}, now)))
        == std::vector<int64_t>{running, ready_a, ready_b, delayed, paused,
                                killed, other});
  CHECK(sorted(ids_of(store.list(by_state("runnable"), now)))
        == std::vector<int64_t>{running, ready_a, ready_b, delayed, other});
  CHECK(ids_of(store.list(by_state("paused"), now))
        == std::vector<int64_t>{paused});
  CHECK(ids_of(store.list(by_state("killed"), now))
        == std::vector<int64_t>{killed});
  CHECK(ids_of(store.list(by_state("running"), now))
        == std::vector<int64_t>{running});
  CHECK(sorted(ids_of(store.list(by_state("ready"), now)))
        == std::vector<int64_t>{ready_a, ready_b, other});

  storage::Selector ready_in_q = by_queue("q");
  ready_in_q.states = {"ready"};
  CHECK(sorted(ids_of(store.list(ready_in_q, now)))
        == std::vector<int64_t>{ready_a, ready_b});

  // After the lease expires (and before `delayed` is due) the running task
  // is ready again.
  CHECK(sorted(ids_of(store.list(ready_in_q, t0 + 90min)))
        == std::vector<int64_t>{running, ready_a, ready_b});
  CHECK(store.list(by_state("running"), t0 + 90min).empty());

  storage::Selector images;
  images.match = {core::LabelPattern{"kind", "image"}};
  CHECK(sorted(ids_of(store.list(images, now)))
        == std::vector<int64_t>{running, ready_a});

  storage::Selector limited = by_queue("q");
  limited.limit = 2;
  CHECK(store.list(limited, now).size() == 2);
}

TEST_CASE("list --state ready|runnable reads partial indexes, no scan of "
          "tasks"
          * sqlite_only()) {
  TempDb db;
  {
    TaskStore store(db.path(), OpenMode::write);
    add_task(store, "q");
  }
  sqlite3* raw = nullptr;
  REQUIRE(
      sqlite3_open_v2(db.path().c_str(), &raw, SQLITE_OPEN_READONLY, nullptr)
      == SQLITE_OK);
  for (const bool queue : {false, true}) {
    for (const char* state : {"ready", "runnable", "running"}) {
      storage::Selector sel;
      if (queue) {
        sel.queue = "q";
      }
      for (const auto& part : storage::detail::select_sqls(sel, state, true)) {
        sqlite3_stmt* st = nullptr;
        REQUIRE(sqlite3_prepare_v2(raw,
                                   ("EXPLAIN QUERY PLAN " + part.sql).c_str(),
                                   -1, &st, nullptr)
                == SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
          const std::string detail =
              reinterpret_cast<const char*>(sqlite3_column_text(st, 3));
          CHECK_MESSAGE(detail != "SCAN tasks", state << ": " << part.sql);
          if (detail.rfind("SCAN tasks", 0) == 0
              || detail.rfind("SEARCH tasks", 0) == 0) {
            CHECK_MESSAGE(detail.find("INDEX tasks_") != std::string::npos,
                          state << ": " << detail);
          }
        }
        sqlite3_finalize(st);
      }
    }
  }
  sqlite3_close(raw);
}
