#include "web/follow.hpp"

namespace taskq::web {

std::string OutputFollow::answer(const Key& key,
                                 const std::function<std::string()>& read) {
  const std::lock_guard lock(m_mutex);
  const Clock::time_point now = Clock::now();
  std::erase_if(m_kept, [now](const auto& kept) {
    return now - kept.second.first >= k_follow_keep;
  });
  if (const auto it = m_kept.find(key); it != m_kept.end()) {
    return it->second.second;
  }
  std::string text = read();
  m_kept.emplace(key, std::pair(now, text));
  return text;
}

} // namespace taskq::web
