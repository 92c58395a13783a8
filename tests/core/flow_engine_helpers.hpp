#pragma once

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

namespace taskq::test::flow_engine_helpers {

struct AtomOpts {
  std::optional<std::string> provides;
  std::vector<std::string> requires_;
  bool revert = true; // with a revert task (queue "undo")
  int64_t priority = 0;
};

inline RetrySpec times(int64_t n, bool revert_all = false) {
  RetrySpec s;
  s.kind = RetryKind::times;
  s.times = n;
  s.revert_all = revert_all;
  return s;
}
inline RetrySpec for_each(json values) {
  RetrySpec s;
  s.kind = RetryKind::for_each;
  s.values = std::move(values);
  return s;
}
inline RetrySpec for_each_from(std::string symbol) {
  RetrySpec s;
  s.kind = RetryKind::for_each_from;
  s.from_symbol = std::move(symbol);
  return s;
}
inline RetrySpec always_revert() {
  RetrySpec s;
  s.kind = RetryKind::always_revert;
  return s;
}
inline RetrySpec always_revert_all() {
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

inline bool same_runtime(const flow::FlowRuntime& a,
                         const flow::FlowRuntime& b) {
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
inline FlowModel linear_abc(bool reverts = true) {
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
inline FlowModel pre_then_retried(RetrySpec spec, bool x_reverts = true) {
  ModelBuilder b;
  const int pre = b.atom(0, "pre", {"p", {}, true, 0});
  const int s = b.subflow(0, "s");
  const int r = b.retry(s, "r", std::move(spec), "n");
  const int x = b.atom(s, "x", {std::nullopt, {"n"}, x_reverts, 0});
  b.chain({pre, r, x});
  return b.build();
}

} // namespace taskq::test::flow_engine_helpers
