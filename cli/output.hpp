#pragma once

#include "core/task.hpp"
#include "storage/task_store.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace taskq::cli {

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

// The task's JSON form of SPEC §2 as one line of text (`lease` is null
// unless live at `now`), with `events` appended when given. The payload,
// checkpoint and result are embedded as stored, so numbers keep every digit.
std::string task_json(const core::Task& task, core::Time now,
                      const std::vector<core::Event>* events = nullptr);
void print_task_json(const core::Task& task, core::Time now,
                     const std::vector<core::Event>* events = nullptr);

// Writes one compact JSON value and a newline to stdout.
void print_json(const Json& value);

// Shell assignments for `eval`: export TASKQ_ID=... (single-quoted).
void print_env(const core::Task& task);
// The task's sync state (from its schedule) as a JSON object, {} when none:
// TASKQ_SYNC.
std::string sync_json(const core::Task& task);
// `text` quoted for a POSIX shell.
std::string shell_quote(const std::string& text);
// The payload as a handler sees it: a JSON string's contents, else JSON.
std::string payload_text(const std::string& payload_json);

// The display state: `running` for a runnable task with a live lease.
std::string display_state(const core::Task& task, core::Time now);

// A human table with a header row; columns padded to the widest cell.
void print_table(const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows);

void print_task_table(const std::vector<core::Task>& tasks, core::Time now);
void print_task_detail(const storage::TaskDetail& detail, core::Time now);

} // namespace taskq::cli
