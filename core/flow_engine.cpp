// advance(): TaskFlow's action engine over a FlowModel and a FlowRuntime, one
// input at a time (doc/flows.md#engine-advance). Where the design is silent,
// TaskFlow decides; those choices
// (doc/flows.md#choices-where-taskflow-is-silent) are marked "TaskFlow:" or
// "Choice:" below.
#include "core/flow_engine.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace taskq::core::flow {

using nlohmann::json;

// ---- FlowModel -----------------------------------------------------------

int FlowModel::nearest_retry(int n) const {
  const Node& node = nodes.at(static_cast<std::size_t>(n));
  // A retry is not its own controller: start above the subflow it controls.
  int f = node.kind == NodeKind::retry
              ? flows.at(static_cast<std::size_t>(node.flow)).parent
              : node.flow;
  while (f >= 0) {
    const SubFlow& sub = flows.at(static_cast<std::size_t>(f));
    if (sub.retry && *sub.retry != n) {
      return *sub.retry;
    }
    f = sub.parent;
  }
  return -1;
}

const std::vector<int>& FlowModel::controlled(int retry) const {
  static const std::vector<int> none;
  const Node& node = nodes.at(static_cast<std::size_t>(retry));
  if (node.kind != NodeKind::retry) {
    return none;
  }
  return flows.at(static_cast<std::size_t>(node.flow)).nodes;
}

FlowRuntime initial_runtime(const FlowModel& model) {
  FlowRuntime rt;
  rt.store = model.store;
  rt.atoms.resize(model.nodes.size());
  return rt;
}

