// Options and checks shared by several command groups, and print_error,
// the one place errors are printed. The command line's mistakes are
// cli/mistakes.cpp's.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/suggestion.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::cli {

void add_policy_options(CLI::App* cmd, PolicyArgs& args) {
  cmd->add_option("--max-errors", args.max_errors,
                  "errors within the window that fail the task (default 8)")
      ->type_name("N");
  cmd->add_option("--error-window", args.error_window,
                  "window errors are counted in (default 4h)")
      ->type_name("DUR");
  cmd->add_option("--retry-delay", args.retry_delay,
                  "sleep after an error (default 10m)")
      ->type_name("DUR");
  cmd->add_option("--backoff", args.backoff,
                  "constant or exponential (doubles the delay per error)")
      ->type_name("KIND");
  cmd->add_option("--max-delay", args.max_delay,
                  "cap of the exponential delay (default 24h)")
      ->type_name("DUR");
}

core::PolicyOverrides to_overrides(const PolicyArgs& args) {
  core::PolicyOverrides p;
  if (args.max_errors) {
    if (*args.max_errors < 1 || *args.max_errors > 1000000) {
      throw Error(ErrorKind::usage,
                  "--max-errors must be between 1 and 1000000");
    }
    p.max_errors = static_cast<int>(*args.max_errors);
  }
  p.window = parse_duration_arg(args.error_window, "--error-window");
  if (p.window && p.window->count() == 0) {
    throw Error(ErrorKind::usage, "--error-window must be longer than 0");
  }
  p.retry_delay = parse_duration_arg(args.retry_delay, "--retry-delay");
  if (args.backoff) {
    p.backoff = core::parse_backoff(*args.backoff);
    if (!p.backoff) {
      throw Error(ErrorKind::usage,
                  "invalid --backoff '" + *args.backoff
                      + "': expected constant or exponential");
    }
  }
  p.max_delay = parse_duration_arg(args.max_delay, "--max-delay");
  return p;
}

void check_name(const std::string& name, std::string_view what) {
  if (!core::is_valid_name(name)) {
    throw Error(ErrorKind::usage,
                "invalid " + std::string(what) + " name '" + name
                    + "': use 1-128 letters, digits and . _ : / -");
  }
}

void check_queue_name(const std::string& name) {
  check_name(name, "queue");
}

std::optional<std::string> payload_arg(const OptText& payload,
                                       const OptText& text) {
  if (payload && text) {
    throw Error(ErrorKind::usage, "give only one of --payload and --text");
  }
  if (payload) {
    if (const auto why = core::json_error(*payload)) {
      throw Error(ErrorKind::usage,
                  "invalid JSON for --payload: " + *why
                      + "; to store plain text, use --text STRING");
    }
    return minify_json(*payload);
  }
  if (text) {
    if (!core::is_valid_utf8(*text)) {
      throw Error(ErrorKind::usage, "--text is not valid UTF-8");
    }
    return json_string(*text);
  }
  return std::nullopt;
}

std::vector<std::string> parse_states(const std::string& text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    std::string name = text.substr(
        at, comma == std::string::npos ? std::string::npos : comma - at);
    if (name.empty()) {
      throw Error(ErrorKind::usage,
                  "invalid --state '" + text
                      + "': expected state names separated by commas");
    }
    if (!core::parse_state(name) && name != "running" && name != "ready"
        && name != "erred") {
      throw Error(ErrorKind::usage,
                  "unknown state '" + name
                      + "': expected runnable, sleeping, paused, completed, "
                        "failed, killed, running, ready or erred");
    }
    out.push_back(std::move(name));
    if (comma == std::string::npos) {
      return out;
    }
    at = comma + 1;
  }
}

// --- the command line's errors ------------------------------------------

namespace {

// An error is one line of text, whatever the input it quotes: control
// characters (a newline would split the message, an escape sequence would
// drive the terminal) and bytes that are not UTF-8 are shown escaped, as
// \n, \t, \r, \xNN or \u0080-\u009f.
std::string printable(std::string_view text) {
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += text[i++];
      continue;
    }
    if (byte == '\n' || byte == '\t' || byte == '\r') {
      out += byte == '\n' ? "\\n" : byte == '\t' ? "\\t" : "\\r";
      ++i;
      continue;
    }
    size_t length = 0;
    if (byte >= 0xc2 && byte <= 0xf4) {
      length = byte < 0xe0 ? 2 : byte < 0xf0 ? 3 : 4;
      if (!core::is_valid_utf8(text.substr(i, length))) {
        length = 0;
      }
    }
    if (length == 2 && byte == 0xc2
        && static_cast<unsigned char>(text[i + 1]) < 0xa0) {
      const auto c1 = static_cast<unsigned char>(text[i + 1]);
      out += "\\u00";
      out += k_hex[c1 >> 4];
      out += k_hex[c1 & 0xf];
      i += 2;
    } else if (length > 0) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out += "\\x";
      out += k_hex[byte >> 4];
      out += k_hex[byte & 0xf];
      ++i;
    }
  }
  return out;
}

} // namespace

void print_error(std::string_view message) {
  const std::string line = "taskq: " + printable(message) + "\n";
  std::fputs(line.c_str(), stderr);
}

} // namespace taskq::cli
