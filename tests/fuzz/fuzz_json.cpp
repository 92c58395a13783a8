// JSON text from outside (payloads, results, checkpoints, `add --jsonl`,
// `tx`, `import`): core::json_error agrees with a reference reading of RFC
// 8259 (with the rules core/json_text.hpp adds: lone surrogate escapes and
// a byte-order mark refused), its reason is one line of ASCII, and for
// valid text minify_json keeps it valid, is idempotent, removes exactly the
// white space outside strings, and json_members/json_items cut the value
// into valid parts that rebuild it byte for byte.
#include "cli/context.hpp"
#include "core/json_text.hpp"

#include <nlohmann/json.hpp>

#include <string>

#include "fuzz.hpp"

namespace core = taskq::core;
using taskq::fuzz::as_text;

namespace {

// A recursive-descent reader of RFC 8259, independent of core/json_text.
class Reference {
public:
  explicit Reference(std::string_view text) : m_text(text) {}

  bool valid() {
    space();
    if (!value()) {
      return false;
    }
    space();
    return m_pos == m_text.size();
  }

private:
  bool at_end() const { return m_pos >= m_text.size(); }
  unsigned char peek() const {
    return at_end() ? 0 : static_cast<unsigned char>(m_text[m_pos]);
  }
  bool eat(char c) {
    if (!at_end() && m_text[m_pos] == c) {
      ++m_pos;
      return true;
    }
    return false;
  }
  void space() {
    while (!at_end()
           && (peek() == ' ' || peek() == '\t' || peek() == '\n'
               || peek() == '\r')) {
      ++m_pos;
    }
  }
  bool digits() { // one or more
    const size_t start = m_pos;
    while (peek() >= '0' && peek() <= '9') {
      ++m_pos;
    }
    return m_pos > start;
  }

  bool value() {
    switch (peek()) {
    case '{':
      return object();
    case '[':
      return array();
    case '"':
      return string();
    case 't':
      return word("true");
    case 'f':
      return word("false");
    case 'n':
      return word("null");
    default:
      return number();
    }
  }
  bool word(std::string_view w) {
    if (m_text.substr(m_pos, w.size()) != w) {
      return false;
    }
    m_pos += w.size();
    return true;
  }
  bool number() {
    eat('-');
    if (eat('0')) {
      // no more integer digits
    } else if (peek() >= '1' && peek() <= '9') {
      digits();
    } else {
      return false;
    }
    if (eat('.') && !digits()) {
      return false;
    }
    if (eat('e') || eat('E')) {
      if (!eat('+')) {
        eat('-');
      }
      if (!digits()) {
        return false;
      }
    }
    return true;
  }
  bool object() {
    ++m_pos;
    space();
    if (eat('}')) {
      return true;
    }
    while (true) {
      space();
      if (peek() != '"' || !string()) {
        return false;
      }
      space();
      if (!eat(':')) {
        return false;
      }
      space();
      if (!value()) {
        return false;
      }
      space();
      if (eat('}')) {
        return true;
      }
      if (!eat(',')) {
        return false;
      }
    }
  }
  bool array() {
    ++m_pos;
    space();
    if (eat(']')) {
      return true;
    }
    while (true) {
      space();
      if (!value()) {
        return false;
      }
      space();
      if (eat(']')) {
        return true;
      }
      if (!eat(',')) {
        return false;
      }
    }
  }
  // Four hex digits after `\u`; -1 when not.
  long hex4() {
    if (m_pos + 4 > m_text.size()) {
      return -1;
    }
    long v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = m_text[m_pos++];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) {
        return -1;
      }
      v = v * 16 + d;
    }
    return v;
  }
  // One well-formed UTF-8 sequence of 2-4 bytes.
  bool utf8() {
    const unsigned char lead = peek();
    int n = 0;
    unsigned long cp = 0;
    if (lead >= 0xc2 && lead <= 0xdf) {
      n = 1;
      cp = lead & 0x1fU;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      n = 2;
      cp = lead & 0x0fU;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      n = 3;
      cp = lead & 0x07U;
    } else {
      return false;
    }
    ++m_pos;
    for (int i = 0; i < n; ++i) {
      const unsigned char c = peek();
      if ((c & 0xc0) != 0x80) {
        return false;
      }
      cp = cp << 6 | (c & 0x3fU);
      ++m_pos;
    }
    const unsigned long min = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
    return cp >= min && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
  }
  bool string() {
    ++m_pos;
    while (true) {
      if (at_end()) {
        return false;
      }
      const unsigned char c = peek();
      if (c == '"') {
        ++m_pos;
        return true;
      }
      if (c < 0x20) {
        return false;
      }
      if (c >= 0x80) {
        if (!utf8()) {
          return false;
        }
        continue;
      }
      ++m_pos;
      if (c != '\\') {
        continue;
      }
      const char e = static_cast<char>(peek());
      ++m_pos;
      if (std::string_view("\"\\/bfnrt").find(e) != std::string_view::npos
          && e != '\0') {
        continue;
      }
      if (e != 'u') {
        return false;
      }
      const long u = hex4();
      if (u < 0 || (u >= 0xdc00 && u <= 0xdfff)) {
        return false; // not hex, or a lone low surrogate
      }
      if (u >= 0xd800 && u <= 0xdbff) {
        if (!eat('\\') || !eat('u')) {
          return false;
        }
        const long low = hex4();
        if (low < 0xdc00 || low > 0xdfff) {
          return false;
        }
      }
    }
  }

  std::string_view m_text;
  size_t m_pos = 0;
};

