#pragma once
// Calendar arithmetic that the schedule parser and its ticks share.

#include <chrono>

namespace taskq::core {

// The last day of month `m` (1-12) of year `y`.
inline unsigned last_day(int y, unsigned m) {
  using namespace std::chrono;
  return static_cast<unsigned>(
      year_month_day_last(year(y), month_day_last(month(m))).day());
}

} // namespace taskq::core
