#include "core/outcome.hpp"

#include "core/duration.hpp"
#include "core/text.hpp"

#include <cctype>
#include <csignal>
#include <cstring>
#include <vector>

namespace taskq::core {
namespace {

bool is_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xc0) == 0x80;
}

// `what: tail`, at most k_max_error_bytes: what the bound leaves no room
// for goes from the tail's front (its oldest output), on a character and
// without leaving a blank first line, as OutputTail::text() cuts.
std::string with_tail(std::string what, std::string_view tail) {
  if (tail.empty()) {
    return what;
  }
  const std::string valid = to_valid_utf8(tail);
  std::string_view rest(valid);
  const size_t room = what.size() + 2 < k_max_error_bytes
                          ? k_max_error_bytes - what.size() - 2
                          : 0;
  if (rest.size() > room) {
    rest.remove_prefix(rest.size() - room);
    while (!rest.empty()
           && (is_continuation(rest.front()) || rest.front() == '\n')) {
      rest.remove_prefix(1);
    }
  }
  if (!rest.empty()) {
    what += ": ";
    what += rest;
  }
  return what;
}

} // namespace

std::string signal_name(int signal) {
  if (const char* abbrev = ::sigabbrev_np(signal)) {
    return std::string("SIG") + abbrev;
  }
  return "signal " + std::to_string(signal);
}

std::optional<int> parse_signal(std::string_view text) {
  if (text.empty()) {
    return std::nullopt;
  }
  if (text.find_first_not_of("0123456789") == std::string_view::npos) {
    if (text.size() > 3) {
      return std::nullopt;
    }
    const int n = std::stoi(std::string(text));
    return n >= 1 && n < NSIG && ::sigabbrev_np(n) != nullptr ? std::optional(n)
                                                              : std::nullopt;
  }
  std::string name;
  for (const char c : text) {
    name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  if (name.rfind("SIG", 0) == 0) {
    name.erase(0, 3);
  }
  for (int n = 1; n < NSIG; ++n) {
    const char* abbrev = ::sigabbrev_np(n);
    if (abbrev != nullptr && name == abbrev) {
      return n;
    }
  }
  return std::nullopt;
}

Outcome judge(const ChildExit& exit, StopCause cause,
              std::optional<Millis> timeout, std::string_view stderr_tail) {
  const bool success = !exit.signaled && exit.code == 0;
  switch (cause) {
  case StopCause::revoked:
    return {Verdict::none, {}};
  case StopCause::shutdown:
    return {success ? Verdict::complete : Verdict::release, {}};
  case StopCause::timeout:
    return {Verdict::fail,
            with_tail("timed out after "
                          + format_duration(timeout.value_or(Millis{0})),
                      stderr_tail)};
  case StopCause::none:
    break;
  }
  if (success) {
    return {Verdict::complete, {}};
  }
  if (!exit.signaled && exit.code == 75) {
    return {Verdict::release, {}};
  }
  if (exit.signaled) {
    return {Verdict::fail,
            with_tail("killed by " + signal_name(exit.code), stderr_tail)};
  }
  return {Verdict::fail,
          with_tail("exit status " + std::to_string(exit.code), stderr_tail)};
}

void OutputTail::append(std::string_view data) {
  m_buffer.append(data);
  if (m_buffer.size() > 2 * k_max_bytes) {
    // One byte more than text() keeps, so that text() still sees that the
    // output was longer and cuts it as it would the whole output.
    m_buffer.erase(0, m_buffer.size() - k_max_bytes - 1);
  }
}

std::string OutputTail::text() const {
  std::string_view rest(m_buffer);
  if (rest.size() > k_max_bytes) {
    rest.remove_prefix(rest.size() - k_max_bytes);
    // Not inside a character: its other bytes would each be repaired.
    for (int i = 0; i < 3 && !rest.empty() && is_continuation(rest.front());
         ++i) {
      rest.remove_prefix(1);
    }
  }
  // Walk back over the lines, keeping the last non-blank ones.
  std::vector<std::string_view> lines;
  while (!rest.empty() && lines.size() < k_max_lines) {
    const size_t nl = rest.find_last_of('\n');
    std::string_view line =
        nl == std::string_view::npos ? rest : rest.substr(nl + 1);
    rest =
        nl == std::string_view::npos ? std::string_view{} : rest.substr(0, nl);
    while (
        !line.empty()
        && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.remove_suffix(1);
    }
    if (!line.empty()) {
      lines.push_back(line);
    }
  }
  std::string out;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (!out.empty()) {
      out += '\n';
    }
    out += *it;
  }
  // The bound is on the repaired text, which can be three times longer
  // (each stray byte becomes U+FFFD): cut it again at the front, on a
  // character, and without leaving a blank first line.
  out = to_valid_utf8(out);
  if (out.size() > k_max_bytes) {
    size_t cut = out.size() - k_max_bytes;
    while (cut < out.size()
           && (is_continuation(out[cut]) || out[cut] == '\n')) {
      ++cut;
    }
    out.erase(0, cut);
  }
  return out;
}

} // namespace taskq::core
