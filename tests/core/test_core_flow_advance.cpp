// advance()'s inputs: suspend, resume, rerun, reset and stale task ends.
#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "flow_engine_helpers.hpp"

using namespace taskq::test::flow_engine_helpers;

namespace {

// f (linear): u (unordered: a, b), then c.
FlowModel fork_join() {
  ModelBuilder b;
  const int u = b.subflow(0, "u", Pattern::unordered);
  const int a = b.atom(u, "a");
  const int bb = b.atom(u, "b");
  const int c = b.atom(0, "c");
  b.edge(a, c).edge(bb, c);
  return b.build();
}

} // namespace

TEST_CASE("flow engine: suspend cancels unleased tasks, waits for the running "
          "ones, and resume schedules the left atoms again") {
  const FlowModel model = fork_join();
  Sim sim(model);
  sim.start();
  CHECK(sim.created() == Lines{"a:execute", "b:execute"});
  const int64_t b_task = *sim.atom("b").task;
  sim.go(flow::Suspend{{sim.node("b")}});
  CHECK(sim.last.verdict == Verdict::allowed);
  CHECK(sim.rt.state == FlowState::suspending);
  CHECK(sim.last.cancel == std::vector<int64_t>{b_task});
  CHECK_FALSE(sim.atom("b").task);
  CHECK(sim.atom("b").state == AtomState::running);
  CHECK(sim.changes() == Lines{"f.f SUSPENDING"});

  sim.ok("a");
  CHECK(sim.created().empty());
  CHECK(sim.rt.state == FlowState::suspended);
  CHECK(sim.changes() == Lines{"a.t SUCCESS(null)", "f.f SUSPENDED"});

  // A late end of the cancelled task is stale.
  sim.go(flow::TaskEnded{sim.node("b"), b_task, true, nullptr, ""});
  CHECK(sim.last.verdict == Verdict::ignored);
  CHECK(sim.rt.state == FlowState::suspended);

  sim.go(flow::Resume{});
  CHECK(sim.last.verdict == Verdict::allowed);
  CHECK(sim.created() == Lines{"b:execute"});
  // b was left RUNNING: its RUNNING is not repeated.
  CHECK(sim.changes() == Lines{"f.f RUNNING"});
  sim.ok("b");
  CHECK(sim.created() == Lines{"c:execute"});
  sim.ok("c");
  CHECK(sim.rt.state == FlowState::success);
}

TEST_CASE("flow engine: a suspended revert resumes reverting") {
  const FlowModel model = fork_join();
  Sim sim(model);
  sim.start();
  sim.fail("a", "boom");
  CHECK(sim.created() == Lines{"a:revert"});
  sim.go(flow::Suspend{{sim.node("a")}});
  CHECK(sim.rt.state == FlowState::suspending); // b still running
  sim.ok("b");
  CHECK(sim.rt.state == FlowState::suspended);
  CHECK(sim.atom("a").state == AtomState::reverting);
  sim.go(flow::Resume{});
  CHECK(sim.created() == Lines{"b:revert", "a:revert"});
  sim.ok("a");
  sim.ok("b");
  CHECK(sim.rt.state == FlowState::reverted);
}

TEST_CASE("flow engine: an atom a suspend left RUNNING, told to revert "
          "meanwhile, goes from RUNNING to REVERTING on resume") {
  // As tests/flows/crash met it: b's task deleted by the suspend (no live
  // lease), then a fails, its failure resolved at once (no controller:
  // the flow reverts); on resume b, never run, is reverted as it is.
  const FlowModel model = fork_join();
  Sim sim(model);
  sim.start();
  sim.go(flow::Suspend{{sim.node("b")}});
  sim.changes();
  sim.fail("a", "boom");
  CHECK(sim.rt.state == FlowState::suspended);
  CHECK(sim.atom("b").state == AtomState::running);
  CHECK_FALSE(sim.atom("b").task);
  CHECK(sim.changes() == Lines{"a.t FAILURE(\"boom\")", "f.f SUSPENDED"});
  sim.go(flow::Resume{});
  CHECK(sim.last.verdict == Verdict::allowed);
  CHECK(sim.created() == Lines{"b:revert", "a:revert"});
  CHECK(sim.changes()
        == Lines{"f.f RUNNING", "b.t REVERTING", "a.t REVERTING"});
  sim.ok("b");
  sim.ok("a");
  CHECK(sim.atom("b").state == AtomState::reverted);
  CHECK(sim.rt.state == FlowState::reverted);
}

TEST_CASE("flow engine: a suspend when everything finishes ends SUCCESS") {
  const FlowModel model = linear_abc();
  Sim sim(model);
  sim.start();
  sim.ok("a");
  sim.ok("b");
  sim.go(flow::Suspend{});
  CHECK(sim.rt.state == FlowState::suspending);
  CHECK(sim.last.cancel.empty());
  sim.ok("c");
  CHECK(sim.rt.state == FlowState::success);
  CHECK(sim.changes() == Lines{"c.t SUCCESS(null)", "f.f SUCCESS"});
}