namespace engine {
namespace {

std::vector<int> all_nodes(const FlowModel& model) {
  std::vector<int> out(model.nodes.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<int>(i);
  }
  return out;
}

} // namespace

// ---- The engine: one input applied to one runtime --------------------------

void Engine::set_flow(FlowState s) {
  if (m_rt.state == s) {
    return;
  }
  m_rt.state = s;
  m_step.changes.push_back(
      {m_model.name, ChangeKind::flow, std::string(to_string(s)), {}});
}

void Engine::move(int n, AtomState s) {
  AtomRuntime& a = atom(n);
  if (a.state == s) {
    return;
  }
  a.state = s;
  std::optional<json> result;
  switch (s) {
  case AtomState::success:
    result = a.result.value_or(json());
    break;
  case AtomState::failure:
  case AtomState::revert_failure:
    result = json(a.failure.value_or(""));
    break;
  case AtomState::reverted:
    result = json();
    break;
  default:
    break;
  }
  m_step.changes.push_back(
      {node(n).name,
       node(n).kind == NodeKind::retry ? ChangeKind::retry : ChangeKind::task,
       std::string(to_string(s)), std::move(result)});
}

void Engine::provide(int n, const json& value) {
  if (node(n).provides) {
    m_rt.store[*node(n).provides] = value;
  }
}

void Engine::unprovide(int n) {
  if (!node(n).provides) {
    return;
  }
  const std::string& symbol = *node(n).provides;
  const auto injected = m_model.store.find(symbol);
  if (injected != m_model.store.end()) {
    m_rt.store[symbol] = *injected;
  } else {
    m_rt.store.erase(symbol);
  }
}

// TaskFlow's save_retry_failure: into the last history entry, once per atom.
void Engine::record_failure(int retry, const std::string& who,
                            const std::string& failure) {
  auto& history = atom(retry).history;
  if (!history.empty()) {
    history.back().failures.emplace(who, failure);
  }
}

// TaskFlow's Completer._determine_resolution (defer_reverts off).
Resolution Engine::resolve(int n, const std::string& failure) {
  const int r = m_model.nearest_retry(n);
  if (r < 0) {
    return {Strategy::revert_all, -1, true};
  }
  record_failure(r, node(n).name, failure);
  switch (on_failure(node(r), atom(r), m_rt.store)) {
  case Strategy::retry:
    return {Strategy::retry, r, false};
  case Strategy::revert_all:
    return {Strategy::revert_all, r, false};
  case Strategy::revert:
    break;
  }
  // REVERT: the parent knows best, unless it is the undefined resolver or
  // says REVERT as well; then only this controller's subflow reverts.
  const Resolution parent = resolve(r, failure);
  if (!parent.undefined && parent.strategy != Strategy::revert) {
    return parent;
  }
  return {Strategy::revert, r, false};
}

// TaskFlow's RevertAndRetry, Revert and RevertAll strategies.
void Engine::apply(const Resolution& r) {
  const std::vector<int> everything = r.strategy == Strategy::revert_all
                                          ? all_nodes(m_model)
                                          : m_model.controlled(r.retry);
  for (const int n : everything) {
    atom(n).intention = Intention::revert;
  }
  if (r.strategy == Strategy::retry) {
    // TaskFlow's fix for a parallel REVERT_ALL: a controller already told
    // to REVERT is not switched to RETRY.
    if (atom(r.retry).intention != Intention::revert) {
      atom(r.retry).intention = Intention::retry;
    }
  } else if (r.strategy == Strategy::revert) {
    atom(r.retry).intention = Intention::revert;
  }
}

void Engine::process_failure(int n) {
  apply(resolve(n, atom(n).failure.value_or("")));
}

bool Engine::can_go(int n, AtomState to) const {
  return node(n).kind == NodeKind::retry
             ? check_retry_transition(atom(n).state, to)
             : check_task_transition(atom(n).state, to);
}

bool Engine::ready_to_revert(int n) const {
  const AtomRuntime& a = atom(n);
  if (has_task(n)
      || (a.intention != Intention::revert
          && a.intention != Intention::retry)) {
    return false;
  }
  const bool left =
      a.state == AtomState::running || a.state == AtomState::reverting;
  if (!left && !can_go(n, AtomState::reverting)) {
    return false;
  }
  return std::all_of(node(n).succs.begin(), node(n).succs.end(), [this](int s) {
    const AtomState st = atom(s).state;
    return st == AtomState::pending || st == AtomState::reverted
           || st == AtomState::ignore;
  });
}

bool Engine::ready_to_execute(int n) const {
  const AtomRuntime& a = atom(n);
  if (has_task(n) || a.intention != Intention::execute) {
    return false;
  }
  if (a.state != AtomState::running && !can_go(n, AtomState::running)) {
    return false;
  }
  return std::all_of(node(n).preds.begin(), node(n).preds.end(), [this](int p) {
    const AtomRuntime& pa = atom(p);
    return (pa.state == AtomState::success || pa.state == AtomState::ignore)
           && (pa.intention == Intention::execute
               || pa.intention == Intention::ignore);
  });
}

bool Engine::any_ready() const {
  for (std::size_t i = 0; i < m_model.nodes.size(); ++i) {
    const int n = static_cast<int>(i);
    if (ready_to_revert(n) || ready_to_execute(n)) {
      return true;
    }
  }
  return false;
}

// The ready nodes, higher priority first (doc/flows.md#the-cycle); then,
// Choice, executes in node order and reverts in reverse node order.
std::vector<int> Engine::ready(bool revert) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < m_model.nodes.size(); ++i) {
    const int n = static_cast<int>(i);
    if (revert ? ready_to_revert(n) : ready_to_execute(n)) {
      out.push_back(n);
    }
  }
  std::stable_sort(out.begin(), out.end(), [&](int x, int y) {
    if (node(x).priority != node(y).priority) {
      return node(x).priority > node(y).priority;
    }
    return revert ? x > y : x < y;
  });
  return out;
}

// The required symbols' values, as bound now; Choice: null for a symbol the
// store does not hold (compile_flow guarantees a provider ran before).
json Engine::requirement_args(int n) const {
  json args = json::object();
  for (const std::string& symbol : node(n).requirements) {
    const auto it = m_rt.store.find(symbol);
    args[symbol] = it != m_rt.store.end() ? *it : json();
  }
  return args;
}

// TaskFlow's flow_failures: every failure of this run by atom name. Choice:
// an atom keeps its failure once REVERTED (it is cleared by a reset), so the
// failure that started a revert reaches every revert after it.
json Engine::failures() const {
  json out = json::object();
  for (std::size_t i = 0; i < m_model.nodes.size(); ++i) {
    if (m_rt.atoms[i].failure) {
      out[m_model.nodes[i].name] = *m_rt.atoms[i].failure;
    }
  }
  return out;
}

void Engine::schedule(int n, Action action, json args) {
  m_step.create.push_back({n, action, std::move(args)});
  m_scheduled.insert(n);
}

