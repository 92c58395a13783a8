#include "cli/top_text.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cwchar>
#include <langinfo.h>

namespace taskq::cli::top {

std::string short_duration(core::Millis d) {
  int64_t s = std::max<int64_t>(d.count(), 0) / 1000;
  auto two = [](int64_t n) { return (n < 10 ? "0" : "") + std::to_string(n); };
  if (s < 60) {
    return std::to_string(s) + "s";
  }
  if (s < 3600) {
    return std::to_string(s / 60) + "m" + two(s % 60) + "s";
  }
  if (s < 86400) {
    return std::to_string(s / 3600) + "h" + two(s % 3600 / 60) + "m";
  }
  return std::to_string(s / 86400) + "d" + two(s % 86400 / 3600) + "h";
}

TextFit::TextFit() {
  const char* codeset = nl_langinfo(CODESET);
  m_utf8 = codeset != nullptr && std::strcmp(codeset, "UTF-8") == 0;
}

int TextFit::columns(std::string_view text, int limit) const {
  int used = 0;
  bool cut = false;
  take(text, limit, used, cut);
  return cut ? limit : used;
}

std::string TextFit::fit(std::string_view text, int width, bool right) const {
  int used = 0;
  bool cut = false;
  std::string out = take(text, width, used, cut);
  if (cut && width > 0) {
    // Make room for the mark: drop whole characters from the end.
    while (used > width - 1 && !out.empty()) {
      size_t start = out.size() - 1;
      while (start > 0
             && (static_cast<unsigned char>(out[start]) & 0xc0) == 0x80) {
        --start;
      }
      const std::string last = out.substr(start);
      out.resize(start);
      used -= width_of(last);
    }
    out += m_utf8 ? "\u2026" : "~";
    ++used;
  }
  const std::string pad(static_cast<size_t>(std::max(width - used, 0)), ' ');
  return right ? pad + out : out + pad;
}

std::string TextFit::take(std::string_view text, int width, int& used,
                          bool& cut) const {
  std::string out;
  used = 0;
  std::mbstate_t state{};
  size_t i = 0;
  cut = false;
  while (i < text.size()) {
    std::string piece;
    int w = 1;
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      piece = byte < 0x20 || byte == 0x7f ? ' ' : static_cast<char>(byte);
      ++i;
    } else {
      wchar_t wc = 0;
      const size_t n =
          m_utf8 ? std::mbrtowc(&wc, text.data() + i, text.size() - i, &state)
                 : static_cast<size_t>(-1);
      if (n == 0 || n == static_cast<size_t>(-1)
          || n == static_cast<size_t>(-2)) {
        state = std::mbstate_t{};
        piece = "?";
        ++i;
      } else {
        w = ::wcwidth(wc);
        piece.assign(text.substr(i, n));
        if (w < 0) {
          piece = "?";
          w = 1;
        }
        i += n;
      }
    }
    if (used + w > width) {
      cut = true;
      break;
    }
    out += piece;
    used += w;
  }
  return out;
}

int TextFit::width_of(const std::string& piece) const {
  if (piece.size() == 1) {
    return 1;
  }
  wchar_t wc = 0;
  std::mbstate_t state{};
  std::mbrtowc(&wc, piece.data(), piece.size(), &state);
  return std::max(::wcwidth(wc), 1);
}

} // namespace taskq::cli::top
