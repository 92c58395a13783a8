// `taskq tx FILE`, run in-process on each input as the document, against a
// copy of a small database (in /dev/shm): tasks 1-3 runnable (3 waits for
// 1), task 4 leased; `@TOKEN@` in the input stands for task 4's lease token.
// A document either applies (exit 0, printing JSON) and `db check` passes,
// or is refused with a one-line error (exit 2, 3 or 4) and the database
// exports exactly as before. Exit 1 (an internal error) is a failure.
#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>
#include <string>

#include "cli.hpp"
#include "fuzz.hpp"
#include "scratch.hpp"

using taskq::fuzz::as_text;
using taskq::fuzz::run_taskq;

namespace {

struct Template {
  taskq::fuzz::Scratch scratch;
  std::string db_bytes;  // the database file, closed
  std::string wal_bytes; // and its WAL (taskq closes without a checkpoint)
  std::string exported;  // its `export`
  std::string token;     // task 4's lease

  Template() {
    const std::string db = scratch.path("template.db");
    auto taskq = [&](std::vector<std::string> args) {
      args.insert(args.begin(), {"--db", db});
      const auto r = run_taskq(args);
      if (r.code != 0) {
        std::fprintf(stderr, "fuzz_tx setup: exit %d: %s\n", r.code,
                     r.error.c_str());
        std::abort();
      }
      return r.out;
    };
    taskq({"add", "q", "--payload", R"({"n":1})", "--label", "env=prod"});
    taskq({"add", "q", "--payload", R"("two")", "--priority", "5"});
    taskq({"add", "other", "--after", "1"});
    taskq({"add", "lease", "--payload", "[4]"});
    const std::string env = taskq({"lease", "lease", "-o", "json"});
    token = nlohmann::json::parse(env).at("lease").at("token");
    exported = taskq({"export"});
    db_bytes = read(db);
    wal_bytes = read(db + "-wal");
    FUZZ_REQUIRE(!db_bytes.empty());
  }

  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }
};

const Template& base() {
  static const Template t;
  return t;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("TASKQ_NOW", "2026-11-21T08:00:00Z", 1);
  ::setenv("TASKQ_WORKER", "fuzz", 1);
  base();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto& t = base();
  std::string doc(as_text(data, size));
  for (size_t at = 0; (at = doc.find("@TOKEN@", at)) != std::string::npos;) {
    doc.replace(at, 7, t.token);
    at += t.token.size();
  }
  t.scratch.remove_db("work.db");
  const std::string db = t.scratch.write("work.db", t.db_bytes);
  t.scratch.write("work.db-wal", t.wal_bytes);
  const std::string file = t.scratch.write("doc.json", doc);

  const auto r = run_taskq({"--db", db, "tx", file});
  if (std::getenv("FUZZ_VERBOSE") != nullptr) { // replaying an input
    std::fprintf(stderr, "exit %d: %s\n%s", r.code, r.error.c_str(),
                 r.out.c_str());
  }
  if (r.code != 0 && r.code != 2 && r.code != 3 && r.code != 4) {
    std::fprintf(stderr, "tx: exit %d: %s\n", r.code, r.error.c_str());
  }
  FUZZ_REQUIRE(r.code == 0 || r.code == 2 || r.code == 3 || r.code == 4);
  if (r.code != 0) {
    FUZZ_REQUIRE(!r.error.empty());
    FUZZ_REQUIRE(r.error.find('\n') == std::string::npos);
    const auto exported = run_taskq({"--db", db, "export"});
    if (exported.out != t.exported) {
      std::fprintf(stderr,
                   "tx refused (exit %d: %s) but changed the database:\n"
                   "before: %s\nafter: %s\n",
                   r.code, r.error.c_str(), t.exported.c_str(),
                   exported.out.c_str());
    }
    FUZZ_REQUIRE(exported.code == 0 && exported.out == t.exported);
    return 0;
  }
  FUZZ_REQUIRE(nlohmann::json::accept(r.out));
  const auto check = run_taskq({"--db", db, "db", "check"});
  if (check.code != 0) {
    std::fprintf(stderr, "db check: exit %d: %s%s\n", check.code,
                 check.error.c_str(), check.out.c_str());
  }
  FUZZ_REQUIRE(check.code == 0);
  return 0;
}
