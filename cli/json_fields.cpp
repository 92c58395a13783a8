#include "cli/json_fields.hpp"

#include "cli/context.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/text.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

namespace taskq::cli {

JsonlReader::JsonlReader(const std::string& path, std::string outcome,
                         bool text_lines)
    : m_path(path), m_outcome(std::move(outcome)), m_text_lines(text_lines) {
  if (path == "-") {
    m_file = stdin;
  } else {
    m_file = std::fopen(path.c_str(), "rb");
    if (m_file == nullptr) {
      throw Error(ErrorKind::usage,
                  "cannot read " + path + ": " + std::strerror(errno));
    }
    m_owned = true;
    // fopen opens a folder; reading it would fail with a bare EISDIR.
    struct stat st {};
    if (::fstat(::fileno(m_file), &st) == 0 && S_ISDIR(st.st_mode)) {
      std::fclose(m_file);
      throw Error(ErrorKind::usage,
                  "cannot read " + path + ": " + std::strerror(EISDIR));
    }
  }
}

JsonlReader::~JsonlReader() {
  std::free(m_line);
  if (m_owned) {
    std::fclose(m_file);
  }
}

bool JsonlReader::next(std::string& out) {
  while (true) {
    const ssize_t n = ::getline(&m_line, &m_capacity, m_file);
    if (n < 0) {
      if (std::ferror(m_file)) {
        throw Error(ErrorKind::internal,
                    "cannot read " + (m_path == "-" ? "stdin" : m_path) + ": "
                        + std::strerror(errno));
      }
      return false;
    }
    ++m_number;
    std::string_view line(m_line, static_cast<size_t>(n));
    if (m_text_lines) {
      if (line.ends_with('\n')) {
        line.remove_suffix(1);
      }
      if (!core::is_valid_utf8(line)) {
        throw Error(ErrorKind::usage, "line " + std::to_string(m_number)
                                          + " of "
                                          + (m_path == "-" ? "stdin" : m_path)
                                          + " is not UTF-8 text; " + m_outcome);
      }
      out = nlohmann::json(line).dump();
      return true;
    }
    const auto first = line.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) {
      continue;
    }
    const auto last = line.find_last_not_of(" \t\r\n");
    line = line.substr(first, last - first + 1);
    if (const auto why = core::json_error(line)) {
      throw Error(ErrorKind::usage, "invalid JSON on line "
                                        + std::to_string(m_number) + " of "
                                        + (m_path == "-" ? "stdin" : m_path)
                                        + ": " + *why + "; " + m_outcome);
    }
    minify_json_into(line, out);
    return true;
  }
}

JsonFields::JsonFields(std::string_view object, std::string where)
    : m_where(std::move(where)) {
  if (core::json_kind(object) != core::JsonKind::object) {
    throw Error(ErrorKind::usage, m_where + ": expected a JSON object");
  }
  for (const auto& [key, value] : core::json_members(object)) {
    std::string name = *json_string_value(key);
    for (const auto& [seen, unused] : m_members) {
      if (seen == name) {
        throw Error(ErrorKind::usage,
                    m_where + ": field '" + name + "' is given twice");
      }
    }
    m_members.emplace_back(std::move(name), value);
  }
  m_taken.assign(m_members.size(), false);
}

void JsonFields::fail(std::string_view key, std::string_view what) const {
  throw Error(ErrorKind::usage,
              m_where + ": '" + std::string(key) + "' " + std::string(what));
}

std::optional<std::string_view> JsonFields::take(std::string_view key) {
  for (size_t i = 0; i < m_members.size(); ++i) {
    if (m_members[i].first == key) {
      m_taken[i] = true;
      return m_members[i].second;
    }
  }
  return std::nullopt;
}

std::string_view JsonFields::required(std::string_view key) {
  const auto v = take(key);
  if (!v) {
    fail(key, "is required");
  }
  return *v;
}

std::optional<int64_t> JsonFields::integer(std::string_view key) {
  const auto v = take(key);
  if (!v) {
    return std::nullopt;
  }
  const auto n = json_integer(*v);
  if (!n) {
    fail(key, "must be an integer, not " + std::string(v->substr(0, 40)));
  }
  return n;
}

int64_t JsonFields::required_integer(std::string_view key) {
  required(key);
  return *integer(key);
}

std::optional<std::string> JsonFields::string(std::string_view key) {
  const auto v = take(key);
  if (!v) {
    return std::nullopt;
  }
  auto s = json_string_value(*v);
  if (!s) {
    fail(key, "must be a string");
  }
  return s;
}

std::string JsonFields::required_string(std::string_view key) {
  required(key);
  return *string(key);
}

std::optional<core::Time> JsonFields::time(std::string_view key) {
  const auto s = string(key);
  if (!s) {
    return std::nullopt;
  }
  const auto t = core::parse_time(*s);
  if (!t) {
    fail(key, "must be an RFC 3339 time, e.g. 2026-11-21T08:00:00Z");
  }
  return t;
}

std::optional<core::Labels> JsonFields::labels(std::string_view key) {
  const auto v = take(key);
  if (!v) {
    return std::nullopt;
  }
  if (core::json_kind(*v) != core::JsonKind::object) {
    fail(key, "must be an object of KEY: VALUE strings");
  }
  core::Labels out;
  for (const auto& [k, value] : core::json_members(*v)) {
    const auto name = *json_string_value(k);
    const auto text = json_string_value(value);
    const auto label =
        text ? core::parse_label(name + "=" + *text) : std::nullopt;
    if (!label || name.find('=') != std::string::npos) {
      fail(key, "has an invalid label '" + name
                    + "': KEY is letters, digits and . _ / -, VALUE a "
                      "string without control characters");
    }
    out[label->first] = label->second;
  }
  return out;
}

std::optional<std::vector<int64_t>> JsonFields::ids(std::string_view key) {
  const auto v = take(key);
  if (!v) {
    return std::nullopt;
  }
  if (core::json_kind(*v) != core::JsonKind::array) {
    fail(key, "must be an array of task ids");
  }
  std::vector<int64_t> out;
  for (const auto item : core::json_items(*v)) {
    const auto n = json_integer(item);
    if (!n || *n < 1) {
      fail(key, "must be an array of task ids");
    }
    out.push_back(*n);
  }
  return out;
}

std::optional<std::string> JsonFields::json(std::string_view key) {
  const auto v = take(key);
  if (!v) {
    return std::nullopt;
  }
  return minify_json(*v);
}

void JsonFields::finish() const {
  for (size_t i = 0; i < m_members.size(); ++i) {
    if (!m_taken[i]) {
      throw Error(ErrorKind::usage,
                  m_where + ": unknown field '" + m_members[i].first + "'");
    }
  }
}

} // namespace taskq::cli
