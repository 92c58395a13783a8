#include "core/flow.hpp"

#include <array>
#include <cstddef>

namespace taskq::core::flow {

namespace {

constexpr std::array<std::string_view, 8> k_flow_names{
    "PENDING",  "RUNNING",    "SUCCESS",   "FAILURE",
    "REVERTED", "SUSPENDING", "SUSPENDED", "RESUMING"};

constexpr std::array<std::string_view, 9> k_atom_names{
    "PENDING",  "RUNNING",        "SUCCESS", "FAILURE", "REVERTING",
    "REVERTED", "REVERT_FAILURE", "IGNORE",  "RETRYING"};

constexpr std::array<std::string_view, 4> k_intention_names{"EXECUTE", "IGNORE",
                                                            "REVERT", "RETRY"};

constexpr std::array<std::string_view, 2> k_action_names{"execute", "revert"};

constexpr std::array<std::string_view, 3> k_change_kind_names{"flow", "task",
                                                              "retry"};

template <typename E> std::size_t index(E e) {
  return static_cast<std::size_t>(e);
}

constexpr Verdict A = Verdict::allowed;
constexpr Verdict I = Verdict::ignored;
constexpr Verdict R = Verdict::refused;

// doc/flows.md#flow-transitions (TaskFlow's check_flow_transition), row = from,
// column = to, both in k_flow_states order. The diagonal is ignored (old == new
// is checked first); A: the 17 ALLOWED pairs; I: the IGNORED pairs (from
// PENDING/SUCCESS/FAILURE/REVERTED/SUSPENDED to SUSPENDING/SUSPENDED/
// RESUMING); R: everything else raises InvalidState.
// clang-format off
constexpr std::array<std::array<Verdict, 8>, 8> k_flow_table{{
  // PENDING RUNNING SUCCESS FAILURE REVERTED SUSPENDING SUSPENDED RESUMING
    {I,      A,      R,      R,      R,       I,         I,        I}, // PENDING
    {R,      I,      A,      A,      A,       A,         R,        A}, // RUNNING
    {A,      A,      I,      R,      R,       I,         I,        I}, // SUCCESS
    {R,      A,      R,      I,      R,       I,         I,        I}, // FAILURE
    {A,      R,      R,      R,      I,       I,         I,        I}, // REVERTED
    {R,      R,      A,      A,      A,       I,         A,        A}, // SUSPENDING
    {R,      A,      R,      R,      R,       I,         I,        I}, // SUSPENDED
    {R,      R,      R,      R,      R,       R,         A,        I}, // RESUMING
}};
// clang-format on

constexpr bool T = true;
constexpr bool F = false;

// doc/flows.md#atom-transitions (check_task_transition): the 10 allowed pairs,
// row = from, column = to, in k_atom_states order. Identity is false; RETRYING
// is not a task state, so its row and column are false.
// clang-format off
constexpr std::array<std::array<bool, 9>, 9> k_task_table{{
  // PENDING RUNNING SUCCESS FAILURE REVERTING REVERTED REVERT_F IGNORE RETRYING
    {F,      T,      F,      F,      F,        F,       F,       T,     F}, // PENDING
    {F,      F,      T,      T,      F,        F,       F,       F,     F}, // RUNNING
    {F,      F,      F,      F,      T,        F,       F,       F,     F}, // SUCCESS
    {F,      F,      F,      F,      T,        F,       F,       F,     F}, // FAILURE
    {F,      F,      F,      F,      F,        T,       T,       F,     F}, // REVERTING
    {T,      F,      F,      F,      F,        F,       F,       F,     F}, // REVERTED
    {F,      F,      F,      F,      F,        F,       F,       F,     F}, // REVERT_FAILURE
    {T,      F,      F,      F,      F,        F,       F,       F,     F}, // IGNORE
    {F,      F,      F,      F,      F,        F,       F,       F,     F}, // RETRYING
}};
// clang-format on

} // namespace

std::string_view to_string(FlowState s) {
  return k_flow_names.at(index(s));
}
std::string_view to_string(AtomState s) {
  return k_atom_names.at(index(s));
}
std::string_view to_string(Intention i) {
  return k_intention_names.at(index(i));
}
std::string_view to_string(Action a) {
  return k_action_names.at(index(a));
}
std::string_view to_string(ChangeKind k) {
  return k_change_kind_names.at(index(k));
}

std::optional<FlowState> parse_flow_state(std::string_view text) {
  for (const auto s : k_flow_states) {
    if (to_string(s) == text) {
      return s;
    }
  }
  return std::nullopt;
}

std::optional<AtomState> parse_atom_state(std::string_view text) {
  for (const auto s : k_atom_states) {
    if (to_string(s) == text) {
      return s;
    }
  }
  return std::nullopt;
}

std::optional<Intention> parse_intention(std::string_view text) {
  for (const auto i : {Intention::execute, Intention::ignore, Intention::revert,
                       Intention::retry}) {
    if (to_string(i) == text) {
      return i;
    }
  }
  return std::nullopt;
}

Verdict check_flow_transition(FlowState from, FlowState to) {
  return k_flow_table.at(index(from)).at(index(to));
}

bool check_task_transition(AtomState from, AtomState to) {
  return k_task_table.at(index(from)).at(index(to));
}

bool check_retry_transition(AtomState from, AtomState to) {
  // doc/flows.md#atom-transitions, retry: the task pairs plus
  // SUCCESS->RETRYING, RETRYING->RUNNING.
  if ((from == AtomState::success && to == AtomState::retrying)
      || (from == AtomState::retrying && to == AtomState::running)) {
    return true;
  }
  return check_task_transition(from, to);
}

bool is_final(FlowState s) {
  return s == FlowState::success || s == FlowState::failure
         || s == FlowState::reverted;
}

} // namespace taskq::core::flow
