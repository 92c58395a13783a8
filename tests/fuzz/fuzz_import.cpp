// `taskq import FILE`, run in-process on each input as a JSON Lines file,
// into a new database in memory (/dev/shm). An import either fails with a
// one-line usage error (exit 2) and leaves the database without a task, or
// succeeds, after which `db check` passes and its export imports into
// another new database whose export is the same text.
#include <string>

#include "cli.hpp"
#include "fuzz.hpp"
#include "scratch.hpp"

using taskq::fuzz::as_text;
using taskq::fuzz::run_taskq;

namespace {

const taskq::fuzz::Scratch& scratch() {
  static const taskq::fuzz::Scratch s;
  return s;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("TASKQ_NOW", "2026-11-21T08:00:00Z", 1);
  ::setenv("TASKQ_WORKER", "fuzz", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& s = scratch();
  s.remove_db("a.db");
  s.remove_db("b.db");
  const std::string a = s.path("a.db");
  const std::string b = s.path("b.db");
  const std::string lines = s.write("in.jsonl", as_text(data, size));

  const auto imported = run_taskq({"--db", a, "import", lines});
  if (std::getenv("FUZZ_VERBOSE") != nullptr) { // replaying an input
    std::fprintf(stderr, "exit %d: %s\n%s", imported.code,
                 imported.error.c_str(), imported.out.c_str());
  }
  if (imported.code != 0) {
    if (imported.code != 2 || imported.error.find('\n') != std::string::npos) {
      std::fprintf(stderr, "import: exit %d: %s\n", imported.code,
                   imported.error.c_str());
    }
    FUZZ_REQUIRE(imported.code == 2);
    FUZZ_REQUIRE(imported.error.find('\n') == std::string::npos);
    const auto exported = run_taskq({"--db", a, "export"});
    FUZZ_REQUIRE(exported.code == 0 && exported.out.empty());
    return 0;
  }

  const auto check = run_taskq({"--db", a, "db", "check"});
  if (check.code != 0) {
    std::fprintf(stderr, "db check: exit %d: %s%s\n", check.code,
                 check.error.c_str(), check.out.c_str());
  }
  FUZZ_REQUIRE(check.code == 0);
  const auto first = run_taskq({"--db", a, "export"});
  FUZZ_REQUIRE(first.code == 0);
  const std::string again = s.write("again.jsonl", first.out);
  const auto reimported = run_taskq({"--db", b, "import", again});
  if (reimported.code != 0) {
    std::fprintf(stderr, "import of the export: exit %d: %s\n", reimported.code,
                 reimported.error.c_str());
  }
  FUZZ_REQUIRE(reimported.code == 0);
  const auto second = run_taskq({"--db", b, "export"});
  FUZZ_REQUIRE(second.code == 0 && second.out == first.out);
  return 0;
}
