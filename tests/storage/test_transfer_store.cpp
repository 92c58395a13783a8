// export and import of tasks (storage/features/transfer_store.cpp): the
// byte-exact round trip, and import refusing what add and tx could not have
// written and what db check flags, naming the line of the offending task and
// importing nothing. Flows: test_transfer_store_flows.cpp.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

// A task's image as an export line holds it, read from line `line`.
storage::TaskImage image(int64_t id, int64_t line,
                         const std::string& state = "runnable") {
  storage::TaskImage im;
  im.line = line;
  im.task = {{"id", std::to_string(id)},
             {"queue", "\"q\""},
             {"state", "\"" + state + "\""},
             {"payload", "1"},
             {"run_at", "1"},
             {"created_at", "1"},
             {"updated_at", "1"}};
  return im;
}

void set(storage::TaskImage& im, const std::string& column,
         const std::string& value) {
  for (auto& [name, v] : im.task) {
    if (name == column) {
      v = value;
      return;
    }
  }
  im.task.emplace_back(column, value);
}

// Imports `images`; the error message, empty when it succeeded. Every
// refusal here is a usage error.
std::string import_all(TaskStore& store,
                       const std::vector<storage::TaskImage>& images) {
  try {
    size_t next = 0;
    store.import_tasks([&](storage::TaskImage& out) {
      if (next == images.size()) {
        return false;
      }
      out = images[next++];
      return true;
    });
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::usage);
    return e.what();
  }
  return {};
}

int64_t task_count(TaskStore& store) {
  int64_t n = 0;
  store.export_tasks(std::nullopt, [&](const storage::TaskImage&) { ++n; });
  return n;
}

} // namespace

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

TEST_CASE("import refuses a time outside years 0000-9999 in any column") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (const char* ms : {"-9223372036854775808", "9223372036854775807",
                         "-62167219200001", "253402300800000"}) {
    for (const char* column : {"run_at", "created_at", "updated_at"}) {
      CAPTURE(ms);
      CAPTURE(column);
      auto bad = image(2, 9);
      set(bad, column, ms);
      const auto message = import_all(store, {image(1, 7), bad});
      CHECK(contains(message, std::string("line 9: '") + column
                                  + "' must be a time within years "
                                    "0000-9999"));
      CHECK(task_count(store) == 0);
    }
    auto bad = image(2, 9);
    bad.events.push_back({{"time", ms}, {"message", "\"lease\""}});
    CHECK(contains(import_all(store, {bad}),
                   "line 9: events: 'time' must be a time"));
    CHECK(task_count(store) == 0);
  }
  // The edges are in range.
  auto edges = image(1, 1);
  set(edges, "run_at", "-62167219200000");
  set(edges, "updated_at", "253402300799999");
  CHECK(import_all(store, {edges}).empty());
  CHECK(core::format_time(store.find(1)->run_at) == "0000-01-01T00:00:00Z");
  CHECK(core::format_time(store.find(1)->updated_at)
        == "9999-12-31T23:59:59.999Z");
}

TEST_CASE("import refuses what db check flags, naming the first offender") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  CHECK(contains(import_all(store, {image(1, 1), image(2, 4, "fault")}),
                 "line 4: task 2: its state is fault"));
  auto leased = image(2, 5, "completed");
  set(leased, "lease_token", "\"t\"");
  set(leased, "lease_worker", "\"w\"");
  set(leased, "lease_expires", "5");
  CHECK(contains(import_all(store, {image(1, 1), leased}),
                 "line 5: task 2: it holds a lease but is not runnable"));
  // Task 1 waits for task 3, which a later line says is completed: the
  // count is off, found only once every row is in, and named by task 1's
  // line although task 3 was read last.
  auto waiter = image(1, 2);
  set(waiter, "blockers", "1");
  set(waiter, "after_ids", "[3]");
  waiter.deps.push_back({{"dep_id", "3"}});
  auto other = image(2, 3, "fault");
  CHECK(contains(import_all(store, {waiter, other, image(3, 8, "completed")}),
                 "line 2: task 1: its 'blockers' is not the number of its "
                 "unfinished dependencies"));
  CHECK(task_count(store) == 0);
  // With the dependency unfinished the same rows are consistent.
  CHECK(import_all(store, {waiter, image(3, 8)}).empty());
  CHECK(task_count(store) == 2);
  CHECK(store.check().ok);
}

TEST_CASE("import takes only values add and tx write") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"queue", "\"a b\""},      {"labels", R"({"a b":"c"})"},
      {"attempts", "-1"},        {"max_attempts", "0"},
      {"blockers", "-1"},        {"max_errors", "0"},
      {"backoff", "\"linear\""}, {"retry_delay_ms", "-1"},
      {"checkpoint_req", "2"},   {"root", R"({"k":"\u0001"})"},
      {"lease_token", "\"t\""},
  };
  for (const auto& [column, value] : cases) {
    const auto& name = column; // clang 14 cannot CAPTURE a binding
    CAPTURE(name);
    auto bad = image(1, 3);
    set(bad, column, value);
    const auto message = import_all(store, {bad});
    CHECK(contains(message, "line 3: '" + column + "'"));
    CHECK(task_count(store) == 0);
  }
}
