#pragma once
// The flow document's reader: the messages it fails with and Fields, the
// members of one JSON object taken by name. Used by compile_flow only.
#include "core/duration.hpp"
#include "core/labels.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::core::flow::doc {

// The one-line reason compile_flow returns, thrown by the reader only.
struct DocError {
  std::string message;
};

// Ends compile_flow with `message` (DocError).
[[noreturn]] void fail(std::string message);

// User text that was not validated, made safe for a one-line message:
// control characters as '?', at most 64 bytes.
std::string shown(std::string_view text);

// The value of a JSON string token (the text is valid JSON).
std::string string_value(std::string_view token);

// `text` without the white space outside strings: the form `add` stores.
std::string minified(std::string_view text);

// The members of one JSON object of the document, taken by name, so that
// whatever is left over is an unknown field. `prefix` names nested objects
// in messages ("execute.queue").
class Fields {
public:
  Fields(std::string_view object, std::string where, std::string prefix = {});

  const std::string& where() const { return m_where; }
  void set_where(std::string where) { m_where = std::move(where); }

  std::optional<std::string_view> take(std::string_view key);

  // Fails on a field given twice, or not one of `known`.
  void check(std::initializer_list<std::string_view> known) const;

  [[noreturn]] void fail_field(std::string_view key,
                               std::string_view what) const;

  std::optional<std::string> string(std::string_view key);

  std::optional<int64_t> integer(std::string_view key);

  // An integer in [low, high].
  std::optional<int64_t> integer_in(std::string_view key, int64_t low,
                                    int64_t high);

  std::optional<bool> boolean(std::string_view key);

  // A duration as text ("10s", "1h30m"), as `add` takes it.
  std::optional<Millis> duration(std::string_view key, bool zero_ok);

  // A flow, atom or retry name: the rule of queue names.
  std::optional<std::string> name(std::string_view key);

  // A data-flow symbol: a non-empty key of the store.
  std::optional<std::string> symbol(std::string_view key);

  // One symbol (or `noun`) or an array of them; repeats dropped, order
  // kept.
  std::vector<std::string> symbols(std::string_view key,
                                   std::string_view noun = "symbol");

  std::optional<Labels> labels(std::string_view key);

private:
  void check_symbol(std::string_view key, const std::string& s,
                    std::string_view noun = "symbol") const;

  struct Member {
    std::string key;
    std::string_view value;
    bool taken = false;
  };
  std::vector<Member> m_members;
  std::string m_where;
  std::string m_prefix;
};

// A JSON value the model keeps as nlohmann::json.
nlohmann::json json_value(const Fields& f, std::string_view key,
                          std::string_view text);

} // namespace taskq::core::flow::doc
