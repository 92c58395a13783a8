#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace taskq::core {

// A size as `run --keep-output` takes it: a whole number of bytes, or one
// followed by K, M or G (powers of 1024; KiB, MiB, GiB and a final B are
// accepted too, any case): "0", "512", "64K", "1M", "1MiB". std::nullopt
// when it is anything else or above 1 TiB.
std::optional<int64_t> parse_size(std::string_view text);

// `bytes` for people: "512 B", "64.0 KiB", "1.5 MiB", "2.0 GiB".
std::string format_size(int64_t bytes);

// Standard base64 (RFC 4648, with padding), how export writes bytes that
// need not be text.
std::string base64_encode(std::string_view bytes);
// std::nullopt unless `text` is padded standard base64 (no whitespace).
std::optional<std::string> base64_decode(std::string_view text);

// What a handler printed on one stream and is not stored yet, bounded: of
// everything appended, only the last `keep` bytes are held (0 keeps
// nothing). Offsets count every byte the stream has printed since it
// started, kept or not.
class OutputSpool {
public:
  explicit OutputSpool(int64_t keep) : m_keep(keep) {}

  void append(std::string_view data);
  bool empty() const { return m_pending.empty(); }
  size_t pending() const { return m_pending.size(); }
  // Every byte appended so far.
  int64_t seen() const { return m_seen; }
  // The held bytes with the offset of the first; holds nothing after.
  std::pair<int64_t, std::string> take();
  // Gives back what take() returned when it could not be stored, ahead of
  // what was appended since, still bounded by `keep`.
  void put_back(int64_t offset, std::string data);

private:
  int64_t m_keep;
  int64_t m_seen = 0;
  std::string m_pending; // ends at m_seen
};

} // namespace taskq::core
