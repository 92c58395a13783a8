#include "core/state.hpp"
#include "core/system_moves.hpp"

#include <doctest/doctest.h>

#include <array>
#include <set>
#include <string>
#include <string_view>

using taskq::core::SystemMove;
using taskq::core::TaskState;
namespace core = taskq::core;

namespace {

struct Row {
  std::string_view label;
  std::string_view event;
  // What the move does to a task in each of k_all_states; "-": it does
  // not apply.
  std::array<std::string_view, 7> to;
};

// The table of taskq's own moves, copied by hand, rows in
// k_all_system_moves order.
// clang-format off
constexpr std::array<Row, 9> k_expected{{
    //                                   runnable     sleeping    paused    fault       completed  failed    killed
    {"wake-up",           "run",      {"-",         "runnable", "-",      "-",        "-",       "-",      "-"}},
    {"max-attempts",      "pause",    {"paused",    "paused",   "-",      "-",        "-",       "-",      "-"}},
    {"obsoleted",         "kill",     {"killed",    "killed",   "-",      "-",        "-",       "-",      "-"}},
    {"broadcast-ended",   "complete", {"completed", "-",        "-",      "-",        "-",       "-",      "-"}},
    {"retry-later",       "sleep",    {"-",         "-",        "-",      "sleeping", "-",       "-",      "-"}},
    {"give-up",           "error",    {"-",         "-",        "-",      "failed",   "-",       "-",      "-"}},
    {"dependency-broken", "pause",    {"paused",    "paused",   "paused", "paused",   "paused",  "paused", "paused"}},
    {"deleted",           "",         {"killed",    "killed",   "killed", "killed",   "-",       "-",      "-"}},
    {"redrive",           "redrive",  {"runnable",  "runnable", "-",      "-",        "-",       "-",      "-"}},
}};
// clang-format on

} // namespace

TEST_CASE("every cell of the table of taskq's own moves") {
  REQUIRE(core::k_all_system_moves.size() == k_expected.size());
  std::set<std::string_view> labels;
  for (std::size_t r = 0; r < k_expected.size(); ++r) {
    const SystemMove m = core::k_all_system_moves.at(r);
    const Row& row = k_expected.at(r);
    CAPTURE(row.label);
    CHECK(core::to_string(m) == row.label);
    CHECK(core::event_message(m) == row.event);
    CHECK(labels.insert(row.label).second);
    for (std::size_t c = 0; c < core::k_all_states.size(); ++c) {
      const TaskState from = core::k_all_states.at(c);
      CAPTURE(core::to_string(from));
      const auto got = core::system_move(from, m);
      if (row.to.at(c) == "-") {
        CHECK_FALSE(got);
      } else {
        REQUIRE(got);
        CHECK(core::to_string(*got) == row.to.at(c));
      }
    }
  }
}

TEST_CASE("a move logged under a message's name is one that message allows") {
  // Only the dependency's pause reaches further than the pause message
  // (a killed task still counting what it waits for is paused), and only
  // deletion and redrive have no message of their own.
  for (const SystemMove m : core::k_all_system_moves) {
    CAPTURE(core::to_string(m));
    const auto msg = core::parse_message(core::event_message(m));
    if (m == SystemMove::deleted || m == SystemMove::redrive) {
      CHECK_FALSE(msg);
      continue;
    }
    REQUIRE(msg);
    for (const TaskState from : core::k_all_states) {
      const auto to = core::system_move(from, m);
      if (!to
          || (m == SystemMove::dependency_broken && from != TaskState::runnable
              && from != TaskState::sleeping && from != TaskState::paused)) {
        continue;
      }
      CAPTURE(core::to_string(from));
      CHECK(core::transition(from, *msg) == to);
    }
  }
}

TEST_CASE("no move of taskq's own leaves a finished task but the dependency's "
          "pause") {
  for (const SystemMove m : core::k_all_system_moves) {
    for (const TaskState from : core::k_all_states) {
      if (core::is_terminal(from) && m != SystemMove::dependency_broken) {
        CAPTURE(core::to_string(m));
        CHECK_FALSE(core::system_move(from, m));
      }
    }
  }
}
