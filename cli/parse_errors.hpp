// The command line's errors as one line each, before and after CLI11
// parses it: unknown commands and options with the nearest suggestion,
// and CLI11's parse errors reworded to name the command and its help.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace taskq::cli {

// Where the subcommand's name is in argv (0 when none).
int subcommand_index(int argc, char** argv);
// Before CLI11 parses: a command or group subcommand that does not exist is
// named as such (a usage error, with the nearest name when there is one).
void check_command_words(CLI::App& app, int argc, char** argv);
// A CLI11 parse error as one line that names the command and points to
// its help.
std::string parse_error_message(CLI::App& app, const CLI::ParseError& e);

} // namespace taskq::cli
