#include "core/state.hpp"

#include <cstddef>

namespace taskq::core {

namespace {

constexpr std::array<std::string_view, 7> k_state_names{
    "runnable", "sleeping", "paused", "fault", "completed", "failed", "killed"};

constexpr std::array<std::string_view, 8> k_message_names{
    "run",     "pause",      "sleep", "error",
    "release", "checkpoint", "kill",  "complete"};

using S = TaskState;
constexpr std::optional<TaskState> no;

// doc/reference/task.md#transition-table, row by row in k_all_states order;
// "no" is the table's "—".
// clang-format off
constexpr std::array<std::array<std::optional<TaskState>, 8>, 7> k_table{{
  //  run          pause      sleep        error      release      checkpoint   kill       complete
    {S::runnable, S::paused, S::sleeping, S::fault,  S::runnable, S::runnable, S::killed, S::completed}, // runnable
    {S::runnable, S::paused, S::sleeping, S::fault,  S::sleeping, S::sleeping, S::killed, no},           // sleeping
    {S::runnable, S::paused, S::sleeping, no,        S::paused,   S::paused,   S::killed, no},           // paused
    {no,          no,        S::sleeping, S::failed, no,          no,          no,        no},           // fault
    {no,          no,        no,          no,        no,          no,          no,        no},           // completed
    {no,          no,        no,          no,        no,          no,          no,        no},           // failed
    {no,          no,        no,          no,        no,          no,          no,        no},           // killed
}};
// clang-format on

std::size_t index(TaskState s) {
  return static_cast<std::size_t>(s);
}
std::size_t index(Message m) {
  return static_cast<std::size_t>(m);
}

} // namespace

std::string_view to_string(TaskState s) {
  return k_state_names.at(index(s));
}
std::string_view to_string(Message m) {
  return k_message_names.at(index(m));
}

std::optional<TaskState> parse_state(std::string_view text) {
  for (const auto s : k_all_states) {
    if (to_string(s) == text) {
      return s;
    }
  }
  return std::nullopt;
}

std::optional<Message> parse_message(std::string_view text) {
  for (const auto m : k_all_messages) {
    if (to_string(m) == text) {
      return m;
    }
  }
  return std::nullopt;
}

bool is_terminal(TaskState s) {
  return s == S::completed || s == S::failed || s == S::killed;
}

std::optional<TaskState> transition(TaskState from, Message msg) {
  return k_table.at(index(from)).at(index(msg));
}

std::vector<TaskState> states_acted_on(Message msg) {
  std::vector<TaskState> out;
  for (const auto s : k_all_states) {
    const auto to = transition(s, msg);
    if (s != S::fault && to
        && (*to != s || msg == Message::sleep || msg == Message::release
            || msg == Message::checkpoint)) {
      out.push_back(s);
    }
  }
  return out;
}

bool is_operator_message(Message m) {
  return m != Message::complete && m != Message::error;
}

} // namespace taskq::core
