// taskq_silent_proxy: a TCP proxy that can fall silent, for tests of what
// taskq does when its database server stops answering without closing the
// connection (a network partition, a frozen host, a dropped NAT entry):
//
//   taskq_silent_proxy --to TARGET [--port-file FILE]
//
// It listens on 127.0.0.1, on a free port, and writes that port to FILE
// (written beside it, then renamed: a reader never sees half of it) or,
// without --port-file, prints it as the first line of stdout. TARGET is
// HOST:PORT (TCP) or the absolute path of a Unix socket (PostgreSQL's
// /tmp/x/.s.PGSQL.5432). Each client connection gets its own connection to
// TARGET and bytes go both ways; when one side closes, so does the other.
// Signals say what to do:
//
//   SIGUSR1  cut for ever: each connection open now is no longer served,
//            neither read nor written, and never closed (no FIN, no RST)
//            until the proxy exits; connections accepted later pass
//   SIGUSR2  pause: no connection is served (those accepted meanwhile get
//            their connection to TARGET once healed); bytes wait in the
//            kernel's buffers
//   SIGHUP   heal: paused connections are served again (what was held goes
//            through); those cut for ever stay cut
//   SIGTERM, SIGINT  exit, closing everything
//
// Each signal acted on is said on stderr ("silent_proxy: cut 3 connections
// for ever", "paused", "healed"), so that a test can await it; errors too,
// with the same prefix. Nothing else is printed. One thread, one poll(2)
// loop; signals, blocked, are read from a signalfd and acted on first in
// each round, before new connections are accepted.
#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <string>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

namespace {

// Bytes held for a side that does not take them yet; past this, the
// other side is no longer read (the kernel then pushes back on it).
constexpr std::size_t k_max_held = 256 * 1024;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "silent_proxy: %s: %s\n", what.c_str(),
               std::strerror(errno));
  std::exit(1);
}

// One client connection and its own connection to TARGET.
struct Pair {
  int client = -1;
  int upstream = -1;       // -1 until first served (not while paused)
  bool connecting = false; // a non-blocking connect(2) is under way
  bool cut = false;        // SIGUSR1: never served, never closed
  bool ending = false;     // one side closed: deliver what is held, then close
  bool dead = false;       // both closed; removed after this round
  std::string to_upstream; // read from the client, not yet written
  std::string to_client;
};

sockaddr_storage g_target{};
socklen_t g_target_len = 0;

