// What cli/main.cpp calls: the command line run, and how its errors are
// reported. Without CLI11's headers, so that main.cpp adds no start-up
// work of its own.
#pragma once

#include "core/error.hpp"

#include <string_view>

namespace taskq::cli {

// Parses argv, runs the chosen command, returns the exit code. Throws
// taskq::Error for main() to report.
int run(int argc, char** argv);

// The exit code of an error of `kind`: 2 usage, 3 not found, 4 conflict,
// 5 unavailable, 1 (k_exit_failure) for anything else.
int exit_code_for(ErrorKind kind);
// The one place errors are printed: "taskq: <what>[: <why>]", one line on
// stderr, its control characters made printable.
void print_error(std::string_view message);

} // namespace taskq::cli
