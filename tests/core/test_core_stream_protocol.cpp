#include "core/stream_protocol.hpp"

#include <doctest/doctest.h>

#include <string>

using namespace std::chrono_literals;
namespace core = taskq::core;
using Kind = core::HandlerLine::Kind;
using core::HandlerVerb;

namespace {

core::HandlerMessage message(std::string_view line) {
  const auto l = core::read_handler_line(line);
  REQUIRE(l.kind == Kind::message);
  return core::read_handler_message(l.body);
}

} // namespace

TEST_CASE("blank lines are skipped") {
  CHECK(core::read_handler_line("").kind == Kind::blank);
  CHECK(core::read_handler_line("  \t").kind == Kind::blank);
  CHECK(core::read_handler_line("\r").kind == Kind::blank);
}

TEST_CASE("a line that is not a JSON object is garbage") {
  for (const auto* text : {"hello", "[1]", "42", "{\"id\":1", "\"s\""}) {
    const auto l = core::read_handler_line(text);
    CHECK(l.kind == Kind::garbage);
    CHECK(l.why == "not a JSON object");
  }
}

TEST_CASE("a message names its task by an integer id") {
  for (const auto* text :
       {R"({"done":1})", R"({"id":"3","done":1})", R"({"id":1.0,"done":1})",
        R"({"id":1e3})", R"({"id":1,"id":2,"done":1})"}) {
    const auto l = core::read_handler_line(text);
    CHECK(l.kind == Kind::garbage);
    CHECK(l.why == "no \"id\"");
  }
  const auto l = core::read_handler_line(" {\"id\": -4, \"done\": null} \r");
  CHECK(l.kind == Kind::message);
  CHECK(l.id == -4);
  CHECK(l.body == "{\"id\": -4, \"done\": null}");
}

TEST_CASE("done carries the result, minified; null is none") {
  auto m = message(R"({"id":1,"done":{ "n" : [1, 2] }})");
  CHECK(m.verb == HandlerVerb::done);
  CHECK(m.error.empty());
  CHECK(m.value == R"({"n":[1,2]})");
  m = message(R"({"id":1,"done":null})");
  CHECK(m.verb == HandlerVerb::done);
  CHECK_FALSE(m.value.has_value());
}

TEST_CASE("fail carries its error, and may refuse a retry") {
  auto m = message(R"({"id":1,"fail":"disk full"})");
  CHECK(m.verb == HandlerVerb::fail);
  CHECK(m.value == "disk full");
  CHECK_FALSE(m.no_retry);
  m = message(R"({"id":1,"fail":"bad input","retry":false})");
  CHECK(m.no_retry);
  CHECK(m.error.empty());
  m = message(R"({"id":1,"fail":"x","retry":true})");
  CHECK_FALSE(m.no_retry);
  CHECK(message(R"({"id":1,"fail":3})").error == "\"fail\" must be a string");
  m = message(R"({"id":1,"fail":"x","retry":"no"})");
  CHECK(m.verb == HandlerVerb::fail);
  CHECK(m.error == "\"retry\" must be true or false");
}

TEST_CASE("release takes run's delay or its own") {
  auto m = message(R"({"id":1,"release":true})");
  CHECK(m.verb == HandlerVerb::release);
  CHECK_FALSE(m.delay.has_value());
  CHECK(m.error.empty());
  m = message(R"({"id":1,"release":{"delay":"30s"}})");
  CHECK(m.delay == core::Millis{30s});
  m = message(R"({"id":1,"release":{}})");
  CHECK(m.error.empty());
  CHECK_FALSE(m.delay.has_value());
  CHECK(message(R"({"id":1,"release":false})").error
        == "\"release\" must be true or {\"delay\":\"DUR\"}");
  CHECK(message(R"({"id":1,"release":{"delay":"soon"}})").error
        == "invalid delay 'soon' (expected 30s, 5m, ...)");
  CHECK(message(R"({"id":1,"release":{"delay":5}})").error
        == "\"release\": 'delay' must be a string");
  CHECK(message(R"({"id":1,"release":{"delay":"5s","x":1}})").error
        == "\"release\": unknown field 'x'");
  CHECK(message(R"({"id":1,"release":{"delay":"5s","delay":"6s"}})").error
        == "\"release\": field 'delay' is given twice");
}

TEST_CASE("heartbeat and checkpoint extend the lease") {
  auto m = message(R"({"id":1,"heartbeat":true})");
  CHECK(m.verb == HandlerVerb::heartbeat);
  CHECK_FALSE(m.value.has_value());
  m = message(R"({"id":1,"checkpoint":{ "at" : 5 }})");
  CHECK(m.verb == HandlerVerb::checkpoint);
  CHECK(m.value == R"({"at":5})");
}

TEST_CASE("a message names exactly one verb; other fields are ignored") {
  auto m = message(R"({"id":1})");
  CHECK_FALSE(m.verb.has_value());
  CHECK(m.error
        == "expected one of done, fail, release, heartbeat, checkpoint");
  m = message(R"({"id":1,"done":1,"fail":"x"})");
  CHECK_FALSE(m.verb.has_value());
  CHECK(m.error
        == "more than one of done, fail, release, heartbeat, checkpoint");
  m = message(R"({"id":1,"done":1,"note":"hi","retry":"?"})");
  CHECK(m.verb == HandlerVerb::done);
  CHECK(m.error.empty());
}

TEST_CASE("a bad line is quoted on one printable line") {
  CHECK(core::quote_line("a\tb\x7f") == "a?b?");
  const std::string long_line(300, 'x');
  CHECK(core::quote_line(long_line) == std::string(200, 'x') + "...");
  // Cut inside a UTF-8 character: its first byte is replaced.
  const std::string accents = std::string(199, 'a') + "\xc3\xa9";
  CHECK(core::quote_line(accents) == std::string(199, 'a') + "\xef\xbf\xbd...");
}
