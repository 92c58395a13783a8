#include "core/state.hpp"

#include <doctest/doctest.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

using taskq::core::Message;
using taskq::core::TaskState;
namespace core = taskq::core;

namespace {

// doc/reference/task.md#transition-table, copied by hand; "-" is a refusal.
// Rows follow k_all_states, columns k_all_messages, and both orders are checked
// below.
constexpr std::array<std::string_view, 8> k_columns{
    "run",     "pause",      "sleep", "error",
    "release", "checkpoint", "kill",  "complete"};

struct Row {
  std::string_view from;
  std::array<std::string_view, 8> to;
};

// clang-format off
constexpr std::array<Row, 7> k_expected{{
    //            run         pause     sleep       error     release     checkpoint  kill      complete
    {"runnable",  {"runnable", "paused", "sleeping", "fault",  "runnable", "runnable", "killed", "completed"}},
    {"sleeping",  {"runnable", "paused", "sleeping", "fault",  "sleeping", "sleeping", "killed", "-"}},
    {"paused",    {"runnable", "paused", "sleeping", "-",      "paused",   "paused",   "killed", "-"}},
    {"fault",     {"-",        "-",      "sleeping", "failed", "-",        "-",        "-",      "-"}},
    {"completed", {"-",        "-",      "-",        "-",      "-",        "-",        "-",      "-"}},
    {"failed",    {"-",        "-",      "-",        "-",      "-",        "-",        "-",      "-"}},
    {"killed",    {"-",        "-",      "-",        "-",      "-",        "-",        "-",      "-"}},
}};
// clang-format on

} // namespace

TEST_CASE(
    "every cell of the transition table is as doc/reference/task.md says") {
  int allowed = 0;
  int refused = 0;
  for (const auto& row : k_expected) {
    const auto from = core::parse_state(row.from);
    REQUIRE(from);
    for (std::size_t c = 0; c < k_columns.size(); ++c) {
      const auto msg = core::parse_message(k_columns[c]);
      REQUIRE(msg);
      CAPTURE(row.from);
      CAPTURE(k_columns[c]);
      const auto got = core::transition(*from, *msg);
      if (row.to[c] == "-") {
        CHECK_FALSE(got);
        ++refused;
      } else {
        REQUIRE(got);
        CHECK(core::to_string(*got) == row.to[c]);
        ++allowed;
      }
    }
  }
  CHECK(allowed + refused == 56);
  CHECK(allowed == 23);
  CHECK(refused == 33);
}

TEST_CASE("the expected table covers the states and messages in enum order") {
  REQUIRE(core::k_all_states.size() == k_expected.size());
  for (std::size_t i = 0; i < k_expected.size(); ++i) {
    CHECK(core::to_string(core::k_all_states[i]) == k_expected[i].from);
  }
  REQUIRE(core::k_all_messages.size() == k_columns.size());
  for (std::size_t i = 0; i < k_columns.size(); ++i) {
    CHECK(core::to_string(core::k_all_messages[i]) == k_columns[i]);
  }
}

TEST_CASE("terminal states accept no message") {
  for (const auto s :
       {TaskState::completed, TaskState::failed, TaskState::killed}) {
    CHECK(core::is_terminal(s));
    for (const auto msg : core::k_all_messages) {
      CAPTURE(core::to_string(msg));
      CHECK_FALSE(core::transition(s, msg));
    }
  }
}

TEST_CASE("only completed, failed and killed are terminal") {
  int terminal = 0;
  for (const auto s : core::k_all_states) {
    if (core::is_terminal(s)) {
      ++terminal;
    }
  }
  CHECK(terminal == 3);
  CHECK_FALSE(core::is_terminal(TaskState::runnable));
  CHECK_FALSE(core::is_terminal(TaskState::sleeping));
  CHECK_FALSE(core::is_terminal(TaskState::paused));
  CHECK_FALSE(core::is_terminal(TaskState::fault));
}

TEST_CASE("every non-terminal state can be put to sleep") {
  for (const auto s : core::k_all_states) {
    if (core::is_terminal(s)) {
      continue;
    }
    CAPTURE(core::to_string(s));
    CHECK(core::transition(s, Message::sleep) == TaskState::sleeping);
  }
}

TEST_CASE("release and checkpoint never change the state") {
  for (const auto s : core::k_all_states) {
    for (const auto msg : {Message::release, Message::checkpoint}) {
      const auto next = core::transition(s, msg);
      if (next) {
        CHECK(*next == s);
      }
    }
  }
}

TEST_CASE("the operator messages are all but complete and error") {
  CHECK(core::is_operator_message(Message::run));
  CHECK(core::is_operator_message(Message::pause));
  CHECK(core::is_operator_message(Message::sleep));
  CHECK(core::is_operator_message(Message::release));
  CHECK(core::is_operator_message(Message::checkpoint));
  CHECK(core::is_operator_message(Message::kill));
  CHECK_FALSE(core::is_operator_message(Message::complete));
  CHECK_FALSE(core::is_operator_message(Message::error));
}

TEST_CASE("state and message names round-trip") {
  for (const auto s : core::k_all_states) {
    CHECK(core::parse_state(core::to_string(s)) == s);
  }
  for (const auto m : core::k_all_messages) {
    CHECK(core::parse_message(core::to_string(m)) == m);
  }
}

TEST_CASE("unknown, empty or differently cased names are refused") {
  for (const auto* text : {"", "Runnable", "RUNNABLE", "running", "ready",
                           " runnable", "runnable ", "dead"}) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_state(text));
  }
  for (const auto* text :
       {"", "Run", "resume", "done", "fail", "kill ", "completed"}) {
    CAPTURE(text);
    CHECK_FALSE(core::parse_message(text));
  }
}

TEST_CASE("states_acted_on: the states completion offers for each message") {
  using S = TaskState;
  using V = std::vector<TaskState>;
  CHECK(core::states_acted_on(Message::run) == V{S::sleeping, S::paused});
  CHECK(core::states_acted_on(Message::pause) == V{S::runnable, S::sleeping});
  CHECK(core::states_acted_on(Message::kill)
        == V{S::runnable, S::sleeping, S::paused});
  CHECK(core::states_acted_on(Message::sleep)
        == V{S::runnable, S::sleeping, S::paused});
  CHECK(core::states_acted_on(Message::release)
        == V{S::runnable, S::sleeping, S::paused});
  CHECK(core::states_acted_on(Message::complete) == V{S::runnable});
  // Never fault (no task rests in it), never a final state.
  for (const auto m : core::k_all_messages) {
    for (const auto s : core::states_acted_on(m)) {
      CHECK(s != S::fault);
      CHECK_FALSE(core::is_terminal(s));
    }
  }
}
