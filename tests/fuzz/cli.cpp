// The taskq command line in-process for the fuzz targets (cli.hpp): what
// cli/main.cpp's main() does, its stdout captured.
#include "cli.hpp"

#include "cli/commands.hpp"
#include "core/error.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

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
