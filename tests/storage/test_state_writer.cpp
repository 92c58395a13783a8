// The state writer (storage/state_writer.*): it refuses a move core's
// tables do not allow, writing nothing; a move it allows writes the row in
// one UPDATE and logs one event; a passing state is only logged.
#include "core/error.hpp"
#include "storage/model/state_writer.hpp"
#include "storage/pg/db.hpp"
#include "storage/seam/db.hpp"
#include "storage/sqlite/db.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;
using storage::detail::BulkMove;
using storage::detail::move_task;
using storage::detail::record_move;
using storage::detail::StateChange;

namespace {

// A connection of its own to the database a store made.
std::unique_ptr<storage::Db> open_db(const TempDb& db) {
  if (on_postgresql()) {
    return storage::connect_postgres(db.path());
  }
  return std::make_unique<storage::SqliteDb>(db.path(), false);
}

int64_t event_count(storage::Db& db) {
  storage::Statement st(db, "SELECT count(*) FROM events");
  st.step();
  return st.get_int(0);
}

} // namespace

TEST_CASE("the state writer refuses a move core's tables do not allow") {
  TempDb temp;
  int64_t killed = 0;
  int64_t runnable = 0;
  {
    TaskStore store(temp.path(), OpenMode::write);
    killed = add_task(store, "q");
    runnable = add_task(store, "q");
    send_one(store, killed, Message::kill, t0);
  }
  auto db = open_db(temp);
  const int64_t events = event_count(*db);
  {
    storage::Transaction tx(*db);
    // No message moves a finished task.
    const std::string refused = error_message([&] {
      move_task(*db, StateChange(killed, TaskState::killed, Message::run, "op"),
                t0);
    });
    CHECK(refused == "cannot run task 1: it is killed");
    CHECK(error_kind([&] {
            move_task(
                *db,
                StateChange(killed, TaskState::killed, Message::complete, "op"),
                t0);
          })
          == ErrorKind::conflict);
    // Nor may taskq's own moves go where their table does not: a runnable
    // task does not wake up, a paused one is not given up on.
    CHECK(error_message([&] {
            move_task(*db,
                      StateChange(runnable, TaskState::runnable,
                                  core::SystemMove::wake_up, "taskq"),
                      t0);
          })
          == "cannot run task 2: it is runnable");
    CHECK(error_kind([&] {
            record_move(
                *db,
                StateChange(runnable, TaskState::paused, Message::error, "w"),
                t0);
          })
          == ErrorKind::conflict);
    // A bulk move is refused before anything is prepared for it.
    CHECK(error_kind([&] {
            BulkMove(*db, {TaskState::runnable, TaskState::completed},
                     Message::pause, "");
          })
          == ErrorKind::conflict);
    tx.commit();
  }
  // Nothing was written.
  CHECK(event_count(*db) == events);
  TaskStore store(temp.path(), OpenMode::read);
  CHECK(store.find(killed)->state == TaskState::killed);
  const auto task = store.find(runnable);
  CHECK(task->state == TaskState::runnable);
  CHECK(task->rev == 1);
}

TEST_CASE("the state writer writes the row with its columns in one UPDATE "
          "and logs one event") {
  TempDb temp;
  int64_t id = 0;
  {
    TaskStore store(temp.path(), OpenMode::write);
    id = add_task(store, "q");
  }
  auto db = open_db(temp);
  const int64_t events = event_count(*db);
  {
    storage::Transaction tx(*db);
    StateChange pause(id, TaskState::runnable, Message::pause, "op",
                      "paused by op");
    pause.also.set("reason", std::string("paused by op"));
    CHECK(move_task(*db, pause, t0 + 1s) == TaskState::paused);
    // A passing state is logged, not stored.
    CHECK(record_move(*db,
                      StateChange(id, TaskState::paused, Message::sleep, "op"),
                      t0 + 2s)
          == TaskState::sleeping);
    tx.commit();
  }
  CHECK(event_count(*db) == events + 2);
  TaskStore store(temp.path(), OpenMode::read);
  const auto shown = store.show(id);
  CHECK(shown.task.state == TaskState::paused);
  CHECK(shown.task.reason == "paused by op");
  CHECK(shown.task.rev == 2);
  CHECK(shown.task.updated_at == t0 + 1s);
  REQUIRE(shown.events.size() >= 3);
  const auto& e = shown.events.at(shown.events.size() - 2);
  CHECK(e.message == "pause");
  CHECK(e.from == "runnable");
  CHECK(e.to == "paused");
  CHECK(e.actor == "op");
  CHECK(e.detail == "paused by op");
  CHECK(shown.events.back().to == "sleeping");
}