// TARGET as an address, resolved once (a name is looked up at start).
void parse_target(const std::string& to) {
  if (to.starts_with("/")) {
    sockaddr_un un{};
    if (to.size() >= sizeof un.sun_path) {
      errno = ENAMETOOLONG;
      die("--to " + to);
    }
    un.sun_family = AF_UNIX;
    std::memcpy(un.sun_path, to.c_str(), to.size() + 1);
    std::memcpy(&g_target, &un, sizeof un);
    g_target_len = sizeof un;
    return;
  }
  const auto colon = to.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    std::fprintf(stderr,
                 "silent_proxy: --to %s: expected HOST:PORT or "
                 "/path/of/a/unix/socket\n",
                 to.c_str());
    std::exit(2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int e = getaddrinfo(to.substr(0, colon).c_str(),
                            to.substr(colon + 1).c_str(), &hints, &found);
  if (e != 0) {
    std::fprintf(stderr, "silent_proxy: --to %s: %s\n", to.c_str(),
                 gai_strerror(e));
    std::exit(2);
  }
  std::memcpy(&g_target, found->ai_addr, found->ai_addrlen);
  g_target_len = found->ai_addrlen;
  freeaddrinfo(found);
}

void close_pair(Pair& p) {
  for (int fd : {p.client, p.upstream}) {
    if (fd >= 0) {
      close(fd);
    }
  }
  p.client = p.upstream = -1;
  p.dead = true;
}

// Starts the connection to TARGET; a failure closes the client too (it
// sees the end of its connection, as from a server that is not there).
void open_upstream(Pair& p) {
  p.upstream =
      socket(g_target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (p.upstream < 0) {
    std::fprintf(stderr, "silent_proxy: socket: %s\n", std::strerror(errno));
    close_pair(p);
    return;
  }
  if (connect(p.upstream, reinterpret_cast<const sockaddr*>(&g_target),
              g_target_len)
      == 0) {
    return;
  }
  if (errno == EINPROGRESS) {
    p.connecting = true;
    return;
  }
  std::fprintf(stderr, "silent_proxy: connect: %s\n", std::strerror(errno));
  close_pair(p);
}

// Reads what `from` has into `held`; false when it closed or failed.
bool take(int from, std::string& held) {
  char buf[65536];
  const ssize_t n = recv(from, buf, sizeof buf, MSG_DONTWAIT);
  if (n > 0) {
    held.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

// Writes what `to` takes of `held`; false when it failed (the peer left).
bool give(int to, std::string& held) {
  if (held.empty()) {
    return true;
  }
  const ssize_t n =
      send(to, held.data(), held.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n >= 0) {
    held.erase(0, static_cast<std::size_t>(n));
    return true;
  }
  return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

// fd's entry in the poll set: POLLIN when `read`, POLLOUT when bytes wait
// for it. Asked nothing, it is left out (fd -1), so that a hang-up it no
// longer needs to hear about does not wake the loop over and over.
pollfd entry(int fd, bool read, const std::string& outgoing) {
  const auto events = static_cast<short>((read ? POLLIN : 0)
                                         | (outgoing.empty() ? 0 : POLLOUT));
  return {events != 0 ? fd : -1, events, 0};
}

// Acts on the signals that came (SIGUSR1 cuts `pairs`, SIGUSR2 and SIGHUP
// set `paused`); false when one of them says to exit.
bool on_signals(int sigfd, std::vector<Pair>& pairs, bool& paused) {
  signalfd_siginfo si{};
  while (read(sigfd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
      return false;
    }
    if (si.ssi_signo == SIGUSR1) {
      int n = 0;
      for (Pair& p : pairs) {
        n += p.cut ? 0 : 1;
        p.cut = true;
      }
      std::fprintf(stderr, "silent_proxy: cut %d connections for ever\n", n);
    } else {
      paused = si.ssi_signo == SIGUSR2;
      std::fprintf(stderr, "silent_proxy: %s\n", paused ? "paused" : "healed");
    }
  }
  return true;
}

} // namespace

int main(int argc, char** argv) {
  std::string to;
  std::string port_file;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--to" || arg == "--port-file") && i + 1 < argc) {
      (arg == "--to" ? to : port_file) = argv[++i];
    } else {
      to.clear();
      break;
    }
  }
  if (to.empty()) {
    std::fprintf(stderr, "usage: taskq_silent_proxy --to HOST:PORT|/SOCKET "
                         "[--port-file FILE]\n");
    return 2;
  }
  parse_target(to);

  // Blocked first, so that none of them arrives but through the signalfd.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGUSR1, SIGUSR2, SIGHUP, SIGTERM, SIGINT}) {
    sigaddset(&signals, s);
  }
  if (sigprocmask(SIG_BLOCK, &signals, nullptr) != 0) {
    die("sigprocmask");
  }
  const int sigfd = signalfd(-1, &signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sigfd < 0) {
    die("signalfd");
  }

  const int lfd =
      socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (lfd < 0 || bind(lfd, reinterpret_cast<sockaddr*>(&addr), len) != 0
      || listen(lfd, 128) != 0
      || getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    die("listen on 127.0.0.1");
  }
  const std::string port = std::to_string(ntohs(addr.sin_port)) + "\n";
  if (port_file.empty()) {
    std::fputs(port.c_str(), stdout);
    std::fflush(stdout);
  } else {
    const std::string tmp = port_file + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr || std::fputs(port.c_str(), f) < 0 || std::fclose(f) != 0
        || std::rename(tmp.c_str(), port_file.c_str()) != 0) {
      die("--port-file " + port_file);
    }
  }

  std::vector<Pair> pairs;
  bool paused = false;
  std::vector<pollfd> fds;
  std::vector<std::size_t> served; // pairs[served[k]] is at fds[2 + 2k]
  while (true) {
    // Indices into pairs stay valid from here to the end of the round.
    std::erase_if(pairs, [](const Pair& p) { return p.dead; });
    fds.assign({{sigfd, POLLIN, 0}, {lfd, POLLIN, 0}});
    served.clear();
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      Pair& p = pairs[i];
      if (p.cut || paused) {
        continue;
      }
      if (p.upstream < 0) {
        open_upstream(p);
        if (p.dead) {
          continue;
        }
      }
      served.push_back(i);
      const bool reads = !p.ending && !p.connecting;
      fds.push_back(entry(p.client, reads && p.to_upstream.size() < k_max_held,
                          p.to_client));
      fds.push_back(p.connecting
                        ? pollfd{p.upstream, POLLOUT, 0}
                        : entry(p.upstream,
                                reads && p.to_client.size() < k_max_held,
                                p.to_upstream));
    }
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      die("poll");
    }

    if (fds[0].revents != 0) {
      if (!on_signals(sigfd, pairs, paused)) {
        for (Pair& p : pairs) {
          close_pair(p);
        }
        return 0;
      }
      continue; // the events below were asked for before the signals
    }
    if (fds[1].revents != 0) {
      int c = 0;
      while ((c = accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC))
             >= 0) {
        pairs.emplace_back().client = c;
      }
    }
    for (std::size_t k = 0; k < served.size(); ++k) {
      Pair& p = pairs[served[k]];
      const short cev = fds[2 + 2 * k].revents;
      const short uev = fds[3 + 2 * k].revents;
      if (p.connecting && uev != 0) {
        int err = 0;
        socklen_t n = sizeof err;
        getsockopt(p.upstream, SOL_SOCKET, SO_ERROR, &err, &n);
        if (err != 0) {
          std::fprintf(stderr, "silent_proxy: connect: %s\n",
                       std::strerror(err));
          close_pair(p);
          continue;
        }
        p.connecting = false;
      }
      if ((cev & (POLLIN | POLLHUP | POLLERR)) != 0 && !p.ending) {
        p.ending = !take(p.client, p.to_upstream);
      }
      if ((uev & (POLLIN | POLLHUP | POLLERR)) != 0 && !p.ending
          && !p.connecting) {
        p.ending = !take(p.upstream, p.to_client);
      }
      // Write at once what was just read; a failed write ends the pair.
      if (!give(p.client, p.to_client)
          || (!p.connecting && !give(p.upstream, p.to_upstream))) {
        close_pair(p);
        continue;
      }
      if (p.ending && p.to_client.empty()
          && (p.to_upstream.empty() || p.connecting)) {
        close_pair(p);
      }
    }
  }
}
