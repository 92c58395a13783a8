// Queues a command names that the database does not know: a typo's
// nearest match, said once.
#include "cli/commands.hpp"
#include "cli/output.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>

namespace taskq::cli {

namespace {

bool known(const std::vector<std::string>& names, const std::string& queue) {
  return std::binary_search(names.begin(), names.end(), queue);
}

// "; did you mean 'jobs'?" or "".
std::string did_you_mean(const std::vector<std::string>& names,
                         const std::string& queue) {
  const std::string best = nearest_name(queue, names);
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

// `word` as the shell reads it back: as it is when it needs no quotes.
std::string shell_word(const std::string& word) {
  const bool plain =
      !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
               || (c >= '0' && c <= '9')
               || std::string_view("._/:=+-@%,").find(c)
                      != std::string_view::npos;
      });
  return plain ? word : shell_quote(word);
}

bool looks_like_path(const std::string& word) {
  return word.rfind("./", 0) == 0 || word.rfind("../", 0) == 0
         || word.rfind('/', 0) == 0;
}

// Whether queue `name` has tasks, settings or history in the database.
bool known_queue(Context& ctx, const std::string& name) {
  return known(ctx.store(storage::OpenMode::read).queue_names(), name);
}

void say(const std::string& line) {
  const std::string text = "taskq: " + line + "\n";
  std::fputs(text.c_str(), stderr);
}

} // namespace

void require_queue(storage::TaskStore& store, const std::string& queue) {
  const auto names = store.queue_names();
  if (known(names, queue)) {
    return;
  }
  const std::string hint = did_you_mean(names, queue);
  throw Error(
      ErrorKind::not_found,
      "no queue '" + queue + "': it has no tasks, settings or history"
          + (hint.empty() ? " (taskq queue list shows the queues)" : hint));
}

void note_unknown_queues(storage::TaskStore& store,
                         const std::vector<std::string>& queues) {
  const auto names = store.queue_names();
  for (const auto& queue : queues) {
    if (!known(names, queue)) {
      say("note: queue '" + queue + "' has no tasks yet"
          + did_you_mean(names, queue));
    }
  }
}

void note_new_queue(storage::TaskStore& store, const std::string& queue) {
  const auto names = store.queue_names();
  if (!known(names, queue)) {
    say("new queue '" + queue + "': it had no tasks, settings or history"
        + did_you_mean(names, queue));
  }
}

// `taskq run thumbs ./handler.sh`: a forgotten -- makes the handler a
// second queue, and run would lease thumbs' tasks and fail each for want of
// a command. A queue word that is a path (./, ../, /), or without -- names
// a file here and no queue the database knows, is refused before anything
// is leased, with the command line meant.
void check_not_a_program(const std::vector<std::string>& words, Context& ctx) {
  std::vector<std::string> queues;
  std::vector<std::string> programs;
  for (const auto& q : words) {
    std::error_code ec;
    const bool program =
        looks_like_path(q)
        || (!ctx.command_given && std::filesystem::is_regular_file(q, ec)
            && !known_queue(ctx, q));
    (program ? programs : queues).push_back(q);
  }
  if (programs.empty()) {
    return;
  }
  std::string meant = "taskq run";
  for (const auto& q : queues) {
    meant += " " + shell_word(q);
  }
  if (queues.empty()) {
    meant += " QUEUE";
  }
  meant += " --";
  for (const auto& p : programs) {
    meant += " " + shell_word(p);
  }
  for (const auto& w : ctx.command) {
    meant += " " + shell_word(w);
  }
  throw Error(ErrorKind::usage, "'" + programs.front()
                                    + "' is a program, not a queue; did you "
                                      "mean: "
                                    + meant + "?");
}

} // namespace taskq::cli
