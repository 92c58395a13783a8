// advance(): retry controllers (times, for_each, for_each_from, always
// revert) and how nested controllers decide.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flow_engine_helpers.hpp"

using namespace taskq::test::flow_engine_helpers;

TEST_CASE("flow engine: times 3 executes its subflow 3 times, then REVERT "
          "with a history of 3 failures") {
  const FlowModel model = pre_then_retried(times(3));
  Sim sim(model);
  sim.start();
  sim.ok("pre", "P");
  for (int attempt = 1; attempt <= 3; ++attempt) {
    CAPTURE(attempt);
    CHECK(sim.created() == Lines{"x:execute"});
    CHECK(sim.task("x").args == json{{"n", attempt}});
    CHECK(sim.rt.store.at("n") == attempt);
    sim.fail("x", "fail " + std::to_string(attempt));
    CHECK(sim.created() == Lines{"x:revert"});
    if (attempt < 3) {
      CHECK(sim.atom("r").intention == Intention::retry);
      sim.ok("x");
    }
  }
  // Given up: REVERT, and with no parent controller only s reverts.
  CHECK(sim.atom("r").intention == Intention::revert);
  const auto& h = sim.atom("r").history;
  REQUIRE(h.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(h[i].value == static_cast<int>(i) + 1);
    CHECK(h[i].failures
          == std::map<std::string, std::string>{
              {"x", "fail " + std::to_string(i + 1)}});
  }
  sim.ok("x");
  CHECK(sim.atom("r").state == AtomState::reverted);
  CHECK(sim.atom("r").history.empty()); // REVERTED clears it
  CHECK(sim.atom("pre").state == AtomState::success);
  CHECK(sim.rt.state == FlowState::reverted);
  CHECK(sim.rt.store == json{{"p", "P"}});
}

TEST_CASE("flow engine: times 0 and times 1 run the subflow once, with no "
          "retry (TaskFlow's Times(0))") {
  for (const int n : {0, 1}) {
    CAPTURE(n);
    const FlowModel model = pre_then_retried(times(n));
    Sim sim(model);
    sim.start();
    sim.ok("pre", "P");
    CHECK(sim.created() == Lines{"x:execute"});
    sim.fail("x", "fail");
    CHECK(sim.created() == Lines{"x:revert"});
    CHECK(sim.atom("r").intention == Intention::revert);
    sim.ok("x");
    CHECK(sim.atom("r").state == AtomState::reverted);
    CHECK(sim.rt.state == FlowState::reverted);
  }
}

TEST_CASE("flow engine: for_each hands the next value and stops at the first "
          "success") {
  const FlowModel model = pre_then_retried(for_each({"a", "b", "c"}));
  Sim sim(model);
  sim.start();
  sim.ok("pre");
  CHECK(sim.task("x").args == json{{"n", "a"}});
  sim.fail("x", "no a");
  sim.ok("x"); // its revert
  CHECK(sim.task("x").args == json{{"n", "b"}});
  sim.ok("x", 1);
  CHECK(sim.rt.state == FlowState::success);
  const auto& h = sim.atom("r").history;
  REQUIRE(h.size() == 2);
  CHECK(h[0].value == "a");
  CHECK(h[0].failures == std::map<std::string, std::string>{{"x", "no a"}});
  CHECK(h[1].value == "b");
  CHECK(h[1].failures.empty());
  CHECK(sim.rt.store.at("n") == "b");
}

TEST_CASE("flow engine: for_each tries repeated values as a multiset and "
          "REVERTs when none is left") {
  const FlowModel model = pre_then_retried(for_each({3, 2, 3}), false);
  Sim sim(model);
  sim.start();
  sim.ok("pre");
  std::vector<json> tried;
  while (sim.atom("x").task) {
    tried.push_back(sim.task("x").args.at("n"));
    sim.fail("x", "no");
  }
  CHECK(tried == std::vector<json>{3, 2, 3});
  CHECK(sim.rt.state == FlowState::reverted);
  CHECK(sim.atom("r").state == AtomState::reverted);
  CHECK(sim.atom("pre").state == AtomState::success);
  CHECK(sim.rt.store.count("n") == 0);
}

