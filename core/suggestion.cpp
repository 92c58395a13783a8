#include "core/suggestion.hpp"

#include "core/handler_env.hpp"

#include <algorithm>

namespace taskq::core {

namespace {

SuggestionSink g_sink = nullptr;
std::vector<std::string> g_prefix;

} // namespace

std::string suggest(const std::vector<std::string>& args) {
  std::vector<std::string> meant = g_prefix;
  meant.insert(meant.end(), args.begin(), args.end());
  std::vector<std::string> argv{"taskq"};
  argv.insert(argv.end(), meant.begin(), meant.end());
  const std::string text = command_line(argv);
  if (g_sink != nullptr) {
    g_sink(text, meant);
  }
  return text;
}

void set_suggestion_prefix(std::vector<std::string> words) {
  g_prefix = std::move(words);
}

std::optional<std::vector<std::string>>
rebuilt(const std::vector<std::string>& given,
        const std::vector<std::string>& moved,
        const std::vector<std::string>& tail) {
  if (std::find(given.begin(), given.end(), "--") != given.end()) {
    return std::nullopt;
  }
  std::vector<bool> keep(given.size(), true);
  size_t left = moved.size();
  for (size_t i = given.size(); i > 0 && left > 0; --i) {
    if (given[i - 1] == moved[left - 1]) {
      keep[i - 1] = false;
      --left;
    }
  }
  if (left > 0) {
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < given.size(); ++i) {
    if (keep[i]) {
      out.push_back(given[i]);
    }
  }
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

void set_suggestion_sink(SuggestionSink sink) {
  g_sink = sink;
}

bool one_line(const std::vector<std::string>& words) {
  for (const auto& w : words) {
    for (const char c : w) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        return false;
      }
    }
  }
  return true;
}

bool shell_syntax(const std::string& word) {
  return word.find_first_of(" \t\n;|&<>`$()") != std::string::npos;
}

std::vector<std::string> add_args(const std::string& queue,
                                  const std::vector<std::string>& command) {
  if (command.size() == 1 && shell_syntax(command.front())) {
    return {"add", queue, "--sh", command.front()};
  }
  std::vector<std::string> args{"add", queue, "--"};
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

} // namespace taskq::core