bool json_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// `text` without the white space outside strings.
std::string reference_minify(std::string_view text) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\') {
        out += text[++i];
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
      out += c;
    } else if (!json_space(c)) {
      out += c;
    }
  }
  return out;
}

// Each part valid; the parts, minified and rejoined, rebuild `minified`.
void check_parts(std::string_view text, const std::string& minified) {
  const auto kind = core::json_kind(text);
  if (kind == core::JsonKind::object) {
    std::string rebuilt = "{";
    for (const auto& [key, value] : core::json_members(text)) {
      FUZZ_REQUIRE(core::json_kind(key) == core::JsonKind::string);
      FUZZ_REQUIRE(core::json_valid(key) && core::json_valid(value));
      FUZZ_REQUIRE(core::json_trim(value) == value);
      rebuilt += rebuilt.size() > 1 ? "," : "";
      rebuilt += std::string(key) + ":" + taskq::cli::minify_json(value);
    }
    FUZZ_REQUIRE(rebuilt + "}" == minified);
  } else if (kind == core::JsonKind::array) {
    std::string rebuilt = "[";
    for (const auto item : core::json_items(text)) {
      FUZZ_REQUIRE(core::json_valid(item));
      FUZZ_REQUIRE(core::json_trim(item) == item);
      rebuilt += rebuilt.size() > 1 ? "," : "";
      rebuilt += taskq::cli::minify_json(item);
    }
    FUZZ_REQUIRE(rebuilt + "]" == minified);
  } else {
    FUZZ_REQUIRE(core::json_trim(text) == minified);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto text = as_text(data, size);
  const auto error = core::json_error(text);
  const bool expected = Reference(text).valid();
  if (error.has_value() == expected) {
    std::fprintf(stderr, "json_error: %s, the reference: %s\n",
                 error ? error->c_str() : "valid",
                 expected ? "valid" : "invalid");
  }
  FUZZ_REQUIRE(error.has_value() != expected);
  // A stricter parser may refuse what nlohmann's accepts (a BOM) but
  // nothing else it accepts. (nlohmann stops reading at a NUL byte, so it
  // accepts `""` followed by a NUL and anything.)
  if (!text.starts_with("\xef\xbb\xbf")
      && text.find('\0') == std::string_view::npos
      && nlohmann::json::accept(text)) {
    FUZZ_REQUIRE(expected);
  }
  if (error) {
    FUZZ_REQUIRE(!error->empty());
    for (const char c : *error) {
      FUZZ_REQUIRE(c >= 0x20 && c < 0x7f); // one line of ASCII
    }
    return 0;
  }

  const std::string minified = taskq::cli::minify_json(text);
  FUZZ_REQUIRE(minified == reference_minify(text));
  FUZZ_REQUIRE(core::json_valid(minified));
  FUZZ_REQUIRE(taskq::cli::minify_json(minified) == minified);
  FUZZ_REQUIRE(core::json_kind(text) == core::json_kind(minified));
  check_parts(text, minified);
  check_parts(minified, minified);
  return 0;
}
