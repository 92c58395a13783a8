// Flow documents (`flow submit`): compile_flow returns either a model or a
// reason of one line, never both, never neither. A model is a consistent
// graph: every edge in range and recorded at both ends, acyclic, by_name the
// index of every node's name, every node in a subflow, flows[0] the root and
// each nested flow's parents leading to it, each controller controlling its
// own subflow. The engine then starts it (initial_runtime, advance(Start))
// and runs it, ending the tasks it asks for one at a time, ok or failed as
// a generator seeded from the input says, for a bounded number of steps:
// every task it asks for is for a task atom that has none in flight, and
// whenever nothing is in flight the flow has finished.
#include "core/flow.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "fuzz.hpp"

namespace flow = taskq::core::flow;
using taskq::fuzz::as_text;

namespace {

// Steps of the run after Start: enough to finish any small document, while
// a `times` of a billion stays bounded.
constexpr int k_max_steps = 400;

bool in_range(int i, size_t n) {
  return i >= 0 && static_cast<size_t>(i) < n;
}

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

void check_model(const flow::FlowModel& m) {
  const size_t n = m.nodes.size();
  FUZZ_REQUIRE(!m.flows.empty());
  FUZZ_REQUIRE(m.flows[0].parent == -1);
  for (size_t f = 1; f < m.flows.size(); ++f) {
    // Its parents lead to flows[0], each flow once.
    int p = static_cast<int>(f);
    for (size_t up = 0; p != 0; ++up) {
      FUZZ_REQUIRE(up < m.flows.size());
      p = m.flows[static_cast<size_t>(p)].parent;
      FUZZ_REQUIRE(in_range(p, m.flows.size()));
    }
  }
  for (size_t f = 0; f < m.flows.size(); ++f) {
    const flow::SubFlow& sf = m.flows[f];
    FUZZ_REQUIRE(std::is_sorted(sf.nodes.begin(), sf.nodes.end()));
    for (const int x : sf.nodes) {
      FUZZ_REQUIRE(in_range(x, n));
    }
    if (sf.retry) {
      FUZZ_REQUIRE(in_range(*sf.retry, n));
      const flow::Node& r = m.nodes[static_cast<size_t>(*sf.retry)];
      FUZZ_REQUIRE(r.kind == flow::NodeKind::retry);
      FUZZ_REQUIRE(r.flow == static_cast<int>(f));
      FUZZ_REQUIRE(!contains(sf.nodes, *sf.retry));
    }
  }

  FUZZ_REQUIRE(m.by_name.size() == n);
  for (size_t i = 0; i < n; ++i) {
    const flow::Node& a = m.nodes[i];
    const int ai = static_cast<int>(i);
    FUZZ_REQUIRE(!a.name.empty());
    const auto it = m.by_name.find(a.name);
    FUZZ_REQUIRE(it != m.by_name.end() && it->second == ai);
    FUZZ_REQUIRE(in_range(a.flow, m.flows.size()));
    if (a.kind == flow::NodeKind::retry) {
      FUZZ_REQUIRE(m.flows[static_cast<size_t>(a.flow)].retry == ai);
    }
    for (const int b : a.succs) {
      FUZZ_REQUIRE(in_range(b, n) && b != ai);
      FUZZ_REQUIRE(contains(m.nodes[static_cast<size_t>(b)].preds, ai));
    }
    for (const int b : a.preds) {
      FUZZ_REQUIRE(in_range(b, n) && b != ai);
      FUZZ_REQUIRE(contains(m.nodes[static_cast<size_t>(b)].succs, ai));
    }
  }

  // Acyclic: Kahn's algorithm takes every node.
  std::vector<size_t> waiting(n);
  std::vector<int> ready;
  for (size_t i = 0; i < n; ++i) {
    waiting[i] = m.nodes[i].preds.size();
    if (waiting[i] == 0) {
      ready.push_back(static_cast<int>(i));
    }
  }
  size_t taken = 0;
  while (!ready.empty()) {
    const int a = ready.back();
    ready.pop_back();
    ++taken;
    for (const int b : m.nodes[static_cast<size_t>(a)].succs) {
      if (--waiting[static_cast<size_t>(b)] == 0) {
        ready.push_back(b);
      }
    }
  }
  FUZZ_REQUIRE(taken == n);
}

// splitmix64, seeded from the input: the run's choices, reproducible.
class Choices {
public:
  explicit Choices(std::string_view text) {
    for (const char c : text) { // FNV-1a
      m_state = (m_state ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    }
  }
  uint64_t next() {
    uint64_t z = (m_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

private:
  uint64_t m_state = 0xcbf29ce484222325ULL;
};

// Checks a step's new tasks and records them as storage would.
void take_step(const flow::FlowModel& m, flow::FlowRuntime& rt,
               const flow::Step& step, int64_t& next_task) {
  const size_t n = m.nodes.size();
  FUZZ_REQUIRE(rt.atoms.size() == n);
  FUZZ_REQUIRE(std::is_sorted(step.touched.begin(), step.touched.end()));
  for (const int t : step.touched) {
    FUZZ_REQUIRE(in_range(t, n));
  }
  for (const flow::NewAtomTask& t : step.create) {
    FUZZ_REQUIRE(in_range(t.node, n));
    const size_t i = static_cast<size_t>(t.node);
    FUZZ_REQUIRE(m.nodes[i].kind == flow::NodeKind::task);
    FUZZ_REQUIRE(!rt.atoms[i].task); // one task per atom at a time
    FUZZ_REQUIRE(rt.atoms[i].state
                 == (t.action == flow::Action::execute
                         ? flow::AtomState::running
                         : flow::AtomState::reverting));
    FUZZ_REQUIRE(t.args.is_object());
    rt.atoms[i].task = next_task++;
  }
}

std::vector<int> in_flight(const flow::FlowRuntime& rt) {
  std::vector<int> out;
  for (size_t i = 0; i < rt.atoms.size(); ++i) {
    if (rt.atoms[i].task) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

void run(const flow::FlowModel& m, std::string_view text) {
  flow::FlowRuntime rt = flow::initial_runtime(m);
  FUZZ_REQUIRE(rt.state == flow::FlowState::pending);
  FUZZ_REQUIRE(rt.atoms.size() == m.nodes.size());
  int64_t next_task = 1;
  flow::Step step = flow::advance(m, rt, flow::Start{});
  FUZZ_REQUIRE(step.verdict == flow::Verdict::allowed);
  take_step(m, rt, step, next_task);

  Choices choices(text);
  for (int s = 0;; ++s) {
    const std::vector<int> busy = in_flight(rt);
    if (busy.empty()) {
      // Nothing in flight: the run is over.
      FUZZ_REQUIRE(flow::is_final(rt.state));
      if (rt.state == flow::FlowState::success) {
        for (const flow::AtomRuntime& a : rt.atoms) {
          FUZZ_REQUIRE(a.state == flow::AtomState::success
                       || a.state == flow::AtomState::ignore);
        }
      }
      return;
    }
    FUZZ_REQUIRE(!flow::is_final(rt.state));
    if (s == k_max_steps) {
      return;
    }
    const uint64_t c = choices.next();
    const int node = busy[c % busy.size()];
    flow::AtomRuntime& a = rt.atoms[static_cast<size_t>(node)];
    flow::TaskEnded ended;
    ended.node = node;
    ended.task = *a.task;
    ended.ok = (c >> 32) % 4 != 0; // one in four fails
    if (ended.ok) {
      ended.result = static_cast<int64_t>(c >> 40 & 0xff);
    } else {
      ended.error = "failed";
    }
    step = flow::advance(m, rt, ended);
    FUZZ_REQUIRE(step.verdict == flow::Verdict::allowed);
    FUZZ_REQUIRE(!rt.atoms[static_cast<size_t>(node)].task);
    take_step(m, rt, step, next_task);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto text = as_text(data, size);
  const flow::Compiled c = flow::compile_flow(text);
  if (!c.model) {
    FUZZ_REQUIRE(!c.error.empty());
    FUZZ_REQUIRE(c.error.find('\n') == std::string::npos);
    FUZZ_REQUIRE(c.error.find('\r') == std::string::npos);
    FUZZ_REQUIRE(taskq::core::is_valid_utf8(c.error));
    return 0;
  }
  FUZZ_REQUIRE(c.error.empty());
  check_model(*c.model);
  run(*c.model, text);
  return 0;
}
