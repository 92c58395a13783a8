#include "core/outcome.hpp"
#include "core/text.hpp"

#include <doctest/doctest.h>

#include <csignal>
#include <string>

using namespace std::chrono_literals;
namespace core = taskq::core;
using core::ChildExit;
using core::judge;
using core::StopCause;
using core::Verdict;

namespace {
ChildExit exited(int code) {
  return {false, code};
}
ChildExit killed_by(int signal) {
  return {true, signal};
}
} // namespace

TEST_CASE("a handler's exit status decides the task's fate") {
  CHECK(judge(exited(0), StopCause::none, {}, "").verdict == Verdict::complete);
  CHECK(judge(exited(75), StopCause::none, {}, "").verdict == Verdict::release);
  const auto failed = judge(exited(3), StopCause::none, {}, "");
  CHECK(failed.verdict == Verdict::fail);
  CHECK(failed.error == "exit status 3");
  CHECK(judge(exited(1), StopCause::none, {}, "").error == "exit status 1");
  CHECK(judge(exited(74), StopCause::none, {}, "").verdict == Verdict::fail);
  CHECK(judge(exited(76), StopCause::none, {}, "").verdict == Verdict::fail);
}

TEST_CASE("the tail of stderr follows the status in the error") {
  CHECK(judge(exited(2), StopCause::none, {}, "convert: bad header").error
        == "exit status 2: convert: bad header");
  CHECK(judge(killed_by(SIGSEGV), StopCause::none, {}, "x").error
        == "killed by SIGSEGV: x");
  // Nothing is written on success or release, whatever stderr held.
  CHECK(judge(exited(0), StopCause::none, {}, "warning").error.empty());
  CHECK(judge(exited(75), StopCause::none, {}, "busy").error.empty());
}

TEST_CASE("the whole error, status and tail, stays within the bound") {
  // A full tail (as OutputTail gives it) leaves no room for the status:
  // the tail gives up its front, so the stored error is at most the bound.
  core::OutputTail full;
  full.append(std::string(5000, 'x') + "END");
  REQUIRE(full.text().size() == core::k_max_error_bytes);
  for (const auto& o :
       {judge(exited(3), StopCause::none, {}, full.text()),
        judge(exited(255), StopCause::none, {}, full.text()),
        judge(killed_by(SIGSEGV), StopCause::none, {}, full.text()),
        judge(exited(0), StopCause::timeout, 90s, full.text())}) {
    CHECK(o.error.size() <= core::k_max_error_bytes);
    CHECK(o.error.size() >= core::k_max_error_bytes - 3);
    CHECK(o.error.substr(o.error.size() - 3) == "END");
  }
  CHECK(judge(exited(3), StopCause::none, {}, full.text())
            .error.rfind("exit status 3: x", 0)
        == 0);
  // A cut inside a multi-byte character moves past it: valid UTF-8, and
  // that whatever byte the cut falls on.
  for (const std::string_view status : {"exit status 3", "exit status 25"}) {
    std::string wide;
    while (wide.size() < core::k_max_error_bytes) {
      wide += "\xe2\x82\xac"; // the euro sign, three bytes
    }
    const auto o = judge(exited(status == "exit status 3" ? 3 : 25),
                         StopCause::none, {}, wide);
    CHECK(o.error.size() <= core::k_max_error_bytes);
    CHECK(core::to_valid_utf8(o.error) == o.error);
    CHECK(o.error.rfind(std::string(status) + ": \xe2\x82\xac", 0) == 0);
  }
  // A tail within the room left is kept whole.
  const std::string fits(core::k_max_error_bytes - 15, 'y');
  CHECK(judge(exited(3), StopCause::none, {}, fits).error
        == "exit status 3: " + fits);
}

