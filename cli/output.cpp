#include "cli/output.hpp"

#include "core/duration.hpp"
#include "core/error_policy.hpp"
#include "core/suggestion.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sys/ioctl.h>
#include <unistd.h>

namespace taskq::cli {
namespace {

// `3, 5`.
std::string ids_line(const std::vector<int64_t>& ids) {
  std::string out;
  for (const int64_t id : ids) {
    out += (out.empty() ? "" : ", ") + std::to_string(id);
  }
  return out;
}

} // namespace

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) {
    n += (c & 0xc0) != 0x80 ? 1 : 0;
  }
  return n;
}

// `text` on one line: newlines and tabs become spaces.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') {
      c = ' ';
    }
  }
  return text;
}

// Shortens `text` to `width` characters (UTF-8 sequences, never cut in
// half) for a table cell, on one line, ending in "..." when cut.
std::string cell(std::string text, size_t width) {
  text = one_line(std::move(text));
  if (display_width(text) <= width) {
    return text;
  }
  const size_t keep = width > 3 ? width - 3 : 0;
  size_t chars = 0;
  size_t end = 0;
  while (end < text.size()) {
    if ((static_cast<unsigned char>(text[end]) & 0xc0) != 0x80) {
      if (chars == keep) {
        break;
      }
      ++chars;
    }
    ++end;
  }
  text.resize(end);
  return text + std::string(std::min<size_t>(width, 3), '.');
}

void print_task_json(const core::Task& task, core::Time now,
                     const std::vector<core::Event>* events) {
  const std::string text = task_json(task, now, events);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

void print_json(const Json& value) {
  const std::string text = dump_json(value);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
}

std::optional<std::string> flow_line(const std::optional<core::Task>& t) {
  if (!t || !t->flow) {
    return std::nullopt;
  }
  const Json f = Json::parse(*t->flow);
  return "it is the " + f.at("action").get<std::string>() + " task of atom '"
         + f.at("atom").get<std::string>() + "' of flow "
         + std::to_string(f.at("id").get<int64_t>()) + " ("
         + core::suggest(
             {"flow", "show", std::to_string(f.at("id").get<int64_t>())})
         + ")";
}

void print_env(const core::Task& t) {
  const std::string text = env_lines(t);
  std::fwrite(text.data(), 1, text.size(), stdout);
}

std::string display_state(const core::Task& t, core::Time now) {
  if (t.state == core::TaskState::runnable && t.leased(now)) {
    return t.frozen ? "frozen" : "running";
  }
  return std::string(core::to_string(t.state));
}

std::string what_it_runs(const core::Task& t) {
  if (t.command.empty()) {
    return t.payload;
  }
  const std::string stdin_text = t.payload == "null" ? "" : " < " + t.payload;
  if (t.command.size() == 3 && t.command[0] == "/bin/sh"
      && t.command[1] == "-c") {
    return "sh: " + t.command[2] + stdin_text; // as `add --sh` took it
  }
  return "$ " + command_line(t.command) + stdin_text;
}

bool last_attempt_failed(const core::Task& t, core::Time now) {
  if (t.errors.empty() || t.state == core::TaskState::completed
      || t.leased(now)) {
    return false;
  }
  return !t.lease_started || t.errors.back().time >= *t.lease_started;
}

std::string last_error_text(const core::Task& t, size_t width) {
  if (t.state == core::TaskState::failed) {
    return failure_text(t, width);
  }
  // The error, not the policy's "exceeded error rate" logged beside it.
  for (auto e = t.errors.rbegin(); e != t.errors.rend(); ++e) {
    if (e->message != core::k_exceeded_error_rate) {
      return width == 0 ? one_line(e->message) : cell(e->message, width);
    }
  }
  return "-";
}

std::string attempts_text(const core::Task& t) {
  const std::string limit =
      t.max_attempts ? " of " + std::to_string(*t.max_attempts) : "";
  if (t.attempts_base <= 0) {
    return std::to_string(t.attempts) + limit;
  }
  return std::to_string(t.attempts) + " ("
         + std::to_string(t.attempts_counted()) + limit + " counted)";
}

core::Millis running_time(const core::Task& t, core::Time now) {
  if (!t.lease_started) {
    return core::Millis{0};
  }
  const core::Time until = t.frozen && t.frozen_since ? *t.frozen_since : now;
  const core::Millis ran = until - *t.lease_started - t.frozen_for;
  return std::max(ran, core::Millis{0});
}

std::string failure_text(const core::Task& t, size_t width) {
  const FailureWords w = failure_words(t);
  const std::string verdict = w.verdict.empty() ? "" : " (" + w.verdict + ")";
  std::string cause = w.cause.empty() ? "-" : w.cause;
  if (width == 0) {
    return one_line(cause) + verdict;
  }
  const size_t room =
      width > display_width(verdict) + 8 ? width - display_width(verdict) : 8;
  return cell(cause, room) + verdict;
}

void print_table(const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths(header.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(row[i]));
    }
  };
  measure(header);
  for (const auto& r : rows) {
    measure(r);
  }
  auto print_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) {
        line.append(widths[i] - display_width(row[i]) + 2, ' ');
      }
    }
    std::puts(line.c_str());
  };
  print_row(header);
  for (const auto& r : rows) {
    print_row(r);
  }
}

