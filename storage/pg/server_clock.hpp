// Internal to storage/pg: the server's clock as a connection estimates it
// between readings (PgDb::server_now).
#pragma once

#include "core/time.hpp"

#include <chrono>
#include <optional>

namespace taskq::storage::pg {

// The last reading of the server's clock (each write transaction's lock,
// the schema check on opening) plus the time elapsed here since, on the
// local monotonic clock. Only what a command shows or how long it waits
// depends on this estimate: every decision is taken in a write
// transaction, on the server's time of its lock.
class ServerClock {
public:
  void seen(core::Time at) {
    m_seen = Seen{at, std::chrono::steady_clock::now()};
  }
  bool read() const { return m_seen.has_value(); }
  // Only after a reading (read()).
  core::Time now() const {
    return m_seen->server
           + std::chrono::floor<core::Millis>(std::chrono::steady_clock::now()
                                              - m_seen->here);
  }

private:
  struct Seen {
    core::Time server;                          // the server's clock read
    std::chrono::steady_clock::time_point here; // when the reply came
  };
  std::optional<Seen> m_seen;
};

} // namespace taskq::storage::pg