TEST_CASE("flow engine: for_each_from takes its values from the store") {
  ModelBuilder b;
  b.store({{"mirrors", {"m1", "m2"}}});
  const int s = b.subflow(0, "s");
  const int r = b.retry(s, "r", for_each_from("mirrors"), "mirror");
  const int x = b.atom(s, "x", {std::nullopt, {"mirror"}, false, 0});
  b.chain({r, x});
  const FlowModel model = b.build();
  Sim sim(model);
  sim.start();
  CHECK(sim.task("x").args == json{{"mirror", "m1"}});
  sim.fail("x", "down");
  CHECK(sim.task("x").args == json{{"mirror", "m2"}});
  sim.fail("x", "down");
  CHECK(sim.rt.state == FlowState::reverted);
}

TEST_CASE("flow engine: for_each with no values fails the controller, "
          "resolved by the parent controller") {
  ModelBuilder b;
  const int top = b.retry(0, "top", times(2), "t");
  const int s = b.subflow(0, "s");
  const int inner = b.retry(s, "inner", for_each(json::array()));
  const int x = b.atom(s, "x");
  b.chain({top, inner, x});
  const FlowModel model = b.build();
  Sim sim(model);
  sim.start();
  const std::string none =
      "No elements left in collection of iterable retry controller inner";
  // The parent says RETRY once (times 2), then REVERT with no parent of its
  // own: the whole flow, all under top, is reverted. x never runs.
  CHECK(sim.created().empty());
  CHECK(sim.rt.state == FlowState::reverted);
  CHECK(sim.atom("x").state == AtomState::pending);
  CHECK(sim.log
        == Lines{"f.f RUNNING", "top.r RUNNING", "top.r SUCCESS(1)",
                 "inner.r RUNNING", "inner.r FAILURE(\"" + none + "\")",
                 "inner.r REVERTING", "inner.r REVERTED(null)",
                 "top.r RETRYING", "inner.r PENDING", "top.r RUNNING",
                 "top.r SUCCESS(2)", "inner.r RUNNING",
                 "inner.r FAILURE(\"" + none + "\")", "inner.r REVERTING",
                 "inner.r REVERTED(null)", "top.r REVERTING",
                 "top.r REVERTED(null)", "f.f REVERTED"});
}

TEST_CASE("flow engine: a for_each_from symbol that is not a list fails the "
          "controller") {
  ModelBuilder b;
  b.store({{"mirrors", "m1"}});
  const int s = b.subflow(0, "s");
  const int r = b.retry(s, "r", for_each_from("mirrors"));
  const int x = b.atom(s, "x");
  b.chain({r, x});
  const FlowModel model = b.build();
  Sim sim(model);
  sim.start();
  CHECK(sim.atom("r").failure
        == "symbol 'mirrors' of iterable retry controller r is not a list");
  CHECK(sim.rt.state == FlowState::reverted);
}

namespace {

// f: pre, then m (controller mr: always_revert) holding i (controller ir:
// times 2, provides "k") holding x (requires "k"). f's own controller is
// `top`, given by the test.
FlowModel nested(RetrySpec top_spec) {
  ModelBuilder b;
  const int top = b.retry(0, "top", std::move(top_spec), "t");
  const int pre = b.atom(0, "pre", {"p", {}, true, 0});
  const int m = b.subflow(0, "m");
  const int mr = b.retry(m, "mr", always_revert());
  const int i = b.subflow(m, "i");
  const int ir = b.retry(i, "ir", times(2), "k");
  const int x = b.atom(i, "x", {std::nullopt, {"k", "t"}, true, 0});
  b.chain({top, pre, mr, ir, x});
  return b.build();
}

} // namespace

