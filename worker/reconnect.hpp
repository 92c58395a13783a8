// A waiting command's connection to its database server: when it broke,
// when to try again (core/reconnect.hpp), when to give up, and the two
// lines it says on stderr, one when the connection is lost and one when it
// is back. Used by both modes of `run`, and by lease --wait, wait,
// events --follow, progress and top (which shows the lines on its status
// line instead).
#pragma once

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/reconnect.hpp"
#include "worker/policy.hpp"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>

namespace taskq::worker {

class Reconnect {
public:
  // `who`: the command, as its messages name it ("run", "wait");
  // `limit`: how long to keep trying (std::nullopt: for ever).
  Reconnect(std::string who, std::optional<core::Millis> limit)
      : m_who(std::move(who)), m_limit(limit) {}

  // A call to the database threw `e` at `now`: the first since the
  // connection was last good says so.
  void lost(const ConnectionLost& e, Instant now) {
    ++m_failed;
    m_next = now + core::reconnect_delay(m_failed);
    if (m_since) {
      return;
    }
    m_since = now;
    m_why = e.what();
    if (!retries()) {
      return; // not connecting again: the error says it all
    }
    tell(std::string(e.what()) + "; connecting again"
         + (m_limit ? " for up to " + core::format_duration(*m_limit) : ""));
  }

  // A call to the database succeeded at `now`: if the connection was
  // lost, says that it is back. Returns whether it was lost.
  bool ok(Instant now) {
    if (!m_since) {
      return false;
    }
    const auto down_for =
        std::chrono::duration_cast<core::Millis>(now - *m_since);
    m_since.reset();
    m_failed = 0;
    tell("connected to the database again after "
         + core::format_duration(down_for));
    return true;
  }

  // Where the two lines go: by default stderr, as "taskq: WHO: LINE"; a
  // full-screen command shows them itself.
  void say_with(std::function<void(const std::string&)> say) {
    m_say = std::move(say);
  }

  // The store's count of lost connections now (TaskStore::
  // connection_losses): true when one was lost since the last call while
  // the connection was up, and not said (a read whose failure changes
  // nothing swallowed it: a lease ahead checked once more), for the caller
  // to handle as any loss.
  bool unheard_loss(uint64_t losses) {
    const bool unheard = losses != m_losses && !down();
    m_losses = losses;
    return unheard;
  }

  bool down() const { return m_since.has_value(); }
  // Whether it connects again at all (--reconnect-for is not 0).
  bool retries() const { return !m_limit || m_limit->count() > 0; }
  // When to try again, while down.
  std::optional<Instant> next_try() const {
    return m_since ? std::optional(m_next) : std::nullopt;
  }
  bool try_due(Instant now) const { return m_since && now >= m_next; }

  // Down for longer than the limit.
  bool gave_up(Instant now) const {
    return m_since
           && !core::keep_reconnecting(
               std::chrono::duration_cast<core::Millis>(now - *m_since),
               m_limit);
  }
  // The error that began the outage, for the final message.
  const std::string& why() const { return m_why; }

private:
  void tell(const std::string& line) const {
    if (m_say) {
      m_say(line);
    } else {
      std::fprintf(stderr, "taskq: %s: %s\n", m_who.c_str(), line.c_str());
    }
  }

  std::function<void(const std::string&)> m_say;
  std::string m_who;
  std::optional<core::Millis> m_limit;
  std::optional<Instant> m_since;
  Instant m_next{};
  int m_failed = 0;
  std::string m_why;
  uint64_t m_losses = 0; // see unheard_loss()
};

// `--reconnect-for DUR` as given: a duration (0: fail at once, as a
// command that does not wait), or "forever" (std::nullopt). Throws usage.
inline std::optional<core::Millis>
parse_reconnect_for(const std::string& text) {
  if (text == "forever") {
    return std::nullopt;
  }
  const auto d = core::parse_duration(text);
  if (!d || d->count() < 0) {
    throw Error(ErrorKind::usage,
                "invalid duration '" + text
                    + "' for --reconnect-for: expected e.g. 30s, 5m, 0 (do "
                      "not connect again) or forever");
  }
  return *d;
}

// Runs `look` (reads of the database, or a write whose repeat is safe) and
// returns what it returns; when the connection to the server is lost,
// says so once (through `rc`), waits with the back-off, and runs it
// again, until `rc`'s limit passes: then the loss is the error. A look
// that succeeds after a loss says the connection is back. For the
// commands that only wait (lease --wait, wait, events --follow, progress).
template <typename Look>
auto retrying(Reconnect& rc, Look&& look) -> decltype(look()) {
  while (true) {
    try {
      if constexpr (std::is_void_v<decltype(look())>) {
        look();
        rc.ok(Clock::now());
        return;
      } else {
        auto result = look();
        rc.ok(Clock::now());
        return result;
      }
    } catch (const ConnectionLost& e) {
      rc.lost(e, Clock::now());
      if (rc.gave_up(Clock::now())) {
        throw;
      }
      std::this_thread::sleep_until(*rc.next_try());
    }
  }
}

} // namespace taskq::worker
