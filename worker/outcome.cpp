#include "worker/outcome.hpp"

#include "core/json_text.hpp"
#include "core/text.hpp"

#include <nlohmann/json.hpp>

namespace taskq::worker {

std::string result_from_stdout(std::string text) {
  if (core::json_valid(text)) {
    return core::minify_json(text);
  }
  if (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  return nlohmann::json(core::to_valid_utf8(text)).dump();
}

bool flush_due(const FlushState& s, Instant now) {
  if (s.prefetch <= 1 || s.stopping) {
    return true;
  }
  if (s.pending >= static_cast<size_t>(s.prefetch)) {
    return true;
  }
  if (s.flush_at && now >= *s.flush_at) {
    return true;
  }
  return s.idle;
}

} // namespace taskq::worker
