#include "core/system_moves.hpp"

#include <cstddef>

namespace taskq::core {

namespace {

using S = TaskState;
constexpr std::optional<TaskState> no;

struct Row {
  std::string_view label;
  std::string_view event; // the event's message; empty: none is logged
  // The state it moves each of k_all_states to; "no" where it does not
  // apply.
  std::array<std::optional<TaskState>, 7> to;
};

// One row per move, in SystemMove order; columns in k_all_states order.
// fault is never stored: a worker's error passes through it within one
// transaction, to sleeping or failed. A task still counting dependencies
// is paused when one of them breaks whatever state it rests in (an
// operator's kill leaves the count as it was).
// clang-format off
constexpr std::array<Row, 9> k_moves{{
  //                                  runnable     sleeping     paused     fault        completed  failed     killed
  {"wake-up",           "run",      {{no,          S::runnable, no,        no,          no,        no,        no}}},
  {"max-attempts",      "pause",    {{S::paused,   S::paused,   no,        no,          no,        no,        no}}},
  {"obsoleted",         "kill",     {{S::killed,   S::killed,   no,        no,          no,        no,        no}}},
  {"broadcast-ended",   "complete", {{S::completed, no,         no,        no,          no,        no,        no}}},
  {"retry-later",       "sleep",    {{no,          no,          no,        S::sleeping, no,        no,        no}}},
  {"give-up",           "error",    {{no,          no,          no,        S::failed,   no,        no,        no}}},
  {"dependency-broken", "pause",    {{S::paused,   S::paused,   S::paused, S::paused,   S::paused, S::paused, S::paused}}},
  {"deleted",           "",         {{S::killed,   S::killed,   S::killed, S::killed,   no,        no,        no}}},
  {"redrive",           "redrive",  {{S::runnable, S::runnable, no,        no,          no,        no,        no}}},
}};
// clang-format on

const Row& row(SystemMove m) {
  return k_moves.at(static_cast<std::size_t>(m));
}

} // namespace

std::string_view to_string(SystemMove m) {
  return row(m).label;
}

std::string_view event_message(SystemMove m) {
  return row(m).event;
}

std::optional<TaskState> system_move(TaskState from, SystemMove m) {
  return row(m).to.at(static_cast<std::size_t>(from));
}

} // namespace taskq::core
