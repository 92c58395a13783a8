#pragma once

#include "core/state.hpp"

#include <array>
#include <optional>
#include <string_view>

namespace taskq::core {

// The moves taskq makes on its own, beside the messages of the transition
// table: what its error policy, attempt limit, roots, broadcasts and
// dependencies decide, and the moves of its bulk commands. Each is logged
// under taskq's own actor (redrive under the operator who asked) with the
// event message the table gives.
enum class SystemMove {
  wake_up,           // a sleeping task is leased: it runs again
  max_attempts,      // leased once too often: parked for an operator
  obsoleted,         // a live task has all of its root labels
  broadcast_ended,   // its time to live is over
  retry_later,       // the error policy gives it another try later
  give_up,           // the error policy (or --no-retry) says no more tries
  dependency_broken, // a task it waits for failed or was killed
  deleted,           // an unfinished task ends before it is deleted
  redrive,           // moved to another queue to start again
};

inline constexpr std::array<SystemMove, 9> k_all_system_moves{
    SystemMove::wake_up,
    SystemMove::max_attempts,
    SystemMove::obsoleted,
    SystemMove::broadcast_ended,
    SystemMove::retry_later,
    SystemMove::give_up,
    SystemMove::dependency_broken,
    SystemMove::deleted,
    SystemMove::redrive};

// Its label, as the move is named in tests and messages ("wake-up", ...).
std::string_view to_string(SystemMove m);

// The message its event carries ("run", "pause", ...); empty for a move
// that logs no event (deleted: the task and its events go with it).
std::string_view event_message(SystemMove m);

// The state `m` moves `from` to, or std::nullopt where `m` does not apply
// to a task in `from` (the state writer refuses it).
std::optional<TaskState> system_move(TaskState from, SystemMove m);

} // namespace taskq::core