TEST_CASE("a signal fails the task, naming the signal") {
  const auto o = judge(killed_by(SIGKILL), StopCause::none, {}, "");
  CHECK(o.verdict == Verdict::fail);
  CHECK(o.error == "killed by SIGKILL");
  // Even a signal whose number means "exit 0" or "75" elsewhere.
  CHECK(judge(killed_by(0 + SIGTERM), StopCause::none, {}, "").verdict
        == Verdict::fail);
}

TEST_CASE("a handler stopped at --timeout fails with the limit") {
  const auto o = judge(killed_by(SIGTERM), StopCause::timeout, 90s, "");
  CHECK(o.verdict == Verdict::fail);
  CHECK(o.error == "timed out after 1m30s");
  // However it then ended: the timeout is the reason.
  CHECK(judge(exited(0), StopCause::timeout, 2s, "half done").error
        == "timed out after 2s: half done");
}

TEST_CASE("at shutdown an unfinished handler's task is released") {
  CHECK(judge(killed_by(SIGTERM), StopCause::shutdown, {}, "").verdict
        == Verdict::release);
  CHECK(judge(exited(1), StopCause::shutdown, {}, "").verdict
        == Verdict::release);
  // One that still finished its work completes it.
  CHECK(judge(exited(0), StopCause::shutdown, {}, "").verdict
        == Verdict::complete);
}

TEST_CASE("a revoked lease writes nothing, however the handler ended") {
  for (const auto& e : {exited(0), exited(75), exited(3), killed_by(SIGKILL)}) {
    CHECK(judge(e, StopCause::revoked, 5s, "tail").verdict == Verdict::none);
  }
}

TEST_CASE("signal names and numbers") {
  CHECK(core::signal_name(SIGKILL) == "SIGKILL");
  CHECK(core::signal_name(SIGUSR1) == "SIGUSR1");
  CHECK(core::signal_name(SIGSEGV) == "SIGSEGV");
  CHECK(core::parse_signal("USR1") == SIGUSR1);
  CHECK(core::parse_signal("SIGUSR2") == SIGUSR2);
  CHECK(core::parse_signal("sighup") == SIGHUP);
  CHECK(core::parse_signal("10") == 10);
  CHECK_FALSE(core::parse_signal(""));
  CHECK_FALSE(core::parse_signal("0"));
  CHECK_FALSE(core::parse_signal("999"));
  CHECK_FALSE(core::parse_signal("12345678901234567890"));
  CHECK_FALSE(core::parse_signal("USR3"));
  CHECK_FALSE(core::parse_signal("SIG"));
  CHECK_FALSE(core::parse_signal("-9"));
}

TEST_CASE("the output tail keeps the last non-blank lines") {
  core::OutputTail tail;
  CHECK(tail.text().empty());
  tail.append("one\ntwo\n");
  CHECK(tail.text() == "one\ntwo");
  tail.append("three\n\n   \nfour\r\nfive\nsix\nseven");
  // At most five lines; blank ones and trailing \r and spaces dropped.
  CHECK(tail.text() == "three\nfour\nfive\nsix\nseven");
}

TEST_CASE("lines arriving in pieces join up") {
  core::OutputTail tail;
  tail.append("par");
  tail.append("tial li");
  tail.append("ne\nnext");
  CHECK(tail.text() == "partial line\nnext");
}

TEST_CASE("the output tail stays within its byte bound") {
  core::OutputTail tail;
  const std::string line(300, 'x');
  for (int i = 0; i < 1000; ++i) {
    tail.append(line + "\n");
  }
  const std::string text = tail.text();
  CHECK(text.size() <= core::OutputTail::k_max_bytes);
  CHECK(text.size() >= 4 * 300); // several whole lines survive
  // One very long line is cut at the front, keeping its end.
  core::OutputTail long_line;
  long_line.append(std::string(10000, 'a') + "END");
  const std::string cut = long_line.text();
  CHECK(cut.size() == core::OutputTail::k_max_bytes);
  CHECK(cut.substr(cut.size() - 3) == "END");
}

