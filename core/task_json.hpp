#pragma once

// A task's JSON form (doc/reference/task.md#json-form), written once for
// every reader: the CLI's `-o json`, `run --stream`'s task lines and the
// web view's JSON answers. Pure: the time is passed in.

#include "core/task.hpp"
#include "core/time.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::core {

using Json = nlohmann::ordered_json;

// Compact JSON text of `value`; invalid UTF-8 in strings is replaced.
std::string dump_json(const Json& value);

// Writes a JSON object field by field; raw() embeds JSON text as it is, so
// a stored payload keeps every digit. Keys are plain words (not escaped).
class ObjectWriter {
public:
  ObjectWriter& field(std::string_view key, const Json& value) {
    return raw(key, dump_json(value));
  }
  // The same text as field() gives for a number, a string (null when
  // absent) and labels, without building a Json value: task_json runs
  // once a task for `run --stream`.
  ObjectWriter& number(std::string_view key, int64_t value);
  ObjectWriter& number_or_null(std::string_view key,
                               const std::optional<int64_t>& value);
  ObjectWriter& text(std::string_view key, std::string_view value);
  ObjectWriter& text_or_null(std::string_view key,
                             const std::optional<std::string>& value);
  ObjectWriter& labels(std::string_view key, const core::Labels& value);
  ObjectWriter& raw(std::string_view key, std::string_view json) {
    m_out += m_out.empty() ? '{' : ',';
    m_out += '"';
    m_out += key;
    m_out += "\":";
    m_out += json;
    return *this;
  }
  std::string finish() {
    m_out += m_out.empty() ? "{}" : "}";
    return std::move(m_out);
  }

private:
  std::string m_out;
};

// The task's JSON form (doc/reference/task.md#json-form) as one line of text
// (`lease` is null unless live at `now`), with `events` appended when given.
// The payload, checkpoint and result are embedded as stored, so numbers keep
// every digit.
std::string task_json(const core::Task& task, core::Time now,
                      const std::vector<core::Event>* events = nullptr);
// Why a failed task failed: the error that did it ("exit status 3: oops",
// "killed by SIGSEGV"), never the policy's own "exceeded error rate", and
// what the error policy made of it ("gave up after 8 errors", "not
// retried"); either may be empty. Reads the task's error history.
struct FailureWords {
  std::string cause;
  std::string verdict;
};
FailureWords failure_words(const core::Task& task);

} // namespace taskq::core
