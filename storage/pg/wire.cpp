// Every wait for the PostgreSQL server bounded: the process's settings
// (storage/seam/server_wait.hpp), a deadline that a signal to stop shortens,
// exchanges driven from our own poll, and connections made in a thread of
// their own (storage/pg/wire.hpp).

#include "storage/pg/wire.hpp"

#include "storage/seam/server_wait.hpp"

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
bool g_idle_ended = false;

} // namespace

void set_answer_timeout(core::Millis bound) {
  g_answer_timeout = bound;
}
void set_idle_transactions_ended(bool on) {
  g_idle_ended = on;
}
bool idle_transactions_ended() {
  return g_idle_ended;
}
core::Millis answer_timeout() {
  return g_answer_timeout;
}
void set_wait_limit(std::optional<std::chrono::steady_clock::time_point> at) {
  g_limit = at;
}
void set_wait_interrupt(int fd) {
  g_interrupt_fd = fd;
}

} // namespace taskq::storage

namespace taskq::storage::pg {

using libpq::pq;
using libpq::Result;

namespace {

Instant now() {
  return std::chrono::steady_clock::now();
}

// See await_results.
constexpr int k_read_slice_ms = 100;

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

bool Deadline::passed() const {
  return now() >= end();
}

void Deadline::extend(core::Millis more) {
  m_at = now() + more;
}

bool Deadline::stopping() const {
  return m_cap.has_value() || (g_limit && now() >= *g_limit);
}

bool Deadline::wait(int fd, short events, int slice_ms) {
  const Instant slice_end = slice_ms < 0
                                ? Instant::max()
                                : now() + std::chrono::milliseconds(slice_ms);
  while (true) {
    const Instant at = end();
    const Instant t = now();
    if (t >= at) {
      return false;
    }
    if (t >= slice_end) {
      return true;
    }
    const Instant until = std::min(at, slice_end);
    int timeout = -1;
    if (until != Instant::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - t);
      timeout = static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
    }
    // The stop's descriptor is watched until it is first seen readable
    // (its owner reads it once the wait is over).
    pollfd fds[2] = {{fd, events, 0}, {g_interrupt_fd, POLLIN, 0}};
    const nfds_t n = g_interrupt_fd >= 0 && !m_cap && !m_forgiven ? 2 : 1;
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
    // Read in slices: bytes that TLS (or GSS) decrypted and holds may
    // complete a message while the socket stays quiet, and only reading
    // again finds them (libpq's own wait asks the TLS layer first).
    while (flushed == 0 && pq().PQisBusy(conn) == 1) {
      if (!d.wait(sock, POLLIN, k_read_slice_ms)) {
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
  if (!await_results(conn, d, results)) {
    return nullptr;
  }
  return as_exec(std::move(results));
}

Result as_exec(std::vector<Result> results) {
  for (Result& r : results) {
    const auto status = pq().PQresultStatus(r.get());
    if (status == PGRES_FATAL_ERROR || status == PGRES_BAD_RESPONSE) {
      return std::move(r);
    }
  }
  return results.empty() ? nullptr : std::move(results.back());
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

// Restores the signal mask it replaced, however the scope ends.
class AllSignalsBlocked {
public:
  AllSignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &m_old);
  }
  ~AllSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &m_old, nullptr); }
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;

private:
  sigset_t m_old{};
};

PGconn* connect_within(const ConnectParams& params, Deadline& d) {
  pq(); // loaded here, where its failure is an error, never in the thread
  // Nothing watches for a stop (a one-shot command, which a signal simply
  // kills): libpq's connect_timeout alone bounds it, and no thread is paid
  // for.
  if (g_interrupt_fd < 0 && !g_limit) {
    return made(connect_now(params));
  }
  auto pending = std::make_shared<Pending>();
  pending->efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (pending->efd < 0) {
    return made(connect_now(params));
  }
  try {
    // The thread takes no signal: the process's handlers and signalfd stay
    // with the thread that waits.
    const AllSignalsBlocked blocked;
    std::thread([pending, params] {
      PGconn* c = nullptr;
      try {
        c = connect_now(params);
      } catch (...) {
        c = nullptr; // out of memory: the caller sees none
      }
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
    return made(connect_now(params));
  }
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

Working still_working(const ConnectParams& params, int pid, Deadline& d) {
  if (pid <= 0) {
    return Working::no;
  }
  struct Finish {
    void operator()(PGconn* c) const { pq().PQfinish(c); }
  };
  const std::unique_ptr<PGconn, Finish> c(connect_within(params, d));
  if (!c || pq().PQstatus(c.get()) != CONNECTION_OK) {
    return Working::unknown;
  }
  // Active, and not blocked writing its answer to a client that does not
  // read it (wait_event_type Client, ClientWrite).
  const std::string sql =
      "SELECT state = 'active' AND wait_event_type IS DISTINCT FROM 'Client' "
      "FROM pg_stat_activity WHERE pid = "
      + std::to_string(pid);
  const Result r = exec_within(c.get(), sql.c_str(), d);
  if (!r || pq().PQresultStatus(r.get()) != PGRES_TUPLES_OK) {
    return Working::unknown;
  }
  return pq().PQntuples(r.get()) == 1
                 && std::string_view(pq().PQgetvalue(r.get(), 0, 0)) == "t"
             ? Working::yes
             : Working::no;
}

std::optional<std::vector<libpq::Result>>
answers_within(PGconn* conn, const ConnectParams& params, core::Millis bound,
               bool pooled, std::string& why) {
  std::vector<libpq::Result> results;
  Deadline d(bound.count() > 0 ? std::optional(bound) : std::nullopt);
  bool unanswered = false; // the last question went unanswered
  while (!await_results(conn, d, results)) {
    // A signal to stop that came during a slow statement on a live
    // network leaves it to finish (a lease's COMMIT cut short would hold
    // its task for --for): asked as at the bound, within the stop's
    // allowance.
    const bool ask = !pooled && (!d.stopping() || d.stopped_by_signal());
    if (ask) {
      Deadline probe(std::max(bound, core::Millis{2000}));
      const Working w =
          still_working(params, libpq::pq().PQbackendPID(conn), probe);
      const bool again =
          w == Working::unknown && !unanswered && !d.stopped_by_signal();
      unanswered = w == Working::unknown;
      if (w == Working::yes || again) {
        if (d.stopped_by_signal()) {
          d.forgive_signal();
        } else {
          d.extend(bound);
        }
        continue;
      }
    }
    why = d.stopping()
              ? std::string("stopped waiting for its answer "
                            "(stopping)")
              : "no answer from the server in " + core::format_duration(bound);
    return std::nullopt;
  }
  return results;
}

} // namespace taskq::storage::pg
