#include "core/json_text.hpp"

#include "core/text.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>

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

// The RFC 8259 check behind json_error(): a loop over the bytes with an
// explicit stack of open containers, so depth costs memory, not frames.
class Validator {
public:
  explicit Validator(std::string_view text) : m_text(text) {}

  std::optional<std::string> run() {
    if (m_text.substr(0, 3) == "\xef\xbb\xbf") {
      return std::string("it starts with a UTF-8 byte-order mark");
    }
    // What the grammar allows next.
    enum class Want {
      value,          // after ':' or ',' in an array, or at the start
      value_or_close, // just after '['
      key,            // after ',' in an object
      key_or_close,   // just after '{'
      colon,          // after a key
      comma_or_close, // after a value inside a container
      end,            // after the top-level value
    };
    Want want = Want::value;
    std::vector<char> open; // '{' or '[' per open container
    while (true) {
      m_i = skip_space(m_text, m_i);
      if (m_i == m_text.size()) {
        if (want == Want::end) {
          return std::nullopt;
        }
        if (open.empty()) {
          return std::string("there is no JSON value");
        }
        return std::string(open.back() == '{'
                               ? "the text ends inside an object"
                               : "the text ends inside an array");
      }
      const char c = m_text[m_i];
      switch (want) {
      case Want::end:
        return fail("unexpected text after the value", true);
      case Want::colon:
        if (c != ':') {
          return fail("expected ':' after a key", true);
        }
        ++m_i;
        want = Want::value;
        continue;
      case Want::comma_or_close:
        if (c == ',') {
          ++m_i;
          want = open.back() == '{' ? Want::key : Want::value;
          continue;
        }
        if (c != (open.back() == '{' ? '}' : ']')) {
          return fail(open.back() == '{' ? "expected ',' or '}'"
                                         : "expected ',' or ']'",
                      true);
        }
        break; // closes below
      case Want::key_or_close:
      case Want::key:
        if (c == '}' && want == Want::key_or_close) {
          break; // closes below
        }
        if (c != '"') {
          return fail("expected a string key", true);
        }
        if (!string()) {
          return m_error;
        }
        want = Want::colon;
        continue;
      case Want::value_or_close:
        if (c == ']') {
          break; // closes below
        }
        [[fallthrough]];
      case Want::value:
        if (c == '{' || c == '[') {
          open.push_back(c);
          ++m_i;
          want = c == '{' ? Want::key_or_close : Want::value_or_close;
          continue;
        }
        if (!scalar()) {
          return m_error;
        }
        want = open.empty() ? Want::end : Want::comma_or_close;
        continue;
      }
      // A closing bracket that matches the innermost open container.
      open.pop_back();
      ++m_i;
      want = open.empty() ? Want::end : Want::comma_or_close;
    }
  }

private:
  // Sets the error "WHAT at byte N" (1-based), naming the byte there when
  // `show` (printable ASCII quoted, else its hex value); returns nothing.
  std::optional<std::string> fail(const char* what, bool show = false) {
    std::string msg(what);
    if (show && m_i < m_text.size()) {
      const auto b = static_cast<unsigned char>(m_text[m_i]);
      if (b > 0x20 && b < 0x7f) {
        msg += std::string(", not '") + static_cast<char>(b) + "'";
      } else {
        static const char* hex = "0123456789abcdef";
        msg += ", not byte 0x";
        msg += hex[b >> 4];
        msg += hex[b & 0xf];
      }
    }
    msg += " at byte " + std::to_string(m_i + 1);
    m_error = std::move(msg);
    return m_error;
  }

  bool fails(const char* what, bool show = false) {
    fail(what, show);
    return false;
  }

  // A string, a number or a literal at m_i; false with m_error set.
  bool scalar() {
    const char c = m_text[m_i];
    if (c == '"') {
      return string();
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      return number();
    }
    for (const std::string_view word : {"true", "false", "null"}) {
      if (m_text.substr(m_i, word.size()) == word) {
        m_i += word.size();
        return true;
      }
    }
    return fails("expected a JSON value", true);
  }

  bool digit() const {
    return m_i < m_text.size() && m_text[m_i] >= '0' && m_text[m_i] <= '9';
  }

