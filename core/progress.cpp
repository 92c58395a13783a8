#include "core/progress.hpp"

#include "core/duration.hpp"

#include <cmath>
#include <cstdio>

namespace taskq::core {

void RateMeter::sample(Time t, int64_t done) {
  m_samples.emplace_back(t, done);
  // Keep one sample at or before the window's start, so the rate always
  // spans the whole window once there is that much history.
  while (m_samples.size() > 2 && m_samples[1].first <= t - m_window) {
    m_samples.pop_front();
  }
}

std::optional<double> RateMeter::per_second() const {
  if (m_samples.size() < 2) {
    return std::nullopt;
  }
  const auto& [t0, d0] = m_samples.front();
  const auto& [t1, d1] = m_samples.back();
  const auto span = std::chrono::duration<double>(t1 - t0).count();
  if (span <= 0) {
    return std::nullopt;
  }
  return static_cast<double>(d1 - d0) / span;
}

std::optional<Millis> RateMeter::eta(int64_t remaining) const {
  const auto rate = per_second();
  if (!rate || *rate <= 0) {
    return std::nullopt;
  }
  if (remaining <= 0) {
    return Millis{0};
  }
  const double seconds = static_cast<double>(remaining) / *rate;
  if (seconds > 100.0 * 365 * 24 * 3600) {
    return std::nullopt; // beyond any useful estimate
  }
  return Millis{static_cast<int64_t>(std::ceil(seconds)) * 1000};
}

std::string format_progress(const ProgressView& view, int bar_width) {
  std::string out;
  const double fraction = view.total > 0 ? static_cast<double>(view.done)
                                               / static_cast<double>(view.total)
                                         : 1.0;
  if (bar_width > 0) {
    const int filled = static_cast<int>(fraction * bar_width);
    out += '[';
    out.append(static_cast<size_t>(filled), '#');
    out.append(static_cast<size_t>(bar_width - filled), '-');
    out += "] ";
  }
  char buf[96];
  std::snprintf(
      buf, sizeof buf, "%lld/%lld %d%%", static_cast<long long>(view.done),
      static_cast<long long>(view.total), static_cast<int>(fraction * 100));
  out += buf;
  if (view.rate) {
    std::snprintf(buf, sizeof buf, " %.1f/s", *view.rate);
    out += buf;
  }
  if (view.eta) {
    out += " ETA " + format_duration(*view.eta);
  } else if (view.done < view.total) {
    out += " ETA ?";
  }
  if (view.failed > 0) {
    out += " (" + std::to_string(view.failed) + " failed)";
  }
  return out;
}

} // namespace taskq::core
