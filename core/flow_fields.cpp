#include "core/flow_fields.hpp"

#include "core/json_text.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

namespace taskq::core::flow::doc {

[[noreturn]] void fail(std::string message) {
  throw DocError{std::move(message)};
}

std::string shown(std::string_view text) {
  constexpr size_t k_max = 64;
  std::string out;
  for (const char c : text.substr(0, k_max)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  if (text.size() > k_max) {
    out += "...";
  }
  return to_valid_utf8(out);
}

std::string string_value(std::string_view token) {
  if (token.find('\\') == std::string_view::npos) {
    return std::string(token.substr(1, token.size() - 2));
  }
  return nlohmann::json::parse(token).get<std::string>();
}

std::string minified(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\') {
        out += text[++i]; // valid JSON: an escape has its next byte
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      continue;
    }
    in_string = c == '"';
    out += c;
  }
  return out;
}

Fields::Fields(std::string_view object, std::string where, std::string prefix)
    : m_where(std::move(where)), m_prefix(std::move(prefix)) {
  for (const auto& [key, value] : json_members(object)) {
    m_members.push_back({string_value(key), value, false});
  }
}

std::optional<std::string_view> Fields::take(std::string_view key) {
  for (auto& m : m_members) {
    if (m.key == key) {
      m.taken = true;
      return m.value;
    }
  }
  return std::nullopt;
}

void Fields::check(std::initializer_list<std::string_view> known) const {
  for (size_t i = 0; i < m_members.size(); ++i) {
    const auto& key = m_members[i].key;
    for (size_t j = 0; j < i; ++j) {
      if (m_members[j].key == key) {
        fail("field '" + shown(m_prefix + key) + "' is given twice in "
             + m_where);
      }
    }
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      fail("unknown field '" + shown(m_prefix + key) + "' in " + m_where);
    }
  }
}

[[noreturn]] void Fields::fail_field(std::string_view key,
                                     std::string_view what) const {
  fail(m_where + ": '" + m_prefix + std::string(key) + "' "
       + std::string(what));
}

std::optional<std::string> Fields::string(std::string_view key) {
  const auto v = take(key);
  if (!v) {
    return std::nullopt;
  }
  if (json_kind(*v) != JsonKind::string) {
    fail_field(key, "must be a string");
  }
  return string_value(*v);
}

std::optional<int64_t> Fields::integer(std::string_view key) {
  const auto v = take(key);
  if (!v) {
    return std::nullopt;
  }
  int64_t n = 0;
  const char* end = v->data() + v->size();
  const auto [ptr, ec] = std::from_chars(v->data(), end, n);
  if (json_kind(*v) != JsonKind::number || ec != std::errc() || ptr != end) {
    fail_field(key, "must be an integer");
  }
  return n;
}

std::optional<int64_t> Fields::integer_in(std::string_view key, int64_t low,
                                          int64_t high) {
  const auto n = integer(key);
  if (n && (*n < low || *n > high)) {
    fail_field(key, high == INT64_MAX
                        ? "must be " + std::to_string(low) + " or more"
                        : "must be between " + std::to_string(low) + " and "
                              + std::to_string(high));
  }
  return n;
}

std::optional<bool> Fields::boolean(std::string_view key) {
  const auto v = take(key);
  if (!v) {
    return std::nullopt;
  }
  if (*v != "true" && *v != "false") {
    fail_field(key, "must be true or false");
  }
  return *v == "true";
}

std::optional<Millis> Fields::duration(std::string_view key, bool zero_ok) {
  const auto v = take(key);
  if (!v) {
    return std::nullopt;
  }
  const auto d = json_kind(*v) == JsonKind::string
                     ? parse_duration(string_value(*v))
                     : std::nullopt;
  if (!d) {
    fail_field(key, "must be a duration such as \"90s\", \"5m\" or "
                    "\"1h30m\"");
  }
  if (!zero_ok && d->count() == 0) {
    fail_field(key, "must be longer than 0");
  }
  return d;
}

std::optional<std::string> Fields::name(std::string_view key) {
  auto s = string(key);
  if (s && !is_valid_name(*s)) {
    fail_field(key, "is not a valid name ('" + shown(*s)
                        + "'): use 1-128 letters, digits and . _ : / -");
  }
  return s;
}

std::optional<std::string> Fields::symbol(std::string_view key) {
  auto s = string(key);
  if (s) {
    check_symbol(key, *s);
  }
  return s;
}

std::vector<std::string> Fields::symbols(std::string_view key,
                                         std::string_view noun) {
  std::vector<std::string> out;
  const auto v = take(key);
  if (!v) {
    return out;
  }
  auto add = [&](std::string_view token) {
    if (json_kind(token) != JsonKind::string) {
      fail_field(key, "must be a string or an array of strings");
    }
    std::string s = string_value(token);
    check_symbol(key, s, noun);
    if (std::find(out.begin(), out.end(), s) == out.end()) {
      out.push_back(std::move(s));
    }
  };
  if (json_kind(*v) == JsonKind::array) {
    for (const auto item : json_items(*v)) {
      add(item);
    }
  } else {
    add(*v);
  }
  return out;
}

std::optional<Labels> Fields::labels(std::string_view key) {
  const auto v = take(key);
  if (!v) {
    return std::nullopt;
  }
  if (json_kind(*v) != JsonKind::object) {
    fail_field(key, "must be an object of \"KEY\": \"VALUE\" strings");
  }
  Labels out;
  for (const auto& [k, value] : json_members(*v)) {
    const std::string label_key = string_value(k);
    const auto label = json_kind(value) == JsonKind::string
                               && label_key.find('=') == std::string::npos
                           ? parse_label(label_key + "=" + string_value(value))
                           : std::nullopt;
    if (!label) {
      fail_field(key, "has an invalid label '" + shown(label_key)
                          + "': KEY is 1-128 letters, digits and . _ / -, "
                            "VALUE a string without control characters");
    }
    out[label->first] = label->second;
  }
  return out;
}

void Fields::check_symbol(std::string_view key, const std::string& s,
                          std::string_view noun) const {
  if (s.empty() || !is_plain_text(s)) {
    fail_field(key, "has an invalid " + std::string(noun) + " '" + shown(s)
                        + "': non-empty text on one line");
  }
}

nlohmann::json json_value(const Fields& f, std::string_view key,
                          std::string_view text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    // json_error accepted it: only a number beyond a double's range is left.
    f.fail_field(key, "holds a number too large to read");
  }
}

} // namespace taskq::core::flow::doc
