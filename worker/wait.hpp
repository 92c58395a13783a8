// One wait of the engine's loop, in both modes of `run`: poll(2) on the
// signals that reach `run`, the database's change feed (unless it polls),
// and the descriptors of the handlers, until the earliest deadline given.
#pragma once

#include "storage/seam/change_feed.hpp"
#include "worker/policy.hpp"

#include <cstddef>
#include <functional>
#include <optional>
#include <poll.h>
#include <utility>
#include <vector>

namespace taskq::worker {

class Wait {
public:
  // Watches `signal_fd` (a SignalFeed's) and `feed`'s descriptor.
  // A feed whose listener broke is looked at every k_fallback_poll all the
  // same; `relisten`: whether such a look also tries to LISTEN again, a
  // connection made while the loop waits (not while the server is away:
  // the loop's back-off decides its tries, and connects the feed again
  // once it is back; nor while stopping, when a try to a silent host
  // would hold the loop past its grace).
  Wait(int signal_fd, const storage::ChangeFeed& feed, bool relisten);

  // Adds a descriptor to watch for `events`; returns its index.
  size_t add(int fd, short events);
  // Adds a descriptor to watch for `events`, and what to do when the poll
  // reports it (ready() calls it).
  void on(int fd, short events, std::function<void()> ready);
  size_t size() const { return m_fds.size(); }
  // The wait ends by `t` at the latest (nothing when none).
  void until(const std::optional<Instant>& t);
  // A feed that cannot wake the wait is looked at after its fallback
  // period (storage::ChangeFeed::k_fallback_poll); one that LISTENs, at its
  // next_look(), k_listen_poll after the last change it reported, however
  // many turns came between (a wake-up owed by a writer killed first is
  // never sent).
  void feed_fallback();

  // Waits. Throws Error(internal) when poll fails other than by a signal.
  void poll();
  // What happened to the descriptor of index `i`.
  short revents(size_t i) const { return m_rc > 0 ? m_fds[i].revents : 0; }
  // Signals arrived.
  bool signalled() const { return (revents(0) & POLLIN) != 0; }
  // Calls, in the order added, what on() gave for each descriptor the
  // poll reported.
  void ready() const;
  // Whether the database may have changed: the feed woke the wait (it is
  // drained), or its fallback period (feed_fallback()) ended by `now`.
  bool db_changed(storage::ChangeFeed& feed, Instant now) const;

private:
  const storage::ChangeFeed& m_feed;
  bool m_watch_db = false;
  bool m_relisten = false;   // the feed's listener broke: see Wait()
  bool m_may_listen = false; // a look at it may LISTEN again: see Wait()
  std::vector<pollfd> m_fds;
  std::vector<std::pair<size_t, std::function<void()>>> m_ready; // on()
  std::optional<Instant> m_until;
  std::optional<Instant> m_look_at; // a LISTENing feed's fallback
  int m_rc = 0;
};

} // namespace taskq::worker
