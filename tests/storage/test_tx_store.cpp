// TaskStore::apply_tx (storage/features/tx_store.cpp, `taskq tx`): the order of
// the checks, all or nothing, and leased tasks.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

storage::TxUpdate update(int64_t id, int64_t rev,
                         std::optional<std::string> payload = std::nullopt) {
  storage::TxUpdate u;
  u.id = id;
  u.rev = rev;
  u.payload = std::move(payload);
  return u;
}

storage::TxDelete remove(int64_t id,
                         std::optional<std::string> lease = std::nullopt) {
  storage::TxDelete d;
  d.id = id;
  d.lease = std::move(lease);
  return d;
}

storage::TxComplete complete(int64_t id, std::string lease) {
  storage::TxComplete c;
  c.id = id;
  c.lease = std::move(lease);
  return c;
}

} // namespace

TEST_CASE("apply_tx: predicates, then existence, then revs and leases") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = add_task(store, "q");
  const int64_t b = add_task(store, "q");
  const auto before = dump(store);

  storage::TxRequest req;
  req.require.push_back({a, 9});        // wrong rev: conflict
  req.update.push_back(update(999, 1)); // missing: not_found
  CHECK(error_kind([&] { store.apply_tx(req, t0, "op"); })
        == ErrorKind::conflict);
  req.require.clear();
  CHECK(error_kind([&] { store.apply_tx(req, t0, "op"); })
        == ErrorKind::not_found);
  req.update = {update(a, 5)};
  CHECK(error_kind([&] { store.apply_tx(req, t0, "op"); })
        == ErrorKind::conflict);
  CHECK(contains(error_message([&] { store.apply_tx(req, t0, "op"); }),
                 "update[0]"));
  req.update = {update(a, 1)};
  req.remove = {remove(a)};
  CHECK(error_kind([&] { store.apply_tx(req, t0, "op"); }) == ErrorKind::usage);
  CHECK(dump(store) == before);

  // A late failure (the complete) undoes the update, delete and create.
  req = {};
  req.update = {update(a, 1, "[1]")};
  req.remove = {remove(b)};
  req.create.push_back(new_task("q"));
  req.complete = {complete(a + 100, "x")};
  CHECK(error_kind([&] { store.apply_tx(req, t0, "op"); })
        == ErrorKind::not_found);
  req.complete.clear();
  const int64_t leased = add_task(store, "l");
  REQUIRE(lease_one(store, "l", t0));
  req.complete = {complete(leased, "stale")};
  const auto before_late = dump(store);
  CHECK(error_kind([&] { store.apply_tx(req, t0, "op"); })
        == ErrorKind::conflict);
  CHECK(dump(store) == before_late);

  req.complete.clear();
  const auto res = store.apply_tx(req, t0, "op");
  REQUIRE(res.created.size() == 1);
  CHECK(res.updated == std::vector<std::pair<int64_t, int64_t>>{{a, 2}});
  CHECK(store.find(a)->payload == "[1]");
  CHECK_FALSE(store.find(b));
}

TEST_CASE("apply_tx: delete of a leased task needs its token") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto t = lease_one(store, "q", t0);
  REQUIRE(t);
  storage::TxRequest req;
  req.remove = {remove(id)};
  CHECK(error_kind([&] { store.apply_tx(req, t0, "op"); })
        == ErrorKind::conflict);
  req.remove = {remove(id, t->lease->token)};
  store.apply_tx(req, t0, "op");
  CHECK_FALSE(store.find(id));
}