// PENDING/EXECUTE, nothing remembered (TaskFlow's reset_atoms; a retry's
// history is cleared on reset too, doc/flows.md#retry-controllers).
void Engine::reset_node(int n) {
  AtomRuntime& a = atom(n);
  move(n, AtomState::pending);
  a.intention = Intention::execute;
  a.result.reset();
  a.failure.reset();
  a.history.clear();
  unprovide(n);
}

// engine.reset(): every atom PENDING (notified), then the flow PENDING.
void Engine::reset_all() {
  for (std::size_t i = 0; i < m_model.nodes.size(); ++i) {
    reset_node(static_cast<int>(i));
    m_rt.atoms[i].task.reset();
  }
  m_rt.store = m_model.store;
  set_flow(FlowState::pending);
}

void Engine::revert_node(int n) {
  AtomRuntime& a = atom(n);
  if (node(n).kind == NodeKind::retry && a.intention == Intention::retry) {
    retry_again(n);
    return;
  }
  if (node(n).kind == NodeKind::task && node(n).revert) {
    json args = requirement_args(n);
    args["result"] = a.result.value_or(json());
    args["failures"] = failures();
    move(n, AtomState::reverting);
    schedule(n, Action::revert, std::move(args));
    return;
  }
  // A controller's revert runs inside taskq, and an atom without `revert`
  // reverts as a no-op: both at once.
  move(n, AtomState::reverting);
  a.result.reset();
  // REVERTED clears a retry's history (doc/flows.md#retry-controllers).
  a.history.clear();
  unprovide(n);
  move(n, AtomState::reverted);
}

// RETRY (doc/flows.md#failure-resolution): RETRYING, the subflow reset, then
// the controller executed again with its updated history.
void Engine::retry_again(int r) {
  move(r, AtomState::retrying);
  atom(r).intention = Intention::execute;
  for (const int n : m_model.controlled(r)) {
    reset_node(n);
  }
  if (ready_to_execute(r)) {
    execute_node(r);
  }
}

void Engine::execute_node(int n) {
  if (node(n).kind == NodeKind::retry) {
    execute_retry(n);
    return;
  }
  move(n, AtomState::running);
  schedule(n, Action::execute, requirement_args(n));
}

void Engine::execute_retry(int r) {
  AtomRuntime& a = atom(r);
  NextValue next = next_value(node(r), a, m_rt.store);
  // TaskFlow: the controller is RUNNING while its execute runs, then
  // SUCCESS, or FAILURE when execute raises (resolved like any failure).
  move(r, AtomState::running);
  if (next.error) {
    a.result.reset();
    a.failure = *next.error;
    move(r, AtomState::failure);
    process_failure(r);
    return;
  }
  a.result = next.value;
  a.history.push_back({next.value, {}});
  provide(r, next.value);
  move(r, AtomState::success);
}

// The scheduling cycle, until nothing more is ready: reverts first, then
// executes, each re-checked just before it runs, as running a controller
// changes what is ready.
void Engine::cycle() {
  bool progressed = true;
  while (progressed) {
    progressed = false;
    for (const bool revert : {true, false}) {
      for (const int n : ready(revert)) {
        if (m_rt.state != FlowState::running || m_rt.failed) {
          return;
        }
        if (revert && ready_to_revert(n)) {
          revert_node(n);
          progressed = true;
        } else if (!revert && ready_to_execute(n)) {
          execute_node(n);
          progressed = true;
        }
      }
    }
  }
}

// GAME_OVER (doc/flows.md#the-cycle, Game over), once nothing is in flight.
void Engine::game_over() {
  if (m_rt.state != FlowState::running && m_rt.state != FlowState::suspending) {
    return;
  }
  for (std::size_t i = 0; i < m_model.nodes.size(); ++i) {
    if (has_task(static_cast<int>(i))) {
      return;
    }
  }
  if (m_rt.failed) {
    set_flow(FlowState::failure);
  } else if (m_rt.state == FlowState::suspending && any_ready()) {
    set_flow(FlowState::suspended);
  } else if (std::all_of(m_rt.atoms.begin(), m_rt.atoms.end(),
                         [](const AtomRuntime& a) {
                           return a.state == AtomState::success
                                  || a.state == AtomState::ignore;
                         })) {
    set_flow(FlowState::success);
  } else {
    set_flow(FlowState::reverted);
  }
}

} // namespace engine
} // namespace taskq::core::flow
