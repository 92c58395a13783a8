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
