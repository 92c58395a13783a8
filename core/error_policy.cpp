#include "core/error_policy.hpp"

#include <algorithm>

namespace taskq::core {

ErrorPolicy resolve_policy(const PolicyOverrides& queue,
                           const PolicyOverrides& task) {
  const ErrorPolicy defaults;
  return ErrorPolicy{
      .max_errors = task.max_errors.value_or(
          queue.max_errors.value_or(defaults.max_errors)),
      .window = task.window.value_or(queue.window.value_or(defaults.window)),
      .retry_delay = task.retry_delay.value_or(
          queue.retry_delay.value_or(defaults.retry_delay)),
      .backoff =
          task.backoff.value_or(queue.backoff.value_or(defaults.backoff)),
      .max_delay =
          task.max_delay.value_or(queue.max_delay.value_or(defaults.max_delay)),
  };
}

ErrorDecision decide(const std::vector<ErrorEntry>& errors, Time now,
                     const ErrorPolicy& policy,
                     std::optional<Millis> retry_in) {
  const Time since = now - policy.window;
  const auto counted =
      std::count_if(errors.begin(), errors.end(),
                    [&](const ErrorEntry& e) { return e.time > since; });
  if (counted >= policy.max_errors) {
    return ErrorDecision{.fail = true, .until = std::nullopt};
  }
  if (retry_in) {
    return ErrorDecision{.fail = false, .until = now + *retry_in};
  }
  Millis delay = policy.retry_delay;
  if (policy.backoff == Backoff::exponential) {
    // Doubling stops at the cap, so a long history never overflows.
    for (auto i = counted; i > 1 && delay < policy.max_delay; --i) {
      delay *= 2;
    }
    delay = std::min(delay, policy.max_delay);
  }
  return ErrorDecision{.fail = false, .until = now + delay};
}

std::optional<Backoff> parse_backoff(std::string_view text) {
  if (text == "constant") {
    return Backoff::constant;
  }
  if (text == "exponential") {
    return Backoff::exponential;
  }
  return std::nullopt;
}

std::string_view to_string(Backoff b) {
  return b == Backoff::exponential ? "exponential" : "constant";
}

} // namespace taskq::core
