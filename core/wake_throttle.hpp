// How often one connection wakes the processes waiting on a database
// server (PostgreSQL's NOTIFY): a pure decision, the clock passed in.
#pragma once

#include <chrono>
#include <optional>

namespace taskq::core {

// Every waiting process on the server is signalled for every NOTIFY in its
// database, whatever it listens for: the server's cost is the number of
// notifications times the number of listeners. A fleet of N busy workers,
// each committing hundreds of times a second, spent more on that than on
// its tasks. So each connection wakes the others at most once per
// k_wake_every: the first commit after a quiet spell at once, and the
// commits within k_wake_every of the last wake-up with one wake-up owed,
// sent when that spell ends (due()) or at the next commit after it. A
// waiter learns of a busy writer's commit at most k_wake_every late; of a
// lone command's (an `add`, an operator's `kill`), at once. A quiet commit,
// one that concerns only those watching (a worker's task ended with
// nothing to follow it, and its next lease), not the workers waiting for
// work, wakes them at most once per k_quiet_wake_every: with 32 busy
// workers, 20 ms still cost a third of the fleet's throughput.
inline constexpr std::chrono::milliseconds k_wake_every{20};
inline constexpr std::chrono::milliseconds k_quiet_wake_every{100};

class WakeThrottle {
public:
  using Clock = std::chrono::steady_clock;

  explicit WakeThrottle(Clock::duration every = k_wake_every,
                        Clock::duration quiet_every = k_quiet_wake_every)
      : m_every(every), m_quiet_every(quiet_every) {}

  // A commit that changed rows, at `now` (`quiet`: see k_quiet_wake_every):
  // true when it wakes the others itself; false when it owes a wake-up,
  // sent at due().
  bool commit(Clock::time_point now, bool quiet = false) {
    if (m_woke && now < m_last + (quiet ? m_quiet_every : m_every)) {
      m_owed = true;
      m_owed_soon = m_owed_soon || !quiet;
      return false;
    }
    m_last = now;
    m_woke = true;
    m_owed = false;
    m_owed_soon = false;
    return true;
  }

  // When the owed wake-up is to be sent; std::nullopt: none owed.
  std::optional<Clock::time_point> due() const {
    if (!m_owed) {
      return std::nullopt;
    }
    return m_last + (m_owed_soon ? m_every : m_quiet_every);
  }
  bool owed() const { return m_owed; }
  // Whether a commit that owes the wake-up was not quiet.
  bool owed_soon() const { return m_owed_soon; }

  // The owed wake-up went out at `now` (or was lost with the connection:
  // waiters look again when they reconnect).
  void sent(Clock::time_point now) {
    m_last = now;
    m_woke = true;
    m_owed = false;
    m_owed_soon = false;
  }

  // The owed wake-up could not go out at `now` (the connection is down):
  // still owed, due a spell later (so that a loop waiting for it does not
  // spin), and sent once the connection is back.
  void postpone(Clock::time_point now) {
    if (m_owed) {
      m_last = now;
      m_woke = true;
    }
  }

private:
  Clock::duration m_every;
  Clock::duration m_quiet_every;
  Clock::time_point m_last{}; // the last wake-up sent, if m_woke
  bool m_woke = false;
  bool m_owed = false;
  bool m_owed_soon = false; // a commit owed is not quiet
};

} // namespace taskq::core
