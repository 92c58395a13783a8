// `list`'s table: tasks in the columns that fit the terminal
// (table_width()), the ones that say nothing dropped, the payload and the
// last error sharing what is left; --wide shows every column uncut.
#include "cli/output.hpp"

#include <algorithm>
#include <cstdlib>
#include <sys/ioctl.h>
#include <unistd.h>

namespace taskq::cli {

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

} // namespace taskq::cli
