#pragma once

#include "cli/context.hpp"

#include <CLI/CLI.hpp>

#include <span>
#include <string_view>

namespace taskq::cli {

// One row per top-level command: the one list of them. `taskq --help`
// lists the rows with a heading, in this order, under their heading;
// `taskq __command-table` prints them for the completion scripts (completions/
// ask the binary, so they hold no list of their own); run() registers only
// `add`'s group of commands when argv names one (start-up). taskq(1) is
// checked against it by tests/cli/help.sh.
struct CommandRow {
  std::string_view name;
  // The heading of `taskq --help` it is listed under; empty: hidden (the
  // completion scripts' helpers), listed nowhere.
  std::string_view heading;
  // Its line in `taskq --help` and in zsh's and fish's completion menus.
  std::string_view summary;
  // Registers the command (and the other commands of its cli/cmd_*.cpp);
  // nullptr for those run_tree() adds itself (help, __command-table), which
  // need the whole tree.
  void (*add)(CLI::App& app, Context& ctx);
};

std::span<const CommandRow> command_table();

// The row of the command `name`; nullptr when no row names it.
const CommandRow* command_row(std::string_view name);

} // namespace taskq::cli
