// The taskq command line, run in-process by the fuzz targets over cli/.
#pragma once

#include <string>
#include <vector>

namespace taskq::fuzz {

struct Result {
  int code = 0;      // the exit code taskq would exit with
  std::string out;   // what it printed on stdout
  std::string error; // the message of the error it ended with, if any
};

// Runs `taskq ARGS...` as main() would, capturing stdout.
Result run_taskq(std::vector<std::string> args);

} // namespace taskq::fuzz
