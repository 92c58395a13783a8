#pragma once

#include "core/time.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::core {

// Metafora DefaultErrHandler's constants.
inline constexpr int k_default_max_errors = 8;
inline constexpr Millis k_default_error_window = std::chrono::hours(4);
inline constexpr Millis k_default_retry_delay = std::chrono::minutes(10);
inline constexpr Millis k_default_max_delay = std::chrono::hours(24);
inline constexpr std::string_view k_exceeded_error_rate = "exceeded error rate";

enum class Backoff { constant, exponential };

struct ErrorPolicy {
  int max_errors = k_default_max_errors;
  Millis window = k_default_error_window;
  Millis retry_delay = k_default_retry_delay;
  Backoff backoff = Backoff::constant;
  Millis max_delay = k_default_max_delay; // cap for exponential backoff
};

// Per-queue or per-task overrides; unset fields fall through.
struct PolicyOverrides {
  std::optional<int> max_errors;
  std::optional<Millis> window;
  std::optional<Millis> retry_delay;
  std::optional<Backoff> backoff;
  std::optional<Millis> max_delay;
};

// task overrides, else queue overrides, else the defaults.
ErrorPolicy resolve_policy(const PolicyOverrides& queue,
                           const PolicyOverrides& task);

struct ErrorEntry {
  Time time;
  std::string message;
};

// What the policy decided for a task in `fault`.
struct ErrorDecision {
  bool fail = false;         // true: → failed, with k_exceeded_error_rate
  std::optional<Time> until; // when !fail: → sleeping until this time
};

// Decides for a task whose history `errors` (oldest first) already holds
// the error just reported. Errors count when their time is strictly after
// now − window; reaching max_errors fails the task. Otherwise it sleeps for
// `retry_in` if given, else the retry delay (exponential: doubled for each
// counted error beyond the first, capped at max_delay).
ErrorDecision decide(const std::vector<ErrorEntry>& errors, Time now,
                     const ErrorPolicy& policy,
                     std::optional<Millis> retry_in = std::nullopt);

std::optional<Backoff> parse_backoff(std::string_view text);
std::string_view to_string(Backoff b);

} // namespace taskq::core
