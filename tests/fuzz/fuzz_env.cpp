// `lease -o env` (core::env_lines, which print_env prints): the assignments,
// read the way a POSIX shell's `eval` reads them (a small re-implementation
// of sh quoting; tests/fuzz/env_sh runs real shells on the corpus), set
// TASKQ_PAYLOAD to the payload (a JSON string's contents, else its JSON
// text; or, for a string a shell cannot hold, one with a NUL, its JSON
// text), and every other variable to its value. The input is a payload's
// JSON text, or, when it is not JSON, the contents of a JSON string
// payload; shell_quote is also read back on the input's bytes as they are.
#include "core/handler_env.hpp"
#include "core/json_text.hpp"
#include "core/text.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "fuzz.hpp"

namespace core = taskq::core;
using taskq::fuzz::as_text;

namespace {

bool name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Characters a shell takes literally outside quotes.
bool plain_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
         || (c >= '0' && c <= '9')
         || std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
}

// Reads `export NAME=WORD` lines as sh does, with WORD made of plain
// characters, '...' (literal up to the next quote) and \C outside quotes;
// anything a shell would expand, split or refuse (a NUL byte) is refused.
// std::nullopt when the text is not exactly such lines.
std::optional<std::map<std::string, std::string>>
read_assignments(std::string_view text) {
  std::map<std::string, std::string> vars;
  size_t i = 0;
  while (i < text.size()) {
    if (text.substr(i, 7) != "export ") {
      return std::nullopt;
    }
    i += 7;
    const size_t name_start = i;
    while (i < text.size() && name_char(text[i])) {
      ++i;
    }
    if (i == name_start || i >= text.size() || text[i] != '=') {
      return std::nullopt;
    }
    const std::string name(text.substr(name_start, i - name_start));
    ++i;
    std::string value;
    while (true) {
      if (i >= text.size()) {
        return std::nullopt; // the last line ends with a newline
      }
      const char c = text[i];
      if (c == '\0') {
        return std::nullopt; // a shell cannot hold it
      }
      if (c == '\n') {
        ++i;
        break;
      }
      if (c == '\'') {
        const size_t close = text.find('\'', i + 1);
        if (close == std::string_view::npos) {
          return std::nullopt; // eval: unterminated quoted string
        }
        const auto quoted = text.substr(i + 1, close - i - 1);
        if (quoted.find('\0') != std::string_view::npos) {
          return std::nullopt;
        }
        value += quoted;
        i = close + 1;
      } else if (c == '\\') {
        if (i + 1 >= text.size() || text[i + 1] == '\n'
            || text[i + 1] == '\0') {
          return std::nullopt;
        }
        value += text[i + 1];
        i += 2;
      } else if (plain_char(c)) {
        value += c;
        ++i;
      } else {
        return std::nullopt;
      }
    }
    vars[name] = value;
  }
  return vars;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto input = as_text(data, size);
  // shell_quote: any bytes read back, less the NULs no shell can hold.
  {
    const auto vars =
        read_assignments("export X=" + core::shell_quote(input) + "\n");
    FUZZ_REQUIRE(vars.has_value());
    std::string expected(input);
    std::erase(expected, '\0');
    FUZZ_REQUIRE(vars->at("X") == expected);
  }

  std::string payload;
  if (core::json_valid(input)) {
    payload = core::minify_json(input);
  } else if (core::is_valid_utf8(input)) {
    payload = nlohmann::json(std::string(input)).dump();
  } else {
    return 0;
  }

  core::Task task;
  task.id = 7;
  task.queue = "q";
  task.attempts = 1;
  task.payload = payload;
  task.checkpoint = payload;
  task.lease = core::Lease{"tok-en", "w", core::Time{}};
  const std::string text = core::env_lines(task);
  const auto vars = read_assignments(text);
  if (!vars) {
    std::fprintf(stderr, "not eval-safe:\n%s\n", text.c_str());
  }
  FUZZ_REQUIRE(vars.has_value());
  FUZZ_REQUIRE(vars->at("TASKQ_ID") == "7");
  FUZZ_REQUIRE(vars->at("TASKQ_LEASE") == "tok-en");
  FUZZ_REQUIRE(vars->at("TASKQ_QUEUE") == "q");
  FUZZ_REQUIRE(vars->at("TASKQ_ATTEMPT") == "1");
  FUZZ_REQUIRE(vars->at("TASKQ_CHECKPOINT") == payload);
  FUZZ_REQUIRE(vars->at("TASKQ_SYNC") == "{}");

  const std::string& value = vars->at("TASKQ_PAYLOAD");
  if (payload.front() != '"') {
    FUZZ_REQUIRE(value == payload);
  } else {
    // The string itself; its JSON text only for one a shell cannot hold.
    const auto s = nlohmann::json::parse(payload).get<std::string>();
    const bool has_nul = s.find('\0') != std::string::npos;
    FUZZ_REQUIRE(value == (has_nul ? payload : s));
  }
  return 0;
}