TEST_CASE("flow engine: an inner RETRY, then a REVERT whose parent says "
          "REVERT_ALL reverts the whole flow") {
  const FlowModel model = nested(always_revert_all());
  Sim sim(model);
  sim.start();
  sim.ok("pre", "P");
  CHECK(sim.task("x").args == json{{"k", 1}, {"t", nullptr}});
  sim.fail("x", "one");
  CHECK(sim.atom("ir").intention == Intention::retry);
  CHECK(sim.atom("mr").intention == Intention::execute);
  sim.ok("x"); // revert
  CHECK(sim.task("x").args == json{{"k", 2}, {"t", nullptr}});
  sim.fail("x", "two");
  // ir gives up (REVERT) and asks mr, which asks top: REVERT_ALL wins.
  for (const auto& [name, n] : model.by_name) {
    const std::string& atom = name; // clang 14 cannot CAPTURE a binding
    CAPTURE(atom);
    CHECK(sim.rt.atoms[static_cast<std::size_t>(n)].intention
          == Intention::revert);
  }
  CHECK(sim.atom("ir").history.back().failures
        == std::map<std::string, std::string>{{"x", "two"}});
  CHECK(sim.atom("mr").history.back().failures
        == std::map<std::string, std::string>{{"ir", "two"}});
  CHECK(sim.atom("top").history.back().failures
        == std::map<std::string, std::string>{{"mr", "two"}});
  sim.ok("x");
  CHECK(sim.created() == Lines{"pre:revert"});
  sim.ok("pre");
  CHECK(sim.rt.state == FlowState::reverted);
  for (const char* n : {"top", "pre", "mr", "ir", "x"}) {
    CAPTURE(n);
    CHECK(sim.atom(n).state == AtomState::reverted);
  }
}

TEST_CASE("flow engine: a REVERT whose parent says RETRY takes the parent's "
          "retry") {
  const FlowModel model = nested(times(2));
  Sim sim(model);
  sim.start();
  sim.ok("pre", "P");
  CHECK(sim.task("x").args == json{{"k", 1}, {"t", 1}});
  sim.fail("x", "one");
  sim.ok("x");
  sim.fail("x", "two");
  CHECK(sim.atom("top").intention == Intention::retry);
  CHECK(sim.atom("mr").intention == Intention::revert);
  CHECK(sim.atom("ir").intention == Intention::revert);
  sim.ok("x");
  CHECK(sim.created() == Lines{"pre:revert"});
  sim.ok("pre");
  // Everything under top reverted, then run again with top's value 2 and a
  // fresh inner history.
  CHECK(sim.atom("top").history.size() == 2);
  CHECK(sim.atom("top").history[0].failures
        == std::map<std::string, std::string>{{"mr", "two"}});
  CHECK(sim.created() == Lines{"pre:execute"});
  sim.ok("pre", "P2");
  CHECK(sim.task("x").args == json{{"k", 1}, {"t", 2}});
  sim.ok("x");
  CHECK(sim.rt.state == FlowState::success);
}

TEST_CASE("flow engine: revert_all makes a controller that gives up revert "
          "the whole flow") {
  const FlowModel model = pre_then_retried(times(1, true));
  Sim sim(model);
  sim.start();
  sim.ok("pre");
  sim.fail("x", "boom");
  CHECK(sim.atom("pre").intention == Intention::revert);
  sim.ok("x");
  CHECK(sim.created() == Lines{"pre:revert"});
  sim.ok("pre");
  CHECK(sim.rt.state == FlowState::reverted);
  CHECK(sim.atom("pre").state == AtomState::reverted);
}

TEST_CASE("flow engine: a controller already told to REVERT is not switched "
          "to RETRY") {
  // f (unordered): sa (always_revert_all) holding a; sb (times 3) holding b.
  ModelBuilder bld(Pattern::unordered);
  const int sa = bld.subflow(0, "sa");
  const int ra = bld.retry(sa, "ra", always_revert_all());
  const int a = bld.atom(sa, "a");
  const int sb = bld.subflow(0, "sb");
  const int rb = bld.retry(sb, "rb", times(3));
  const int b = bld.atom(sb, "b");
  bld.edge(ra, a).edge(rb, b);
  const FlowModel model = bld.build();
  Sim sim(model);
  sim.start();
  CHECK(sim.created() == Lines{"a:execute", "b:execute"});
  sim.fail("a", "boom");
  CHECK(sim.atom("rb").intention == Intention::revert);
  CHECK(sim.created() == Lines{"a:revert"});
  sim.fail("b", "late");
  // rb's times 3 says RETRY, but the REVERT_ALL stands.
  CHECK(sim.atom("rb").intention == Intention::revert);
  CHECK(sim.atom("rb").history.back().failures
        == std::map<std::string, std::string>{{"b", "late"}});
  CHECK(sim.created() == Lines{"b:revert"});
  CHECK(sim.task("b").args.at("failures")
        == json{{"a", "boom"}, {"b", "late"}});
  sim.ok("a");
  sim.ok("b");
  CHECK(sim.rt.state == FlowState::reverted);
  for (const auto& l : sim.log) {
    CHECK(l.find("RETRYING") == std::string::npos);
  }
}
