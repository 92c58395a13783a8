#include "core/json_text.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using taskq::core::json_items;
using taskq::core::json_kind;
using taskq::core::json_members;
using taskq::core::json_trim;
using taskq::core::JsonKind;

TEST_CASE("json_members keeps each value's exact text") {
  const std::string doc =
      R"( { "a" : 12345678901234567890123.000 , "b":{"x":[1,"]}"]},)"
      R"("c\"d":"q\\\"}", "e": [ ] ,"f":null} )";
  const auto m = json_members(doc);
  REQUIRE(m.size() == 5);
  CHECK(m[0].first == R"("a")");
  CHECK(m[0].second == "12345678901234567890123.000");
  CHECK(m[1].first == R"("b")");
  CHECK(m[1].second == R"({"x":[1,"]}"]})");
  CHECK(m[2].first == R"("c\"d")");
  CHECK(m[2].second == R"("q\\\"}")");
  CHECK(m[3].second == "[ ]");
  CHECK(m[4].second == "null");
}

TEST_CASE("json_members of an empty object, and of a non-object") {
  CHECK(json_members("{}").empty());
  CHECK(json_members(" { } ").empty());
  CHECK(json_members("[1]").empty());
  CHECK(json_members("").empty());
}

TEST_CASE("json_items splits an array without touching its items") {
  const auto items = json_items(R"([1, -0.0e+5 ,"a,b",{"k":[2,3]}, true,[]])");
  REQUIRE(items.size() == 6);
  CHECK(items[0] == "1");
  CHECK(items[1] == "-0.0e+5");
  CHECK(items[2] == R"("a,b")");
  CHECK(items[3] == R"({"k":[2,3]})");
  CHECK(items[4] == "true");
  CHECK(items[5] == "[]");
  CHECK(json_items("[]").empty());
  CHECK(json_items("\n[\n]\n").empty());
  CHECK(json_items("{}").empty());
}

TEST_CASE("json_kind and json_trim") {
  CHECK(json_kind(" {}") == JsonKind::object);
  CHECK(json_kind("[]") == JsonKind::array);
  CHECK(json_kind("\"s\"") == JsonKind::string);
  CHECK(json_kind("-1") == JsonKind::number);
  CHECK(json_kind("7") == JsonKind::number);
  CHECK(json_kind("true") == JsonKind::literal);
  CHECK(json_kind("null") == JsonKind::literal);
  CHECK(json_trim(" \t\n x y \r\n") == "x y");
  CHECK(json_trim("   ").empty());
}

namespace {
using taskq::core::json_error;
using taskq::core::json_valid;

// A JSON text nested `depth` arrays deep around `inner`.
std::string nested(size_t depth, std::string_view inner) {
  return std::string(depth, '[') + std::string(inner) + std::string(depth, ']');
}
} // namespace

TEST_CASE("json_valid accepts RFC 8259 values") {
  for (const std::string_view text : {
           "0",
           "-0",
           "1",
           "-1",
           "0.5",
           "-0.0e+5",
           "1E3",
           "1e-3",
           "12.34e56",
           "true",
           "false",
           "null",
           "\"\"",
           "\"a\"",
           "[]",
           "{}",
           " [ ] ",
           "\t\n\r {\"a\" : [1, {\"b\":null}], \"c\":\"\"} \r\n",
           R"(["\" \\ \/ \b \f \n \r \t \u0000 \u00e9 \uD83D\uDE00 \uFFFF"])",
           "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\x89 \xf4\x8f\xbf\xbf\"",
           "\"\xef\xbb\xbf inside a string is a character\"",
           R"({"a":1,"a":2})", // duplicate keys: valid JSON (RFC: SHOULD)
           "[1,[2,[3,{\"k\":[{}]}]]]",
       }) {
    CAPTURE(text);
    CHECK(json_error(text) == std::nullopt);
  }
}

TEST_CASE("json_valid keeps numbers as text: any size is valid") {
  CHECK(json_valid(std::string(400, '7')));
  CHECK(json_valid("-" + std::string(400, '9') + "." + std::string(400, '1')));
  CHECK(json_valid("1e309"));
  CHECK(json_valid("-1e-99999999999999999999"));
  CHECK(json_valid("[1e309, 1E+400, " + std::string(310, '1') + "]"));
}

TEST_CASE("json_error refuses what RFC 8259 refuses, with a reason") {
  for (const std::string_view text : {
           "",           "   ",       "\n",          "01",          "-",
           "-01",        "+1",        ".5",          "1.",          "1.e3",
           "1e",         "1e+",       "0x10",        "NaN",         "Infinity",
           "-Infinity",  "1 2",       "[1,]",        "[,1]",        "{,}",
           "{\"a\":1,}", "{\"a\"}",   "{\"a\" 1}",   "{1:2}",       "{a:1}",
           "['a']",      "[1 2]",     "[1}",         "{\"a\":1]",   "[",
           "]",          "{",         "[[]",         "\"abc",       "\"\\\"",
           "\"\\x\"",    "\"\\u12\"", "\"\\u12G4\"", "\"\\U0041\"", "True",
           "nul",        "nulll",     "null null",   "\"a\"\"b\"",  "/* c */ 1",
           "1 // c",     "[1]x",      "\v1",         "\f1",         "'a'",
       }) {
    CAPTURE(text);
    const auto e = json_error(text);
    REQUIRE(e.has_value());
    CHECK(!e->empty());
    CHECK(e->find('\n') == std::string::npos);
  }
}

