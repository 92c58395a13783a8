// Handler processes, real ones (/bin/sh): how a process's end becomes its
// task's outcome, what it is given (stdin, environment), and how the
// engine stops it and the processes it started (a revoked lease, a
// timeout, a shutdown).
#include "core/error.hpp"
#include "core/handler_env.hpp"
#include "core/outcome.hpp"
#include "worker/child.hpp"
#include "worker/supervise.hpp"

#include <doctest/doctest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <poll.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
namespace core = taskq::core;
namespace worker = taskq::worker;

namespace {

worker::ChildSpec sh(const std::string& script) {
  worker::ChildSpec spec;
  spec.path = "/bin/sh";
  spec.argv = {"sh", "-c", script};
  spec.env = {"PATH=/usr/bin:/bin"};
  return spec;
}

// Waits for `child` to end.
core::ChildExit wait_exit(const worker::Child& child) {
  int status = 0;
  while (::waitpid(child.pid(), &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    return {true, WTERMSIG(status)};
  }
  return {false, WEXITSTATUS(status)};
}

// Everything `fd` gives until its end.
std::string read_all(worker::Fd& fd) {
  std::string out;
  while (true) {
    pollfd p{fd.get(), POLLIN, 0};
    ::poll(&p, 1, 5000);
    if (!worker::read_available(fd.get(), out)) {
      return out;
    }
  }
}

// Runs `script` to its end: its outcome as `run` judges it.
core::Outcome run_to_end(const std::string& script,
                         core::StopCause cause = core::StopCause::none) {
  auto spec = sh(script);
  spec.capture_stderr = true;
  auto child = worker::Child::spawn(spec);
  core::OutputTail tail;
  tail.append(read_all(child.stderr_pipe()));
  return core::judge(wait_exit(child), cause, core::Millis{2s}, tail.text());
}

// Whether process `pid` is gone (or a zombie no one reaped yet).
bool gone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (::kill(pid, 0) != 0) {
      return true;
    }
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size()
        && line[close + 2] == 'Z') {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

} // namespace

TEST_CASE("a handler that exits 0 completes its task") {
  CHECK(run_to_end("exit 0").verdict == core::Verdict::complete);
}

TEST_CASE("a handler that exits 75 gives its task back") {
  CHECK(run_to_end("exit 75").verdict == core::Verdict::release);
}

TEST_CASE("any other exit status fails the task, naming it") {
  const auto o = run_to_end("exit 3");
  CHECK(o.verdict == core::Verdict::fail);
  CHECK(o.error == "exit status 3");
}

TEST_CASE("the error ends with the last lines the handler wrote on stderr") {
  const auto o = run_to_end("echo starting >&2; echo 'bad header' >&2; exit 2");
  CHECK(o.error == "exit status 2: starting\nbad header");
}

TEST_CASE("a handler killed by a signal fails with the signal's name") {
  const auto o = run_to_end("kill -TERM $$");
  CHECK(o.verdict == core::Verdict::fail);
  CHECK(o.error == "killed by SIGTERM");
}

TEST_CASE("a handler stopped at --timeout fails as timed out") {
  const auto o = run_to_end("kill -KILL $$", core::StopCause::timeout);
  CHECK(o.verdict == core::Verdict::fail);
  CHECK(o.error == "timed out after 2s");
}

TEST_CASE("a handler stopped by a shutdown gives its task back") {
  CHECK(run_to_end("kill -TERM $$", core::StopCause::shutdown).verdict
        == core::Verdict::release);
  // Unless it finished all the same.
  CHECK(run_to_end("exit 0", core::StopCause::shutdown).verdict
        == core::Verdict::complete);
}

TEST_CASE("a revoked lease's handler writes nothing, whatever its end") {
  CHECK(run_to_end("exit 0", core::StopCause::revoked).verdict
        == core::Verdict::none);
  CHECK(run_to_end("kill -KILL $$", core::StopCause::revoked).verdict
        == core::Verdict::none);
}

TEST_CASE("stopping a handler's group stops what it started too") {
  // The handler starts a grandchild and waits: a revoked lease or a
  // timeout stops the whole process group.
  auto spec = sh("sleep 30 & echo $!; wait");
  spec.capture_stdout = true;
  auto child = worker::Child::spawn(spec);
  std::string out;
  for (int i = 0; i < 500 && out.find('\n') == std::string::npos; ++i) {
    pollfd p{child.stdout_pipe().get(), POLLIN, 0};
    ::poll(&p, 1, 10);
    worker::read_available(child.stdout_pipe().get(), out);
  }
  const pid_t grandchild = std::stoi(out);
  CHECK(::getpgid(grandchild) == child.pid()); // it leads the group
  child.signal_group(SIGKILL);
  const auto exit = wait_exit(child);
  CHECK(exit.signaled);
  CHECK(exit.code == SIGKILL);
  CHECK(gone(grandchild));
}

TEST_CASE("signalling the leader alone leaves the rest of the group") {
  auto spec = sh("trap 'echo got; exit 0' USR1; echo ready; "
                 "while :; do sleep 0.01; done");
  spec.capture_stdout = true;
  auto child = worker::Child::spawn(spec);
  std::string out;
  for (int i = 0; i < 500 && out.find("ready") == std::string::npos; ++i) {
    pollfd p{child.stdout_pipe().get(), POLLIN, 0};
    ::poll(&p, 1, 10);
    worker::read_available(child.stdout_pipe().get(), out);
  }
  child.signal_leader(SIGUSR1);
  out += read_all(child.stdout_pipe());
  CHECK(out == "ready\ngot\n");
  CHECK(wait_exit(child).code == 0);
}

TEST_CASE("a checkpoint signal goes only to a handler that catches it") {
  auto catching_spec =
      sh("trap 'exit 0' USR1; echo ready; while :; do sleep 0.01; done");
  catching_spec.capture_stdout = true;
  auto catching = worker::Child::spawn(catching_spec);
  auto plain = worker::Child::spawn(sh("exec sleep 30"));
  // Give both time to set up (the trap, the exec).
  bool caught = false;
  for (int i = 0; i < 300 && !caught; ++i) {
    caught = worker::catches_signal(catching.pid(), SIGUSR1);
    std::this_thread::sleep_for(10ms);
  }
  CHECK(caught);
  std::this_thread::sleep_for(50ms);
  CHECK_FALSE(worker::catches_signal(plain.pid(), SIGUSR1));
  catching.signal_group(SIGKILL);
  plain.signal_group(SIGKILL);
  wait_exit(catching);
  wait_exit(plain);
}

TEST_CASE("a process that cannot be told is taken to catch the signal") {
  CHECK(worker::catches_signal(-1, SIGUSR1));
}

TEST_CASE("a per-task handler reads its payload on stdin") {
  auto spec = sh("cat");
  spec.stdin_data = core::payload_text(R"("line one\nline two")");
  spec.capture_stdout = true;
  auto child = worker::Child::spawn(spec);
  CHECK(read_all(child.stdout_pipe()) == "line one\nline two");
  CHECK(wait_exit(child).code == 0);
}

TEST_CASE("a stream handler's stdin is a pipe the engine writes") {
  auto spec = sh("read line; echo \"got $line\"");
  spec.stdin_pipe = true;
  spec.capture_stdout = true;
  auto child = worker::Child::spawn(spec);
  const std::string task = "{\"task\":{\"id\":1}}\n";
  CHECK(::write(child.stdin_pipe().get(), task.data(), task.size())
        == static_cast<ssize_t>(task.size()));
  child.stdin_pipe().reset();
  CHECK(read_all(child.stdout_pipe()) == "got {\"task\":{\"id\":1}}\n");
  wait_exit(child);
}

TEST_CASE("a handler's environment is exactly the one made for its task") {
  core::Task t;
  t.id = 12;
  t.queue = "thumbs";
  t.attempts = 1;
  t.payload = R"({"f":"a.png"})";
  t.lease = core::Lease{"tok", "w", core::Time{}};
  const char* envp[] = {"PATH=/usr/bin:/bin", "TASKQ_ID=99", nullptr};
  auto spec = sh("env | grep ^TASKQ_ | sort");
  spec.env =
      core::task_environment(
          t, core::inherited_environment(envp, core::HandlerKind::per_task),
          "/q.db", "w1")
          .env;
  spec.capture_stdout = true;
  auto child = worker::Child::spawn(spec);
  CHECK(read_all(child.stdout_pipe())
        == "TASKQ_ATTEMPT=1\nTASKQ_DB=/q.db\nTASKQ_ID=12\nTASKQ_LEASE=tok\n"
           "TASKQ_PAYLOAD={\"f\":\"a.png\"}\nTASKQ_QUEUE=thumbs\n"
           "TASKQ_SYNC={}\nTASKQ_WORKER=w1\n");
  wait_exit(child);
}

TEST_CASE("a stream handler knows its number") {
  auto spec = sh("echo $TASKQ_HANDLER $TASKQ_ID");
  spec.env = core::stream_environment({"PATH=/bin"}, "/q.db", "w", 3);
  spec.capture_stdout = true;
  auto child = worker::Child::spawn(spec);
  CHECK(read_all(child.stdout_pipe()) == "3\n");
  wait_exit(child);
}

TEST_CASE("a program that cannot be run is an internal error") {
  worker::ChildSpec spec;
  spec.path = "/nonexistent/handler";
  spec.argv = {"handler"};
  try {
    worker::Child::spawn(spec);
    FAIL("started");
  } catch (const taskq::Error& e) {
    CHECK(e.kind() == taskq::ErrorKind::internal);
    CHECK(std::string(e.what()).starts_with("cannot run handler: "));
  }
}

TEST_CASE("a command is found on $PATH, or taken as a path") {
  const auto found = worker::resolve_command("sh");
  REQUIRE(found.has_value());
  CHECK(found->ends_with("/sh"));
  CHECK(worker::resolve_command("/bin/sh") == "/bin/sh");
  CHECK_FALSE(worker::resolve_command("taskq-no-such-command").has_value());
  CHECK_FALSE(worker::resolve_command("/nonexistent/x").has_value());
}
