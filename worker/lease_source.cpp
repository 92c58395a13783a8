#include "worker/lease_source.hpp"

#include "core/error.hpp"
#include "worker/policy.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

namespace taskq::worker {

core::Millis lease_ahead_hold() {
  return lease_ahead_hold(std::getenv("TASKQ_LEASE_AHEAD_MS"));
}

core::Millis lease_ahead_hold(const char* env) {
  if (env == nullptr) {
    return k_default_lease_ahead;
  }
  const std::string_view text(env);
  int64_t ms = -1;
  const auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), ms);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()
      || ms < 0 || ms > k_max_lease_ahead.count()) {
    throw Error(ErrorKind::usage,
                "TASKQ_LEASE_AHEAD_MS: expected whole milliseconds from 0 "
                "to 3600000, got \""
                    + std::string(text) + "\"");
  }
  return core::Millis(ms);
}

int lookahead(int prefetch, int concurrency) {
  if (prefetch <= 1) {
    return 0;
  }
  return std::max(1, (prefetch - 1) / concurrency);
}

bool changed_by_others(storage::TaskStore& store,
                       std::optional<int64_t>& seen) {
  std::optional<int64_t> v;
  try {
    v = store.others_version();
  } catch (const Error&) {
    return true;
  }
  if (v && seen && *v == *seen) {
    return false;
  }
  seen = v;
  return true;
}

} // namespace taskq::worker
