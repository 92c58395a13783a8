// The taskq executable: cli::run (the static library taskq_cli) and the
// one place a command's error becomes its message and exit code.
#include "cli/entry.hpp"
#include "core/error.hpp"

#include <exception>
#include <string>

int main(int argc, char** argv) {
  try {
    return taskq::cli::run(argc, argv);
  } catch (const taskq::Error& e) {
    taskq::cli::print_error(e.what());
    return taskq::cli::exit_code_for(e.kind());
  } catch (const std::exception& e) {
    taskq::cli::print_error(std::string("internal error: ") + e.what());
    return taskq::cli::exit_code_for(taskq::ErrorKind::internal);
  }
}
