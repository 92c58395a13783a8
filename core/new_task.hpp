#pragma once

// The rules a new task must satisfy, whoever makes it: `add`, a tx's
// create and `import` check the same rules here, and each words the
// refusal its own way (an option, a document's key, a column).

#include "core/time.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskq::core {

// The fields of a new task that rules apply to. A field left unset is not
// checked: the producer does not give it, or checks it at another point
// (a producer that reads its input in steps checks what it has read so
// far, so that the first mistake in its input is the one reported).
struct NewTaskFields {
  std::optional<std::string> queue;
  // The argv `run` executes for it.
  std::optional<std::vector<std::string>> command;
  std::optional<int64_t> max_attempts;
  // While an unfinished task of its queue has this key, adding creates
  // nothing.
  std::optional<std::string> unique_key;
  std::vector<int64_t> after;           // the tasks it waits for
  bool has_root = false;                // it is obsolete while ...
  std::optional<std::string> to_worker; // only this worker leases it
  bool broadcast = false;               // delivered once to every worker
  std::optional<Millis> broadcast_ttl;  // how long, once known

  // The gate keys it covers once completed, comma-joined (`a,b`).
  std::optional<std::string> trigger;
};

// Which rule a new task breaks (in the order check_new_task tries them).
enum class NewTaskRule {
  queue_name,      // queue: a name (is_valid_name)
  command_empty,   // command: a program, its name not empty
  command_word,    // command: each word UTF-8 text without NUL
  max_attempts,    // max_attempts: 1 or more
  unique_key,      // unique_key: UTF-8 text without control characters
  after_id,        // after: task ids, 1 or more
  to_worker,       // to_worker: a worker's name
  broadcast_to,    // a broadcast has no to_worker
  broadcast_alone, // a broadcast has no after, root or unique_key
  broadcast_ttl,   // a broadcast's ttl: longer than 0
  trigger,         // trigger: gate keys (a label's key each), comma-joined
};

// The first rule a new task breaks: which, the field it concerns, what
// the field must be (to follow "must be "), and for a list field the
// position of the offending item (for a trigger, of the key in
// trigger_keys()).
struct BrokenRule {
  NewTaskRule rule;
  const char* field;
  const char* must;
  size_t index = 0;
};

// The keys of a trigger's text `K1,K2,...`: split at each comma, in the
// order written, repeats kept (an empty text is one empty key, refused as
// a key). A gate key holds no comma, so the text is the keys joined.
std::vector<std::string> trigger_keys(const std::string& text);

// The stored form of a trigger: its keys sorted by bytes, each once,
// comma-joined. A text of one key is that key.
std::string normal_trigger(const std::string& text);

// The first rule `task` breaks, in the order of NewTaskRule, or
// std::nullopt when it breaks none. Pure: no clock, no database.
std::optional<BrokenRule> check_new_task(const NewTaskFields& task);

} // namespace taskq::core
