#include "core/labels.hpp"

#include "core/text.hpp"

#include <algorithm>

namespace taskq::core {

namespace {

constexpr std::size_t k_max_key = 128;

bool is_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
         || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '/'
         || c == '-';
}

bool valid_key(std::string_view key) {
  return !key.empty() && key.size() <= k_max_key
         && std::all_of(key.begin(), key.end(), is_key_char);
}

bool valid_value(std::string_view value) {
  return is_plain_text(value);
}

// A key pattern is `*` (any key), a key (that key exactly), or a key with
// one `*` before it, after it, or both: rescue's matcher, which strips them
// and looks for what is left anywhere in the key.
bool key_matches(std::string_view pattern, std::string_view key) {
  if (pattern == "*") {
    return true;
  }
  auto stem = pattern;
  if (stem.starts_with('*')) {
    stem.remove_prefix(1);
  }
  if (stem.ends_with('*')) {
    stem.remove_suffix(1);
  }
  if (stem.empty()) {
    return false; // not a parsed pattern; no key is empty
  }
  if (stem.size() == pattern.size()) {
    return key == pattern;
  }
  return key.find(stem) != std::string_view::npos;
}

bool matches_anything(const LabelPattern& p) {
  return p.key == "*" && p.value == "*";
}

} // namespace

std::optional<std::pair<std::string, std::string>>
parse_label(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    return std::nullopt;
  }
  const auto key = text.substr(0, eq);
  const auto value = text.substr(eq + 1);
  if (!valid_key(key) || !valid_value(value)) {
    return std::nullopt;
  }
  return std::pair{std::string(key), std::string(value)};
}

std::optional<LabelPattern> parse_label_pattern(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    return std::nullopt;
  }
  const auto key = text.substr(0, eq);
  const auto value = text.substr(eq + 1);
  // What remains after one leading and one trailing `*` must be a plain
  // key; `*` alone is the one pattern with nothing left.
  auto stem = key;
  if (stem.starts_with('*')) {
    stem.remove_prefix(1);
  }
  if (stem.ends_with('*')) {
    stem.remove_suffix(1);
  }
  if ((key != "*" && !valid_key(stem)) || !valid_value(value)) {
    return std::nullopt;
  }
  return LabelPattern{std::string(key), std::string(value)};
}

bool matches(const Labels& labels, const std::vector<LabelPattern>& patterns) {
  return std::all_of(
      patterns.begin(), patterns.end(), [&](const LabelPattern& p) {
        return matches_anything(p)
               || std::any_of(
                   labels.begin(), labels.end(), [&](const auto& kv) {
                     return key_matches(p.key, kv.first)
                            && (p.value == "*" || p.value == kv.second);
                   });
      });
}

std::string format_labels(const Labels& labels, std::string_view separator) {
  std::string out;
  for (const auto& [k, v] : labels) {
    if (!out.empty()) {
      out += separator;
    }
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

} // namespace taskq::core
