// Times (--at, --since, run_at in tx and import): core::parse_time agrees
// with a reference reading of RFC 3339 (within years 0000-9999 in UTC),
// format_time(parse_time(x)) parses back to the same instant, and every
// instant of years 0000-9999 prints as text that parses back to it.
#include "core/time.hpp"

#include <string>

#include "fuzz.hpp"

namespace core = taskq::core;
using taskq::fuzz::as_text;
using taskq::fuzz::Bytes;

namespace {

// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z in Unix milliseconds.
constexpr int64_t k_min_ms = -62'167'219'200'000;
constexpr int64_t k_max_ms = 253'402'300'799'999;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
// (H. Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int64_t month_length(int64_t y, int64_t m) {
  static constexpr int64_t lengths[] = {31, 28, 31, 30, 31, 30,
                                        31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : lengths[m - 1];
}

// The number of `width` digits at text[pos], or -1.
int64_t digits(std::string_view text, size_t pos, size_t width) {
  if (pos + width > text.size()) {
    return -1;
  }
  int64_t n = 0;
  for (size_t i = pos; i < pos + width; ++i) {
    if (!is_digit(text[i])) {
      return -1;
    }
    n = n * 10 + (text[i] - '0');
  }
  return n;
}

// `YYYY-MM-DD(T|t| )HH:MM:SS[.F+](Z|z|±HH:MM)` in Unix milliseconds.
std::optional<int64_t> reference(std::string_view t) {
  if (t.size() < 20 || t[4] != '-' || t[7] != '-'
      || (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || t[13] != ':'
      || t[16] != ':') {
    return std::nullopt;
  }
  const int64_t y = digits(t, 0, 4), mo = digits(t, 5, 2), d = digits(t, 8, 2),
                h = digits(t, 11, 2), mi = digits(t, 14, 2),
                s = digits(t, 17, 2);
  if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > month_length(y, mo) || h < 0
      || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59) {
    return std::nullopt;
  }
  size_t pos = 19;
  int64_t ms = 0;
  if (t[pos] == '.') {
    size_t end = pos + 1;
    while (end < t.size() && is_digit(t[end])) {
      ++end;
    }
    if (end == pos + 1) {
      return std::nullopt;
    }
    const std::string fraction =
        std::string(t.substr(pos + 1, end - pos - 1)) + "00";
    ms = digits(fraction, 0, 3);
    pos = end;
  }
  int64_t offset = 0;
  const auto zone = t.substr(pos);
  if (zone != "Z" && zone != "z") {
    if (zone.size() != 6 || (zone[0] != '+' && zone[0] != '-')
        || zone[3] != ':') {
      return std::nullopt;
    }
    const int64_t oh = digits(zone, 1, 2), om = digits(zone, 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) {
      return std::nullopt;
    }
    offset = (oh * 60 + om) * 60'000 * (zone[0] == '-' ? -1 : 1);
  }
  const int64_t utc = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60'000
                      + s * 1000 + ms - offset;
  // An offset must not carry the instant out of years 0000-9999: it would
  // print as text parse_time refuses.
  if (utc < k_min_ms || utc > k_max_ms) {
    return std::nullopt;
  }
  return utc;
}

// format_time's shape: YYYY-MM-DDTHH:MM:SS[.mmm]Z, four-digit year.
bool canonical(std::string_view t) {
  if (t.size() != 20 && t.size() != 24) {
    return false;
  }
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    const bool ok = i == 4 || i == 7            ? c == '-'
                    : i == 10                   ? c == 'T'
                    : i == 13 || i == 16        ? c == ':'
                    : i == 19 && t.size() == 24 ? c == '.'
                    : i == t.size() - 1         ? c == 'Z'
                                                : is_digit(c);
    if (!ok) {
      return false;
    }
  }
  return true;
}

// Prints `ms` and reads it back: in years 0000-9999 it must round-trip.
void check_print(int64_t ms) {
  const std::string printed = core::format_time(core::from_unix_ms(ms));
  FUZZ_REQUIRE(canonical(printed));
  const auto back = core::parse_time(printed);
  FUZZ_REQUIRE(back && core::to_unix_ms(*back) == ms);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto text = as_text(data, size);
  const auto parsed = core::parse_time(text);
  const auto expected = reference(text);
  FUZZ_REQUIRE(parsed.has_value() == expected.has_value());
  if (parsed) {
    FUZZ_REQUIRE(core::to_unix_ms(*parsed) == *expected);
    check_print(*expected);
  }

  Bytes in(data, size);
  const uint64_t span = static_cast<uint64_t>(k_max_ms - k_min_ms) + 1;
  check_print(k_min_ms + static_cast<int64_t>(in.u64() % span));
  return 0;
}