TEST_CASE("the output tail is valid UTF-8 even when cut mid-character") {
  core::OutputTail tail;
  tail.append("caf\xc3\xa9\n\xff broken\n");
  CHECK(tail.text() == "caf\xc3\xa9\n\xef\xbf\xbd broken");
  core::OutputTail cut;
  // 'é' is two bytes; an odd number of them puts the cut inside one.
  std::string many;
  for (int i = 0; i < 1501; ++i) {
    many += "\xc3\xa9";
  }
  cut.append(many);
  CHECK(taskq::core::to_valid_utf8(cut.text()) == cut.text());
}

TEST_CASE("the output tail's bound holds after UTF-8 repair") {
  // Each invalid byte becomes the three bytes of U+FFFD: the bound is on
  // what is stored, so the repaired text is cut again, on a character.
  core::OutputTail tail;
  tail.append(std::string(5000, '\xff'));
  const std::string text = tail.text();
  CHECK(text.size() <= core::OutputTail::k_max_bytes);
  CHECK(text.size() > core::OutputTail::k_max_bytes - 3);
  CHECK(core::is_valid_utf8(text));
  CHECK(text.substr(0, 3) == "\xef\xbf\xbd");
  // The error judge() builds from it: the status, then as much of that
  // tail's end as the same bound leaves room for, on a character.
  const auto o = judge(exited(1), StopCause::none, {}, text);
  CHECK(o.error.size() <= core::k_max_error_bytes);
  CHECK(o.error.size() > core::k_max_error_bytes - 3);
  CHECK(core::is_valid_utf8(o.error));
  CHECK(o.error.rfind("exit status 1: \xef\xbf\xbd", 0) == 0);

  // A cut inside the repaired text keeps the end and whole lines after it,
  // and leaves no blank first line.
  core::OutputTail lines;
  lines.append(std::string(1000, '\xfe') + "\nlast line\n");
  const std::string cut = lines.text();
  CHECK(cut.size() <= core::OutputTail::k_max_bytes);
  CHECK(core::is_valid_utf8(cut));
  CHECK(cut.substr(cut.size() - 10) == "\nlast line");
  CHECK(cut.front() != '\n');

  // A window that starts inside a valid character does not turn its
  // remaining bytes into replacement characters.
  core::OutputTail euro;
  std::string text3;
  for (int i = 0; i < 700; ++i) {
    text3 += "\xe2\x82\xac"; // U+20AC, three bytes
  }
  euro.append(text3 + "x"); // 2101 bytes: the raw cut lands mid-character
  const std::string e = euro.text();
  CHECK(e.size() <= core::OutputTail::k_max_bytes);
  CHECK(e.find("\xef\xbf\xbd") == std::string::npos);
  CHECK(e.back() == 'x');
}

TEST_CASE("the output tail is the same however the output was split") {
  // append() trims its buffer when it passes twice the bound; a trim inside
  // a character must not leave its trailing bytes to be repaired into
  // U+FFFD (found by tests/fuzz, fuzz_outcome). Here the trim falls 13
  // bytes into the line below, inside its fifth U+20AC.
  const std::string filler(2000, 'a');
  std::string line;
  for (int i = 0; i < 667; ++i) {
    line += "\xe2\x82\xac";
  }
  line += std::string(11, ' ') + "\n";
  std::string want; // the last 2000 bytes, from the first whole character
  for (int i = 0; i < 662; ++i) {
    want += "\xe2\x82\xac";
  }
  core::OutputTail at_once;
  at_once.append(filler + line);
  CHECK(at_once.text() == want);
  core::OutputTail in_two;
  in_two.append(filler);
  in_two.append(line);
  CHECK(in_two.text() == want);
  core::OutputTail bytewise;
  for (const char c : filler + line) {
    bytewise.append(std::string_view(&c, 1));
  }
  CHECK(bytewise.text() == want);
}
