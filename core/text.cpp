#include "core/text.hpp"

namespace taskq::core {

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead < 0x80) {
      ++i;
      continue;
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
      return false; // a continuation byte, or 0xf8..0xff
    }
    if (i + length > text.size()) {
      return false;
    }
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) {
        return false;
      }
      cp = (cp << 6) | (next & 0x3fU);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += length;
  }
  return true;
}

} // namespace taskq::core
