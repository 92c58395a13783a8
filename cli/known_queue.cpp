// Queues a command names that the database does not know: a typo's
// nearest match, said once.
#include "cli/commands.hpp"

#include <algorithm>
#include <cstdio>

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

} // namespace taskq::cli
