#pragma once
// Flows (doc/flows.md): TaskFlow's graphs of atoms, its state tables, its
// resolution of failures by retry controllers, and the one function that
// decides what happens next (advance). Pure:
// storage loads a flow's runtime, calls advance with what happened, and
// writes back what changed and the tasks to create, in the transaction of
// the command that made it happen.
#include "core/error_policy.hpp"
#include "core/labels.hpp"
#include "core/time.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace taskq::core::flow {

// ---- States and TaskFlow's transition tables (doc/flows.md#states) ------

enum class FlowState {
  pending,
  running,
  success,
  failure,
  reverted,
  suspending,
  suspended,
  resuming,
};

// Atom states; `retrying` only for retry controllers.
enum class AtomState {
  pending,
  running,
  success,
  failure,
  reverting,
  reverted,
  revert_failure,
  ignore,
  retrying,
};

enum class Intention { execute, ignore, revert, retry };

// What a state table says of a requested transition.
enum class Verdict {
  allowed,
  ignored, // TaskFlow returns False: nothing changes, no error
  refused, // TaskFlow raises InvalidState
};

// Upper-case names, as TaskFlow spells them ("PENDING", "REVERT_FAILURE").
std::string_view to_string(FlowState s);
std::string_view to_string(AtomState s);
std::string_view to_string(Intention i);
std::optional<FlowState> parse_flow_state(std::string_view text);
std::optional<AtomState> parse_atom_state(std::string_view text);
std::optional<Intention> parse_intention(std::string_view text);

inline constexpr FlowState k_flow_states[] = {
    FlowState::pending,   FlowState::running,  FlowState::success,
    FlowState::failure,   FlowState::reverted, FlowState::suspending,
    FlowState::suspended, FlowState::resuming};
inline constexpr AtomState k_atom_states[] = {
    AtomState::pending,        AtomState::running,   AtomState::success,
    AtomState::failure,        AtomState::reverting, AtomState::reverted,
    AtomState::revert_failure, AtomState::ignore,    AtomState::retrying};

// check_flow_transition (2.2): identity and the IGNORED pairs are ignored,
// the 17 ALLOWED pairs allowed, everything else refused.
Verdict check_flow_transition(FlowState from, FlowState to);
// check_task_transition (2.3): the 10 allowed pairs; never refuses.
bool check_task_transition(AtomState from, AtomState to);
// check_retry_transition (2.4): the task pairs plus SUCCESS->RETRYING and
// RETRYING->RUNNING.
bool check_retry_transition(AtomState from, AtomState to);

// A finished flow: SUCCESS, FAILURE or REVERTED.
bool is_final(FlowState s);

// ---- The flow document, compiled (doc/flows.md#the-document) ------------

enum class Pattern { linear, unordered, graph };

// Where an atom's execute or revert task goes: `add`'s queue and payload.
struct TaskTarget {
  std::string queue;
  std::string payload = "null"; // JSON text
};

enum class RetryKind {
  times,
  for_each,
  for_each_from,
  always_revert,
  always_revert_all,
};

struct RetrySpec {
  RetryKind kind = RetryKind::times;
  int64_t times = 1;       // times: total executions of the subflow
  nlohmann::json values;   // for_each: the array of values
  std::string from_symbol; // for_each_from: the symbol holding them
  bool revert_all = false; // REVERT_ALL instead of REVERT on giving up
};

enum class NodeKind { task, retry };

// One atom of the compiled graph: a task atom, or a subflow's retry
// controller. Index in FlowModel::nodes is the node's id.
struct Node {
  std::string name;
  NodeKind kind = NodeKind::task;
  // The subflow (index in FlowModel::flows) that holds this node: for a
  // retry, the subflow it controls.
  int flow = 0;
  std::vector<int> preds; // direct predecessors (execution order)
  std::vector<int> succs; // direct successors
  std::vector<std::string> requirements; // `requires`: symbols, in order
  std::optional<std::string> provides;
  // task atoms
  TaskTarget execute;
  std::optional<TaskTarget> revert; // none: reverting is a no-op
  int64_t priority = 0;
  Labels labels;
  std::optional<int64_t> max_attempts;
  PolicyOverrides policy; // max_errors, error_window, retry_delay
  // retry controllers
  RetrySpec retry;
};

// A flow or nested flow of the document. flows[0] is the document itself.
struct SubFlow {
  std::string name;
  Pattern pattern = Pattern::graph;
  int parent = -1;          // index in flows; -1 for flows[0]
  std::optional<int> retry; // its controller's node, when it has one
  std::vector<int> nodes;   // every node inside it, nested ones too,
                            // but not its own retry; ascending
};

struct FlowModel {
  std::string name;
  nlohmann::json store = nlohmann::json::object(); // `store`: injected
  std::vector<Node> nodes;
  std::vector<SubFlow> flows;
  std::map<std::string, int, std::less<>> by_name; // node name -> index

