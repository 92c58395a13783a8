#include "core/text.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

using taskq::core::is_plain_text;
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

TEST_CASE("a UTF-8 sequence says its length, or what is wrong with it") {
  using taskq::core::utf8_sequence;
  using Problem = taskq::core::Utf8Sequence::Problem;
  const auto length = [](std::string_view t) {
    const auto s = utf8_sequence(t, 0);
    CHECK(s.problem == Problem::none);
    return s.length;
  };
  CHECK(length("a") == 1);
  CHECK(length("\xc3\xa9x") == 2);        // é, then more
  CHECK(length("\xe6\x97\xa5") == 3);     // 日
  CHECK(length("\xf0\x9f\x8e\x89") == 4); // 🎉
  const auto problem = [](std::string_view t) {
    const auto s = utf8_sequence(t, 0);
    CHECK(s.length == 0);
    return s.problem;
  };
  CHECK(problem("\x80") == Problem::invalid);
  CHECK(problem("\xff") == Problem::invalid);
  CHECK(problem("\xc3x") == Problem::invalid);
  CHECK(problem("\xe6\x97") == Problem::cut_short);
  CHECK(problem("\xc0\xaf") == Problem::overlong);
  CHECK(problem("\xed\xa0\x80") == Problem::surrogate);
  CHECK(problem("\xf4\x90\x80\x80") == Problem::beyond_max);
  // At an offset, as the scanners call it.
  CHECK(utf8_sequence("ab\xc3\xa9", 2).length == 2);
}

TEST_CASE("to_valid_utf8 keeps well-formed text and replaces the rest") {
  using taskq::core::to_valid_utf8;
  CHECK(to_valid_utf8("") == "");
  CHECK(to_valid_utf8("naïve café — 🎉") == "naïve café — 🎉");
  CHECK(to_valid_utf8("a\xff"
                      "b")
        == "a\xef\xbf\xbd"
           "b");
  // A truncated sequence: each of its bytes is replaced.
  CHECK(to_valid_utf8("caf\xc3") == "caf\xef\xbf\xbd");
  CHECK(to_valid_utf8("\xe2\x82") == "\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(to_valid_utf8("\xed\xa0\x80") // a surrogate: three bad bytes
        == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(is_valid_utf8(to_valid_utf8("\x80\xc0\xaf\xf8 ok \xf4\x90\x80\x80")));
}

TEST_CASE("plain text is UTF-8 without control characters") {
  CHECK(is_plain_text(""));
  CHECK(is_plain_text("nightly build — 日本"));
  CHECK_FALSE(is_plain_text("a\nb"));
  CHECK_FALSE(is_plain_text("tab\there"));
  CHECK_FALSE(is_plain_text(std::string("nul\0", 4)));
  CHECK_FALSE(is_plain_text("del\x7f"));
  CHECK_FALSE(is_plain_text("\xff"));
}
