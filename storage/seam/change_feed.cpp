#include "storage/seam/change_feed.hpp"

#include "storage/pg/schema_url.hpp"
#include "storage/seam/db.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <utility>

namespace taskq::storage {

ChangeFeed::ChangeFeed(const std::string& db_path, int own_pid) {
  if (is_postgres_url(db_path)) {
    const pg::UrlParts parts = pg::split_url(db_path);
    if (parts.pooled && parts.listen.empty()) {
      // No LISTEN through the pooler: a timer stands for the commits.
      m_fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
      m_timer = m_fd >= 0;
      const auto ns = std::chrono::nanoseconds(k_pool_poll).count();
      itimerspec every{};
      every.it_interval.tv_sec = static_cast<time_t>(ns / 1000000000);
      every.it_interval.tv_nsec = static_cast<long>(ns % 1000000000);
      every.it_value = every.it_interval;
      if (m_timer && ::timerfd_settime(m_fd, 0, &every, nullptr) != 0) {
        ::close(m_fd);
        m_fd = -1; // then it polls every k_fallback_poll
        m_timer = false;
      }
      return;
    }
    m_pg = std::make_unique<PgListener>(parts.url, own_pid, parts.listen,
                                        parts.answer_timeout);
    m_fd = m_pg->fd();
    return;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path path = fs::absolute(db_path, ec);
  if (ec) {
    path = db_path;
  }
  // Follow a symlinked database to the folder where SQLite writes its WAL.
  if (const fs::path real = fs::canonical(path, ec); !ec) {
    path = real;
  }
  const std::string name = path.filename().string();
  m_names[0] = name;
  m_names[1] = name + "-wal";
  m_names[2] = name + "-journal";

  m_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (m_fd < 0) {
    return;
  }
  // The folder, not the files: the WAL is created and removed as
  // connections come and go, and a watch on a removed file goes silent.
  const std::string dir = path.parent_path().string();
  if (::inotify_add_watch(m_fd, dir.c_str(),
                          IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE
                              | IN_ATTRIB)
      < 0) {
    ::close(m_fd);
    m_fd = -1;
  }
}

ChangeFeed::~ChangeFeed() {
  if (m_fd >= 0 && !m_pg) {
    ::close(m_fd);
  }
}

ChangeFeed::ChangeFeed(ChangeFeed&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)), m_pg(std::move(other.m_pg)),
      m_timer(std::exchange(other.m_timer, false)), m_loud(other.m_loud),
      m_next_loud(other.m_next_loud), m_next_look(other.m_next_look) {
  for (int i = 0; i < 3; ++i) {
    m_names[i] = std::move(other.m_names[i]);
  }
}

ChangeFeed& ChangeFeed::operator=(ChangeFeed&& other) noexcept {
  if (this != &other) {
    if (m_fd >= 0 && !m_pg) {
      ::close(m_fd);
    }
    m_fd = std::exchange(other.m_fd, -1);
    m_pg = std::move(other.m_pg);
    m_timer = std::exchange(other.m_timer, false);
    m_loud = other.m_loud;
    m_next_loud = other.m_next_loud;
    m_next_look = other.m_next_look;
    for (int i = 0; i < 3; ++i) {
      m_names[i] = std::move(other.m_names[i]);
    }
  }
  return *this;
}

bool ChangeFeed::take_loud() {
  if (!m_pg) {
    return true; // inotify, a timer or a poll cannot tell
  }
  const auto now = std::chrono::steady_clock::now();
  if (!m_loud && now < m_next_loud) {
    return false;
  }
  m_loud = false;
  m_next_loud = now + k_listen_poll;
  return true;
}

bool ChangeFeed::drain() {
  if (m_fd < 0 && !m_pg) {
    return true;
  }
  if (m_timer) { // a tick: look again
    uint64_t ticks = 0;
    return ::read(m_fd, &ticks, sizeof ticks) == sizeof ticks && ticks > 0;
  }
  if (m_pg) {
    // A listener whose connection broke has no descriptor until it
    // listens again (PgListener::drain): the feed polls meanwhile.
    const PgListener::Heard heard = m_pg->drain();
    m_fd = m_pg->fd();
    m_loud = m_loud || heard == PgListener::Heard::loud;
    return heard != PgListener::Heard::nothing;
  }
  return drain_inotify();
}

bool ChangeFeed::drain_inotify() {
  bool changed = false;
  alignas(inotify_event) std::array<char, 4096> buf; // read() fills it
  while (true) {
    const ssize_t n = ::read(m_fd, buf.data(), buf.size());
    if (n <= 0) {
      // EAGAIN: nothing more. An error other than EINTR would repeat
      // forever: report a change so the caller looks at the database.
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && errno != EAGAIN) {
        changed = true;
      }
      return changed;
    }
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf.data() + off);
      if ((ev->mask & IN_Q_OVERFLOW) != 0) {
        changed = true; // events were lost: assume the worst
      } else if (ev->len > 0) {
        const std::string_view file(ev->name);
        for (const auto& watched : m_names) {
          changed = changed || file == watched;
        }
      }
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }
}

bool ChangeFeed::wait(std::optional<core::Millis> timeout) {
  if (m_fd < 0) { // no inotify, or a lost listener (see drain())
    const auto step =
        timeout ? std::min(*timeout, k_fallback_poll) : k_fallback_poll;
    ::usleep(static_cast<useconds_t>(step.count() * 1000));
    if (m_pg) {
      drain(); // a lost listener: LISTEN again when its back-off allows
      return true;
    }
    return !timeout || *timeout > k_fallback_poll;
  }
  // A plain time and a flag rather than an optional time: GCC 12 at -O1
  // took the optional's value for read uninitialized (-Wmaybe-uninitialized).
  const bool bounded = timeout.has_value();
  const auto deadline =
      std::chrono::steady_clock::now() + timeout.value_or(core::Millis{0});
  while (true) {
    if (drain()) {
      return true;
    }
    int wait_ms = -1;
    if (bounded) {
      const auto left = std::chrono::ceil<core::Millis>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return false;
      }
      wait_ms = static_cast<int>(std::min<int64_t>(left.count(), 1 << 30));
    }
    const bool look_anyway =
        m_pg && (wait_ms < 0 || wait_ms > k_listen_poll.count());
    if (look_anyway) {
      wait_ms = static_cast<int>(k_listen_poll.count());
    }
    pollfd p{m_fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, wait_ms);
    if ((rc < 0 && errno == EINTR) || (rc == 0 && look_anyway)) {
      return true;
    }
  }
}

} // namespace taskq::storage
