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
#include <map>
#include <optional>
#include <string>
#include <utility>
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

TEST_CASE("leases_frozen answers as lease_frozen does, for many at once") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t plain = add_task(store, "q");
  const int64_t cold = add_task(store, "q");
  const int64_t gone = add_task(store, "q");
  const int64_t brief = add_task(store, "r");
  storage::NewTask b = new_task("b");
  b.broadcast_ttl = 1h;
  const int64_t bcast = store.add(b, t0, k_operator);
  std::map<int64_t, std::string> token;
  for (int i = 0; i < 3; ++i) {
    const auto t = lease_one(store, "q", t0, 5min);
    REQUIRE(t);
    token[t->id] = *token_of(*t);
  }
  const auto short_lease = lease_one(store, "r", t0, 1s);
  REQUIRE(short_lease);
  token[brief] = *token_of(*short_lease);
  const auto delivery = lease_one(store, "b", t0, 5min, "w1");
  REQUIRE(delivery);
  token[bcast] = *token_of(*delivery);
  store.freeze({cold}, true, "op", t0);
  send_one(store, gone, Message::kill, t0);

  const Time now = t0 + 2s; // the short lease has run out
  const std::vector<std::pair<int64_t, std::string>> asked = {
      {plain, token[plain]}, {cold, token[cold]},   {gone, token[gone]},
      {brief, token[brief]}, {bcast, token[bcast]}, {plain, "not-the-token"},
      {cold, token[cold]},   {999, "no-such-task"}};
  const auto got = store.leases_frozen(asked, now);
  REQUIRE(got.size() == asked.size());
  for (size_t i = 0; i < asked.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == store.lease_frozen(asked[i].first, asked[i].second, now));
  }
  // What lease_frozen says, spelled out: held and not frozen, held and
  // frozen, killed, expired, a broadcast's delivery (never frozen), a
  // wrong token, the same lease asked twice, no such task.
  CHECK(got
        == std::vector<std::optional<bool>>{false, true, std::nullopt,
                                            std::nullopt, false, std::nullopt,
                                            true, std::nullopt});
  CHECK(store.leases_frozen({}, now).empty());
  // More than one statement's worth (100 a statement), in order.
  std::vector<std::pair<int64_t, std::string>> many;
  std::vector<std::optional<bool>> expected;
  for (int round = 0; round < 20; ++round) {
    many.insert(many.end(), asked.begin(), asked.end());
    expected.insert(expected.end(), got.begin(), got.end());
  }
  CHECK(store.leases_frozen(many, now) == expected);
}
