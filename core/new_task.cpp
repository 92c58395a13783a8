#include "core/new_task.hpp"

#include "core/labels.hpp"
#include "core/text.hpp"

#include <algorithm>

namespace taskq::core {
namespace {

BrokenRule broken(NewTaskRule rule, const char* field, const char* must,
                  size_t index = 0) {
  return BrokenRule{rule, field, must, index};
}

// A worker's name, as --worker takes it: not empty, UTF-8, no control
// characters.
bool is_worker_name(const std::string& name) {
  return !name.empty() && is_valid_utf8(name)
         && std::none_of(name.begin(), name.end(), [](char c) {
              return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
            });
}

// A gate key reads like a label's key.
bool is_gate_key(const std::string& key) {
  return key.find('=') == std::string::npos
         && parse_label(key + "=").has_value();
}

} // namespace

std::vector<std::string> trigger_keys(const std::string& text) {
  std::vector<std::string> keys;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    if (comma == std::string::npos) {
      keys.push_back(text.substr(start));
      return keys;
    }
    keys.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
}

std::string normal_trigger(const std::string& text) {
  std::vector<std::string> keys = trigger_keys(text);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::string joined;
  for (const auto& key : keys) {
    joined += (joined.empty() ? "" : ",") + key;
  }
  return joined;
}

std::optional<BrokenRule> check_new_task(const NewTaskFields& task) {
  if (task.queue && !is_valid_name(*task.queue)) {
    return broken(NewTaskRule::queue_name, "queue",
                  "a name of 1-128 letters, digits and . _ : / -");
  }
  if (task.command) {
    const auto& argv = *task.command;
    if (argv.empty() || argv.front().empty()) {
      return broken(NewTaskRule::command_empty, "command",
                    "a program and its arguments, the program's name not "
                    "empty");
    }
    for (size_t i = 0; i < argv.size(); ++i) {
      if (!is_valid_utf8(argv[i]) || argv[i].find('\0') != std::string::npos) {
        return broken(NewTaskRule::command_word, "command",
                      "words of UTF-8 text without NUL", i);
      }
    }
  }
  if (task.max_attempts && *task.max_attempts < 1) {
    return broken(NewTaskRule::max_attempts, "max_attempts", "at least 1");
  }
  if (task.unique_key && !is_plain_text(*task.unique_key)) {
    return broken(NewTaskRule::unique_key, "unique_key",
                  "UTF-8 text without control characters");
  }
  for (size_t i = 0; i < task.after.size(); ++i) {
    if (task.after[i] < 1) {
      return broken(NewTaskRule::after_id, "after", "task ids (1 or more)", i);
    }
  }
  if (task.to_worker && !is_worker_name(*task.to_worker)) {
    return broken(NewTaskRule::to_worker, "to_worker",
                  "a worker's name: UTF-8 text, not empty, without control "
                  "characters");
  }
  if (task.broadcast) {
    if (task.to_worker) {
      return broken(NewTaskRule::broadcast_to, "to_worker",
                    "absent from a broadcast (it goes to every worker)");
    }
    if (!task.after.empty() || task.has_root || task.unique_key) {
      return broken(NewTaskRule::broadcast_alone, "broadcast",
                    "without after, root or unique_key (it goes to every "
                    "worker)");
    }
    if (task.broadcast_ttl && task.broadcast_ttl->count() <= 0) {
      return broken(NewTaskRule::broadcast_ttl, "broadcast_ttl",
                    "longer than 0");
    }
  }
  if (task.trigger) {
    const auto keys = trigger_keys(*task.trigger);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (!is_gate_key(keys[i])) {
        return broken(NewTaskRule::trigger, "trigger",
                      "a gate key of letters, digits and . _ / -, or "
                      "several, comma-separated",
                      i);
      }
    }
  }
  return std::nullopt;
}

} // namespace taskq::core
