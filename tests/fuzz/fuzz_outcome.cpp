// The stderr tail a failed handler's error keeps (core::OutputTail, and the
// error core::judge builds from it): within core::k_max_error_bytes, valid
// UTF-8, at most k_max_lines non-blank lines without trailing white space,
// the same however the output arrived in pieces, and equal to a reference
// for short valid text.
#include "core/outcome.hpp"
#include "core/text.hpp"

#include <string>
#include <vector>

#include "fuzz.hpp"

namespace core = taskq::core;
using taskq::fuzz::Bytes;

namespace {

// The last k_max_lines non-blank lines of `text`, right-trimmed, joined.
std::string reference(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    auto line = text.substr(start, end - start);
    while (
        !line.empty()
        && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    if (!line.empty()) {
      lines.push_back(line);
    }
    start = end + 1;
  }
  std::string out;
  const size_t first = lines.size() > core::OutputTail::k_max_lines
                           ? lines.size() - core::OutputTail::k_max_lines
                           : 0;
  for (size_t i = first; i < lines.size(); ++i) {
    if (!out.empty()) {
      out += '\n';
    }
    out += lines[i];
  }
  return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  const int code = in.byte();
  const uint8_t piece = in.byte(); // the size of the pieces it arrives in
  const auto text = in.rest();

  core::OutputTail whole;
  whole.append(text);
  core::OutputTail pieces;
  const size_t step = piece == 0 ? 1 : piece * size_t{7};
  for (size_t i = 0; i < text.size(); i += step) {
    pieces.append(text.substr(i, step));
  }

  const std::string tail = whole.text();
  FUZZ_REQUIRE(pieces.text() == tail);
  FUZZ_REQUIRE(tail.size() <= core::OutputTail::k_max_bytes);
  FUZZ_REQUIRE(core::is_valid_utf8(tail));
  size_t lines = 0;
  for (size_t start = 0; !tail.empty() && start <= tail.size();) {
    auto end = tail.find('\n', start);
    if (end == std::string::npos) {
      end = tail.size();
    }
    FUZZ_REQUIRE(end > start); // no blank line
    const char last = tail[end - 1];
    FUZZ_REQUIRE(last != ' ' && last != '\t' && last != '\r');
    ++lines;
    start = end + 1;
  }
  FUZZ_REQUIRE(lines <= core::OutputTail::k_max_lines);
  if (text.size() <= core::OutputTail::k_max_bytes
      && core::is_valid_utf8(text)) {
    FUZZ_REQUIRE(tail == reference(text));
  }

  // The stored error: the status, then the tail, the whole within the
  // bound.
  const core::ChildExit exit{(code & 0x80) != 0, code & 0x7f};
  const auto outcome = core::judge(exit, core::StopCause::none, {}, tail);
  if (outcome.verdict == core::Verdict::fail) {
    FUZZ_REQUIRE(outcome.error.size() <= core::k_max_error_bytes);
    FUZZ_REQUIRE(core::is_valid_utf8(outcome.error));
  }
  return 0;
}
