#include "core/text.hpp"

#include <algorithm>

namespace taskq::core {
Utf8Sequence utf8_sequence(std::string_view text, size_t i) {
  using Problem = Utf8Sequence::Problem;
  const auto lead = static_cast<unsigned char>(text[i]);
  if (lead < 0x80) {
    return {1, Problem::none};
  }
  size_t length = 0;
  char32_t min = 0;
  char32_t cp = 0;
  if ((lead & 0xe0) == 0xc0) {
    length = 2;
    min = 0x80;
    cp = lead & 0x1fU;
  } else if ((lead & 0xf0) == 0xe0) {
    length = 3;
    min = 0x800;
    cp = lead & 0x0fU;
  } else if ((lead & 0xf8) == 0xf0) {
    length = 4;
    min = 0x10000;
    cp = lead & 0x07U;
  } else {
    return {0, Problem::invalid}; // a continuation byte, or 0xf8..0xff
  }
  if (text.size() - i < length) {
    return {0, Problem::cut_short};
  }
  for (size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xc0) != 0x80) {
      return {0, Problem::invalid};
    }
    cp = (cp << 6) | (next & 0x3fU);
  }
  if (cp < min) {
    return {0, Problem::overlong};
  }
  if (cp >= 0xd800 && cp <= 0xdfff) {
    return {0, Problem::surrogate};
  }
  if (cp > 0x10ffff) {
    return {0, Problem::beyond_max};
  }
  return {length, Problem::none};
}

bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8_sequence(text, i).length;
    if (length == 0) {
      return false;
    }
    i += length;
  }
  return true;
}

bool is_plain_text(std::string_view text) {
  return is_valid_utf8(text)
         && std::none_of(text.begin(), text.end(), [](char c) {
              const auto u = static_cast<unsigned char>(c);
              return u < 0x20 || u == 0x7f;
            });
}

std::string to_valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8_sequence(text, i).length;
    if (length == 0) {
      out += "\xef\xbf\xbd"; // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

bool is_valid_name(std::string_view name) {
  return !name.empty() && name.size() <= 128
         && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789._:/-")
                == std::string_view::npos;
}

} // namespace taskq::core
