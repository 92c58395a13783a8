#include "core/bytes.hpp"

#include <doctest/doctest.h>

#include <string>
#include <tuple>

using namespace taskq::core;

TEST_CASE("sizes read as bytes, K, M and G in powers of 1024") {
  CHECK(parse_size("0") == 0);
  CHECK(parse_size("512") == 512);
  CHECK(parse_size("64K") == 64 * 1024);
  CHECK(parse_size("64k") == 64 * 1024);
  CHECK(parse_size("1M") == 1024 * 1024);
  CHECK(parse_size("1MiB") == 1024 * 1024);
  CHECK(parse_size("2G") == int64_t{2} << 30);
  CHECK(parse_size("10B") == 10);
}

TEST_CASE("a size that is not one is refused") {
  CHECK_FALSE(parse_size(""));
  CHECK_FALSE(parse_size("M"));
  CHECK_FALSE(parse_size("-1"));
  CHECK_FALSE(parse_size("1.5M"));
  CHECK_FALSE(parse_size("1X"));
  CHECK_FALSE(parse_size("1 M"));
  CHECK_FALSE(parse_size("2000G")); // above 1 TiB
}

TEST_CASE("sizes print for people") {
  CHECK(format_size(0) == "0 B");
  CHECK(format_size(1023) == "1023 B");
  CHECK(format_size(1024) == "1.0 KiB");
  CHECK(format_size(1536 * 1024) == "1.5 MiB");
}

TEST_CASE("base64 round-trips every byte") {
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  std::string all;
  for (int i = 0; i < 256; ++i) {
    all += static_cast<char>(i);
  }
  for (size_t n = 0; n < 5; ++n) {
    const std::string bytes = all.substr(n);
    CHECK(base64_decode(base64_encode(bytes)) == bytes);
  }
  CHECK_FALSE(base64_decode("Zg="));
  CHECK_FALSE(base64_decode("Z!=="));
  CHECK_FALSE(base64_decode("Zg==Zg=="));
}

TEST_CASE("a spool holds the last keep bytes and counts all") {
  OutputSpool s(4);
  s.append("ab");
  s.append("cdef");
  CHECK(s.seen() == 6);
  auto [at, data] = s.take();
  CHECK(at == 2);
  CHECK(data == "cdef");
  CHECK(s.empty());
  s.append("0123456789");
  std::tie(at, data) = s.take();
  CHECK(at == 12);
  CHECK(data == "6789");
}

TEST_CASE("a spool takes back what could not be stored, still bounded") {
  OutputSpool s(5);
  s.append("abc");
  auto [at, data] = s.take();
  s.append("de");
  s.put_back(at, data);
  CHECK(s.pending() == 5);
  std::tie(at, data) = s.take();
  CHECK(at == 0);
  CHECK(data == "abcde");
  s.append("fg");
  const auto taken = s.take();
  s.append("hijk");
  s.put_back(taken.first, taken.second);
  std::tie(at, data) = s.take();
  CHECK(at == 6);
  CHECK(data == "ghijk");
}

TEST_CASE("a spool that keeps nothing holds nothing") {
  OutputSpool s(0);
  s.append("abc");
  CHECK(s.empty());
  CHECK(s.seen() == 3);
}
