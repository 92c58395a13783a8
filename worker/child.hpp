#pragma once

#include "core/outcome.hpp"

#include <csignal>
#include <optional>
#include <string>
#include <sys/types.h>
#include <sys/wait.h>
#include <vector>

namespace taskq::worker {

// An owned file descriptor, closed on destruction.
class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : m_fd(fd) {}
  ~Fd();
  Fd(Fd&& other) noexcept;
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return m_fd; }
  explicit operator bool() const { return m_fd >= 0; }
  void reset();

private:
  int m_fd = -1;
};

// What to start: a program by argv, never through a shell.
struct ChildSpec {
  std::string path;              // the executable, as resolve_command found it
  std::vector<std::string> argv; // argv[0] is the name as the user gave it
  std::vector<std::string> env;  // the whole environment, KEY=VALUE
  std::string stdin_data;        // what the child reads on stdin
  bool stdin_pipe = false;       // else stdin is a file holding stdin_data
  bool capture_stdout = false;   // else stdout is inherited
  bool capture_stderr = true;    // else stderr is inherited
};

// A handler process of `taskq run`. It leads its own process group, so a
// terminal's Ctrl-C reaches only `run`, and stopping the group reaches the
// processes the handler started too. Its stdin is a sealed in-memory file
// holding the payload (no pipe to keep fed, so a child that never reads
// cannot block `run`), or for a `--stream` handler a pipe that `run`
// writes to; its stderr and stdout, when captured, are pipes that the run
// loop reads. Every pipe end of ours is non-blocking.
class Child {
public:
  // Starts `spec`. Throws Error(internal) naming the reason when the
  // program cannot be executed.
  static Child spawn(const ChildSpec& spec);

  pid_t pid() const { return m_pid; }
  Fd& stdin_pipe() { return m_stdin; }
  Fd& stderr_pipe() { return m_stderr; }
  Fd& stdout_pipe() { return m_stdout; }

  // Sends `signal` to the whole process group (ignored once it is gone).
  void signal_group(int signal) const;
  // Sends `signal` to the handler process alone.
  void signal_leader(int signal) const;
  // Kills the whole process group and waits for the handler to end: what
  // `run` does to a handler it leaves on an error.
  void kill_and_wait() const;

private:
  pid_t m_pid = -1;
  Fd m_stdin;
  Fd m_stderr;
  Fd m_stdout;
};

// Blocks SIGCHLD and the signals that stop `run` (SIGTERM, SIGINT, SIGHUP)
// for its loop, which reads them from a signalfd; restores the mask when
// done. Handlers get an empty mask. SIGINT and SIGHUP are left alone when
// `run` started with them ignored, as a shell does for a background job
// and nohup for SIGHUP: blocked, they would reach the signalfd all the
// same. SIGPIPE is ignored meanwhile: a closed stderr, or a stream handler
// that closed its stdin, must not kill the worker mid-task.
class SignalFeed {
public:
  SignalFeed();
  ~SignalFeed();
  SignalFeed(const SignalFeed&) = delete;
  SignalFeed& operator=(const SignalFeed&) = delete;

  int fd() const { return m_fd.get(); }

  // The signals that arrived, in order.
  std::vector<int> take();

private:
  Fd m_fd;
  // The stop signals alone (not SIGCHLD), for storage to watch while it
  // waits for a database server (storage::set_wait_interrupt): never
  // read, so the signal stays pending for m_fd.
  Fd m_stop_fd;
  sigset_t m_old{};
  void (*m_old_pipe)(int) = SIG_DFL;
};

// How a process ended, from its wait status.
core::ChildExit exit_of(int status);

// Reaps, without blocking, every child process that has ended, calling
// on_end(pid, status) for each.
template <typename F> void reap_ended(F&& on_end) {
  while (true) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      return;
    }
    on_end(pid, status);
  }
}

// The executable `name` runs as: itself when it holds a '/', else the first
// match on $PATH; std::nullopt when there is none that can be executed.
std::optional<std::string> resolve_command(const std::string& name);

// Reads what `fd` (non-blocking) has now into `out`; false at end of file.
bool read_available(int fd, std::string& out);

} // namespace taskq::worker