TableTimes table_times(core::Time now) {
  const char* env = std::getenv("TASKQ_TIMES");
  if (env != nullptr && std::strcmp(env, "relative") == 0) {
    return {now, true};
  }
  if (env != nullptr && std::strcmp(env, "absolute") == 0) {
    return {now, false};
  }
  return {now, isatty(STDOUT_FILENO) == 1};
}

// A finished command task's exit ("0", "3", "SIGSEGV", "timeout"; "-" when
// not known) and how long its last attempt ran ("-" when not known).
std::pair<std::string, std::string> exit_and_took(const core::Task& t) {
  std::string code = "-";
  std::string cause;
  if (t.state == core::TaskState::completed) {
    code = "0";
  } else if (t.state == core::TaskState::failed) {
    cause = failure_words(t).cause;
  } else if (!t.errors.empty()) {
    cause = last_error_text(t, 0); // an attempt that failed, retried later
  }
  const auto after = [&](std::string_view prefix) -> std::string {
    if (cause.rfind(prefix, 0) != 0) {
      return "";
    }
    size_t end = prefix.size();
    while (end < cause.size()
           && std::isalnum(static_cast<unsigned char>(cause[end]))) {
      ++end;
    }
    return cause.substr(prefix.size(), end - prefix.size());
  };
  if (const std::string n = after("exit status "); !n.empty()) {
    code = n;
  } else if (const std::string sig = after("killed by "); !sig.empty()) {
    code = sig;
  } else if (cause.rfind("timed out", 0) == 0) {
    code = "timeout";
  }
  std::string took = "-";
  if (t.lease_started && t.updated_at >= *t.lease_started) {
    took = core::format_elapsed(t.updated_at - *t.lease_started);
  }
  return {code, took};
}

