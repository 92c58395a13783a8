// The taskq executable: cli::run (the static library taskq_cli) and the
// one place a command's error becomes its message and exit code.
#include "cli/entry.hpp"
#include "core/error.hpp"
#include "core/suggestion.hpp"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

// The bytes of `word` as hex digits: a suggestion's words may be any bytes,
// which JSON strings cannot hold.
std::string hex(const std::string& word) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out;
  for (const char c : word) {
    const auto b = static_cast<unsigned char>(c);
    out += k_digits[b >> 4];
    out += k_digits[b & 15];
  }
  return out;
}

// TASKQ_TEST_SUGGESTIONS=FILE (set by tests/cli/run): each suggestion taskq
// renders is appended to FILE as one JSON line,
// {"text_hex":"...","argv_hex":["...",...]}, the text and the argv meant
// (after "taskq") as hex bytes; the harness runs each text through sh and
// checks the argv. A FILE that cannot be written is passed over.
void record_suggestion(const std::string& text,
                       const std::vector<std::string>& args) {
  const char* path = std::getenv("TASKQ_TEST_SUGGESTIONS");
  if (path == nullptr || *path == '\0') {
    return;
  }
  std::string line = "{\"text_hex\":\"" + hex(text) + "\",\"argv_hex\":[";
  for (size_t i = 0; i < args.size(); ++i) {
    line += (i == 0 ? "\"" : ",\"") + hex(args[i]) + "\"";
  }
  line += "]}\n";
  if (std::FILE* f = std::fopen(path, "a")) {
    std::fputs(line.c_str(), f);
    std::fclose(f);
  }
}

} // namespace

int main(int argc, char** argv) {
  if (std::getenv("TASKQ_TEST_SUGGESTIONS") != nullptr) {
    taskq::core::set_suggestion_sink(&record_suggestion);
  }
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