TEST_CASE("flow engine: requests TaskFlow ignores or refuses change nothing") {
  const FlowModel model = linear_abc();
  Sim sim(model);

  SUBCASE("suspend of a PENDING flow is ignored") {
    const auto before = sim.rt;
    sim.go(flow::Suspend{});
    CHECK(sim.last.verdict == Verdict::ignored);
    CHECK(sim.last.note == "it is PENDING; nothing to suspend");
    CHECK(same_runtime(before, sim.rt));
  }

  sim.start();

  SUBCASE("resume of a RUNNING flow is ignored") {
    sim.go(flow::Resume{});
    CHECK(sim.last.verdict == Verdict::ignored);
    CHECK(sim.last.note == "it is already RUNNING");
  }
  SUBCASE("rerun --reset of a RUNNING flow is refused") {
    const auto before = sim.rt;
    sim.go(flow::Rerun{true});
    CHECK(sim.last.verdict == Verdict::refused);
    CHECK(sim.last.note == "it is RUNNING; it cannot be reset");
    CHECK(same_runtime(before, sim.rt));
    CHECK(sim.last.changes.empty());
    CHECK(sim.last.create.empty());
  }
  SUBCASE("rerun of a RUNNING flow is ignored") {
    sim.go(flow::Rerun{false});
    CHECK(sim.last.verdict == Verdict::ignored);
  }
  SUBCASE("start of a started flow is refused") {
    sim.start();
    CHECK(sim.last.verdict == Verdict::refused);
  }
  SUBCASE("rerun and resume of a SUSPENDING flow are refused") {
    sim.go(flow::Suspend{});
    sim.go(flow::Resume{});
    CHECK(sim.last.verdict == Verdict::refused);
    CHECK(sim.last.note == "it is SUSPENDING; resume it once it is SUSPENDED");
    sim.go(flow::Rerun{false});
    CHECK(sim.last.verdict == Verdict::refused);
    sim.go(flow::Suspend{});
    CHECK(sim.last.verdict == Verdict::ignored);
  }
  SUBCASE("suspend, resume of a SUCCESS flow: ignored, refused") {
    sim.ok("a");
    sim.ok("b");
    sim.ok("c");
    REQUIRE(sim.rt.state == FlowState::success);
    const auto before = sim.rt;
    sim.go(flow::Suspend{});
    CHECK(sim.last.verdict == Verdict::ignored);
    CHECK(sim.last.note == "it is SUCCESS; nothing to suspend");
    CHECK(sim.last.changes.empty());
    CHECK_FALSE(sim.last.flow_changed);
    CHECK(same_runtime(before, sim.rt));
    sim.go(flow::Resume{});
    CHECK(sim.last.verdict == Verdict::refused);
    CHECK(sim.last.note == "it is SUCCESS; use `taskq flow rerun`");
    CHECK(same_runtime(before, sim.rt));
  }
}

TEST_CASE("flow engine: rerun of a SUCCESS flow executes nothing; with reset "
          "it executes everything from the injected store") {
  const FlowModel model = linear_abc();
  Sim sim(model);
  sim.start();
  sim.ok("a", 1);
  sim.ok("b", 2);
  sim.ok("c");
  REQUIRE(sim.rt.state == FlowState::success);

  sim.go(flow::Rerun{false});
  CHECK(sim.last.verdict == Verdict::allowed);
  CHECK(sim.created().empty());
  CHECK(sim.changes() == Lines{"f.f RUNNING", "f.f SUCCESS"});

  sim.go(flow::Rerun{true});
  CHECK(sim.last.verdict == Verdict::allowed);
  CHECK(sim.changes()
        == Lines{"a.t PENDING", "b.t PENDING", "c.t PENDING", "f.f PENDING",
                 "f.f RUNNING", "a.t RUNNING"});
  CHECK(sim.rt.store == json{{"v", "1.4.2"}});
  CHECK(sim.created() == Lines{"a:execute"});
  CHECK_FALSE(sim.atom("b").result);
  sim.ok("a", 10);
  sim.ok("b", 20);
  sim.ok("c");
  CHECK(sim.rt.state == FlowState::success);
  CHECK(sim.rt.store.at("y") == 20);
}

