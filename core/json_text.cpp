#include "core/json_text.hpp"

namespace taskq::core {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t skip_space(std::string_view text, size_t i) {
  while (i < text.size() && is_space(text[i])) {
    ++i;
  }
  return i;
}

// The index just past the string that opens at text[i] (a quote).
size_t skip_string(std::string_view text, size_t i) {
  for (++i; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return text.size();
}

// The index just past the value that starts at text[i].
size_t skip_value(std::string_view text, size_t i) {
  if (i >= text.size()) {
    return text.size();
  }
  if (text[i] == '"') {
    return skip_string(text, i);
  }
  if (text[i] == '{' || text[i] == '[') {
    int depth = 0;
    while (i < text.size()) {
      const char c = text[i];
      if (c == '"') {
        i = skip_string(text, i);
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
      ++i;
    }
    return text.size();
  }
  // A number or a literal: up to the next delimiter.
  while (i < text.size() && !is_space(text[i]) && text[i] != ','
         && text[i] != '}' && text[i] != ']') {
    ++i;
  }
  return i;
}

// Calls `on_item(begin)` for each item of the container at text (trimmed),
// where the item starts at `begin`; `on_item` returns the index past it.
template <typename OnItem>
void each_item(std::string_view text, OnItem on_item) {
  size_t i = skip_space(text, 1); // past the bracket
  while (i < text.size() && text[i] != '}' && text[i] != ']') {
    i = skip_space(text, on_item(i));
    if (i < text.size() && text[i] == ',') {
      i = skip_space(text, i + 1);
    }
  }
}

} // namespace

JsonKind json_kind(std::string_view value) {
  value = json_trim(value);
  if (value.empty()) {
    return JsonKind::literal;
  }
  switch (value.front()) {
  case '{':
    return JsonKind::object;
  case '[':
    return JsonKind::array;
  case '"':
    return JsonKind::string;
  case 't':
  case 'f':
  case 'n':
    return JsonKind::literal;
  default:
    return JsonKind::number;
  }
}

std::string_view json_trim(std::string_view text) {
  const size_t begin = skip_space(text, 0);
  size_t end = text.size();
  while (end > begin && is_space(text[end - 1])) {
    --end;
  }
  return text.substr(begin, end - begin);
}

std::vector<std::pair<std::string_view, std::string_view>>
json_members(std::string_view object) {
  object = json_trim(object);
  std::vector<std::pair<std::string_view, std::string_view>> members;
  if (json_kind(object) != JsonKind::object) {
    return members;
  }
  each_item(object, [&](size_t i) {
    const size_t key_end = skip_string(object, i);
    size_t v = skip_space(object, key_end);
    if (v < object.size() && object[v] == ':') {
      v = skip_space(object, v + 1);
    }
    const size_t v_end = skip_value(object, v);
    members.emplace_back(object.substr(i, key_end - i),
                         object.substr(v, v_end - v));
    return v_end;
  });
  return members;
}

std::vector<std::string_view> json_items(std::string_view array) {
  array = json_trim(array);
  std::vector<std::string_view> items;
  if (json_kind(array) != JsonKind::array) {
    return items;
  }
  each_item(array, [&](size_t i) {
    const size_t end = skip_value(array, i);
    items.push_back(array.substr(i, end - i));
    return end;
  });
  return items;
}

} // namespace taskq::core
