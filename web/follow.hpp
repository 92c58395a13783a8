#pragma once

// A running task's output followed by its open pages (GET
// /tasks/ID/output, every 2 s from taskq.js): each answer is kept a
// second, so that the pages following one task, which ask in step after
// the same chunk, cost the database one read a second however many they
// are.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace taskq::web {

inline constexpr std::chrono::seconds k_follow_keep{1};

class OutputFollow {
public:
  struct Key {
    int64_t task = 0;
    int64_t attempt = 0;
    std::string stream;
    int64_t after = 0;
    auto operator<=>(const Key&) const = default;
  };

  // The answer for `key`: kept from a read of the last second, else
  // `read`'s (kept only when it returns).
  std::string answer(const Key& key, const std::function<std::string()>& read);

private:
  using Clock = std::chrono::steady_clock;
  std::mutex m_mutex; // held while reading: one read a key at a time
  std::map<Key, std::pair<Clock::time_point, std::string>> m_kept;
};

} // namespace taskq::web
