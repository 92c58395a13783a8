#pragma once

#include "core/time.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>

namespace taskq::core {

// The recent completion rate of a queue, from samples of how many of its
// tasks have finished, and the time left at that rate: `taskq progress`.
class RateMeter {
public:
  explicit RateMeter(Millis window = std::chrono::seconds(30))
      : m_window(window) {}

  // Records that `done` tasks had finished at `t` (times must not go back).
  void sample(Time t, int64_t done);
  // Tasks per second over the last window; std::nullopt until two samples
  // at different times exist.
  std::optional<double> per_second() const;
  // The time to finish `remaining` tasks at per_second(); std::nullopt when
  // the rate is unknown or zero.
  std::optional<Millis> eta(int64_t remaining) const;

private:
  Millis m_window;
  std::deque<std::pair<Time, int64_t>> m_samples;
};

// What `taskq progress` draws.
struct ProgressView {
  int64_t done = 0;
  int64_t total = 0;
  int64_t failed = 0; // of done: ended failed or killed
  std::optional<double> rate;
  std::optional<Millis> eta;
};

// One line: `[#######-------] 120/200 60% 12.5/s ETA 6s`, with the bar
// `bar_width` characters wide (0: no bar), and ` (3 failed)` when some did.
std::string format_progress(const ProgressView& view, int bar_width);

} // namespace taskq::core
