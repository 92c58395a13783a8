// cli/main.cpp for the fuzz targets: its main() becomes taskq_cli_main(),
// since libFuzzer brings its own; cli.hpp declares what the targets call.
#include "cli.hpp"

// Everything cli/main.cpp includes, first, so the rename below reaches its
// main() alone.
#include "cli/commands.hpp"
#include "core/error.hpp"

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <string_view>

#define main taskq_cli_main
#include "cli/main.cpp"
#undef main

namespace taskq::fuzz {

Result run_taskq(std::vector<std::string> args) {
  args.insert(args.begin(), "taskq");
  std::vector<char*> argv;
  for (auto& a : args) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);

  Result r;
  char* out = nullptr;
  size_t out_size = 0;
  std::FILE* const saved = stdout;
  stdout = ::open_memstream(&out, &out_size);
  try {
    r.code = cli::run(static_cast<int>(args.size()), argv.data());
  } catch (const Error& e) {
    r.code = cli::exit_code_for(e.kind());
    r.error = e.what();
  } catch (const std::exception& e) {
    r.code = cli::k_exit_failure;
    r.error = std::string("internal error: ") + e.what();
  }
  std::fclose(stdout);
  stdout = saved;
  r.out.assign(out, out_size);
  std::free(out);
  return r;
}

} // namespace taskq::fuzz
