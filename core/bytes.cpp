#include "core/bytes.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>

namespace taskq::core {

std::optional<int64_t> parse_size(std::string_view text) {
  int64_t n = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || ptr == text.data() || n < 0) {
    return std::nullopt;
  }
  std::string unit(ptr, end);
  for (char& c : unit) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  int shift = 0;
  if (unit.empty() || unit == "b") {
    shift = 0;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    shift = 10;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    shift = 20;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    shift = 30;
  } else {
    return std::nullopt;
  }
  constexpr int64_t k_max = int64_t{1} << 40;
  if (n > (k_max >> shift)) {
    return std::nullopt;
  }
  return n << shift;
}

std::string format_size(int64_t bytes) {
  if (bytes < 1024) {
    return std::to_string(bytes) + " B";
  }
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%.1f %s", v, units[u]);
  return buf.data();
}

namespace {
constexpr std::string_view k_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int sextet(char c) {
  const size_t at = k_alphabet.find(c);
  return at == std::string_view::npos ? -1 : static_cast<int>(at);
}
} // namespace

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  const auto byte = [&](size_t at) {
    return static_cast<uint32_t>(static_cast<unsigned char>(bytes[at]));
  };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out += k_alphabet[(v >> 18) & 63];
    out += k_alphabet[(v >> 12) & 63];
    out += k_alphabet[(v >> 6) & 63];
    out += k_alphabet[v & 63];
  }
  const size_t left = bytes.size() - i;
  if (left > 0) {
    const uint32_t v = (byte(i) << 16) | (left == 2 ? byte(i + 1) << 8 : 0);
    out += k_alphabet[(v >> 18) & 63];
    out += k_alphabet[(v >> 12) & 63];
    out += left == 2 ? k_alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad =
        last ? (text[i + 3] == '=' ? (text[i + 2] == '=' ? 2 : 1) : 0) : 0;
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      int s = 0;
      if (k >= 4 - static_cast<size_t>(pad)) {
        s = 0;
      } else if ((s = sextet(text[i + k])) < 0) {
        return std::nullopt;
      }
      v = (v << 6) | static_cast<uint32_t>(s);
    }
    out += static_cast<char>((v >> 16) & 0xff);
    if (pad < 2) {
      out += static_cast<char>((v >> 8) & 0xff);
    }
    if (pad < 1) {
      out += static_cast<char>(v & 0xff);
    }
  }
  return out;
}

void OutputSpool::append(std::string_view data) {
  m_seen += static_cast<int64_t>(data.size());
  const auto keep = static_cast<size_t>(m_keep);
  if (data.size() >= keep) {
    m_pending.assign(data.substr(data.size() - keep));
    return;
  }
  m_pending += data;
  if (m_pending.size() > keep) {
    m_pending.erase(0, m_pending.size() - keep);
  }
}

std::pair<int64_t, std::string> OutputSpool::take() {
  const int64_t offset = m_seen - static_cast<int64_t>(m_pending.size());
  std::string data;
  data.swap(m_pending);
  return {offset, std::move(data)};
}

void OutputSpool::put_back(int64_t offset, std::string data) {
  const int64_t pending_at = m_seen - static_cast<int64_t>(m_pending.size());
  if (offset + static_cast<int64_t>(data.size()) != pending_at) {
    return; // not what take() gave
  }
  data += m_pending;
  m_pending.swap(data);
  const auto keep = static_cast<size_t>(m_keep);
  if (m_pending.size() > keep) {
    m_pending.erase(0, m_pending.size() - keep);
  }
}

} // namespace taskq::core
