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

namespace {

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

} // namespace

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

size_t table_width() {
  const char* env = std::getenv("COLUMNS");
  if (env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*end == '\0' && n > 0) {
      return static_cast<size_t>(n);
    }
  }
  winsize ws{};
  if (isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0
      && ws.ws_col > 0) {
    return ws.ws_col;
  }
  return 80;
}

namespace {

// One column of a fitted table: its header and cells in full, and what
// fitting may do to it.
struct Column {
  std::string header;
  std::vector<std::string> cells;
  int drop = 0;        // when too wide, dropped highest first (0: never)
  size_t least = 0;    // a shortened column keeps this much (0: never cut)
  bool flex = false;   // PAYLOAD, LAST_ERROR: they take the spare width
  bool greedy = false; // LAST_ERROR: others are cut for all of its text
  // When given, each cell's end that a cut keeps (LAST_ERROR's verdict):
  // a cut shortens the rest of the cell.
  std::vector<std::string> tails;
};

// Row `r` of `c` cut to `width`.
std::string fitted_cell(const Column& c, size_t r, size_t width) {
  const std::string& tail = r < c.tails.size() ? c.tails[r] : "";
  const size_t room = display_width(tail);
  if (tail.empty() || display_width(c.cells[r]) <= width || width < room + 8) {
    return cell(c.cells[r], width);
  }
  const std::string& text = c.cells[r];
  return cell(text.substr(0, text.size() - tail.size()), width - room) + tail;
}

size_t natural_width(const Column& c) {
  size_t w = display_width(c.header);
  for (const auto& s : c.cells) {
    w = std::max(w, display_width(s));
  }
  return w;
}

// Prints `columns` within `width` characters a row (0: all of them, as
// wide as they are): columns that say nothing go (every cell "-"), then,
// while the narrowest the rest can be is too wide, the most droppable;
// QUEUE and WORKER are cut towards their least as far as the error needs;
// the flexible columns share what is left, the last taking the rest.
void print_fitted(std::vector<Column> columns, size_t width) {
  columns.erase(std::remove_if(columns.begin(), columns.end(),
                               [width](const Column& c) {
                                 return width > 0 && !c.cells.empty()
                                        && std::all_of(
                                            c.cells.begin(), c.cells.end(),
                                            [](const std::string& s) {
                                              return s == "-" || s.empty();
                                            });
                               }),
                columns.end());
  std::vector<size_t> widths;
  const auto narrowest = [&]() {
    size_t total = 0;
    for (const Column& c : columns) {
      const size_t w = natural_width(c);
      total +=
          (c.flex ? std::min(w, std::max(c.least, display_width(c.header))) : w)
          + 2;
    }
    return total - 2;
  };
  while (width > 0 && narrowest() > width) {
    auto most = std::max_element(
        columns.begin(), columns.end(),
        [](const Column& a, const Column& b) { return a.drop < b.drop; });
    if (most == columns.end() || most->drop == 0) {
      break;
    }
    columns.erase(most);
  }
  size_t fixed = 0; // the width of all but the flexible columns
  size_t spare = 0;
  for (const Column& c : columns) {
    widths.push_back(natural_width(c));
    fixed += (c.flex ? 0 : widths.back()) + 2;
  }
  fixed -= 2;
  if (width > 0) {
    // Cut the others that may be cut (QUEUE, WORKER), down to their least,
    // as far as the flexible ones need: the greedy one all of its text,
    // the others their least.
    size_t flex_want = 0;
    for (const Column& c : columns) {
      if (c.flex) {
        flex_want +=
            c.greedy ? natural_width(c) : std::min(natural_width(c), c.least);
      }
    }
    for (size_t i = 0; i < columns.size(); ++i) {
      if (!columns[i].flex && columns[i].least > 0 && fixed + flex_want > width
          && widths[i] > columns[i].least) {
        const size_t cut =
            std::min(widths[i] - columns[i].least, fixed + flex_want - width);
        widths[i] -= cut;
        fixed -= cut;
      }
    }
    spare = width > fixed ? width - fixed : 0;
    // The last flexible column (the error, when shown) keeps what it
    // needs; each before it takes what the later ones leave, and at least
    // its least; the last then takes the rest (8 at least: when even the
    // leasts do not fit, the row is as narrow as it can be).
    std::vector<size_t> flex;
    size_t want = 0;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].flex) {
        flex.push_back(i);
        want += widths[i];
      }
    }
    if (want > spare) {
      size_t left = spare;
      for (size_t k = 0; k < flex.size(); ++k) {
        const size_t i = flex[k];
        want -= widths[i]; // now what the later ones want
        if (k + 1 < flex.size()) {
          widths[i] =
              std::min(widths[i], std::max(columns[i].least,
                                           left > want ? left - want : 0));
        } else {
          widths[i] = std::min(widths[i],
                               std::max(left, std::min<size_t>(8, widths[i])));
        }
        left = left > widths[i] ? left - widths[i] : 0;
      }
    }
  }
  const auto print_row = [&](const auto& text_of) {
    std::string line;
    for (size_t i = 0; i < columns.size(); ++i) {
      const std::string text = text_of(columns[i], widths[i]);
      line += text;
      if (i + 1 < columns.size()) {
        line.append(widths[i] - display_width(text) + 2, ' ');
      }
    }
    std::puts(line.c_str());
  };
  print_row([](const Column& c, size_t w) { return cell(c.header, w); });
  const size_t rows = columns.empty() ? 0 : columns.front().cells.size();
  for (size_t r = 0; r < rows; ++r) {
    print_row([r](const Column& c, size_t w) { return fitted_cell(c, r, w); });
  }
}

} // namespace

