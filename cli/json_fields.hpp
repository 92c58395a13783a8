#pragma once

#include "core/json_text.hpp"
#include "core/labels.hpp"
#include "core/time.hpp"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskq::cli {

// Reads the members of one JSON object of a document taskq takes as input
// (a `tx` operation, an `import` line), each value as its exact text, so a
// payload keeps every digit. Each field is taken at most once; finish()
// refuses the fields nobody took. Every error is a usage error that starts
// with `where` (`update[1]`, `line 3`). The text must be well-formed JSON
// (checked by the caller).
class JsonFields {
public:
  JsonFields(std::string_view object, std::string where);

  // The value's text, or std::nullopt when the field is absent.
  std::optional<std::string_view> take(std::string_view key);
  std::string_view required(std::string_view key);

  std::optional<int64_t> integer(std::string_view key);
  int64_t required_integer(std::string_view key);
  std::optional<std::string> string(std::string_view key);
  std::string required_string(std::string_view key);
  std::optional<core::Time> time(std::string_view key);
  // A JSON object of string values, as labels (KEY=VALUE rules).
  std::optional<core::Labels> labels(std::string_view key);
  std::optional<std::vector<int64_t>> ids(std::string_view key);
  // A JSON value, minified, its numbers and strings as written.
  std::optional<std::string> json(std::string_view key);

  // Throws for the first field nobody took.
  void finish() const;

  const std::string& where() const { return m_where; }
  [[noreturn]] void fail(std::string_view key, std::string_view what) const;

private:
  std::string m_where;
  // Decoded key, value text, taken.
  std::vector<std::pair<std::string, std::string_view>> m_members;
  std::vector<bool> m_taken;
};

// Streams a JSON Lines file (or stdin for `-`): one JSON value per line,
// blank lines skipped. A malformed line is a usage error naming its line
// and ending with `outcome` ("nothing was added").
// With `text_lines` (`add --lines`), each line is instead a JSON string of
// its bytes without the newline that ends it: blank lines are empty
// strings, no line follows a final newline, and a line that is not UTF-8
// is the usage error.
class JsonlReader {
public:
  JsonlReader(const std::string& path, std::string outcome,
              bool text_lines = false);
  ~JsonlReader();
  JsonlReader(const JsonlReader&) = delete;
  JsonlReader& operator=(const JsonlReader&) = delete;

  // Puts the next value, minified, in `out` (reusing its buffer); false at
  // the end of the input.
  bool next(std::string& out);
  // The number of the line next() read last.
  int64_t line() const { return m_number; }

private:
  std::string m_path;
  std::string m_outcome;
  bool m_text_lines = false;
  std::FILE* m_file = nullptr;
  bool m_owned = false;
  char* m_line = nullptr;
  size_t m_capacity = 0;
  int64_t m_number = 0;
};

// JSON integers and strings read from their text (core/json_text.hpp).
using core::json_integer;
using core::json_string_value;

} // namespace taskq::cli
