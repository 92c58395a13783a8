// advance() on FlowModels built by hand (not by compile_flow), driven the
// way storage drives it: every created task gets an id (100, 101, ...) that
// becomes the atom's current task, and a task's end comes back as TaskEnded.
#include "core/flow.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace flow = taskq::core::flow;
using flow::AtomState;
using flow::FlowModel;
using flow::FlowState;
using flow::Intention;
using flow::Pattern;
using flow::RetryKind;
using flow::RetrySpec;
using flow::Verdict;
using nlohmann::json;

namespace {

struct AtomOpts {
  std::optional<std::string> provides;
  std::vector<std::string> requires_;
  bool revert = true; // with a revert task (queue "undo")
  int64_t priority = 0;
};

RetrySpec times(int64_t n, bool revert_all = false) {
  RetrySpec s;
  s.kind = RetryKind::times;
  s.times = n;
  s.revert_all = revert_all;
  return s;
}
RetrySpec for_each(json values) {
  RetrySpec s;
  s.kind = RetryKind::for_each;
  s.values = std::move(values);
  return s;
}
RetrySpec for_each_from(std::string symbol) {
  RetrySpec s;
  s.kind = RetryKind::for_each_from;
  s.from_symbol = std::move(symbol);
  return s;
}
RetrySpec always_revert() {
  RetrySpec s;
  s.kind = RetryKind::always_revert;
  return s;
}
RetrySpec always_revert_all() {
  RetrySpec s;
  s.kind = RetryKind::always_revert_all;
  return s;
}

// A compiled document by hand: flows, nodes (each listed in every subflow
// around it), and the edges the test gives.
class ModelBuilder {
public:
  explicit ModelBuilder(Pattern pattern = Pattern::linear) {
    m_model.name = "f";
    flow::SubFlow top;
    top.name = "f";
    top.pattern = pattern;
    m_model.flows.push_back(top);
  }

  ModelBuilder& store(json s) {
    m_model.store = std::move(s);
    return *this;
  }

  int subflow(int parent, std::string name, Pattern pattern = Pattern::linear) {
    flow::SubFlow sub;
    sub.name = std::move(name);
    sub.pattern = pattern;
    sub.parent = parent;
    m_model.flows.push_back(sub);
    return static_cast<int>(m_model.flows.size()) - 1;
  }

  int atom(int in, std::string name, const AtomOpts& o = {}) {
    flow::Node n;
    n.name = std::move(name);
    n.kind = flow::NodeKind::task;
    n.flow = in;
    n.provides = o.provides;
    n.requirements = o.requires_;
    n.execute = {"work", "{\"job\":\"" + n.name + "\"}"};
    if (o.revert) {
      n.revert = flow::TaskTarget{"undo", "null"};
    }
    n.priority = o.priority;
    return add(std::move(n), in);
  }

  // The controller of subflow `of` (inside its parent).
  int retry(int of, std::string name, RetrySpec spec,
            std::optional<std::string> provides = std::nullopt) {
    flow::Node n;
    n.name = std::move(name);
    n.kind = flow::NodeKind::retry;
    n.flow = of;
    n.retry = std::move(spec);
    n.provides = std::move(provides);
    if (n.retry.kind == RetryKind::for_each_from) {
      n.requirements = {n.retry.from_symbol};
    }
    const int id = add(std::move(n), m_model.flows.at(sz(of)).parent);
    m_model.flows.at(sz(of)).retry = id;
    return id;
  }

  ModelBuilder& edge(int from, int to) {
    m_model.nodes.at(sz(from)).succs.push_back(to);
    m_model.nodes.at(sz(to)).preds.push_back(from);
    return *this;
  }
  ModelBuilder& chain(const std::vector<int>& nodes) {
    for (std::size_t i = 1; i < nodes.size(); ++i) {
      edge(nodes[i - 1], nodes[i]);
    }
    return *this;
  }

  FlowModel build() const { return m_model; }

private:
  static std::size_t sz(int i) { return static_cast<std::size_t>(i); }

  // Listed in `in` and every flow around it.
  int add(flow::Node n, int in) {
    const int id = static_cast<int>(m_model.nodes.size());
    m_model.by_name.emplace(n.name, id);
    m_model.nodes.push_back(std::move(n));
    for (int f = in; f >= 0; f = m_model.flows.at(sz(f)).parent) {
      m_model.flows.at(sz(f)).nodes.push_back(id);
    }
    return id;
  }