void print_task_table(const std::vector<core::Task>& tasks, core::Time now,
                      const TableOptions& opts) {
  const TableTimes times = table_times(now);
  // Running tasks bring their worker, start and elapsed time; commands
  // that ran (finished, or whose last attempt failed) their exit and how
  // long they ran; tasks whose last attempt failed their error (last, as
  // it is the longest).
  bool running = false, failed = false, ran = false, priority = false;
  bool all_running = !tasks.empty();
  for (const auto& t : tasks) {
    running = running || t.leased(now);
    all_running = all_running && t.leased(now);
    const bool erred = last_attempt_failed(t, now);
    failed = failed || erred || t.state == core::TaskState::failed;
    ran = ran
          || ((core::is_terminal(t.state) || erred) && !t.command.empty()
              && t.attempts > 0);
    priority = priority || t.priority != 0;
  }
  std::vector<Column> cols;
  const auto add = [&](std::string header, int drop, size_t least = 0,
                       bool flex = false) {
    cols.push_back({std::move(header), {}, drop, least, flex, false, {}});
    cols.back().cells.reserve(tasks.size());
  };
  // Dropped first when too wide: STARTED (ELAPSED says it), TOOK, ATT,
  // RUN_AT (a retry's time), WORKER, PRI; PRI at once when no task has a
  // priority.
  add("ID", 0);
  add("QUEUE", 0, 12);
  add("STATE", 0);
  if (priority || opts.wide) {
    add("PRI", 1);
  }
  add("ATT", 4);
  // A running task's due time is past: when all shown run, RUN_AT goes
  // before STARTED.
  add("RUN_AT", all_running ? 8 : 3);
  if (running) {
    add("WORKER", 2, 12);
    add("STARTED", 7);
    add("ELAPSED", 0);
  }
  if (ran) {
    add("EXIT", 0);
    add("TOOK", 5);
  }
  add("PAYLOAD", 0, 12, true);
  if (failed) {
    add("LAST_ERROR", 0, 40, true);
    cols.back().greedy = true;
  }
  for (const auto& t : tasks) {
    size_t c = 0;
    const auto put = [&](std::string text) {
      cols[c++].cells.push_back(std::move(text));
    };
    put(std::to_string(t.id));
    put(t.queue);
    put(display_state(t, now));
    if (priority || opts.wide) {
      put(std::to_string(t.priority));
    }
    put(std::to_string(t.attempts));
    put(times(t.run_at));
    if (running) {
      const bool live = t.leased(now);
      put(live ? t.lease->worker : "-");
      put(live && t.lease_started ? times(*t.lease_started) : "-");
      // A frozen command's time stops: the time it ran before.
      put(live && t.lease_started ? core::format_elapsed(running_time(t, now))
                                  : "-");
    }
    const bool erred = last_attempt_failed(t, now);
    if (ran) {
      if ((core::is_terminal(t.state) || erred) && !t.command.empty()
          && t.attempts > 0) {
        auto [code, took] = exit_and_took(t);
        put(std::move(code));
        put(std::move(took));
      } else {
        put("-");
        put("-");
      }
    }
    put(one_line(what_it_runs(t)));
    if (failed) {
      put(erred || t.state == core::TaskState::failed ? last_error_text(t, 0)
                                                      : "-");
      const std::string verdict = t.state == core::TaskState::failed
                                      ? failure_words(t).verdict
                                      : std::string();
      cols.back().tails.push_back(verdict.empty() ? "" : " (" + verdict + ")");
    }
  }
  print_fitted(std::move(cols), opts.wide ? 0 : table_width());
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
