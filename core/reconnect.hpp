// When a command that waits (run, lease --wait, wait, events --follow,
// progress, top) tries its database server again after the connection
// broke, and when it gives up: pure decisions, the clock passed in.
#pragma once

#include "core/error.hpp"
#include "core/time.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

namespace taskq {

// The connection to a database server broke (the server restarted, failed
// over, or the network dropped), as opposed to an error of the SQL itself:
// unavailable (exit 5) like any other, but worth connecting again for a
// command that waits. Whether a write in flight committed is unknown.
class ConnectionLost : public Error {
public:
  explicit ConnectionLost(const std::string& message)
      : Error(ErrorKind::unavailable, message) {}
};

} // namespace taskq

namespace taskq::core {

// Whether a PostgreSQL SQLSTATE says the connection is gone rather than
// the statement wrong: class 08 (connection exception), 57P01
// (admin_shutdown), 57P02 (crash_shutdown), 57P03 (cannot_connect_now: the
// server is starting up).
inline bool connection_lost_state(std::string_view sqlstate) {
  return sqlstate.starts_with("08") || sqlstate == "57P01"
         || sqlstate == "57P02" || sqlstate == "57P03";
}

// The first retry comes this soon (a restart takes about a second), each
// later one twice as late, never later than k_reconnect_max after the
// previous: a server back is found within 5 s, and a fleet of workers
// waiting for one asks it a few times a second at most.
inline constexpr Millis k_reconnect_first{100};
inline constexpr Millis k_reconnect_max{5000};

// How long a waiting command keeps trying by default (--reconnect-for):
// a restart or a failover takes seconds to a minute; five minutes ride
// out those and end a worker whose server is truly gone while its tasks'
// default leases (also five minutes) are still near their end.
inline constexpr Millis k_default_reconnect_for{5 * 60 * 1000};

// The wait before the next try once `failed` tries (the first loss
// counts as one) have failed: 100 ms, 200 ms, 400 ms, ... up to 5 s.
inline Millis reconnect_delay(int failed) {
  Millis d = k_reconnect_first;
  for (int i = 1; i < failed && d < k_reconnect_max; ++i) {
    d *= 2;
  }
  return std::min(d, k_reconnect_max);
}

// Whether to try again after `down_for` without a connection, given the
// limit (std::nullopt: for ever; zero: never, the command fails at once).
inline bool keep_reconnecting(Millis down_for, std::optional<Millis> limit) {
  return !limit || down_for < *limit;
}

} // namespace taskq::core
