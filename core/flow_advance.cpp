// advance() and the inputs it applies: a flow started, an atom's task
// ended, suspend, resume and rerun (core/flow_engine.cpp runs the engine).
#include "core/flow_engine.hpp"

#include <algorithm>
#include <cstddef>
#include <variant>

namespace taskq::core::flow {
namespace engine {

// The flow (re)starts: TaskFlow's engine run after prepare, and its
// completer's resume (doc/flows.md#suspend-and-resume): unresolved failures are
// resolved, controllers left RETRYING retried, then the cycle.
void Engine::run() {
  m_rt.failed = false;
  set_flow(FlowState::running);
  for (std::size_t i = 0; i < m_model.nodes.size(); ++i) {
    const int n = static_cast<int>(i);
    if (atom(n).state == AtomState::failure
        && atom(n).intention == Intention::execute) {
      process_failure(n);
    }
  }
  for (std::size_t i = 0; i < m_model.nodes.size(); ++i) {
    const int r = static_cast<int>(i);
    if (node(r).kind == NodeKind::retry
        && atom(r).state == AtomState::retrying) {
      atom(r).intention = Intention::execute;
      for (const int n : m_model.controlled(r)) {
        reset_node(n);
      }
    }
  }
  cycle();
  game_over();
}

void Engine::on(const Start& /*unused*/) {
  if (m_rt.state != FlowState::pending) {
    decline(Verdict::refused, state_note() + "; it has already started");
    return;
  }
  run();
}

void Engine::on(const TaskEnded& in) {
  if (in.node < 0 || static_cast<std::size_t>(in.node) >= m_rt.atoms.size()
      || atom(in.node).task != in.task) {
    decline(Verdict::ignored, "task " + std::to_string(in.task)
                                  + " is not the current task of its atom");
    return;
  }
  const int n = in.node;
  AtomRuntime& a = atom(n);
  a.task.reset();
  if (a.state == AtomState::running) {
    if (in.ok) {
      a.result = in.result;
      provide(n, in.result);
      move(n, AtomState::success);
    } else {
      a.failure = in.error;
      move(n, AtomState::failure);
      process_failure(n);
    }
  } else if (a.state == AtomState::reverting) {
    if (in.ok) {
      a.result.reset();
      unprovide(n);
      move(n, AtomState::reverted);
    } else {
      // No controller resolves a failed revert: the run ends FAILURE once
      // what is in flight has ended.
      a.failure = in.error;
      move(n, AtomState::revert_failure);
      m_rt.failed = true;
    }
  }
  if (m_rt.state == FlowState::running) {
    cycle();
  }
  game_over();
}

void Engine::on(const Suspend& in) {
  const Verdict v = check_flow_transition(m_rt.state, FlowState::suspending);
  if (v == Verdict::refused) {
    decline(v, state_note() + "; it cannot be suspended");
    return;
  }
  if (v == Verdict::ignored) {
    decline(v, state_note() + "; nothing to suspend");
    return;
  }
  set_flow(FlowState::suspending);
  for (const int n : in.unleased) {
    if (n >= 0 && static_cast<std::size_t>(n) < m_rt.atoms.size()
        && atom(n).task) {
      // The atom stays RUNNING or REVERTING, to be scheduled on resume.
      m_step.cancel.push_back(*atom(n).task);
      atom(n).task.reset();
    }
  }
  game_over();
}

void Engine::on(const Resume& /*unused*/) {
  switch (m_rt.state) {
  case FlowState::pending:
  case FlowState::suspended:
    run();
    return;
  case FlowState::running:
    decline(Verdict::ignored, "it is already RUNNING");
    return;
  case FlowState::suspending:
    decline(Verdict::refused,
            state_note() + "; resume it once it is SUSPENDED");
    return;
  case FlowState::success:
  case FlowState::failure:
  case FlowState::reverted:
    decline(Verdict::refused, state_note() + "; use `taskq flow rerun`");
    return;
  case FlowState::resuming:
    decline(Verdict::refused, state_note() + "; it cannot be resumed");
    return;
  }
}

void Engine::on(const Rerun& in) {
  if (m_rt.state == FlowState::pending) {
    run();
    return;
  }
  // TaskFlow's prepare resets a REVERTED flow before every run.
  const bool reset = in.reset || m_rt.state == FlowState::reverted;
  const Verdict v = check_flow_transition(
      m_rt.state, reset ? FlowState::pending : FlowState::running);
  if (v == Verdict::refused) {
    decline(
        v, state_note()
               + (reset ? "; it cannot be reset" : "; it cannot be run again"));
    return;
  }
  if (v == Verdict::ignored) {
    decline(v, "it is already " + std::string(to_string(m_rt.state)));
    return;
  }
  if (reset) {
    reset_all();
  }
  run();
}

} // namespace engine

namespace {

bool same_history(const std::vector<HistoryEntry>& a,
                  const std::vector<HistoryEntry>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const HistoryEntry& x, const HistoryEntry& y) {
                      return x.value == y.value && x.failures == y.failures;
                    });
}

bool same_atom(const AtomRuntime& a, const AtomRuntime& b) {
  return a.state == b.state && a.intention == b.intention
         && a.result == b.result && a.failure == b.failure && a.task == b.task
         && same_history(a.history, b.history);
}

} // namespace

Step advance(const FlowModel& model, FlowRuntime& rt, const Input& in) {
  Step step;
  if (rt.atoms.size() != model.nodes.size()) {
    step.verdict = Verdict::refused;
    step.note = "its runtime does not match its document";
    return step;
  }
  const FlowRuntime before = rt;
  engine::Engine engine(model, rt, step);
  std::visit([&engine](const auto& input) { engine.on(input); }, in);
  for (std::size_t i = 0; i < rt.atoms.size(); ++i) {
    if (!same_atom(before.atoms[i], rt.atoms[i])) {
      step.touched.push_back(static_cast<int>(i));
    }
  }
  step.flow_changed = before.state != rt.state || before.store != rt.store
                      || before.failed != rt.failed;
  return step;
}

} // namespace taskq::core::flow
