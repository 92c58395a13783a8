#include "cli/child.hpp"

#include "core/error.hpp"

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace taskq::cli {

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

} // namespace

Child Child::spawn(const ChildSpec& spec) {
  // Everything the child needs is prepared before fork: between fork and
  // exec only async-signal-safe calls are allowed.
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

  Fd in = payload_file(spec.stdin_data);
  auto [err_read, err_write] = make_pipe();
  std::pair<Fd, Fd> out;
  if (spec.capture_stdout) {
    out = make_pipe();
  }
  // Reports a failed exec's errno to the parent; closed by a successful one.
  auto [exec_read, exec_write] = make_pipe();

  const pid_t pid = ::fork();
  if (pid < 0) {
    fail_errno("cannot start " + spec.argv.front());
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(in.get(), 0);
    if (out.second) {
      ::dup2(out.second.get(), 1);
    }
    ::dup2(err_write.get(), 2);
    ::execve(spec.path.c_str(), argv.data(), envp.data());
    const int error = errno;
    [[maybe_unused]] const ssize_t n =
        ::write(exec_write.get(), &error, sizeof error);
    ::_exit(127);
  }
  // Also here, so a signal sent right after spawn() finds the group.
  ::setpgid(pid, pid);
  exec_write.reset();
  int error = 0;
  ssize_t n = 0;
  do {
    n = ::read(exec_read.get(), &error, sizeof error);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof error)) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    throw Error(ErrorKind::internal, "cannot run " + spec.argv.front() + ": "
                                         + std::strerror(error));
  }

  Child child;
  child.m_pid = pid;
  set_nonblocking(err_read.get());
  child.m_stderr = std::move(err_read);
  if (out.first) {
    set_nonblocking(out.first.get());
    child.m_stdout = std::move(out.first);
  }
  return child;
}

void Child::signal_group(int signal) const {
  ::kill(-m_pid, signal);
}

void Child::signal_leader(int signal) const {
  ::kill(m_pid, signal);
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
  std::array<char, 65536> buf{};
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

} // namespace taskq::cli
