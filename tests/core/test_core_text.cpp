#include "core/text.hpp"

#include <doctest/doctest.h>

#include <string>

using taskq::core::is_valid_utf8;

TEST_CASE("well-formed UTF-8 is valid") {
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain ascii"));
  CHECK(is_valid_utf8("naïve café — 日本語 🎉"));
  CHECK(is_valid_utf8("\xf4\x8f\xbf\xbf")); // U+10FFFF, the last code point
}

TEST_CASE("malformed UTF-8 is invalid") {
  CHECK_FALSE(is_valid_utf8("\xff"));
  CHECK_FALSE(is_valid_utf8("\x80"));                 // stray continuation
  CHECK_FALSE(is_valid_utf8("caf\xc3"));              // truncated
  CHECK_FALSE(is_valid_utf8("\xc3\x28"));             // bad continuation
  CHECK_FALSE(is_valid_utf8("\xc0\xaf"));             // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xe0\x80\xaf"));         // overlong, 3 bytes
  CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));         // surrogate U+D800
  CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));     // above U+10FFFF
  CHECK_FALSE(is_valid_utf8("\xf8\x88\x80\x80\x80")); // 5-byte form
}
