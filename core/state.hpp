#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <vector>

namespace taskq::core {

// Metafora's task states (doc/reference/task.md#states).
enum class TaskState {
  runnable,
  sleeping,
  paused,
  fault,
  completed,
  failed,
  killed,
};

// Metafora's messages (doc/reference/task.md#messages).
enum class Message {
  run,
  pause,
  sleep,
  error,
  release,
  checkpoint,
  kill,
  complete,
};

inline constexpr std::array<TaskState, 7> k_all_states{
    TaskState::runnable, TaskState::sleeping,  TaskState::paused,
    TaskState::fault,    TaskState::completed, TaskState::failed,
    TaskState::killed};

inline constexpr std::array<Message, 8> k_all_messages{
    Message::run,     Message::pause,      Message::sleep, Message::error,
    Message::release, Message::checkpoint, Message::kill,  Message::complete};

std::string_view to_string(TaskState s);
std::string_view to_string(Message m);
std::optional<TaskState> parse_state(std::string_view text);
std::optional<Message> parse_message(std::string_view text);

// completed, failed and killed: no message moves a task out of them.
bool is_terminal(TaskState s);

// The transition table of doc/reference/task.md#transition-table, exactly: the
// state `msg` moves `from` to, or std::nullopt where the table has "—" (the
// caller refuses with exit 4).
std::optional<TaskState> transition(TaskState from, Message msg);

// The states a task rests in (never `fault`) in which `msg` is accepted and
// does something: it changes the state, or it is `sleep` (a new time),
// `release` or `checkpoint` (which act on the lease). Shell completion
// offers the ids of such tasks.
std::vector<TaskState> states_acted_on(Message msg);

// The six messages an operator may send (`complete` and `error` come only
// from the lease holder).
bool is_operator_message(Message m);

} // namespace taskq::core