TEST_CASE("json_error: control characters, escapes and surrogates") {
  // Raw control characters must be escaped; \u0000 is fine.
  for (int c = 0; c < 0x20; ++c) {
    std::string text = "\"a";
    text += static_cast<char>(c);
    text += "b\"";
    CAPTURE(c);
    CHECK_FALSE(json_valid(text));
  }
  CHECK(json_valid("\"\\u0000\""));
  CHECK(json_valid("\"\x7f\"")); // DEL is not a control character to JSON
  // Lone surrogate escapes are refused; a proper pair is not.
  CHECK_FALSE(json_valid(R"("\uD800")"));
  CHECK_FALSE(json_valid(R"("\uDBFF x")"));
  CHECK_FALSE(json_valid(R"("\uDC00")"));
  CHECK_FALSE(json_valid(R"("\uDE00\uD83D")")); // reversed
  CHECK_FALSE(json_valid(R"("\uD83D\u0041")"));
  CHECK_FALSE(json_valid(R"("\uD83D\uD83D")"));
  CHECK_FALSE(json_valid(R"("\uD83D\n")"));
  CHECK_FALSE(json_valid(R"("\uD83D)"));
  CHECK(json_valid(R"("\ud83d\ude00")"));
  CHECK(json_valid(R"("\uDBFF\uDFFF")"));
  CHECK(*json_error(R"(["\uD800"])")
        == "a \\u escape of a high surrogate without a low one after it at "
           "byte 3");
}

TEST_CASE("json_error: strict UTF-8 in strings") {
  for (const std::string_view text : {
           "\"\x80\"",                 // stray continuation byte
           "\"\xc3\"",                 // cut short
           "\"\xc3x\"",                // not followed by a continuation
           "\"\xc0\xaf\"",             // overlong '/'
           "\"\xe0\x80\xaf\"",         // overlong, three bytes
           "\"\xf0\x80\x80\xaf\"",     // overlong, four bytes
           "\"\xed\xa0\x80\"",         // U+D800 encoded
           "\"\xed\xbf\xbf\"",         // U+DFFF encoded
           "\"\xf4\x90\x80\x80\"",     // above U+10FFFF
           "\"\xf8\x88\x80\x80\x80\"", // five-byte form
           "\"\xff\"", "\"\xfe\"",
           "\xc3\xa9", // a character outside a string
       }) {
    CAPTURE(text);
    CHECK_FALSE(json_valid(text));
  }
  CHECK(json_valid("\"\xed\x9f\xbf\"")); // U+D7FF
  CHECK(json_valid("\"\xee\x80\x80\"")); // U+E000
  CHECK(*json_error("[\"ok\", \"\xff\"]")
        == "invalid UTF-8 in a string, not byte 0xff at byte 9");
}

TEST_CASE("json_error refuses a byte-order mark at the start") {
  CHECK(*json_error("\xef\xbb\xbf{}")
        == "it starts with a UTF-8 byte-order mark");
  CHECK(json_error("\xef\xbb\xbf\"x\"").has_value());
  CHECK(json_error("\xef\xbb\xbf").has_value());
  CHECK(json_error(" \xef\xbb\xbf{}").has_value()); // not space either
  CHECK(json_error("{}\xef\xbb\xbf").has_value());
}

TEST_CASE("json_error names the place and never echoes the text") {
  CHECK(*json_error("") == "there is no JSON value");
  CHECK(*json_error("[1,\n2") == "the text ends inside an array");
  CHECK(*json_error("{\"a\":{}") == "the text ends inside an object");
  CHECK(*json_error("[1 2]") == "expected ',' or ']', not '2' at byte 4");
  CHECK(*json_error("{\"a\":1\n}x")
        == "unexpected text after the value, not 'x' at byte 9");
  CHECK(*json_error("[\n]\n\n]")
        == "unexpected text after the value, not ']' "
           "at byte 6");
  CHECK(*json_error("\"a\nb\"")
        == "a control character in a string (escape it), not byte 0x0a at "
           "byte 3");
  CHECK(*json_error("007") == "a number has a leading zero at byte 2");
}

TEST_CASE("json_valid is iterative: depth costs no stack") {
  CHECK(json_valid(nested(200000, "")));
  CHECK(json_valid(nested(200000, "{\"a\":[1e999]}")));
  std::string objects;
  for (int i = 0; i < 200000; ++i) {
    objects += "{\"k\":";
  }
  objects += "null" + std::string(200000, '}');
  CHECK(json_valid(objects));
  CHECK_FALSE(json_valid(nested(200000, "") + "]"));
  CHECK_FALSE(json_valid(std::string(200000, '[')));
  CHECK_FALSE(json_valid(std::string(200000, '[') + std::string(199999, ']')));
  CHECK_FALSE(json_valid(std::string(100000, '[') + std::string(100000, '}')));
}
