// Queues a command names that the database does not know: a typo's
// nearest match, said once.
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/suggestion.hpp"
#include "worker/child.hpp"

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

// Whether `a` is one slip of the keyboard from `b`: one letter changed,
// added or left out, or two neighbours swapped (jbos for jobs).
bool one_slip(std::string_view a, std::string_view b) {
  if (a.size() > b.size()) {
    std::swap(a, b);
  }
  size_t i = 0;
  while (i < a.size() && a[i] == b[i]) {
    ++i;
  }
  if (i == a.size()) {
    return b.size() - a.size() <= 1;
  }
  if (a.size() + 1 == b.size()) {
    return a.substr(i) == b.substr(i + 1); // one left out
  }
  if (a.size() != b.size()) {
    return false;
  }
  if (a.substr(i + 1) == b.substr(i + 1)) {
    return true; // one changed
  }
  return i + 1 < a.size() && a[i] == b[i + 1] && a[i + 1] == b[i]
         && a.substr(i + 2) == b.substr(i + 2); // neighbours swapped
}

// The known queue that `queue` is a likely typo of, "" when none: one slip
// from it, and `queue` at least 3 characters long (q1, q2 and qs are all one
// slip apart, and short names are often chosen so). -q still says a note
// for such a name, and `queue pause/set` refuse it without --create.
std::string typo_of(const std::vector<std::string>& names,
                    const std::string& queue) {
  const std::string best = nearest_name(queue, names);
  return queue.size() >= 3 && !best.empty() && one_slip(queue, best) ? best
                                                                     : "";
}

bool looks_like_path(const std::string& word) {
  return word.rfind("./", 0) == 0 || word.rfind("../", 0) == 0
         || word.rfind('/', 0) == 0;
}

// Whether queue `name` has tasks, settings or history in the database; no
// when there is no database file yet. A database that cannot be read (a
// server that does not answer, a locked or corrupt file) is its own error:
// the command line may well be right.
bool known_queue(Context& ctx, const std::string& name) {
  try {
    return known(ctx.store(storage::OpenMode::read).queue_names(), name);
  } catch (const Error&) {
    const std::string path = ctx.db_path();
    std::error_code ec;
    if (!storage::is_postgres_url(path) && !std::filesystem::exists(path, ec)) {
      return false;
    }
    throw;
  }
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
  throw Error(ErrorKind::not_found,
              "no queue '" + queue + "': it has no tasks, settings or history"
                  + (hint.empty() ? " (" + core::suggest({"queue", "list"})
                                        + " shows the queues)"
                                  : hint));
}

void note_unknown_queues(storage::TaskStore& store,
                         const std::vector<std::string>& queues, Notes notes) {
  const auto names = store.queue_names();
  for (const auto& queue : queues) {
    if (known(names, queue)) {
      continue;
    }
    if (notes == Notes::all || !typo_of(names, queue).empty()) {
      say("note: queue '" + queue + "' has no tasks yet"
          + did_you_mean(names, queue));
    }
  }
}

void check_new_queue(storage::TaskStore& store, const std::string& queue,
                     bool create) {
  auto names = store.queue_names();
  for (const auto& s : store.schedules()) {
    names.push_back(s.spec.queue);
  }
  for (const auto& g : store.gates()) {
    names.push_back(g.spec.queue);
  }
  std::sort(names.begin(), names.end());
  if (known(names, queue)) {
    return;
  }
  const std::string hint = did_you_mean(names, queue);
  if (!create && !typo_of(names, queue).empty()) {
    throw Error(ErrorKind::not_found,
                "no queue '" + queue
                    + "': it has no tasks, settings, schedules or history"
                    + hint + " (--create makes it)");
  }
  say("new queue '" + queue + "': it had no tasks, settings or history" + hint);
}

// `taskq run thumbs ./handler.sh`: a forgotten -- makes the handler a
// second queue, and run would lease thumbs' tasks and fail each for want of
// a command (or, with no task in them, wait for ever). A queue word that is
// a path (./, ../, /) is refused before anything is leased, with the
// command line meant; so is one, without --, that names no queue the
// database knows and names a file here or a program on $PATH (`run jobs
// echo hi`): the program and the words after it are the command. A number
// without -- that names no queue is a task id (`run 2`, for `retry 2`).
void check_not_a_program(const std::vector<std::string>& words, Context& ctx) {
  std::vector<std::string> queues;
  std::vector<std::string> programs;
  for (const auto& q : words) {
    if (!programs.empty()) {
      programs.push_back(q); // the program's arguments
      continue;
    }
    std::error_code ec;
    const bool number =
        !q.empty() && std::all_of(q.begin(), q.end(), [](char c) {
          return c >= '0' && c <= '9';
        });
    const bool maybe = !ctx.command_given
                       && (number || std::filesystem::is_regular_file(q, ec)
                           || worker::resolve_command(q));
    if (number && maybe && !known_queue(ctx, q)) {
      throw Error(ErrorKind::usage,
                  "'" + q
                      + "' is a task id, not a queue (no queue has that "
                        "name); to run task "
                      + q + " again: " + core::suggest({"retry", q})
                      + "; to run a program on each task, give it after --: "
                        "taskq run QUEUE -- CMD [ARG...]");
    }
    const bool program = looks_like_path(q) || (maybe && !known_queue(ctx, q));
    (program ? programs : queues).push_back(q);
  }
  if (programs.empty()) {
    return;
  }
  // The words as typed, with the program and its arguments moved after a
  // `--`, so that every option given stays. With no queue left, or words
  // that cannot be rebuilt, the line is a usage form (QUEUE), not a
  // suggestion.
  std::vector<std::string> tail{"--"};
  tail.insert(tail.end(), programs.begin(), programs.end());
  const auto rebuilt = core::rebuilt(ctx.typed, programs, tail);
  std::string meant;
  std::vector<std::string> args{"run"};
  args.insert(args.end(), queues.begin(), queues.end());
  args.insert(args.end(), tail.begin(), tail.end());
  args.insert(args.end(), ctx.command.begin(), ctx.command.end());
  if (queues.empty()) {
    args.insert(args.begin() + 1, "QUEUE");
    meant = "taskq " + core::command_line(args);
  } else {
    meant = core::suggest(rebuilt ? *rebuilt : args);
  }
  throw Error(ErrorKind::usage,
              "'" + programs.front()
                  + "' is a program, not a queue; to run it on each task: "
                  + meant
                  + (queues.empty() ? "; a queue of that name is known once "
                                      "it has a task, or settings (taskq queue "
                                      "set NAME --create)"
                                    : ""));
}

} // namespace taskq::cli
