#include "core/handler_env.hpp"

#include "core/suggestion.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <iterator>

namespace taskq::core {
namespace {

// The variables `run` sets for a per-task handler; a stream handler also
// gets TASKQ_HANDLER. Inherited values of these are dropped.
constexpr std::string_view k_task_vars[] = {
    "TASKQ_ID",      "TASKQ_LEASE",      "TASKQ_QUEUE", "TASKQ_ATTEMPT",
    "TASKQ_PAYLOAD", "TASKQ_CHECKPOINT", "TASKQ_DB",    "TASKQ_WORKER",
    "TASKQ_SYNC",    "TASKQ_FLOW",       "TASKQ_ATOM",  "TASKQ_ACTION",
    "TASKQ_ARGS",    "TASKQ_HANDLER"};

// Adds NAME=VALUE to `env` unless it is too long for an environment; false
// then.
bool add_variable(std::vector<std::string>& env, std::string_view name,
                  const std::string& value) {
  if (name.size() + 1 + value.size() > k_max_env_entry) {
    return false;
  }
  env.push_back(std::string(name) + "=" + value);
  return true;
}

} // namespace

std::string shell_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else if (c != '\0') {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) {
      out += ' ';
    }
    const bool plain =
        !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) != 0
                 || std::string_view("%+,-./:=@_").find(c)
                        != std::string_view::npos;
        });
    out += plain ? arg : shell_quote(arg);
  }
  return out;
}

std::string payload_text(const std::string& payload_json) {
  if (payload_json.empty() || payload_json.front() != '"') {
    return payload_json; // stored minified: already one line of JSON
  }
  return nlohmann::json::parse(payload_json).get<std::string>();
}

std::string payload_env_value(const std::string& payload_json) {
  std::string text = payload_text(payload_json);
  if (text.find('\0') != std::string::npos) {
    return payload_json; // as JSON text, its NULs escaped
  }
  return text;
}

std::string env_lines(const Task& t) {
  std::string out;
  const auto line = [&out](std::string_view name, std::string_view value) {
    out += "export ";
    out += name;
    out += '=';
    out += value;
    out += '\n';
  };
  line("TASKQ_ID", std::to_string(t.id));
  line("TASKQ_LEASE", shell_quote(t.lease ? t.lease->token : ""));
  line("TASKQ_QUEUE", shell_quote(t.queue));
  line("TASKQ_ATTEMPT", std::to_string(t.attempts));
  line("TASKQ_PAYLOAD", shell_quote(payload_env_value(t.payload)));
  if (t.checkpoint) {
    line("TASKQ_CHECKPOINT", shell_quote(*t.checkpoint));
  }
  line("TASKQ_SYNC", shell_quote(sync_json(t)));
  for (const auto& [name, value] : flow_env(t)) {
    line(name, shell_quote(value));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> flow_env(const Task& t) {
  if (!t.flow) {
    return {};
  }
  const auto f = nlohmann::json::parse(*t.flow);
  return {{"TASKQ_FLOW", std::to_string(f.at("id").get<int64_t>())},
          {"TASKQ_ATOM", f.at("atom").get<std::string>()},
          {"TASKQ_ACTION", f.at("action").get<std::string>()},
          {"TASKQ_ARGS", f.at("args").dump()}};
}

std::string sync_json(const Task& task) {
  auto out = nlohmann::json::object();
  for (const auto& [k, v] : task.sync) {
    out[k] = v;
  }
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> inherited_environment(const char* const* envp,
                                               HandlerKind kind) {
  const auto names = kind == HandlerKind::stream
                         ? std::end(k_task_vars)
                         : std::prev(std::end(k_task_vars));
  std::vector<std::string> env;
  for (const char* const* e = envp; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    if (std::find(std::begin(k_task_vars), names, name) == names) {
      env.emplace_back(entry);
    }
  }
  return env;
}

TaskEnvironment task_environment(const Task& t,
                                 std::vector<std::string> inherited,
                                 std::string_view db_path,
                                 std::string_view worker) {
  TaskEnvironment out;
  auto& env = out.env;
  env = std::move(inherited);
  env.push_back("TASKQ_ID=" + std::to_string(t.id));
  env.push_back("TASKQ_LEASE=" + (t.lease ? t.lease->token : ""));
  env.push_back("TASKQ_QUEUE=" + t.queue);
  env.push_back("TASKQ_ATTEMPT=" + std::to_string(t.attempts));
  // An environment string ends at its first NUL; a payload holding one
  // (a JSON string with \u0000) is passed as JSON text instead.
  const std::string payload = payload_env_value(t.payload);
  if (!add_variable(env, "TASKQ_PAYLOAD", payload)) {
    out.left_out.push_back({"TASKQ_PAYLOAD", payload.size()});
  }
  if (t.checkpoint && !add_variable(env, "TASKQ_CHECKPOINT", *t.checkpoint)) {
    out.left_out.push_back({"TASKQ_CHECKPOINT", t.checkpoint->size()});
  }
  const std::string sync = sync_json(t);
  if (!add_variable(env, "TASKQ_SYNC", sync)) {
    out.left_out.push_back({"TASKQ_SYNC", sync.size()});
  }
  for (const auto& [name, value] : flow_env(t)) {
    if (!add_variable(env, name, value)) {
      out.left_out.push_back({name, value.size()});
    }
  }
  env.push_back("TASKQ_DB=" + std::string(db_path));
  env.push_back("TASKQ_WORKER=" + std::string(worker));
  return out;
}

std::string left_out_message(int64_t id, const LeftOut& what) {
  const std::string task = "taskq: task " + std::to_string(id) + ": its ";
  const std::string size = " (" + std::to_string(what.bytes) + " bytes)";
  const std::string show =
      "; see " + suggest({"show", std::to_string(id)}) + "\n";
  if (what.name == "TASKQ_PAYLOAD") {
    return task + "payload" + size
           + " is too large for TASKQ_PAYLOAD; the handler gets it on stdin "
             "only\n";
  }
  if (what.name == "TASKQ_CHECKPOINT") {
    return task + "checkpoint" + size + " is too large for TASKQ_CHECKPOINT"
           + show;
  }
  if (what.name == "TASKQ_SYNC") {
    return task + "sync state" + size + " is too large for TASKQ_SYNC" + show;
  }
  return task + what.name + size + " is too large for the environment" + show;
}

std::vector<std::string> stream_environment(std::vector<std::string> inherited,
                                            std::string_view db_path,
                                            std::string_view worker,
                                            int handler) {
  std::vector<std::string> env = std::move(inherited);
  env.push_back("TASKQ_DB=" + std::string(db_path));
  env.push_back("TASKQ_WORKER=" + std::string(worker));
  env.push_back("TASKQ_HANDLER=" + std::to_string(handler));
  return env;
}

} // namespace taskq::core
