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

Json or_null(const std::string& s) {
  return s.empty() ? Json(nullptr) : Json(s);
}

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

std::string dump_json(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

// Appends `s` as a JSON string, as dump_json writes it: printable ASCII
// without a quote or backslash is written as it is, anything else goes
// through nlohmann's escaping.
void append_string(std::string& out, std::string_view s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\';
  });
  if (!plain) {
    out += dump_json(Json(std::string(s)));
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

} // namespace

ObjectWriter& ObjectWriter::number(std::string_view key, int64_t value) {
  return raw(key, std::to_string(value));
}

ObjectWriter&
ObjectWriter::number_or_null(std::string_view key,
                             const std::optional<int64_t>& value) {
  return value ? number(key, *value) : raw(key, "null");
}

ObjectWriter& ObjectWriter::text(std::string_view key, std::string_view value) {
  raw(key, "");
  append_string(m_out, value);
  return *this;
}

ObjectWriter&
ObjectWriter::text_or_null(std::string_view key,
                           const std::optional<std::string>& value) {
  return value ? text(key, std::string_view(*value)) : raw(key, "null");
}

ObjectWriter& ObjectWriter::labels(std::string_view key,
                                   const core::Labels& value) {
  raw(key, "{");
  bool first = true;
  for (const auto& [k, v] : value) {
    if (!first) {
      m_out += ',';
    }
    first = false;
    append_string(m_out, k);
    m_out += ':';
    append_string(m_out, v);
  }
  m_out += '}';
  return *this;
}

std::string task_json(const core::Task& t, core::Time now,
                      const std::vector<core::Event>* events) {
  std::string lease = "null";
  if (t.leased(now)) {
    std::optional<std::string> started;
    if (t.lease_started) {
      started = core::format_time(*t.lease_started);
    }
    lease = ObjectWriter()
                .text("token", t.lease->token)
                .text("worker", t.lease->worker)
                .text("expires_at", core::format_time(t.lease->expires_at))
                .text_or_null("started_at", started)
                .raw("frozen", t.frozen ? "true" : "false")
                .finish();
  }
  std::string errors = "[";
  for (const auto& e : t.errors) {
    errors += errors.size() == 1 ? "" : ",";
    errors += ObjectWriter()
                  .text("time", core::format_time(e.time))
                  .text("error", e.message)
                  .finish();
  }
  errors += ']';
  ObjectWriter w;
  w.number("id", t.id)
      .number("rev", t.rev)
      .text("queue", t.queue)
      .text("state", core::to_string(t.state))
      .raw("payload", t.payload)
      .labels("labels", t.labels)
      .number("priority", t.priority)
      .number("attempts", t.attempts)
      .number("attempts_counted", t.attempts_counted())
      .number_or_null("max_attempts", t.max_attempts)
      .text("run_at", core::format_time(t.run_at))
      .text("created_at", core::format_time(t.created_at))
      .text("updated_at", core::format_time(t.updated_at))
      .raw("lease", lease)
      .raw("errors", errors)
      .text_or_null("last_error", t.errors.empty()
                                      ? std::nullopt
                                      : std::optional(t.errors.back().message))
      .raw("checkpoint", t.checkpoint.value_or("null"))
      .raw("result", t.result.value_or("null"))
      .text_or_null("reason",
                    t.reason.empty() ? std::nullopt : std::optional(t.reason))
      .number_or_null("retry_of", t.retry_of)
      .text_or_null("unique", t.unique_key)
      .raw("after", t.after.empty() ? "[]" : dump_json(Json(t.after)))
      .raw("waiting", t.waiting ? "true" : "false")
      .labels("root", t.root)
      .text_or_null("to", t.to_worker)
      .text_or_null("broadcast_until",
                    t.broadcast_until
                        ? std::optional(core::format_time(*t.broadcast_until))
                        : std::nullopt)
      .text_or_null("trigger", t.trigger)
      .text_or_null("schedule", t.schedule)
      .text_or_null("gate", t.gate)
      .labels("sync", t.sync)
      .raw("flow", t.flow.value_or("null"))
      .raw("command", t.command.empty() ? "null" : dump_json(Json(t.command)));
  if (t.state == core::TaskState::failed) {
    const FailureWords f = failure_words(t);
    const auto opt = [](const std::string& s) {
      return s.empty() ? std::nullopt : std::optional(s);
    };
    w.text_or_null("cause", opt(f.cause))
        .text_or_null("verdict", opt(f.verdict));
  } else {
    w.raw("cause", "null").raw("verdict", "null");
  }
  if (events != nullptr) {
    Json list = Json::array();
    for (const auto& e : *events) {
      list.push_back({{"time", core::format_time(e.time)},
                      {"message", e.message},
                      {"from", or_null(e.from)},
                      {"to", or_null(e.to)},
                      {"actor", or_null(e.actor)},
                      {"detail", or_null(e.detail)}});
    }
    w.field("events", list);
  }
  return w.finish();
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

FailureWords failure_words(const core::Task& t) {
  FailureWords w;
  const auto& errors = t.errors;
  const bool gave_up =
      !errors.empty() && errors.back().message == core::k_exceeded_error_rate;
  if (gave_up) {
    // The errors the policy counted: those since it last gave up.
    int64_t counted = 0;
    for (auto e = errors.rbegin() + 1;
         e != errors.rend() && e->message != core::k_exceeded_error_rate; ++e) {
      if (counted == 0) {
        w.cause = e->message;
      }
      ++counted;
    }
    w.verdict = "gave up after " + std::to_string(counted)
                + (counted == 1 ? " error" : " errors");
    return w;
  }
  if (!errors.empty() && errors.back().message == t.reason) {
    w.cause = t.reason; // failed for good at once (fail --no-retry)
    w.verdict = "not retried";
    return w;
  }
  w.cause =
      !t.reason.empty() || errors.empty() ? t.reason : errors.back().message;
  return w;
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
