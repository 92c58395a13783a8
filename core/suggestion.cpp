#include "core/suggestion.hpp"

#include "core/handler_env.hpp"

namespace taskq::core {

namespace {

SuggestionSink g_sink = nullptr;

} // namespace

std::string suggest(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"taskq"};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string text = command_line(argv);
  if (g_sink != nullptr) {
    g_sink(text, args);
  }
  return text;
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
