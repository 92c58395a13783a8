#pragma once

// Internal to storage/pg: every wait for the server bounded. libpq's
// blocking calls wait for TCP to give up (about 15 minutes with a query in
// flight, hours on an idle connection) and do not return for a signal; the
// backend drives libpq's non-blocking calls from its own poll instead, with
// a deadline per exchange (storage/seam/server_wait.hpp says who sets it).

#include "core/duration.hpp"
#include "storage/pg/libpq.hpp"

#include <chrono>
#include <libpq-fe.h>
#include <optional>
#include <string>
#include <vector>

namespace taskq::storage::pg {

using Instant = std::chrono::steady_clock::time_point;

// One wait for the server: until `bound` from now (std::nullopt: no bound
// of its own), and in any case until the process's wait limit (a wait
// begun near or past it gets k_stop_allowance), or k_stop_allowance after
// the process is asked to stop.
class Deadline {
public:
  explicit Deadline(std::optional<core::Millis> bound);

  // Waits until `fd` is ready for `events` (POLLIN, POLLOUT), or `slice_ms`
  // passed (-1: no slice); false when the time is up first.
  bool wait(int fd, short events, int slice_ms = -1);
  bool passed() const;
  // The server is still at work: wait `more` from now.
  void extend(core::Millis more);
  // Ended, or to end, by a signal to stop or the wait limit rather than
  // by the bound.
  bool stopping() const;
  // Ended by a signal to stop (not the wait limit): the caller asked the
  // server, which is still at work on its statement, so the wait goes on
  // to its bound, the signal no longer watched (its owner acts on it once
  // the answer is in).
  bool stopped_by_signal() const { return m_cap.has_value(); }
  void forgive_signal() {
    m_cap.reset();
    m_forgiven = true;
  }
  std::optional<core::Millis> bound() const { return m_bound; }
  Instant end() const;

private:
  std::optional<core::Millis> m_bound;
  Instant m_start;
  std::optional<Instant> m_at;
  std::optional<Instant> m_cap; // k_stop_allowance after a stop was asked
  bool m_forgiven = false;      // see forgive_signal()
};

// The answers to what was sent on `conn`, a non-blocking connection:
// flushes what is left to send and reads every result; false when the
// deadline passes first (`results` then holds what came).
bool await_results(PGconn* conn, Deadline& d,
                   std::vector<libpq::Result>& results);

// Sends `sql` (one or more statements, no parameters) and awaits its
// results: PQexec's answer (the first failed result, else the last), or
// nullptr when the deadline passed or it could not be sent.
libpq::Result exec_within(PGconn* conn, const char* sql, Deadline& d);

// PQexec's answer among `results`: the first that failed, else the last
// (nullptr: none).
libpq::Result as_exec(std::vector<libpq::Result> results);

using libpq::ConnectParams;

// TCP keepalives and tcp_user_timeout matching `bound`, so that the kernel
// too ends a connection that stops answering (the URL's own win: they are
// added before it).
void add_keepalives(ConnectParams& params, core::Millis bound);

// Connects with PQconnectdbParams (libpq's connect_timeout, per host of a
// multi-host URL) in a thread of its own, and waits for it within `d`:
// nullptr when `d` ends first (the thread finishes the connection and
// closes it). Where nothing watches for a stop (no stop descriptor, no
// wait limit: a one-shot command) it connects in this thread, bounded by
// connect_timeout alone. The connection is made non-blocking.
PGconn* connect_within(const ConnectParams& params, Deadline& d);

// Whether server process `pid` is still running a statement (not idle,
// not blocked writing its answer to us), asked on a fresh connection made
// with `params` within `d`: how a slow statement is told from a silent
// network. Unknown when the question could not be asked or went
// unanswered within `d`.
enum class Working { yes, no, unknown };
Working still_working(const ConnectParams& params, int pid, Deadline& d);

// The answers to what was just sent on `conn`, within `bound` (0: no
// bound). A server silent past it is asked, on a fresh connection made
// with `params`, whether it is still at work on our statement
// (still_working(): a slow statement or a lock wait is no dead network),
// and waited for another bound if so, or if the question went unanswered
// once (a fleet that gave up on a loaded server would reconnect to it all
// at once). Through a pooler (`pooled`) it cannot be asked: its process
// ids are the pooler's. A signal to stop or the wait limit ends the wait
// without asking. std::nullopt: the wait ended with no answer, and why
// ("no answer from the server in 10s", "stopped waiting ...") is in
// `why`.
std::optional<std::vector<libpq::Result>>
answers_within(PGconn* conn, const ConnectParams& params, core::Millis bound,
               bool pooled, std::string& why);

} // namespace taskq::storage::pg
