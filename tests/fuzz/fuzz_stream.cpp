// The `run --stream` line protocol, read side (core/stream_protocol): any
// line a handler writes is blank, garbage with a reason, or a message
// about one task whose id, verb and values agree with nlohmann's reading
// of the same object; a message names one verb or says why not; a done
// result or a checkpoint is valid minified JSON; a quoted line is one
// printable line of valid UTF-8 within its bound. Links core/ only.
#include "core/json_text.hpp"
#include "core/stream_protocol.hpp"
#include "core/text.hpp"

#include <nlohmann/json.hpp>

#include <string>

#include "fuzz.hpp"

namespace core = taskq::core;
using taskq::fuzz::as_text;
using Json = nlohmann::json;

namespace {

// Whether `text` is valid JSON that minify_json left unchanged.
bool minified(const std::string& text) {
  return core::json_valid(text) && core::minify_json(text) == text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto input = as_text(data, size);

  const std::string quoted = core::quote_line(input);
  FUZZ_REQUIRE(core::is_valid_utf8(quoted));
  FUZZ_REQUIRE(quoted.size() <= core::k_handler_quote * 3 + 3);
  for (const char c : quoted) {
    const auto byte = static_cast<unsigned char>(c);
    FUZZ_REQUIRE(byte >= 0x20 && byte != 0x7f);
  }

  const auto line = core::read_handler_line(input);
  std::string_view text = input;
  if (!text.empty() && text.back() == '\r') {
    text.remove_suffix(1);
  }
  switch (line.kind) {
  case core::HandlerLine::Kind::blank:
    FUZZ_REQUIRE(core::json_trim(text).empty());
    return 0;
  case core::HandlerLine::Kind::garbage:
    FUZZ_REQUIRE(line.why == "not a JSON object" || line.why == "no \"id\"");
    FUZZ_REQUIRE(line.why != "not a JSON object" || !core::json_valid(text)
                 || core::json_kind(core::json_trim(text))
                        != core::JsonKind::object);
    return 0;
  case core::HandlerLine::Kind::message:
    break;
  }

  // A message: a valid object whose "id" is that integer (no key is given
  // twice, so nlohmann's last-wins reading is the same).
  FUZZ_REQUIRE(core::json_valid(line.body));
  // The reference reading: nlohmann holds no number past a double's range
  // (9e999 is valid JSON); such a line is taken as it is, unchecked here.
  const Json object = Json::parse(line.body, nullptr, false);
  if (object.is_discarded()) {
    return 0;
  }
  FUZZ_REQUIRE(object.is_object());
  FUZZ_REQUIRE(object.contains("id"));
  FUZZ_REQUIRE(object["id"].is_number_integer());
  FUZZ_REQUIRE(object["id"].get<int64_t>() == line.id);

  const auto m = core::read_handler_message(line.body);
  int verbs = 0;
  for (const auto* verb :
       {"done", "fail", "release", "heartbeat", "checkpoint"}) {
    verbs += object.contains(verb) ? 1 : 0;
  }
  if (!m.verb) {
    FUZZ_REQUIRE(verbs != 1);
    FUZZ_REQUIRE(!m.error.empty());
    return 0;
  }
  FUZZ_REQUIRE(verbs == 1);
  switch (*m.verb) {
  case core::HandlerVerb::done:
    FUZZ_REQUIRE(object["done"].is_null() != m.value.has_value());
    if (m.value) {
      FUZZ_REQUIRE(minified(*m.value));
      FUZZ_REQUIRE(Json::parse(*m.value) == object["done"]);
    }
    FUZZ_REQUIRE(m.error.empty());
    break;
  case core::HandlerVerb::checkpoint:
    FUZZ_REQUIRE(m.value.has_value() && minified(*m.value));
    FUZZ_REQUIRE(Json::parse(*m.value) == object["checkpoint"]);
    FUZZ_REQUIRE(m.error.empty());
    break;
  case core::HandlerVerb::heartbeat:
    FUZZ_REQUIRE(!m.value && m.error.empty());
    break;
  case core::HandlerVerb::fail:
    FUZZ_REQUIRE(object["fail"].is_string() == m.value.has_value());
    if (m.value) {
      FUZZ_REQUIRE(*m.value == object["fail"].get<std::string>());
      const bool retry_ok =
          !object.contains("retry") || object["retry"].is_boolean();
      FUZZ_REQUIRE(m.error.empty() == retry_ok);
      FUZZ_REQUIRE(m.no_retry
                   == (retry_ok && object.contains("retry")
                       && !object["retry"].get<bool>()));
    } else {
      FUZZ_REQUIRE(!m.error.empty());
    }
    break;
  case core::HandlerVerb::release: {
    const Json& r = object["release"];
    if (r == Json(true)) {
      FUZZ_REQUIRE(m.error.empty() && !m.delay);
    } else if (!r.is_object()) {
      FUZZ_REQUIRE(!m.error.empty());
    } else if (m.error.empty()) {
      FUZZ_REQUIRE(r.size() <= 1);
      FUZZ_REQUIRE(m.delay.has_value() == r.contains("delay"));
      FUZZ_REQUIRE(!m.delay || m.delay->count() >= 0);
    }
    break;
  }
  }
  return 0;
}
