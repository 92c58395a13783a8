// Every wait for the PostgreSQL server bounded: the process's settings
// (storage/server_wait.hpp), a deadline that a signal to stop shortens,
// exchanges driven from our own poll, and connections made in a thread of
// their own (storage/pg/wire.hpp).

#include "storage/pg/wire.hpp"

#include "storage/server_wait.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <memory>
#include <mutex>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace taskq::storage {

namespace {

core::Millis g_answer_timeout = k_default_answer_timeout;
std::optional<std::chrono::steady_clock::time_point> g_limit;
int g_interrupt_fd = -1;

} // namespace

void set_answer_timeout(core::Millis bound) { g_answer_timeout = bound; }
core::Millis answer_timeout() { return g_answer_timeout; }
void set_wait_limit(std::optional<std::chrono::steady_clock::time_point> at) {
  g_limit = at;
}
void set_wait_interrupt(int fd) { g_interrupt_fd = fd; }

} // namespace taskq::storage

namespace taskq::storage::pg {

using libpq::pq;
using libpq::Result;

namespace {

Instant now() { return std::chrono::steady_clock::now(); }

} // namespace

Deadline::Deadline(std::optional<core::Millis> bound)
    : m_bound(bound), m_start(now()) {
  if (bound) {
    m_at = m_start + *bound;
  }
}

Instant Deadline::end() const {
  Instant at = m_at.value_or(Instant::max());
  if (g_limit) {
    // A wait begun at or past the limit still gets the allowance: a live
    // server answers within it, a silent one is given up on.
    at = std::min(at, std::max(*g_limit, m_start + k_stop_allowance));
  }
  if (m_cap) {
    at = std::min(at, *m_cap);
  }
  return at;
}

bool Deadline::passed() const { return now() >= end(); }

void Deadline::extend(core::Millis more) { m_at = now() + more; }

bool Deadline::stopping() const {
  return m_cap.has_value() || (g_limit && now() >= *g_limit);
}

bool Deadline::wait(int fd, short events) {
  while (true) {
    const Instant at = end();
    const Instant t = now();
    if (t >= at) {
      return false;
    }
    int timeout = -1;
    if (at != Instant::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(at - t);
      timeout = static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
    }
    // The stop's descriptor is watched until it is first seen readable
    // (its owner reads it once the wait is over).
    pollfd fds[2] = {{fd, events, 0}, {g_interrupt_fd, POLLIN, 0}};
    const nfds_t n = g_interrupt_fd >= 0 && !m_cap ? 2 : 1;
    const int rc = ::poll(fds, n, timeout);
    if (rc < 0 && errno != EINTR) {
      return true; // let libpq meet the error itself
    }
    if (rc > 0 && n == 2 && fds[1].revents != 0) {
      m_cap = now() + k_stop_allowance;
    }
    if (rc > 0 && fds[0].revents != 0) {
      return true;
    }
  }
}

void Deadline::wait_until(int fd, Instant until) {
  const std::optional<Instant> at = m_at;
  m_at = m_at ? std::min(*m_at, until) : until;
  wait(fd, POLLIN);
  m_at = at;
}

bool await_results(PGconn* conn, Deadline& d, std::vector<Result>& results) {
  const int sock = pq().PQsocket(conn);
  while (true) {
    int flushed = 0;
    while ((flushed = pq().PQflush(conn)) == 1) {
      // Read meanwhile: the server may be waiting for us to take its
      // answers before it reads more.
      if (!d.wait(sock, POLLOUT | POLLIN)) {
        return false;
      }
      if (pq().PQconsumeInput(conn) == 0) {
        break; // broken: the results say so
      }
    }
    while (flushed == 0 && pq().PQisBusy(conn) == 1) {
      if (!d.wait(sock, POLLIN)) {
        return false;
      }
      if (pq().PQconsumeInput(conn) == 0) {
        break;
      }
    }
    // A broken connection has no socket left: libpq's own wait in
    // PQgetResult returns at once with the error.
    PGresult* r = pq().PQgetResult(conn);
    if (r == nullptr) {
      return true;
    }
    results.emplace_back(r);
  }
}

Result exec_within(PGconn* conn, const char* sql, Deadline& d) {
  if (pq().PQsendQuery(conn, sql) == 0) {
    return nullptr;
  }
  std::vector<Result> results;
  if (!await_results(conn, d, results) || results.empty()) {
    return nullptr;
  }
  for (Result& r : results) {
    const auto status = pq().PQresultStatus(r.get());
    if (status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE) {
      return std::move(r);
    }
  }
  return std::move(results.back());
}

void add_keepalives(ConnectParams& params, core::Millis bound) {
  const int64_t s = std::max<int64_t>(1, bound.count() / 1000);
  params.add("keepalives", "1");
  params.add("keepalives_idle", std::to_string(std::max<int64_t>(1, s / 2)));
  params.add("keepalives_interval",
             std::to_string(std::max<int64_t>(1, s / 6)));
  params.add("keepalives_count", "3");
  params.add("tcp_user_timeout",
             std::to_string(std::max<int64_t>(1000, bound.count())));
}

namespace {

// A connection being made in its thread, shared with the thread: whoever
// is last to let go closes the eventfd; an abandoned connection is closed
// by the thread.
struct Pending {
  std::mutex m;
  PGconn* conn = nullptr;
  bool done = false;
  bool abandoned = false;
  int efd = -1;
  ~Pending() {
    if (efd >= 0) {
      ::close(efd);
    }
  }
};

PGconn* connect_now(const ConnectParams& params) {
  std::vector<const char*> keys;
  std::vector<const char*> values;
  for (size_t i = 0; i < params.keys.size(); ++i) {
    keys.push_back(params.keys[i].c_str());
    values.push_back(params.values[i].c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  return pq().PQconnectdbParams(keys.data(), values.data(), 1);
}

PGconn* made(PGconn* c) {
  if (c != nullptr && pq().PQstatus(c) == CONNECTION_OK) {
    pq().PQsetnonblocking(c, 1);
  }
  return c;
}

} // namespace

PGconn* connect_within(const ConnectParams& params, Deadline& d) {
  // Nothing could end the wait before libpq's connect_timeout does (a
  // one-shot command, which a signal simply kills): no thread to pay for.
  if (!d.bound() && g_interrupt_fd < 0 && !g_limit) {
    return made(connect_now(params));
  }
  auto pending = std::make_shared<Pending>();
  pending->efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (pending->efd < 0) {
    return made(connect_now(params));
  }
  // The thread takes no signal: the process's handlers and signalfd stay
  // with the thread that waits.
  sigset_t all;
  sigset_t old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    std::thread([pending, params] {
      PGconn* c = connect_now(params);
      {
        const std::lock_guard<std::mutex> lock(pending->m);
        if (!pending->abandoned) {
          pending->conn = c;
          pending->done = true;
          c = nullptr;
        }
      }
      if (c != nullptr) {
        pq().PQfinish(c);
      }
      const uint64_t one = 1;
      [[maybe_unused]] const ssize_t n =
          ::write(pending->efd, &one, sizeof one);
    }).detach();
  } catch (const std::system_error&) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return made(connect_now(params));
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  while (true) {
    const bool ready = d.wait(pending->efd, POLLIN);
    const std::lock_guard<std::mutex> lock(pending->m);
    if (pending->done) {
      return made(pending->conn);
    }
    if (!ready) {
      pending->abandoned = true;
      return nullptr;
    }
  }
}

bool still_working(const ConnectParams& params, int pid, Deadline& d) {
  if (pid <= 0) {
    return false;
  }
  struct Finish {
    void operator()(PGconn* c) const { pq().PQfinish(c); }
  };
  const std::unique_ptr<PGconn, Finish> c(connect_within(params, d));
  if (!c || pq().PQstatus(c.get()) != CONNECTION_OK) {
    return false;
  }
  // Active, and not blocked writing its answer to a client that does not
  // read it (wait_event_type Client, ClientWrite).
  const std::string sql =
      "SELECT state = 'active' AND wait_event_type IS DISTINCT FROM 'Client' "
      "FROM pg_stat_activity WHERE pid = "
      + std::to_string(pid);
  const Result r = exec_within(c.get(), sql.c_str(), d);
  return r && pq().PQresultStatus(r.get()) == PGRES_TUPLES_OK
         && pq().PQntuples(r.get()) == 1
         && std::string_view(pq().PQgetvalue(r.get(), 0, 0)) == "t";
}

} // namespace taskq::storage::pg
