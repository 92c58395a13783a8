// taskq completion bash|zsh|fish: prints the completion script, which is
// embedded from completions/ at build time.
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/state.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

  // taskq __ids COMMAND (hidden): the task ids the completion scripts offer
  // after COMMAND, newest first: those it can act on.
  struct IdsArgs {
    std::string command;
    int64_t limit = 100;
  };
  auto ids = std::make_shared<IdsArgs>();
  CLI::App* ids_cmd = app.add_subcommand(
      "__ids", "Print the ids shell completion offers after COMMAND");
  ids_cmd->group("");
  ids_cmd->add_option("command", ids->command, "the command being completed")
      ->required();
  ids_cmd->add_option("--limit", ids->limit, "at most N ids");
  ids_cmd->callback([ids, &ctx] {
    using core::Message;
    using core::TaskState;
    std::vector<TaskState> states; // empty: any
    bool leased = false;
    const std::string& c = ids->command;
    if (c == "resume") {
      states = core::states_acted_on(Message::run);
    } else if (c == "pause") {
      states = core::states_acted_on(Message::pause);
    } else if (c == "sleep") {
      states = core::states_acted_on(Message::sleep);
    } else if (c == "kill" || c == "send" || c == "wait" || c == "why") {
      states = core::states_acted_on(Message::kill); // unfinished
    } else if (c == "release" || c == "checkpoint" || c == "heartbeat"
               || c == "done" || c == "fail") {
      states = core::states_acted_on(Message::release);
      leased = true;
    } else if (c == "retry") {
      states = {TaskState::failed, TaskState::killed};
    }
    auto& store = ctx.store(storage::OpenMode::read);
    for (const int64_t id : store.recent_ids(states, leased, ids->limit)) {
      std::printf("%lld\n", static_cast<long long>(id));
    }
  });
}

} // namespace taskq::cli