  FlowModel m_model;
};

// Storage's part: ids for created tasks, TaskEnded for their ends, and the
// event history as TaskFlow's tests print it ("a.t SUCCESS(5)").
class Sim {
public:
  explicit Sim(const FlowModel& model)
      : rt(flow::initial_runtime(model)), m_model(model) {}

  flow::Step& go(const flow::Input& in) {
    last = flow::advance(m_model, rt, in);
    for (const int64_t id : last.cancel) {
      open.erase(id);
    }
    for (const auto& c : last.create) {
      rt.atoms.at(static_cast<std::size_t>(c.node)).task = m_next_id;
      open.emplace(m_next_id, c);
      ++m_next_id;
    }
    for (const auto& ch : last.changes) {
      log.push_back(line(ch));
    }
    return last;
  }

  flow::Step& start() { return go(flow::Start{}); }
  flow::Step& ok(const std::string& name, json result = nullptr) {
    return end(name, true, std::move(result), "");
  }
  flow::Step& fail(const std::string& name, const std::string& error) {
    return end(name, false, nullptr, error);
  }

  int node(const std::string& name) const { return m_model.by_name.at(name); }
  flow::AtomRuntime& atom(const std::string& name) {
    return rt.atoms.at(static_cast<std::size_t>(node(name)));
  }
  // The open task of atom `name`.
  const flow::NewAtomTask& task(const std::string& name) {
    REQUIRE(atom(name).task);
    return open.at(*atom(name).task);
  }
  // The tasks the last step created, as "name:action".
  std::vector<std::string> created() const {
    std::vector<std::string> out;
    for (const auto& c : last.create) {
      out.push_back(m_model.nodes.at(static_cast<std::size_t>(c.node)).name
                    + ":" + std::string(flow::to_string(c.action)));
    }
    return out;
  }
  std::vector<std::string> changes() const {
    std::vector<std::string> out;
    for (const auto& ch : last.changes) {
      out.push_back(line(ch));
    }
    return out;
  }

  static std::string line(const flow::Change& ch) {
    const char k = ch.kind == flow::ChangeKind::flow
                       ? 'f'
                       : (ch.kind == flow::ChangeKind::task ? 't' : 'r');
    std::string s = ch.name + "." + k + " " + ch.state;
    if (ch.result) {
      s += "(" + ch.result->dump() + ")";
    }
    return s;
  }

  flow::FlowRuntime rt;
  flow::Step last;
  std::map<int64_t, flow::NewAtomTask> open;
  std::vector<std::string> log;

private:
  flow::Step& end(const std::string& name, bool ok, json result,
                  const std::string& error) {
    const int n = node(name);
    REQUIRE(atom(name).task);
    const int64_t id = *atom(name).task;
    open.erase(id);
    return go(flow::TaskEnded{n, id, ok, std::move(result), error});
  }

  const FlowModel& m_model;
  int64_t m_next_id = 100;
};

using Lines = std::vector<std::string>;

bool same_runtime(const flow::FlowRuntime& a, const flow::FlowRuntime& b) {
  if (a.state != b.state || a.store != b.store || a.failed != b.failed
      || a.atoms.size() != b.atoms.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.atoms.size(); ++i) {
    const auto& x = a.atoms[i];
    const auto& y = b.atoms[i];
    if (x.state != y.state || x.intention != y.intention || x.result != y.result
        || x.failure != y.failure || x.task != y.task
        || x.history.size() != y.history.size()) {
      return false;
    }
  }
  return true;
}

// flow f (linear): a, b, c; a requires the injected v.
FlowModel linear_abc(bool reverts = true) {
  ModelBuilder b;
  b.store({{"v", "1.4.2"}});
  const int a = b.atom(0, "a", {"x", {"v"}, reverts, 0});
  const int bb = b.atom(0, "b", {"y", {"x"}, reverts, 0});
  const int c = b.atom(0, "c", {std::nullopt, {"y", "v"}, reverts, 0});
  b.chain({a, bb, c});
  return b.build();
}

// flow f (linear): pre, then subflow s with controller r (provides "n")
// holding x (requires "n").
FlowModel pre_then_retried(RetrySpec spec, bool x_reverts = true) {
  ModelBuilder b;
  const int pre = b.atom(0, "pre", {"p", {}, true, 0});
  const int s = b.subflow(0, "s");
  const int r = b.retry(s, "r", std::move(spec), "n");
  const int x = b.atom(s, "x", {std::nullopt, {"n"}, x_reverts, 0});
  b.chain({pre, r, x});
  return b.build();
}

} // namespace

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
    CAPTURE(name);
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
