#pragma once
// The engine behind advance(): one input applied to one runtime. Its
// mechanics (state changes, failure resolution, readiness, the scheduling
// cycle) are in core/flow_engine.cpp, its inputs in core/flow_advance.cpp.
#include "core/flow.hpp"
#include "core/flow_retry.hpp"

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace taskq::core::flow::engine {

class Engine {
public:
  Engine(const FlowModel& model, FlowRuntime& rt, Step& step)
      : m_model(model), m_rt(rt), m_step(step) {}

  void on(const Start& /*unused*/);
  void on(const TaskEnded& in);
  void on(const Suspend& in);
  void on(const Resume& /*unused*/);
  void on(const Rerun& in);

private:
  const Node& node(int n) const {
    return m_model.nodes.at(static_cast<std::size_t>(n));
  }
  AtomRuntime& atom(int n) {
    return m_rt.atoms.at(static_cast<std::size_t>(n));
  }
  const AtomRuntime& atom(int n) const {
    return m_rt.atoms.at(static_cast<std::size_t>(n));
  }

  // Choice: core does not know the flow's id, so a note is the predicate
  // only ("it is SUCCESS; nothing to suspend"); storage/cli supply the
  // subject ("flow 7: it is SUCCESS; ...", "cannot resume flow 7: it is
  // SUSPENDING; ...").
  void decline(Verdict v, std::string note) {
    m_step.verdict = v;
    m_step.note = std::move(note);
  }
  std::string state_note() const {
    return "it is " + std::string(to_string(m_rt.state));
  }

  // State changes, each one line of the event history unless identical to
  // the current state (doc/flows.md#event-history).
  void set_flow(FlowState s);
  void move(int n, AtomState s);

  // The store (doc/flows.md#data-flow): a provided symbol leaves it on
  // revert/reset; Choice: an injected value under the same name comes back
  // then, so a REVERTED flow's store holds exactly what was injected.
  void provide(int n, const json& value);
  void unprovide(int n);

  // Failure resolution (doc/flows.md#failure-resolution).
  void record_failure(int retry, const std::string& who,
                      const std::string& failure);
  Resolution resolve(int n, const std::string& failure);
  void apply(const Resolution& r);
  void process_failure(int n);

  // Readiness (doc/flows.md#the-cycle). An atom left RUNNING or REVERTING with
  // no task (its task was cancelled by a suspend) is ready as well, by its
  // intention, as TaskFlow's resume re-schedules unfinished atoms.
  bool has_task(int n) const {
    return atom(n).task.has_value() || m_scheduled.count(n) != 0;
  }
  bool can_go(int n, AtomState to) const;
  bool ready_to_revert(int n) const;
  bool ready_to_execute(int n) const;
  bool any_ready() const;
  std::vector<int> ready(bool revert) const;

  json requirement_args(int n) const;
  json failures() const;
  void schedule(int n, Action action, json args);
  void reset_node(int n);
  void reset_all();

  void revert_node(int n);
  void retry_again(int r);
  void execute_node(int n);
  void execute_retry(int r);

  void run();
  void cycle();
  void game_over();

  const FlowModel& m_model;
  FlowRuntime& m_rt;
  Step& m_step;
  std::set<int> m_scheduled; // nodes given a task by this step
};

} // namespace taskq::core::flow::engine