  // The nearest retry controller of node `n` (of the innermost subflow
  // around it that has one; for a retry, of the subflows around its own),
  // or -1.
  int nearest_retry(int n) const;
  // Every node a retry controls: the nodes of its subflow, nested too.
  const std::vector<int>& controlled(int retry) const;
};

// Parses, validates and compiles a flow document
// (doc/flows.md#the-document): either the model or a one-line reason (exit 2
// at the CLI) for unknown fields, wrong types, duplicate names, a cycle, a
// required symbol nothing provides, ...
struct Compiled {
  std::optional<FlowModel> model;
  std::string error; // set when !model
};
Compiled compile_flow(std::string_view json_text);

// ---- A flow's runtime state ---------------------------------------------

// One entry of a retry controller's history: the value of one execution
// and the failures seen during it, by atom name.
struct HistoryEntry {
  nlohmann::json value;
  std::map<std::string, std::string> failures;
};

struct AtomRuntime {
  AtomState state = AtomState::pending;
  Intention intention = Intention::execute;
  // Execute's result (a task's `done --result`, null when none) or a
  // retry's value; cleared when the atom is reset or reverted.
  std::optional<nlohmann::json> result;
  std::optional<std::string> failure; // execute or revert failure text
  // The task currently working for this atom (execute or revert), while
  // one is: the only task whose end moves the atom.
  std::optional<int64_t> task;
  std::vector<HistoryEntry> history; // retry controllers only
};

struct FlowRuntime {
  FlowState state = FlowState::pending;
  nlohmann::json store = nlohmann::json::object();
  std::vector<AtomRuntime> atoms; // parallel to FlowModel::nodes
  // A failure that no controller can resolve (a revert failed) was seen in
  // this run: schedule nothing more; the run ends FAILURE.
  bool failed = false;
};

// A fresh runtime for `model`: PENDING, the injected store, atoms PENDING
// with intention EXECUTE.
FlowRuntime initial_runtime(const FlowModel& model);

// ---- What happened, and what to do about it ------------------------------

enum class Action { execute, revert };
std::string_view to_string(Action a);

// `flow submit`: the new flow starts (PENDING -> RUNNING).
struct Start {};
// An atom's task ended: completed (ok) or failed/killed. Ignored unless
// `task` is the atom's current task.
struct TaskEnded {
  int node = 0;
  int64_t task = 0;
  bool ok = false;
  nlohmann::json result; // ok: the task's result (null when none)
  std::string error;     // !ok: why (the task's last error or reason)
};
// `flow suspend`. `unleased`: nodes whose current task holds no live
// lease; when the suspend is allowed, storage deletes those tasks and the
// atoms wait, to be scheduled again on resume.
struct Suspend {
  std::vector<int> unleased;
};
struct Resume {};
struct Rerun {
  bool reset = false;
};
using Input = std::variant<Start, TaskEnded, Suspend, Resume, Rerun>;

// A task for storage to create, and then to record as the node's task
// (AtomRuntime::task) once it has its id.
struct NewAtomTask {
  int node = 0;
  Action action = Action::execute;
  // The task's `flow.args`: the required symbols' values; for a revert
  // also "result" (the atom's result) and "failures" (atom name -> error).
  nlohmann::json args = nlohmann::json::object();
};

enum class ChangeKind { flow, task, retry };
std::string_view to_string(ChangeKind k); // "flow", "task", "retry"

// One line of the flow's event history (`flow show`): a state change of
// the flow, a task atom or a retry controller, in the order they happened.
struct Change {
  std::string name;
  ChangeKind kind = ChangeKind::flow;
  std::string state;                    // the new state's name
  std::optional<nlohmann::json> result; // with SUCCESS, FAILURE, REVERTED,
                                        // REVERT_FAILURE (2.7)
};

struct Step {
  // Of the request itself (Suspend, Resume, Rerun): allowed, or ignored
  // (nothing changed; `note` says why) or refused (nothing changed; exit 4
  // with `note`). Start and TaskEnded are always allowed; a stale TaskEnded
  // is ignored.
  Verdict verdict = Verdict::allowed;
  std::string note;
  std::vector<NewAtomTask> create;
  // Tasks storage must delete (Suspend's unleased ones, when allowed).
  std::vector<int64_t> cancel;
  std::vector<Change> changes;
  std::vector<int> touched;  // nodes whose AtomRuntime changed, ascending
  bool flow_changed = false; // state, store or `failed` changed
};

// The one place that decides what happens next. Applies `in` to `rt` (as
// TaskFlow's engine would), then runs the scheduling cycle
// (doc/flows.md#the-cycle): reverts and executes what is ready (retry
// controllers at once, task atoms as NewAtomTask), and ends the run (SUCCESS,
// FAILURE, REVERTED or SUSPENDED) when nothing is left in flight. On a refused
// or ignored request `rt` is unchanged.
Step advance(const FlowModel& model, FlowRuntime& rt, const Input& in);

} // namespace taskq::core::flow