void print_task_detail(const storage::TaskDetail& d, core::Time now) {
  const core::Task& t = d.task;
  auto line = [](const char* key, const std::string& value) {
    std::printf("%-12s %s\n", key, value.c_str());
  };
  line("id:", std::to_string(t.id));
  line("queue:", t.queue);
  line("state:", display_state(t, now));
  if (!t.reason.empty()) {
    line("reason:", t.reason);
  }
  line("payload:", t.payload);
  if (!t.command.empty()) {
    line("command:", command_line(t.command));
  }
  if (!t.labels.empty()) {
    line("labels:", core::format_labels(t.labels, " "));
  }
  line("priority:", std::to_string(t.priority));
  line("attempts:", attempts_text(t));
  const TableTimes times = table_times(now);
  line("run_at:", times(t.run_at));
  line("created_at:", times(t.created_at));
  line("updated_at:", times(t.updated_at));
  if (t.leased(now)) {
    line("worker:", t.lease->worker);
    if (t.lease_started) {
      line("started:", times(*t.lease_started));
      line("elapsed:", core::format_elapsed(running_time(t, now))
                           + (t.frozen ? " (frozen)" : ""));
    }
    line("lease:",
         "held by " + t.lease->worker + " until " + times(t.lease->expires_at));
  }
  if (t.checkpoint) {
    line("checkpoint:", *t.checkpoint);
  }
  if (t.result) {
    line("result:", *t.result);
  }
  if (t.retry_of) {
    line("retry_of:", std::to_string(*t.retry_of));
  }
  if (t.unique_key) {
    line("unique:", *t.unique_key);
  }
  if (!t.after.empty()) {
    // Not waiting: all completed, or resumed after one failed.
    line("after:", ids_line(t.after) + (t.waiting ? " (waiting)" : ""));
  }
  if (!t.root.empty()) {
    line("root:", core::format_labels(t.root, " "));
  }
  if (t.to_worker) {
    line("to:", *t.to_worker);
  }
  if (t.broadcast_until) {
    line("broadcast:", "until " + core::format_time(*t.broadcast_until));
  }
  if (t.trigger) {
    line("trigger:", *t.trigger);
  }
  if (t.schedule) {
    line("schedule:", *t.schedule);
  }
  if (t.gate) {
    line("gate:", *t.gate);
  }
  if (t.flow) {
    const Json f = Json::parse(*t.flow);
    line("flow:", std::to_string(f.at("id").get<int64_t>()) + ", atom '"
                      + f.at("atom").get<std::string>() + "', "
                      + f.at("action").get<std::string>());
    line("args:", f.at("args").dump());
  }
  if (!t.sync.empty()) {
    line("sync:", core::format_labels(t.sync, " "));
  }
  std::printf("\nerrors (%zu):\n", t.errors.size());
  for (const auto& e : t.errors) {
    std::printf("  %s  %s\n", times(e.time).c_str(),
                cell(e.message, 200).c_str());
  }
  std::printf("\nevents (%zu):\n", d.events.size());
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : d.events) {
    rows.push_back(
        {"  " + times(e.time), e.message,
         (e.from.empty() ? "-" : e.from) + " -> " + (e.to.empty() ? "-" : e.to),
         e.actor, cell(e.detail, 80)});
  }
  print_table({"  TIME", "MESSAGE", "TRANSITION", "BY", "DETAIL"}, rows);
}

namespace {

// " (tasks 3, 5)": the tasks that failed, named (at most 10, then "...").
std::string ids_words(const std::vector<int64_t>& ids) {
  if (ids.empty()) {
    return "";
  }
  std::string out = ids.size() == 1 ? " (task " : " (tasks ";
  for (size_t i = 0; i < ids.size() && i < 10; ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(ids[i]);
  }
  return out + (ids.size() > 10 ? ", ...)" : ")");
}

} // namespace

// The summary line `run` prints, e.g. "leased 4: 2 completed, 1 failed for
// good (task 7), 1 will retry at 2026-11-24T11:00:00Z (task 9), 0 released,
// 0 revoked" (with several retries: "3 will retry (first at TIME) (tasks 4,
// 5, 6)").
std::string summary_line(const worker::RunSummary& s) {
  std::string retry = std::to_string(s.retrying) + " will retry";
  if (s.retry_at) {
    retry += (s.retrying == 1 ? " at " : " (first at ")
             + core::format_time(*s.retry_at) + (s.retrying == 1 ? "" : ")");
  }
  return "leased " + std::to_string(s.leased) + ": "
         + std::to_string(s.completed) + " completed, "
         + std::to_string(s.failed) + " failed for good"
         + ids_words(s.failed_ids) + ", " + retry + ids_words(s.retrying_ids)
         + ", " + std::to_string(s.released) + " released, "
         + std::to_string(s.revoked) + " revoked";
}

} // namespace taskq::cli
