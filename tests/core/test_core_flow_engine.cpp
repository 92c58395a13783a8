// advance(): the model, the cycle that creates tasks, reverting, and the
// event history.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flow_engine_helpers.hpp"

using namespace taskq::test::flow_engine_helpers;

TEST_CASE("flow engine: the model's nearest retry and controlled nodes") {
  ModelBuilder b;
  const int pre = b.atom(0, "pre");
  const int top = b.retry(0, "top", times(2));
  const int m = b.subflow(0, "m");
  const int mr = b.retry(m, "mr", always_revert());
  const int i = b.subflow(m, "i");
  const int x = b.atom(i, "x");
  const int plain = b.subflow(i, "plain"); // no controller of its own
  const int y = b.atom(plain, "y");
  const FlowModel model = b.build();
  CHECK(model.nearest_retry(pre) == top);
  CHECK(model.nearest_retry(top) == -1);
  CHECK(model.nearest_retry(mr) == top);
  CHECK(model.nearest_retry(x) == mr);
  CHECK(model.nearest_retry(y) == mr);
  CHECK(model.controlled(top) == std::vector<int>{pre, mr, x, y});
  CHECK(model.controlled(mr) == std::vector<int>{x, y});
  CHECK(model.controlled(x).empty());
}

TEST_CASE("flow engine: a linear flow creates one task at a time with args "
          "bound from the store, and the store holds each provides") {
  const FlowModel model = linear_abc();
  Sim sim(model);
  sim.start();
  CHECK(sim.last.verdict == Verdict::allowed);
  CHECK(sim.created() == Lines{"a:execute"});
  CHECK(sim.task("a").args == json{{"v", "1.4.2"}});
  CHECK(sim.rt.state == FlowState::running);

  sim.ok("a", 5);
  CHECK(sim.rt.store == json{{"v", "1.4.2"}, {"x", 5}});
  CHECK(sim.created() == Lines{"b:execute"});
  CHECK(sim.task("b").args == json{{"x", 5}});
  CHECK(sim.last.touched == std::vector<int>{0, 1});
  CHECK(sim.last.flow_changed); // the store changed

  sim.ok("b", json{{"k", "w"}});
  CHECK(sim.created() == Lines{"c:execute"});
  CHECK(sim.task("c").args == json{{"y", {{"k", "w"}}}, {"v", "1.4.2"}});

  sim.ok("c");
  CHECK(sim.created().empty());
  CHECK(sim.rt.state == FlowState::success);
  CHECK(sim.rt.store == json{{"v", "1.4.2"}, {"x", 5}, {"y", {{"k", "w"}}}});
  CHECK(sim.log
        == Lines{"f.f RUNNING", "a.t RUNNING", "a.t SUCCESS(5)", "b.t RUNNING",
                 "b.t SUCCESS({\"k\":\"w\"})", "c.t RUNNING",
                 "c.t SUCCESS(null)", "f.f SUCCESS"});
}

TEST_CASE("flow engine: a failure with no controller reverts the whole flow "
          "in reverse order, each revert with its result and the failures") {
  const FlowModel model = linear_abc();
  Sim sim(model);
  sim.start();
  sim.ok("a", 5);
  sim.ok("b", 6);
  sim.fail("c", "boom");
  for (const char* n : {"a", "b", "c"}) {
    CHECK(sim.atom(n).intention == Intention::revert);
  }
  // c itself is reverted first (FAILURE -> REVERTING), with no result.
  CHECK(sim.created() == Lines{"c:revert"});
  CHECK(sim.task("c").args
        == json{{"y", 6},
                {"v", "1.4.2"},
                {"result", nullptr},
                {"failures", {{"c", "boom"}}}});
  sim.ok("c");
  CHECK(sim.created() == Lines{"b:revert"});
  CHECK(sim.task("b").args
        == json{{"x", 5}, {"result", 6}, {"failures", {{"c", "boom"}}}});
  sim.ok("b");
  CHECK(sim.rt.store == json{{"v", "1.4.2"}, {"x", 5}});
  CHECK(sim.created() == Lines{"a:revert"});
  CHECK(sim.task("a").args
        == json{{"v", "1.4.2"}, {"result", 5}, {"failures", {{"c", "boom"}}}});
  sim.ok("a");
  CHECK(sim.rt.state == FlowState::reverted);
  CHECK(sim.rt.store == json{{"v", "1.4.2"}}); // only what was injected
  CHECK(sim.log
        == Lines{"f.f RUNNING", "a.t RUNNING", "a.t SUCCESS(5)", "b.t RUNNING",
                 "b.t SUCCESS(6)", "c.t RUNNING", "c.t FAILURE(\"boom\")",
                 "c.t REVERTING", "c.t REVERTED(null)", "b.t REVERTING",
                 "b.t REVERTED(null)", "a.t REVERTING", "a.t REVERTED(null)",
                 "f.f REVERTED"});
}

