// Flows as storage runs them (storage/features/flow_store.cpp): an atom's task
// ending steps its flow in the same transaction, whatever ended it (done, fail,
// kill, a tx delete), and the requests suspend/resume/rerun. On a real
// database (SQLite, or PostgreSQL with TASKQ_TEST_BACKEND=postgresql).
#include "storage/task_store.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <map>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;
using nlohmann::json;

namespace {

// build -> test -> ship, in queue "ci"; test fails for good at its first
// error; ship has a revert.
const std::string k_linear = R"({"name": "ci", "pattern": "linear",
  "store": {"rev": "abc"},
  "atoms": [
    {"name": "build", "execute": {"queue": "ci"}, "requires": "rev",
     "provides": "bin", "revert": {"queue": "undo"}},
    {"name": "test", "execute": {"queue": "ci"}, "requires": "bin",
     "max_errors": 1},
    {"name": "ship", "execute": {"queue": "ci"}}]})";

json flow_of(const core::Task& t) {
  REQUIRE(t.flow);
  return json::parse(*t.flow);
}

std::map<std::string, std::string> atom_states(TaskStore& store, int64_t id) {
  std::map<std::string, std::string> out;
  for (const auto& a : store.flow(id).atoms) {
    out[a.name] = a.state;
  }
  return out;
}

// Leases the one task of `queue` and completes it with `result`.
core::Task lease_and_complete(TaskStore& store, const std::string& queue,
                              const std::string& result, Time now) {
  auto t = lease_one(store, queue, now);
  REQUIRE(t);
  store.complete(t->id, *token_of(*t), result, now);
  return *t;
}

} // namespace

TEST_CASE("a submitted flow creates its first atom's task, bound to its "
          "args, and each done steps it in the same transaction") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = store.submit_flow(k_linear, t0, k_operator);
  CHECK(store.find_flow(id)->state == "RUNNING");
  CHECK(store.list(by_queue("ci"), t0).size() == 1);

  const core::Task build = lease_and_complete(store, "ci", "\"b.tar\"", t0);
  CHECK(flow_of(build)
        == json{{"id", id},
                {"atom", "build"},
                {"action", "execute"},
                {"args", {{"rev", "abc"}}}});
  // The done created the next atom's task, with the result as its arg.
  auto test = lease_one(store, "ci", t0 + 1s);
  REQUIRE(test);
  CHECK(flow_of(*test)["args"] == json{{"bin", "b.tar"}});
  CHECK(json::parse(store.flow(id).store)
        == json{{"rev", "abc"}, {"bin", "b.tar"}});

  store.complete(test->id, *token_of(*test), std::nullopt, t0 + 2s);
  lease_and_complete(store, "ci", "1", t0 + 3s);
  CHECK(store.find_flow(id)->state == "SUCCESS");
  CHECK(atom_states(store, id)
        == std::map<std::string, std::string>{
            {"build", "SUCCESS"}, {"test", "SUCCESS"}, {"ship", "SUCCESS"}});
  // Nothing is left to lease once the flow is over.
  CHECK_FALSE(lease_one(store, "ci", t0 + 4s));
  // The event history starts with the flow PENDING and ends SUCCESS.
  const auto events = store.flow(id).events;
  REQUIRE(events.size() >= 2);
  CHECK(events.front().state == "PENDING");
  CHECK(events.back().name == "ci");
  CHECK(events.back().state == "SUCCESS");
}

TEST_CASE("a refused document creates nothing") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  CHECK(error_kind([&] {
          store.submit_flow(R"({"atoms": [{"name": "a"}]})", t0, k_operator);
        })
        == ErrorKind::usage);
  CHECK(error_kind([&] { store.submit_flow("{", t0, k_operator); })
        == ErrorKind::usage);
  CHECK(store.flows(std::nullopt).empty());
  CHECK(store.list(storage::Selector{}, t0).empty());
}

TEST_CASE("a task that fails for good fails its atom: the flow reverts "
          "what it did, through revert tasks, and ends REVERTED") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = store.submit_flow(k_linear, t0, k_operator);
  lease_and_complete(store, "ci", "\"b.tar\"", t0);
  auto test = lease_one(store, "ci", t0 + 1s);
  REQUIRE(test);
  store.fail(test->id, *token_of(*test), fail_request("tests failed"), t0 + 1s);
  CHECK(store.find(test->id)->state == TaskState::failed);

  // build's revert task carries its result and the failure.
  auto undo = lease_one(store, "undo", t0 + 2s);
  REQUIRE(undo);
  const json f = flow_of(*undo);
  CHECK(f["atom"] == "build");
  CHECK(f["action"] == "revert");
  CHECK(f["args"]["result"] == "b.tar");
  CHECK(f["args"]["failures"]["test"] == "tests failed");
  CHECK(store.find_flow(id)->state == "RUNNING");
  store.complete(undo->id, *token_of(*undo), std::nullopt, t0 + 3s);

  CHECK(store.find_flow(id)->state == "REVERTED");
  CHECK(atom_states(store, id)["build"] == "REVERTED");
  CHECK(atom_states(store, id)["test"] == "REVERTED");
  CHECK(atom_states(store, id)["ship"] == "PENDING");
  // What build provided left the store with it.
  CHECK(json::parse(store.flow(id).store) == json{{"rev", "abc"}});
}

