// Freeze and continue (TaskStore::freeze in
// storage/features/message_store.cpp, lease_frozen in
// storage/features/worker_store.cpp): an operator's freeze of a running task is
// an event under its lease, the state and the lease untouched; the worker's
// lease_frozen reads it; a new lease starts unfrozen; refusals are all or
// nothing.
#include "core/error.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

TEST_CASE("freeze and continue a running task: events, the lease kept") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0, 5min);
  REQUIRE(leased);
  const std::string token = *token_of(*leased);
  CHECK(store.lease_frozen(id, token, t0) == false);

  const auto frozen = store.freeze({id}, true, "op", t0 + 1s);
  REQUIRE(frozen.size() == 1);
  CHECK(frozen[0].frozen);
  CHECK(frozen[0].state == TaskState::runnable);
  CHECK(token_of(frozen[0]) == token);
  CHECK(store.lease_frozen(id, token, t0 + 1s) == true);
  const auto shown = store.show(id);
  CHECK(shown.task.frozen);
  CHECK(shown.events.back().message == "freeze");
  CHECK(shown.events.back().actor == "op");
  storage::Selector in_q;
  in_q.queue = "q";
  const auto listed = store.list(in_q, t0 + 1s);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].frozen);

  // Heartbeats go on; the freeze stays.
  store.heartbeat(id, token, std::nullopt, std::nullopt, t0 + 2s);
  CHECK(store.lease_frozen(id, token, t0 + 2s) == true);

  const auto continued = store.freeze({id}, false, "op", t0 + 3s);
  REQUIRE(continued.size() == 1);
  CHECK_FALSE(continued[0].frozen);
  CHECK(store.lease_frozen(id, token, t0 + 3s) == false);
  CHECK(store.show(id).events.back().message == "continue");
  CHECK_FALSE(store.show(id).task.frozen);

  // Not held: no answer, frozen or not.
  CHECK_FALSE(store.lease_frozen(id, "not-the-token", t0 + 3s));
  CHECK_FALSE(store.lease_frozen(id, token, t0 + 3s + 5min));
}

TEST_CASE("a new lease starts unfrozen") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto first = lease_one(store, "q", t0, 1min);
  REQUIRE(first);
  store.freeze({id}, true, "op", t0 + 1s);
  send_one(store, id, Message::release, t0 + 2s);
  CHECK_FALSE(store.lease_frozen(id, *token_of(*first), t0 + 2s));
  const auto second = lease_one(store, "q", t0 + 3s, 1min);
  REQUIRE(second);
  CHECK(store.lease_frozen(id, *token_of(*second), t0 + 3s) == false);
  CHECK_FALSE(store.show(id).task.frozen);
}

TEST_CASE("freeze and continue refuse, all or nothing") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t running = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0, 5min);
  REQUIRE(leased);
  const int64_t idle = add_task(store, "q");
  const auto before = store.show(running);

  CHECK(error_kind([&] {
          store.freeze({running, idle}, true, "op", t0);
        })
        == ErrorKind::conflict);
  CHECK(
      contains(error_message([&] { store.freeze({idle}, true, "op", t0); }),
               "is not running (it is runnable): only a running command can be "
               "frozen"));
  CHECK(error_kind([&] {
          store.freeze({running, 999}, true, "op", t0);
        })
        == ErrorKind::not_found);
  CHECK(
      contains(error_message([&] { store.freeze({running}, false, "op", t0); }),
               "is not frozen"));
  CHECK(error_kind([&] { store.freeze({}, true, "op", t0); })
        == ErrorKind::usage);
  const auto after = store.show(running);
  CHECK(after.events.size() == before.events.size());
  CHECK_FALSE(after.task.frozen);
  CHECK(after.task.rev == before.task.rev);

  store.freeze({running}, true, "op", t0);
  CHECK(
      contains(error_message([&] { store.freeze({running}, true, "op", t0); }),
               "is already frozen"));
  // A repeated id counts once.
  CHECK(store.freeze({running, running}, false, "op", t0).size() == 1);
}