TEST_CASE("flow engine: an atom without revert reverts at once") {
  const FlowModel model = linear_abc(false);
  Sim sim(model);
  sim.start();
  sim.ok("a", 5);
  sim.fail("b", "boom");
  CHECK(sim.created().empty());
  CHECK(sim.changes()
        == Lines{"b.t FAILURE(\"boom\")", "b.t REVERTING", "b.t REVERTED(null)",
                 "a.t REVERTING", "a.t REVERTED(null)", "f.f REVERTED"});
  CHECK(sim.atom("c").state == AtomState::pending);
}

TEST_CASE("flow engine: a failed revert ends the flow FAILURE and schedules "
          "nothing more") {
  const FlowModel model = linear_abc();
  Sim sim(model);
  sim.start();
  sim.ok("a", 5);
  sim.fail("b", "boom");
  CHECK(sim.created() == Lines{"b:revert"});
  sim.fail("b", "gotcha");
  CHECK(sim.created().empty());
  CHECK(sim.atom("b").state == AtomState::revert_failure);
  CHECK(sim.atom("b").failure == "gotcha");
  CHECK(sim.atom("a").state == AtomState::success); // never reverted
  CHECK(sim.rt.failed);
  CHECK(sim.rt.state == FlowState::failure);
  CHECK(sim.changes()
        == Lines{"b.t REVERT_FAILURE(\"gotcha\")", "f.f FAILURE"});
}

TEST_CASE("flow engine: an unordered flow creates all its tasks at once, "
          "higher priority first") {
  ModelBuilder b(Pattern::unordered);
  b.atom(0, "a");
  b.atom(0, "b", {std::nullopt, {}, true, 5});
  b.atom(0, "c");
  const FlowModel model = b.build();
  Sim sim(model);
  sim.start();
  CHECK(sim.created() == Lines{"b:execute", "a:execute", "c:execute"});
  sim.ok("c");
  sim.ok("a");
  CHECK(sim.rt.state == FlowState::running);
  sim.ok("b");
  CHECK(sim.rt.state == FlowState::success);
}

TEST_CASE("flow engine: the event history of a retried flow, in order") {
  // f (linear) with controller r (times 2, provides n): a, then b.
  ModelBuilder bld;
  const int r = bld.retry(0, "r", times(2), "n");
  const int a = bld.atom(0, "a", {std::nullopt, {"n"}, false, 0});
  const int b = bld.atom(0, "b");
  bld.chain({r, a, b});
  const FlowModel model = bld.build();
  Sim sim(model);
  sim.start();
  sim.ok("a", 5);
  sim.fail("b", "boom");
  sim.ok("b"); // b's revert
  CHECK(sim.atom("r").history.size() == 2);
  sim.ok("a", 6);
  sim.fail("b", "boom again");
  CHECK(sim.atom("r").history.size() == 2);
  CHECK(sim.atom("r").history[1].failures
        == std::map<std::string, std::string>{{"b", "boom again"}});
  sim.ok("b");
  CHECK(sim.rt.state == FlowState::reverted);
  CHECK(sim.atom("r").history.empty());
  CHECK(sim.rt.store == json::object());
  CHECK(sim.log
        == Lines{
            "f.f RUNNING",           "r.r RUNNING",
            "r.r SUCCESS(1)",        "a.t RUNNING",
            "a.t SUCCESS(5)",        "b.t RUNNING",
            "b.t FAILURE(\"boom\")", "b.t REVERTING",
            "b.t REVERTED(null)",    "a.t REVERTING",
            "a.t REVERTED(null)",    "r.r RETRYING",
            "a.t PENDING",           "b.t PENDING",
            "r.r RUNNING",           "r.r SUCCESS(2)",
            "a.t RUNNING",           "a.t SUCCESS(6)",
            "b.t RUNNING",           "b.t FAILURE(\"boom again\")",
            "b.t REVERTING",         "b.t REVERTED(null)",
            "a.t REVERTING",         "a.t REVERTED(null)",
            "r.r REVERTING",         "r.r REVERTED(null)",
            "f.f REVERTED",
        });
}

TEST_CASE("flow engine: a flow with no atoms succeeds at once") {
  ModelBuilder b;
  const FlowModel model = b.build();
  Sim sim(model);
  sim.start();
  CHECK(sim.log == Lines{"f.f RUNNING", "f.f SUCCESS"});
}
