#include "core/flow.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstddef>
#include <string_view>

namespace flow = taskq::core::flow;
using flow::AtomState;
using flow::FlowState;
using flow::Verdict;

namespace {

// doc/flows.md#flow-transitions and doc/flows.md#atom-transitions copied by
// hand as data (not computed): row = from, column = to, both in the order of
// the column headers below.

constexpr std::array<std::string_view, 8> k_flow_columns{
    "PENDING",  "RUNNING",    "SUCCESS",   "FAILURE",
    "REVERTED", "SUSPENDING", "SUSPENDED", "RESUMING"};

struct FlowRow {
  std::string_view from;
  std::array<char, 8> to; // a: allowed, i: ignored, r: refused (raises)
};

// The diagonal is ignored (TaskFlow checks old == new first); the IGNORED
// set is from {PENDING, SUCCESS, FAILURE, REVERTED, SUSPENDED} to
// {SUSPENDING, SUSPENDED, RESUMING}.
// clang-format off
constexpr std::array<FlowRow, 8> k_flow_expected{{
    //             PEND RUN  SUCC FAIL REVD SUSG SUSD RESU
    {"PENDING",    {'i', 'a', 'r', 'r', 'r', 'i', 'i', 'i'}},
    {"RUNNING",    {'r', 'i', 'a', 'a', 'a', 'a', 'r', 'a'}},
    {"SUCCESS",    {'a', 'a', 'i', 'r', 'r', 'i', 'i', 'i'}},
    {"FAILURE",    {'r', 'a', 'r', 'i', 'r', 'i', 'i', 'i'}},
    {"REVERTED",   {'a', 'r', 'r', 'r', 'i', 'i', 'i', 'i'}},
    {"SUSPENDING", {'r', 'r', 'a', 'a', 'a', 'i', 'a', 'a'}},
    {"SUSPENDED",  {'r', 'a', 'r', 'r', 'r', 'i', 'i', 'i'}},
    {"RESUMING",   {'r', 'r', 'r', 'r', 'r', 'r', 'a', 'i'}},
}};
// clang-format on

constexpr std::array<std::string_view, 9> k_atom_columns{
    "PENDING",  "RUNNING",        "SUCCESS", "FAILURE", "REVERTING",
    "REVERTED", "REVERT_FAILURE", "IGNORE",  "RETRYING"};

struct AtomRow {
  std::string_view from;
  std::array<int, 9> to; // 1: allowed, 0: not
};

// 2.3: the 10 allowed task pairs; identity is false.
// clang-format off
constexpr std::array<AtomRow, 9> k_task_expected{{
    //                 PEND RUN SUCC FAIL RVTG RVTD RV_F IGN RETRYING
    {"PENDING",        {0,  1,  0,   0,   0,   0,   0,   1,  0}},
    {"RUNNING",        {0,  0,  1,   1,   0,   0,   0,   0,  0}},
    {"SUCCESS",        {0,  0,  0,   0,   1,   0,   0,   0,  0}},
    {"FAILURE",        {0,  0,  0,   0,   1,   0,   0,   0,  0}},
    {"REVERTING",      {0,  0,  0,   0,   0,   1,   1,   0,  0}},
    {"REVERTED",       {1,  0,  0,   0,   0,   0,   0,   0,  0}},
    {"REVERT_FAILURE", {0,  0,  0,   0,   0,   0,   0,   0,  0}},
    {"IGNORE",         {1,  0,  0,   0,   0,   0,   0,   0,  0}},
    {"RETRYING",       {0,  0,  0,   0,   0,   0,   0,   0,  0}},
}};

// 2.4: the task pairs plus SUCCESS->RETRYING and RETRYING->RUNNING.
constexpr std::array<AtomRow, 9> k_retry_expected{{
    //                 PEND RUN SUCC FAIL RVTG RVTD RV_F IGN RETRYING
    {"PENDING",        {0,  1,  0,   0,   0,   0,   0,   1,  0}},
    {"RUNNING",        {0,  0,  1,   1,   0,   0,   0,   0,  0}},
    {"SUCCESS",        {0,  0,  0,   0,   1,   0,   0,   0,  1}},
    {"FAILURE",        {0,  0,  0,   0,   1,   0,   0,   0,  0}},
    {"REVERTING",      {0,  0,  0,   0,   0,   1,   1,   0,  0}},
    {"REVERTED",       {1,  0,  0,   0,   0,   0,   0,   0,  0}},
    {"REVERT_FAILURE", {0,  0,  0,   0,   0,   0,   0,   0,  0}},
    {"IGNORE",         {1,  0,  0,   0,   0,   0,   0,   0,  0}},
    {"RETRYING",       {0,  1,  0,   0,   0,   0,   0,   0,  0}},
}};
// clang-format on

Verdict verdict_of(char c) {
  return c == 'a' ? Verdict::allowed
                  : (c == 'i' ? Verdict::ignored : Verdict::refused);
}

template <typename Check>
int count_atom_cells(const std::array<AtomRow, 9>& rows, Check check) {
  int allowed = 0;
  for (const auto& row : rows) {
    const auto from = flow::parse_atom_state(row.from);
    REQUIRE(from);
    for (std::size_t c = 0; c < k_atom_columns.size(); ++c) {
      const auto to = flow::parse_atom_state(k_atom_columns[c]);
      REQUIRE(to);
      CAPTURE(row.from);
      CAPTURE(k_atom_columns[c]);
      CHECK(check(*from, *to) == (row.to[c] == 1));
      allowed += row.to[c];
    }
  }
  return allowed;
}

} // namespace

