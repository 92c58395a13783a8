// advance(): TaskFlow's action engine (SEMANTICS 2.6-2.9) over a FlowModel
// and a FlowRuntime, one input at a time. Where the design note
// (notes/flow_design.md, "Engine (advance)") is silent, TaskFlow decides;
// those choices are marked "TaskFlow:" or "Choice:" below.
#include "core/flow.hpp"

#include <algorithm>
#include <cstddef>
#include <set>
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

namespace {

// ---- Retry controllers (SEMANTICS 2.8) -------------------------------------

// A controller's answer to a failure, and the resolution built from it.
enum class Strategy { retry, revert, revert_all };

// The values a for_each/for_each_from controller iterates, or none when
// for_each_from's symbol does not hold an array.
std::optional<json> iterable_values(const Node& r, const json& store) {
  if (r.retry.kind == RetryKind::for_each) {
    return r.retry.values.is_array() ? r.retry.values : json::array();
  }
  const auto it = store.find(r.retry.from_symbol);
  if (it == store.end() || !it->is_array()) {
    return std::nullopt;
  }
  return *it;
}

// TaskFlow's misc.sequence_minus: the values not tried yet, each history
// value taking away one occurrence, the order kept ([3,2,3,5] tries 3,2,3,5).
std::vector<json> values_left(const json& values,
                              const std::vector<HistoryEntry>& history) {
  std::vector<json> left(values.begin(), values.end());
  for (const HistoryEntry& h : history) {
    const auto it = std::find(left.begin(), left.end(), h.value);
    if (it != left.end()) {
      left.erase(it);
    }
  }
  return left;
}

// on_failure of the built-in controllers (Times, ForEach,
// ParameterizedForEach, AlwaysRevert, AlwaysRevertAll).
Strategy on_failure(const Node& r, const AtomRuntime& a, const json& store) {
  const Strategy give_up =
      r.retry.revert_all ? Strategy::revert_all : Strategy::revert;
  switch (r.retry.kind) {
  case RetryKind::times:
    return static_cast<int64_t>(a.history.size()) < r.retry.times
               ? Strategy::retry
               : give_up;
  case RetryKind::for_each:
  case RetryKind::for_each_from: {
    const auto values = iterable_values(r, store);
    return values && !values_left(*values, a.history).empty() ? Strategy::retry
                                                              : give_up;
  }
  case RetryKind::always_revert:
    return give_up;
  case RetryKind::always_revert_all:
    return Strategy::revert_all;
  }
  return give_up;
}

// A controller's next value, or the text of its execute failure.
struct NextValue {
  json value;
  std::optional<std::string> error;
};

NextValue next_value(const Node& r, const AtomRuntime& a, const json& store) {
  switch (r.retry.kind) {
  case RetryKind::times:
    return {json(static_cast<int64_t>(a.history.size()) + 1), std::nullopt};
  case RetryKind::for_each:
  case RetryKind::for_each_from: {
    const auto values = iterable_values(r, store);
    if (!values) {
      // Choice: TaskFlow would raise a TypeError iterating a non-list.
      return {json(), "symbol '" + r.retry.from_symbol
                          + "' of iterable retry controller " + r.name
                          + " is not a list"};
    }
    const auto left = values_left(*values, a.history);
    if (left.empty()) {
      return {json(),
              "No elements left in collection of iterable retry controller "
                  + r.name};
    }
    return {left.front(), std::nullopt};
  }
  case RetryKind::always_revert:
  case RetryKind::always_revert_all:
    return {json(), std::nullopt}; // TaskFlow's execute returns None
  }
  return {json(), std::nullopt};
}

// A resolution (SEMANTICS 2.8): the strategy and the controller it applies
// to; `undefined` is TaskFlow's undefined resolver (no controller at all),
// a REVERT_ALL that a REVERT below it does not defer to.
struct Resolution {
  Strategy strategy = Strategy::revert_all;
  int retry = -1;
  bool undefined = false;
};

std::vector<int> all_nodes(const FlowModel& model) {
  std::vector<int> out(model.nodes.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<int>(i);
  }
  return out;
}

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

// ---- The engine: one input applied to one runtime --------------------------

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
  // the current state (SEMANTICS 2.7).
  void set_flow(FlowState s);
  void move(int n, AtomState s);

  // The store (SPEC §3): a provided symbol leaves it on revert/reset;
  // Choice: an injected value under the same name comes back then, so a
  // REVERTED flow's store holds exactly what was injected.
  void provide(int n, const json& value);
  void unprovide(int n);

  // Failure resolution (SEMANTICS 2.8).
  void record_failure(int retry, const std::string& who,
                      const std::string& failure);
  Resolution resolve(int n, const std::string& failure);
  void apply(const Resolution& r);
  void process_failure(int n);

  // Readiness (SEMANTICS 2.6). An atom left RUNNING or REVERTING with no
  // task (its task was cancelled by a suspend) is ready as well, by its
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

// The ready nodes, higher priority first (SEMANTICS 2.6); then, Choice,
// executes in node order and reverts in reverse node order.
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
// history is cleared on reset too, SEMANTICS 2.8).
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
  a.history.clear(); // SEMANTICS 2.7: REVERTED clears a retry's history
  unprovide(n);
  move(n, AtomState::reverted);
}

// SEMANTICS 2.8 "Performing RETRY": RETRYING, the subflow reset, then the
// controller executed again with its updated history.
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

// GAME_OVER (SEMANTICS 2.6 step 3, 2.9), once nothing is in flight.
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

// The flow (re)starts: TaskFlow's engine run after prepare, and its
// completer's resume (SEMANTICS 2.9): unresolved failures are resolved,
// controllers left RETRYING retried, then the cycle.
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

} // namespace

Step advance(const FlowModel& model, FlowRuntime& rt, const Input& in) {
  Step step;
  if (rt.atoms.size() != model.nodes.size()) {
    step.verdict = Verdict::refused;
    step.note = "its runtime does not match its document";
    return step;
  }
  const FlowRuntime before = rt;
  Engine engine(model, rt, step);
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
