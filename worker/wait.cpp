#include "worker/wait.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace taskq::worker {

int poll_timeout(Instant now, const std::optional<Instant>& until) {
  if (!until) {
    return -1;
  }
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*until - now);
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

Wait::Wait(int signal_fd, const storage::ChangeFeed& feed, bool relisten)
    : m_feed(feed), m_watch_db(!feed.polling()), m_relisten(feed.relistening()),
      m_may_listen(relisten) {
  m_fds.push_back({signal_fd, POLLIN, 0});
  if (m_watch_db) {
    m_fds.push_back({feed.fd(), POLLIN, 0});
  }
  if (m_relisten) {
    // Whatever the loop wants, at the feed's next look however many waits
    // came between: drained only by a look for tasks, a listener that
    // broke while every handler worked left the wait asleep until the
    // next heartbeat, deaf to an operator's kill and to the loss of its
    // own connection.
    m_look_at = feed.next_look();
    until(m_look_at);
  }
}

size_t Wait::add(int fd, short events) {
  m_fds.push_back({fd, events, 0});
  return m_fds.size() - 1;
}

void Wait::on(int fd, short events, std::function<void()> ready) {
  m_ready.emplace_back(add(fd, events), std::move(ready));
}

void Wait::ready() const {
  for (const auto& [i, ready] : m_ready) {
    if (revents(i) != 0) {
      ready();
    }
  }
}

void Wait::until(const std::optional<Instant>& t) {
  if (t && (!m_until || *t < *m_until)) {
    m_until = t;
  }
}

void Wait::feed_fallback() {
  if (m_feed.polling()) {
    until(Clock::now() + storage::ChangeFeed::k_fallback_poll);
  } else if (const auto at = m_feed.next_look()) {
    m_look_at = at;
    until(at);
  }
}

void Wait::poll() {
  m_rc =
      ::poll(m_fds.data(), m_fds.size(), poll_timeout(Clock::now(), m_until));
  if (m_rc < 0 && errno != EINTR) {
    throw Error(ErrorKind::internal,
                std::string("poll: ") + std::strerror(errno));
  }
}

bool Wait::db_changed(storage::ChangeFeed& feed, Instant now) const {
  // A feed that cannot wake the wait: its end; one that listens, or
  // listens again, its look (m_look_at: feed_fallback(), Wait()).
  const bool timed_out = m_until && now >= *m_until;
  const bool look_due = m_look_at && now >= *m_look_at;
  bool changed = (feed.polling() && timed_out) || look_due;
  if (changed) {
    feed.assume_loud(); // a look with nothing heard
  }
  // A listener whose server went away may report only a hang-up. A look
  // with nothing heard drains too: an idle listener asks its server an
  // empty question now and then, and counts it lost when it stays silent
  // (storage::PgListener::drain).
  // A listener that broke is drained at each look too, where it may:
  // that listens again.
  if ((m_watch_db
       && ((revents(1) & (POLLIN | POLLHUP | POLLERR)) != 0
           || (changed && feed.listens())))
      || (m_relisten && m_may_listen && changed)) {
    changed = feed.drain() || changed; // drained either way
  }
  if (changed && (feed.listens() || feed.relistening())) {
    // The next look with nothing heard: a second on (listening again:
    // k_fallback_poll).
    feed.looked(now);
  }
  return changed;
}

} // namespace taskq::worker
