#include "core/stream_protocol.hpp"

#include "core/duration.hpp"
#include "core/json_text.hpp"
#include "core/text.hpp"

#include <vector>

namespace taskq::core {
namespace {

// An object's members, each key decoded, as a handler line's reader takes
// them; std::nullopt when a key is given twice (its name in `twice`).
using Members = std::vector<std::pair<std::string, std::string_view>>;

std::optional<Members> members(std::string_view object,
                               std::string* twice = nullptr) {
  Members out;
  for (const auto& [key, value] : json_members(object)) {
    std::string name = *json_string_value(key);
    for (const auto& [seen, unused] : out) {
      if (seen == name) {
        if (twice != nullptr) {
          *twice = name;
        }
        return std::nullopt;
      }
    }
    out.emplace_back(std::move(name), value);
  }
  return out;
}

std::optional<std::string_view> find(const Members& m, std::string_view key) {
  for (const auto& [name, value] : m) {
    if (name == key) {
      return value;
    }
  }
  return std::nullopt;
}

// `"release": {...}`: its delay, or why it is malformed (the messages a
// reader of its fields gives, prefixed with "\"release\"").
std::optional<Millis> release_delay(std::string_view object,
                                    std::string& error) {
  const std::string where = "\"release\"";
  std::string twice;
  const auto m = members(object, &twice);
  if (!m) {
    error = where + ": field '" + twice + "' is given twice";
    return std::nullopt;
  }
  std::optional<std::string> text;
  if (const auto v = find(*m, "delay")) {
    text = json_string_value(*v);
    if (!text) {
      error = where + ": 'delay' must be a string";
      return std::nullopt;
    }
  }
  for (const auto& [name, value] : *m) {
    if (name != "delay") {
      error = where + ": unknown field '" + name + "'";
      return std::nullopt;
    }
  }
  if (!text) {
    return std::nullopt;
  }
  const auto delay = parse_duration(*text);
  if (!delay) {
    error = "invalid delay '" + *text + "' (expected 30s, 5m, ...)";
  }
  return delay;
}

} // namespace

std::string quote_line(std::string_view line) {
  std::string out;
  for (const char c : line.substr(0, k_handler_quote)) {
    const auto byte = static_cast<unsigned char>(c);
    out += byte < 0x20 || byte == 0x7f ? '?' : c;
  }
  if (line.size() > k_handler_quote) {
    out += "...";
  }
  return to_valid_utf8(out);
}

HandlerLine read_handler_line(std::string_view line) {
  HandlerLine out;
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
  }
  if (json_trim(line).empty()) {
    return out;
  }
  out.kind = HandlerLine::Kind::garbage;
  if (!json_valid(line) || json_kind(json_trim(line)) != JsonKind::object) {
    out.why = "not a JSON object";
    return out;
  }
  const std::string_view body = json_trim(line);
  const auto m = members(body);
  const auto id_text = m ? find(*m, "id") : std::nullopt;
  const auto id = id_text ? json_integer(*id_text) : std::nullopt;
  if (!id) {
    out.why = "no \"id\"";
    return out;
  }
  out.kind = HandlerLine::Kind::message;
  out.id = *id;
  out.body = body;
  return out;
}

HandlerMessage read_handler_message(std::string_view body) {
  HandlerMessage out;
  std::string twice;
  const auto m = members(body, &twice);
  if (!m) {
    // Not from read_handler_line, which refuses such a line.
    out.error = "handler line: field '" + twice + "' is given twice";
    return out;
  }
  const auto done = find(*m, "done");
  const auto fail = find(*m, "fail");
  const auto release = find(*m, "release");
  const auto beat = find(*m, "heartbeat");
  const auto checkpoint = find(*m, "checkpoint");
  const int verbs = (done ? 1 : 0) + (fail ? 1 : 0) + (release ? 1 : 0)
                    + (beat ? 1 : 0) + (checkpoint ? 1 : 0);
  if (verbs != 1) {
    out.error = verbs == 0 ? "expected one of done, fail, release, "
                             "heartbeat, checkpoint"
                           : "more than one of done, fail, release, "
                             "heartbeat, checkpoint";
    return out;
  }
  if (beat) {
    out.verb = HandlerVerb::heartbeat;
  } else if (checkpoint) {
    out.verb = HandlerVerb::checkpoint;
    out.value = minify_json(*checkpoint);
  } else if (done) {
    out.verb = HandlerVerb::done;
    if (*done != "null") {
      out.value = minify_json(*done);
    }
  } else if (fail) {
    out.verb = HandlerVerb::fail;
    out.value = json_string_value(*fail);
    if (!out.value) {
      out.error = "\"fail\" must be a string";
    } else if (const auto retry = find(*m, "retry")) {
      if (*retry == "false") {
        out.no_retry = true;
      } else if (*retry != "true") {
        out.error = "\"retry\" must be true or false";
      }
    }
  } else {
    out.verb = HandlerVerb::release;
    if (*release == "true") {
      // --release-delay, as for a per-task handler's exit 75
    } else if (json_kind(*release) == JsonKind::object) {
      out.delay = release_delay(*release, out.error);
    } else {
      out.error = "\"release\" must be true or {\"delay\":\"DUR\"}";
    }
  }
  return out;
}

} // namespace taskq::core
