#pragma once

#include "core/time.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace taskq::storage {

// Tells a waiting process that another one may have written to the
// database, so `lease --wait`, `run` and `wait` block without polling.
//
// On PostgreSQL it LISTENs on a connection of its own: every write
// transaction sends NOTIFY as it commits, so a commit from any host wakes the
// watcher as soon as the server delivers it.
//
// On SQLite it watches the database's folder with inotify for writes to the
// database file and its WAL: every commit appends to the WAL, so a commit
// in any process wakes the watcher within microseconds, and a process that
// waits uses no CPU.
//
// Through a pooler in transaction mode (the URL's pool=transaction), where
// LISTEN cannot pass, it LISTENs on a direct connection to the server when
// the URL's listen= names it, else it wakes every k_pool_poll (a timer's
// descriptor): a commit is seen within a second, and a fleet of idle
// workers looks once a second each.
//
// Events can be spurious (a checkpoint, a reader's own write, a commit that
// changed nothing the caller cares about): a wake-up means "look again",
// never "something is there". Where inotify is unavailable it degrades to
// waking every k_fallback_poll.
// A PostgreSQL connection that LISTENs for taskq's NOTIFY
// (storage/pg/libpq.cpp).
class PgListener {
public:
  // Notifications sent by server process `own_pid` (the writing connection
  // of the same store: its own commits) are consumed but not reported.
  // `listen` (HOST:PORT, a URL's listen=) is where to connect instead of
  // the URL's host and port.
  // `bound`: how long the server may stay silent (the URL's
  // answer_timeout=; std::nullopt: the process's,
  // storage/seam/server_wait.hpp): an idle connection is asked an empty query
  // every half of it.
  PgListener(const std::string& url, int own_pid,
             const std::string& listen = {},
             std::optional<core::Millis> bound = std::nullopt);
  ~PgListener();
  PgListener(const PgListener&) = delete;
  PgListener& operator=(const PgListener&) = delete;
  int fd() const;
  // What drain() heard: nothing; only quiet commits' wake-ups (a worker's
  // outcomes and next lease, storage/pg/tx_sql.hpp's k_quiet_payload); or
  // anything else (a connection lost or made again counts: what came
  // meanwhile was not heard).
  enum class Heard { nothing, quiet, loud };
  // Consumes what arrived without blocking; nothing unless a notification
  // came from another server process than own_pid.
  Heard drain();
  bool skips_own() const { return m_own_pid != 0; }

private:
  struct Conn;
  std::unique_ptr<Conn> m_conn;
  int m_own_pid = 0;
};

class ChangeFeed {
public:
  static constexpr core::Millis k_fallback_poll{250};
  // Through a pooler in transaction mode without a direct listener.
  static constexpr core::Millis k_pool_poll{1000};
  // A LISTENing wait also ends every k_listen_poll with nothing heard, as
  // a change: a wake-up owed by a writer killed before it was due (see
  // core/wake_throttle.hpp) is never sent, and a waiter would otherwise
  // sleep until the next commit. Workers' loops, which poll the
  // descriptor themselves, do the same (worker/wait.hpp).
  static constexpr core::Millis k_listen_poll{1000};

  // `own_pid`: see PgListener (PostgreSQL only; 0 reports every commit).
  explicit ChangeFeed(const std::string& db_path, int own_pid = 0);
  ~ChangeFeed();
  ChangeFeed(ChangeFeed&& other) noexcept;
  ChangeFeed& operator=(ChangeFeed&& other) noexcept;
  ChangeFeed(const ChangeFeed&) = delete;
  ChangeFeed& operator=(const ChangeFeed&) = delete;

  // A descriptor that becomes readable when the database may have changed,
  // for poll(2) next to others; -1 without inotify (then poll with a
  // timeout of at most k_fallback_poll and treat each timeout as a change).
  int fd() const { return m_fd; }
  bool polling() const { return m_fd < 0; }
  // Whether it LISTENs on PostgreSQL (see k_listen_poll).
  bool listens() const { return m_pg != nullptr && m_fd >= 0; }
  // Whether it LISTENs on PostgreSQL but its connection broke: until a
  // drain() listens again (with core's reconnect back-off) nothing wakes
  // a wait, so one that waits must end within k_fallback_poll and drain.
  bool relistening() const { return m_pg != nullptr && m_fd < 0; }
  // A LISTENing feed's next look with nothing heard: k_listen_poll after
  // the last change its owner took from it (looked()), across the turns
  // of a loop that waits many times (worker/wait.hpp); std::nullopt when
  // it does not LISTEN.
  // One whose listener broke (relistening()) looks every
  // k_fallback_poll, draining, which listens again.
  std::optional<std::chrono::steady_clock::time_point> next_look() const {
    return m_pg ? std::optional(m_next_look) : std::nullopt;
  }
  void looked(std::chrono::steady_clock::time_point now) {
    m_next_look = now + (relistening() ? k_fallback_poll : k_listen_poll);
  }
  // Whether a wake-up always means another process committed: true where
  // our own commits are left out (PostgreSQL, own_pid given).
  bool skips_own() const { return m_pg && m_pg->skips_own(); }

  // Consumes what is pending without blocking; true when it concerned the
  // database (always true without inotify).
  bool drain();
  // Asked once drain() reported a change: whether what it heard since the
  // last call may have taken a lease away. Always true but on
  // PostgreSQL's listener, where quiet commits' wake-ups alone are not:
  // their writers take nothing away (a worker's outcomes and its next
  // lease; a lease that reclaims an expired one, or ends a broadcast, is
  // not quiet). A worker woken by quiet ones alone need not check its
  // leases: with 32 workers, those checks were a quarter of the server's
  // statements. Still true at least once per k_listen_poll, as a look
  // with nothing heard would be: a loud wake-up owed by a writer killed
  // before sending it is then made up for even while quiet ones come.
  bool take_loud();
  // A check of the leases that was owed could not be made (no answer):
  // the next take_loud() is true.
  // A look with nothing heard (a LISTENing wait's k_listen_poll, a poll's
  // timeout) counts as loud too.
  void assume_loud() { m_loud = true; }

  // Blocks until the database may have changed (true) or `timeout` passes
  // (false); std::nullopt waits without a limit. Interrupted by a signal,
  // or on PostgreSQL after k_listen_poll, returns true so that the caller
  // looks again.
  bool wait(std::optional<core::Millis> timeout);

private:
  bool drain_inotify(); // drain() on SQLite

  int m_fd = -1;
  std::string m_names[3]; // the database file, its -wal and its -journal
  std::unique_ptr<PgListener> m_pg; // PostgreSQL: m_fd is its socket
  bool m_timer = false;             // m_fd is a timer's (k_pool_poll)
  bool m_loud = false;              // see take_loud()
  std::chrono::steady_clock::time_point m_next_loud =
      std::chrono::steady_clock::now() + k_listen_poll;
  std::chrono::steady_clock::time_point m_next_look =
      std::chrono::steady_clock::now() + k_listen_poll;
};

} // namespace taskq::storage
