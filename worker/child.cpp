#include "worker/child.hpp"

#include "core/error.hpp"
#include "storage/seam/server_wait.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace taskq::worker {

Fd::~Fd() {
  reset();
}

Fd::Fd(Fd&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    reset();
    m_fd = std::exchange(other.m_fd, -1);
  }
  return *this;
}

void Fd::reset() {
  if (m_fd >= 0) {
    ::close(m_fd);
    m_fd = -1;
  }
}

namespace {

[[noreturn]] void fail_errno(const std::string& what) {
  throw Error(ErrorKind::internal, what + ": " + std::strerror(errno));
}

std::pair<Fd, Fd> make_pipe() {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
    fail_errno("cannot create a pipe");
  }
  return {Fd(fds[0]), Fd(fds[1])};
}

// The payload as a file: written once, rewound, and given as fd 0.
Fd payload_file(const std::string& data) {
  Fd fd(::memfd_create("taskq-payload", MFD_CLOEXEC));
  if (!fd) {
    fail_errno("cannot create the payload file");
  }
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      fail_errno("cannot write the payload file");
    }
    done += static_cast<size_t>(n);
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) {
    fail_errno("cannot rewind the payload file");
  }
  return fd;
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// posix_spawn's attributes and file actions, released when done.
struct SpawnSetup {
  posix_spawnattr_t attr{};
  posix_spawn_file_actions_t actions{};
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

} // namespace

Child Child::spawn(const ChildSpec& spec) {
  std::vector<char*> argv;
  for (const auto& a : spec.argv) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : spec.env) {
    envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);

  std::pair<Fd, Fd> in; // read end (the child's), write end
  if (spec.stdin_pipe) {
    in = make_pipe();
  } else {
    in.first = payload_file(spec.stdin_data);
  }
  std::pair<Fd, Fd> err;
  if (spec.capture_stderr) {
    err = make_pipe();
  }
  std::pair<Fd, Fd> out;
  if (spec.capture_stdout) {
    out = make_pipe();
  }

  // posix_spawn (glibc: clone with CLONE_VM | CLONE_VFORK) rather than
  // fork: no copy of run's page tables per task, and a failed exec comes
  // back as its result, with the child already reaped. The child leads a
  // process group of its own, with an empty signal mask and SIGPIPE at
  // its default; fds 0-2 are the payload or a pipe, the pipes and run's
  // own, and every other descriptor of ours is close-on-exec.
  SpawnSetup setup;
  sigset_t none;
  sigemptyset(&none);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setflags(&setup.attr, POSIX_SPAWN_SETPGROUP
                                            | POSIX_SPAWN_SETSIGMASK
                                            | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setsigmask(&setup.attr, &none);
  posix_spawnattr_setsigdefault(&setup.attr, &defaults);
  posix_spawn_file_actions_adddup2(&setup.actions, in.first.get(), 0);
  if (out.second) {
    posix_spawn_file_actions_adddup2(&setup.actions, out.second.get(), 1);
  }
  if (err.second) {
    posix_spawn_file_actions_adddup2(&setup.actions, err.second.get(), 2);
  }
  pid_t pid = -1;
  const int error = ::posix_spawn(&pid, spec.path.c_str(), &setup.actions,
                                  &setup.attr, argv.data(), envp.data());
  if (error != 0) {
    throw Error(ErrorKind::internal, "cannot run " + spec.argv.front() + ": "
                                         + std::strerror(error));
  }

  Child child;
  child.m_pid = pid;
  if (in.second) {
    set_nonblocking(in.second.get());
    child.m_stdin = std::move(in.second);
  }
  if (err.first) {
    set_nonblocking(err.first.get());
    child.m_stderr = std::move(err.first);
  }
  if (out.first) {
    set_nonblocking(out.first.get());
    child.m_stdout = std::move(out.first);
  }
  return child;
}

SignalFeed::SignalFeed() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  for (const int sig : {SIGINT, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_IGN) {
      sigaddset(&set, sig);
    }
  }
  ::sigprocmask(SIG_BLOCK, &set, &m_old);
  m_fd = Fd(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!m_fd) {
    const int error = errno;
    ::sigprocmask(SIG_SETMASK, &m_old, nullptr);
    errno = error;
    fail_errno("cannot watch signals");
  }
  m_old_pipe = ::signal(SIGPIPE, SIG_IGN);
  sigdelset(&set, SIGCHLD);
  m_stop_fd = Fd(::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  storage::set_wait_interrupt(m_stop_fd.get());
}

SignalFeed::~SignalFeed() {
  storage::set_wait_interrupt(-1);
  ::signal(SIGPIPE, m_old_pipe);
  ::sigprocmask(SIG_SETMASK, &m_old, nullptr);
}

std::vector<int> SignalFeed::take() {
  std::vector<int> out;
  signalfd_siginfo info{};
  while (::read(m_fd.get(), &info, sizeof info)
         == static_cast<ssize_t>(sizeof info)) {
    out.push_back(static_cast<int>(info.ssi_signo));
  }
  return out;
}

void Child::signal_group(int signal) const {
  if (m_pid > 0) { // never kill(1) or kill(-1) for a Child not started
    ::kill(-m_pid, signal);
  }
}

void Child::signal_leader(int signal) const {
  if (m_pid > 0) {
    ::kill(m_pid, signal);
  }
}

void Child::kill_and_wait() const {
  signal_group(SIGKILL);
  int status = 0;
  ::waitpid(m_pid, &status, 0);
}

core::ChildExit exit_of(int status) {
  return WIFSIGNALED(status) ? core::ChildExit{true, WTERMSIG(status)}
                             : core::ChildExit{false, WEXITSTATUS(status)};
}

std::optional<std::string> resolve_command(const std::string& name) {
  const auto runnable = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)
           && ::access(path.c_str(), X_OK) == 0;
  };
  if (name.empty()) {
    return std::nullopt;
  }
  if (name.find('/') != std::string::npos) {
    return runnable(name) ? std::optional(name) : std::nullopt;
  }
  const char* path_env = std::getenv("PATH");
  const std::string path = path_env != nullptr ? path_env : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) {
      end = path.size();
    }
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) {
      dir = ".";
    }
    const std::string candidate = dir + "/" + name;
    if (runnable(candidate)) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

bool read_available(int fd, std::string& out) {
  // Not zeroed: only what read() filled is used, and zeroing 64 KiB on
  // each call was a sixth of `run --stream`'s instructions.
  std::array<char, 65536> buf;
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n > 0) {
      out.append(buf.data(), static_cast<size_t>(n));
      continue;
    }
    if (n == 0) {
      return false;
    }
    if (errno == EINTR) {
      continue;
    }
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

} // namespace taskq::worker