TEST_CASE("flow engine: rerun of a REVERTED flow resets it first") {
  const FlowModel model = linear_abc(false);
  Sim sim(model);
  sim.start();
  sim.fail("a", "boom");
  REQUIRE(sim.rt.state == FlowState::reverted);
  sim.go(flow::Rerun{false});
  CHECK(sim.last.verdict == Verdict::allowed);
  CHECK(sim.changes()
        == Lines{"a.t PENDING", "f.f PENDING", "f.f RUNNING", "a.t RUNNING"});
  CHECK_FALSE(sim.atom("a").failure);
  CHECK(sim.atom("a").intention == Intention::execute);
  CHECK(sim.atom("b").intention == Intention::execute);
  sim.ok("a");
  sim.ok("b");
  sim.ok("c");
  CHECK(sim.rt.state == FlowState::success);
}

TEST_CASE("flow engine: a FAILURE flow cannot be reset; rerun asks again") {
  const FlowModel model = linear_abc();
  Sim sim(model);
  sim.start();
  sim.ok("a", 1);
  sim.fail("b", "boom");
  sim.fail("b", "gotcha");
  REQUIRE(sim.rt.state == FlowState::failure);
  const auto before = sim.rt;
  sim.go(flow::Rerun{true});
  CHECK(sim.last.verdict == Verdict::refused);
  CHECK(same_runtime(before, sim.rt));
  sim.go(flow::Rerun{false});
  CHECK(sim.last.verdict == Verdict::allowed);
  CHECK_FALSE(sim.rt.failed);
  // Nothing is unresolved; b's REVERT_FAILURE is final and a, before it,
  // waits for it forever (TaskFlow: a successor must be PENDING, REVERTED or
  // IGNORE): nothing is ready and the run ends REVERTED at once.
  CHECK(sim.created().empty());
  CHECK(sim.changes() == Lines{"f.f RUNNING", "f.f REVERTED"});
  CHECK(sim.atom("a").state == AtomState::success);
}

TEST_CASE("flow engine: a stale TaskEnded is ignored and changes nothing") {
  const FlowModel model = linear_abc();
  Sim sim(model);
  sim.start();
  const int64_t current = *sim.atom("a").task;
  const auto before = sim.rt;
  for (const auto& stale :
       {flow::TaskEnded{sim.node("a"), current + 7, true, 1, ""},
        flow::TaskEnded{sim.node("b"), current, false, nullptr, "x"},
        flow::TaskEnded{42, current, true, nullptr, ""}}) {
    sim.go(stale);
    CHECK(sim.last.verdict == Verdict::ignored);
    CHECK(sim.last.changes.empty());
    CHECK(sim.last.create.empty());
    CHECK(sim.last.touched.empty());
    CHECK_FALSE(sim.last.flow_changed);
    CHECK(same_runtime(before, sim.rt));
  }
}

TEST_CASE("flow engine: resume resolves a failure left unresolved and "
          "retries a controller left RETRYING") {
  // Runtimes as a crash could leave them
  // (doc/flows.md#runtimes-left-unfinished), written by hand.
  const FlowModel model = pre_then_retried(times(3));
  Sim sim(model);
  sim.rt.state = FlowState::suspended;
  sim.atom("pre").state = AtomState::success;
  sim.atom("r").state = AtomState::success;
  sim.atom("r").history = {{1, {}}};
  sim.rt.store = {{"p", nullptr}, {"n", 1}};

  SUBCASE("an atom left in FAILURE with intention EXECUTE") {
    sim.atom("x").state = AtomState::failure;
    sim.atom("x").failure = "boom";
    sim.go(flow::Resume{});
    CHECK(sim.last.verdict == Verdict::allowed);
    CHECK(sim.atom("r").intention == Intention::retry);
    CHECK(sim.atom("r").history[0].failures
          == std::map<std::string, std::string>{{"x", "boom"}});
    CHECK(sim.created() == Lines{"x:revert"});
    CHECK(sim.changes() == Lines{"f.f RUNNING", "x.t REVERTING"});
  }
  SUBCASE("a controller left RETRYING") {
    sim.atom("r").state = AtomState::retrying;
    sim.atom("r").intention = Intention::retry;
    sim.atom("x").state = AtomState::reverted;
    sim.atom("x").intention = Intention::revert;
    sim.go(flow::Resume{});
    CHECK(sim.created() == Lines{"x:execute"});
    CHECK(sim.task("x").args == json{{"n", 2}});
    CHECK(sim.changes()
          == Lines{"f.f RUNNING", "x.t PENDING", "r.r RUNNING",
                   "r.r SUCCESS(2)", "x.t RUNNING"});
  }
}

TEST_CASE("flow engine: rerun and resume of a PENDING flow start it") {
  const FlowModel model = linear_abc();
  for (const flow::Input& in :
       {flow::Input{flow::Rerun{false}}, flow::Input{flow::Rerun{true}},
        flow::Input{flow::Resume{}}}) {
    Sim sim(model);
    sim.go(in);
    CHECK(sim.last.verdict == Verdict::allowed);
    CHECK(sim.changes() == Lines{"f.f RUNNING", "a.t RUNNING"});
  }
}