TEST_CASE("a killed atom task fails its atom, and so does one a tx deletes") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = store.submit_flow(k_linear, t0, k_operator);
  const auto first = store.list(by_queue("ci"), t0);
  REQUIRE(first.size() == 1);
  send_one(store, first[0].id, Message::kill, t0 + 1s);
  // build failed before it did anything: reverting it is a revert task.
  CHECK(atom_states(store, a)["build"] == "REVERTING");
  auto undo = lease_one(store, "undo", t0 + 2s);
  REQUIRE(undo);
  CHECK(flow_of(*undo)["args"]["failures"]["build"]
        == "killed by " + k_operator);
  store.complete(undo->id, *token_of(*undo), std::nullopt, t0 + 3s);
  CHECK(store.find_flow(a)->state == "REVERTED");

  const int64_t b = store.submit_flow(k_linear, t0 + 4s, k_operator);
  auto second = lease_one(store, "ci", t0 + 4s);
  REQUIRE(second);
  CHECK(flow_of(*second)["id"] == b);
  storage::TxRequest tx;
  tx.remove.push_back({second->id, *token_of(*second)});
  store.apply_tx(tx, t0 + 5s, k_operator);
  CHECK(atom_states(store, b)["build"] == "REVERTING");
}

TEST_CASE("suspend withdraws the tasks not leased yet; the leased ones "
          "finish, then the flow is SUSPENDED; resume creates them again") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = store.submit_flow(
      R"({"name": "u", "pattern": "unordered", "atoms": [
        {"name": "a", "execute": {"queue": "u"}},
        {"name": "b", "execute": {"queue": "u"}},
        {"name": "c", "execute": {"queue": "u"}}]})",
      t0, k_operator);
  auto leased = lease_one(store, "u", t0);
  REQUIRE(leased);
  const auto reply =
      store.flow_request(id, storage::FlowRequest::suspend, t0 + 1s);
  CHECK_FALSE(reply.ignored);
  CHECK(reply.state == "SUSPENDING");
  // The two others are gone: nothing new is leased.
  CHECK(store.list(by_queue("u"), t0 + 1s).size() == 1);
  CHECK_FALSE(lease_one(store, "u", t0 + 2s));

  store.complete(leased->id, *token_of(*leased), std::nullopt, t0 + 3s);
  CHECK(store.find_flow(id)->state == "SUSPENDED");
  // Suspending it again is ignored, with a note; nothing changes.
  const auto again =
      store.flow_request(id, storage::FlowRequest::suspend, t0 + 4s);
  CHECK(again.ignored);
  CHECK(contains(again.note, "flow " + std::to_string(id)));
  // Resume makes the withdrawn tasks again.
  CHECK(store.flow_request(id, storage::FlowRequest::resume, t0 + 5s).state
        == "RUNNING");
  lease_and_complete(store, "u", "null", t0 + 6s);
  lease_and_complete(store, "u", "null", t0 + 7s);
  CHECK(store.find_flow(id)->state == "SUCCESS");
  // A refused request is a conflict that names the flow.
  const std::string why = error_message(
      [&] { store.flow_request(id, storage::FlowRequest::resume, t0 + 8s); });
  CHECK(contains(why, "flow " + std::to_string(id)));
  CHECK(error_kind([&] {
          store.flow_request(id + 1, storage::FlowRequest::resume, t0);
        })
        == ErrorKind::not_found);
}

TEST_CASE("a task of a finished or withdrawn atom no longer moves it") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = store.submit_flow(
      R"({"name": "u", "pattern": "unordered", "atoms": [
        {"name": "a", "execute": {"queue": "u"}},
        {"name": "b", "execute": {"queue": "u"}}]})",
      t0, k_operator);
  auto a = lease_one(store, "u", t0);
  REQUIRE(a);
  store.flow_request(id, storage::FlowRequest::suspend, t0 + 1s);
  store.complete(a->id, *token_of(*a), std::nullopt, t0 + 2s);
  CHECK(store.find_flow(id)->state == "SUSPENDED");
  // A new task for the withdrawn atom comes with resume; completing it
  // finishes the flow, and the history holds each change once.
  store.flow_request(id, storage::FlowRequest::resume, t0 + 3s);
  lease_and_complete(store, "u", "null", t0 + 4s);
  CHECK(store.find_flow(id)->state == "SUCCESS");
  const auto events = store.flow(id).events;
  int success = 0;
  for (const auto& e : events) {
    success += e.kind == "flow" && e.state == "SUCCESS" ? 1 : 0;
  }
  CHECK(success == 1);
}

TEST_CASE("flow_counts names every state; events streams flow changes") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::EventCursor start = store.events_end();
  const int64_t id = store.submit_flow(k_linear, t0, k_operator);
  const auto counts = store.flow_counts();
  REQUIRE(counts.size() == 8);
  CHECK(counts[0] == std::pair<std::string, int64_t>{"PENDING", 0});
  CHECK(counts[1] == std::pair<std::string, int64_t>{"RUNNING", 1});

  auto stream = store.events(std::nullopt, std::nullopt, start, 100);
  std::vector<std::string> flow_states;
  for (const auto& e : stream) {
    if (e.flow == id) {
      flow_states.push_back(e.event.to);
    }
  }
  CHECK(flow_states == std::vector<std::string>{"PENDING", "RUNNING"});
  // The cursor moved past them: the next read has none of them again.
  for (const auto& e : store.events(std::nullopt, std::nullopt, start, 100)) {
    CHECK(e.flow == 0);
  }
  // A queue's stream has no flow events.
  storage::EventCursor from_start;
  for (const auto& e :
       store.events(std::string("ci"), std::nullopt, from_start, 100)) {
    CHECK(e.flow == 0);
  }
}
