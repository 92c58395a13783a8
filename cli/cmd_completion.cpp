// taskq completion bash|zsh|fish: prints the completion script, which is
// embedded from completions/ at build time.
#include "cli/commands.hpp"
#include "core/error.hpp"

#include <cstdio>
#include <memory>
#include <optional>
#include <string_view>

namespace taskq::cli {

// Defined in the generated completions.cpp.
std::optional<std::string_view> completion_script(std::string_view shell);

void register_completion(CLI::App& app, Context& ctx) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd = add_command(
      app, "completion", "Print the completion script for bash, zsh or fish",
      "source <(taskq completion bash)");
  cmd->add_option("shell", *shell, "bash, zsh or fish")->required();
  cmd->callback([shell, &ctx] {
    if (ctx.output_option && *ctx.output_option != "table") {
      throw Error(ErrorKind::usage, "completion prints a shell script; -o "
                                    "does not apply");
    }
    const auto script = completion_script(*shell);
    if (!script) {
      throw Error(ErrorKind::usage,
                  "invalid shell '" + *shell + "': expected bash, zsh or fish");
    }
    std::fwrite(script->data(), 1, script->size(), stdout);
  });
}

} // namespace taskq::cli
