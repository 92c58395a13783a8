// apply_tx (taskq tx) and export/import in storage, on real SQLite files:
// the order of the checks, all or nothing, and the byte-exact round trip.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

// Every task of the store as export lines (columns and rows beside them,
// flattened to text), to compare two databases or one before and after.
std::vector<std::string> dump(TaskStore& store) {
  std::vector<std::string> lines;
  store.export_tasks(std::nullopt, [&](const storage::TaskImage& image) {
    std::string line;
    const auto add_row = [&](const storage::ImageRow& row) {
      for (const auto& [name, value] : row) {
        line += name + "=" + value + ";";
      }
      line += "|";
    };
    add_row(image.task);
    for (const auto* rows :
         {&image.errors, &image.events, &image.deps, &image.deliveries}) {
      for (const auto& row : *rows) {
        add_row(row);
      }
      line += "#";
    }
    lines.push_back(line);
  });
  return lines;
}

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

TEST_CASE("export then import into an empty database gives the same rows") {
  TempDb src_db;
  TaskStore src(src_db.path(), OpenMode::write);
  storage::NewTask t = new_task("q");
  t.payload = R"({"n":1.000000000000000000001,"s":"\u00e9"})";
  t.labels = {{"k", "v \"q\""}};
  const int64_t first = src.add(t, t0, "me");
  storage::NewTask w = new_task("w");
  w.after = {first};
  const int64_t waiter = src.add(w, t0, "me");
  const auto leased = lease_one(src, "q", t0);
  REQUIRE(leased);
  src.fail(first, leased->lease->token, fail_request("boom"), t0 + 1s);
  const auto exported = dump(src);
  REQUIRE(exported.size() == 2);

  std::vector<storage::TaskImage> images;
  src.export_tasks(std::nullopt, [&](const storage::TaskImage& image) {
    images.push_back(image);
  });
  TempDb dst_db;
  TaskStore dst(dst_db.path(), OpenMode::write);
  size_t next = 0;
  CHECK(dst.import_tasks([&](storage::TaskImage& out) {
    if (next == images.size()) {
      return false;
    }
    out = images[next++];
    return true;
  }) == 2);
  CHECK(dump(dst) == exported);
  CHECK(dst.check().ok);
  CHECK(dst.find(waiter)->waiting);

  // Again: every id is taken now, and nothing is added.
  next = 0;
  CHECK(error_kind([&] {
          dst.import_tasks([&](storage::TaskImage& out) {
            if (next == images.size()) {
              return false;
            }
            out = images[next++];
            return true;
          });
        })
        == ErrorKind::conflict);
  CHECK(dump(dst) == exported);
}