  // Checked as text: never converted, so any number of digits is fine.
  bool number() {
    if (m_text[m_i] == '-') {
      ++m_i;
    }
    if (!digit()) {
      return fails("expected a digit in a number", true);
    }
    if (m_text[m_i] == '0') {
      ++m_i;
      if (digit()) {
        return fails("a number has a leading zero");
      }
    } else {
      while (digit()) {
        ++m_i;
      }
    }
    if (m_i < m_text.size() && m_text[m_i] == '.') {
      ++m_i;
      if (!digit()) {
        return fails("expected a digit after '.' in a number", true);
      }
      while (digit()) {
        ++m_i;
      }
    }
    if (m_i < m_text.size() && (m_text[m_i] == 'e' || m_text[m_i] == 'E')) {
      ++m_i;
      if (m_i < m_text.size() && (m_text[m_i] == '+' || m_text[m_i] == '-')) {
        ++m_i;
      }
      if (!digit()) {
        return fails("expected a digit in a number's exponent", true);
      }
      while (digit()) {
        ++m_i;
      }
    }
    return true;
  }

  // The value of the four hex digits at m_i, or -1.
  int32_t hex4() const {
    if (m_text.size() - m_i < 4) {
      return -1;
    }
    int32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char h = m_text[m_i + k];
      int32_t d = 0;
      if (h >= '0' && h <= '9') {
        d = h - '0';
      } else if (h >= 'a' && h <= 'f') {
        d = h - 'a' + 10;
      } else if (h >= 'A' && h <= 'F') {
        d = h - 'A' + 10;
      } else {
        return -1;
      }
      v = v * 16 + d;
    }
    return v;
  }

  // The escape at m_i (just past the backslash).
  bool escape() {
    if (m_i == m_text.size()) {
      return fails("the text ends inside a string");
    }
    const char e = m_text[m_i];
    if (e != 'u') {
      if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
        return fails("invalid escape in a string", true);
      }
      ++m_i;
      return true;
    }
    ++m_i;
    const int32_t unit = hex4();
    if (unit < 0) {
      return fails("expected four hex digits after \\u");
    }
    m_i += 4;
    if (unit >= 0xdc00 && unit <= 0xdfff) {
      m_i -= 6;
      return fails("a \\u escape of a low surrogate without a high one before "
                   "it");
    }
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const bool pair = m_text.substr(m_i, 2) == "\\u";
      const int32_t low = [&] {
        m_i += 2;
        const int32_t v = pair ? hex4() : -1;
        m_i -= 2;
        return v;
      }();
      if (!pair || low < 0xdc00 || low > 0xdfff) {
        m_i -= 6;
        return fails("a \\u escape of a high surrogate without a low one "
                     "after it");
      }
      m_i += 6;
    }
    return true;
  }

  // The well-formed UTF-8 sequence at m_i (its lead byte 0x80 or more).
  bool utf8() {
    using Problem = Utf8Sequence::Problem;
    const Utf8Sequence seq = utf8_sequence(m_text, m_i);
    switch (seq.problem) {
    case Problem::none:
      m_i += seq.length;
      return true;
    case Problem::invalid:
      return fails("invalid UTF-8 in a string", true);
    case Problem::cut_short:
      return fails("invalid UTF-8 (cut short) in a string", true);
    case Problem::overlong:
      return fails("overlong UTF-8 in a string", true);
    case Problem::surrogate:
      return fails("a UTF-8 encoded surrogate in a string", true);
    case Problem::beyond_max:
      return fails("UTF-8 beyond U+10FFFF in a string", true);
    }
    return fails("invalid UTF-8 in a string", true);
  }

  // The string that opens at m_i (a quote).
  bool string() {
    ++m_i;
    while (m_i < m_text.size()) {
      const auto b = static_cast<unsigned char>(m_text[m_i]);
      if (b == '"') {
        ++m_i;
        return true;
      }
      if (b == '\\') {
        ++m_i;
        if (!escape()) {
          return false;
        }
      } else if (b < 0x20) {
        return fails("a control character in a string (escape it)", true);
      } else if (b < 0x80) {
        ++m_i;
      } else if (!utf8()) {
        return false;
      }
    }
    return fails("the text ends inside a string");
  }

  std::string_view m_text;
  size_t m_i = 0;
  std::optional<std::string> m_error;
};
} // namespace

std::optional<std::string> json_error(std::string_view text) {
  return Validator(text).run();
}

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

void minify_json_into(std::string_view text, std::string& out) {
  // Written through a pointer into a buffer sized for the worst case: a
  // bulk add runs this once per line.
  out.resize(text.size());
  char* w = out.data();
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      *w++ = c;
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
      *w++ = c;
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      *w++ = c;
    }
  }
  out.resize(static_cast<size_t>(w - out.data()));
}

std::string minify_json(std::string_view text) {
  std::string out;
  minify_json_into(text, out);
  return out;
}

std::optional<int64_t> json_integer(std::string_view text) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::string> json_string_value(std::string_view text) {
  if (json_kind(text) != JsonKind::string) {
    return std::nullopt;
  }
  return nlohmann::json::parse(text).get<std::string>();
}

} // namespace taskq::core