TEST_CASE("flow: every cell of the flow transition table is as "
          "doc/flows.md, Flow transitions, says") {
  int allowed = 0;
  int ignored = 0;
  int refused = 0;
  for (const auto& row : k_flow_expected) {
    const auto from = flow::parse_flow_state(row.from);
    REQUIRE(from);
    for (std::size_t c = 0; c < k_flow_columns.size(); ++c) {
      const auto to = flow::parse_flow_state(k_flow_columns[c]);
      REQUIRE(to);
      CAPTURE(row.from);
      CAPTURE(k_flow_columns[c]);
      CHECK(flow::check_flow_transition(*from, *to) == verdict_of(row.to[c]));
      allowed += row.to[c] == 'a' ? 1 : 0;
      ignored += row.to[c] == 'i' ? 1 : 0;
      refused += row.to[c] == 'r' ? 1 : 0;
    }
  }
  CHECK(allowed == 17);
  // 8 identities + 5 sources x 3 targets, minus SUSPENDED->SUSPENDED counted
  // in both.
  CHECK(ignored == 8 + 15 - 1);
  CHECK(allowed + ignored + refused == 64);
}

TEST_CASE("flow: the transitions TaskFlow's tests name as raising are "
          "refused") {
  CHECK(flow::check_flow_transition(FlowState::running, FlowState::pending)
        == Verdict::refused);
  CHECK(flow::check_flow_transition(FlowState::reverted, FlowState::running)
        == Verdict::refused);
  CHECK(flow::check_flow_transition(FlowState::resuming, FlowState::running)
        == Verdict::refused);
  CHECK(flow::check_flow_transition(FlowState::failure, FlowState::success)
        == Verdict::refused);
  // 2.2's doc-vs-code note: reset of a FAILURE or SUSPENDED flow raises.
  CHECK(flow::check_flow_transition(FlowState::failure, FlowState::pending)
        == Verdict::refused);
  CHECK(flow::check_flow_transition(FlowState::suspended, FlowState::pending)
        == Verdict::refused);
}

TEST_CASE("flow: every cell of the task transition table is as "
          "doc/flows.md, Atom transitions, says") {
  CHECK(count_atom_cells(k_task_expected, flow::check_task_transition) == 10);
}

TEST_CASE("flow: every cell of the retry transition table is as "
          "doc/flows.md, Atom transitions (retry), says") {
  CHECK(count_atom_cells(k_retry_expected, flow::check_retry_transition) == 12);
}

TEST_CASE("flow: a retrying controller can only go to RUNNING") {
  for (const auto to :
       {AtomState::retrying, AtomState::success, AtomState::pending,
        AtomState::failure, AtomState::reverted}) {
    CAPTURE(flow::to_string(to));
    CHECK_FALSE(flow::check_retry_transition(AtomState::retrying, to));
  }
  CHECK(flow::check_retry_transition(AtomState::retrying, AtomState::running));
  CHECK(flow::check_retry_transition(AtomState::success, AtomState::retrying));
  CHECK_FALSE(
      flow::check_task_transition(AtomState::success, AtomState::retrying));
}

TEST_CASE("flow: the tables' headers cover the enums in order") {
  REQUIRE(std::size(flow::k_flow_states) == k_flow_columns.size());
  for (std::size_t i = 0; i < k_flow_columns.size(); ++i) {
    CHECK(flow::to_string(flow::k_flow_states[i]) == k_flow_columns[i]);
    CHECK(k_flow_expected.at(i).from == k_flow_columns[i]);
  }
  REQUIRE(std::size(flow::k_atom_states) == k_atom_columns.size());
  for (std::size_t i = 0; i < k_atom_columns.size(); ++i) {
    CHECK(flow::to_string(flow::k_atom_states[i]) == k_atom_columns[i]);
    CHECK(k_task_expected.at(i).from == k_atom_columns[i]);
    CHECK(k_retry_expected.at(i).from == k_atom_columns[i]);
  }
}

TEST_CASE("flow: names parse back and unknown names do not") {
  for (const auto s : flow::k_flow_states) {
    CHECK(flow::parse_flow_state(flow::to_string(s)) == s);
  }
  for (const auto s : flow::k_atom_states) {
    CHECK(flow::parse_atom_state(flow::to_string(s)) == s);
  }
  for (const auto i : {flow::Intention::execute, flow::Intention::ignore,
                       flow::Intention::revert, flow::Intention::retry}) {
    CHECK(flow::parse_intention(flow::to_string(i)) == i);
  }
  CHECK(flow::to_string(flow::Intention::retry) == "RETRY");
  CHECK(flow::to_string(flow::Action::execute) == "execute");
  CHECK(flow::to_string(flow::Action::revert) == "revert");
  CHECK(flow::to_string(flow::ChangeKind::flow) == "flow");
  CHECK(flow::to_string(flow::ChangeKind::task) == "task");
  CHECK(flow::to_string(flow::ChangeKind::retry) == "retry");
  CHECK_FALSE(flow::parse_flow_state("running"));
  CHECK_FALSE(flow::parse_flow_state("REVERTING"));
  CHECK_FALSE(flow::parse_atom_state("SUSPENDED"));
  CHECK_FALSE(flow::parse_intention(""));
}

TEST_CASE("flow: only SUCCESS, FAILURE and REVERTED are final") {
  int final_states = 0;
  for (const auto s : flow::k_flow_states) {
    final_states += flow::is_final(s) ? 1 : 0;
  }
  CHECK(final_states == 3);
  CHECK(flow::is_final(FlowState::success));
  CHECK(flow::is_final(FlowState::failure));
  CHECK(flow::is_final(FlowState::reverted));
  CHECK_FALSE(flow::is_final(FlowState::suspended));
}
