#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace taskq::core {

// Readers over JSON text that keep each value's exact bytes, so a payload
// taken from a larger document (`tx`, `import`) is stored as written: every
// digit of every number, every escape. Each requires well-formed JSON
// (check it first, e.g. with nlohmann::json::accept); on other text the
// results are unspecified but stay within `text`.

// The JSON type a value's first byte announces.
enum class JsonKind { object, array, string, number, literal };
JsonKind json_kind(std::string_view value);

// `text` without the white space around it.
std::string_view json_trim(std::string_view text);

// The members of an object, in document order: each key as its quoted
// JSON text (escapes not decoded) and its value's text, both trimmed.
std::vector<std::pair<std::string_view, std::string_view>>
json_members(std::string_view object);

// The items of an array, in order, each trimmed.
std::vector<std::string_view> json_items(std::string_view array);

} // namespace taskq::core
