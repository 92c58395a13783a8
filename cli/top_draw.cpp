// Drawing `taskq top`: the title, the panes (their columns laid out to
// fit the terminal), the log view, the list of keys and the key bar.
#include "cli/output.hpp"
#include "cli/top_view.hpp"

#include <algorithm>

namespace taskq::cli::top {

std::vector<int> lay_out(const std::vector<Column>& columns,
                         const std::vector<Row>& rows, int width,
                         const TextFit& measure) {
  const size_t n = columns.size();
  std::vector<int> w(n, -1);
  int used = 0; // by the columns before the last, each with its separator
  int last_want = 0;
  const size_t last = n - 1;
  for (size_t i = 0; i < n; ++i) {
    const Column& c = columns[i];
    const int cap = c.width == 0 ? width : c.width;
    int content = 0;
    for (const Row& r : rows) {
      if (i < r.cells.size()) {
        content = std::max(content, measure.columns(r.cells[i], cap));
      }
    }
    if (content == 0 && !rows.empty()) {
      continue; // empty columns go
    }
    const int title = measure.columns(c.title, width);
    w[i] = std::max(std::min(content, cap), title);
    if (i == last && c.width == 0) {
      last_want = std::min(w[i], k_last_min);
    } else {
      used += w[i] + 1;
    }
  }
  // Too wide: cut the shrinking columns down, the widest first, then leave
  // columns out from the right (never the first, which names the row).
  const auto too_wide = [&] { return used + last_want > width; };
  while (too_wide()) {
    size_t widest = n;
    for (size_t i = 0; i < n; ++i) {
      const bool flex = i == last && columns[i].width == 0;
      if (!flex && columns[i].shrink && w[i] > k_shrunk
          && (widest == n || w[i] > w[widest])) {
        widest = i;
      }
    }
    if (widest == n) {
      break;
    }
    w[widest] -= 1;
    used -= 1;
  }
  for (size_t i = last; too_wide() && i >= 1; --i) {
    if (w[i] < 0 || (i == last && columns[i].width == 0)) {
      continue;
    }
    used -= w[i] + 1;
    w[i] = -1;
  }
  // The last column takes what the others leave.
  if (w[last] >= 0 && columns[last].width == 0) {
    w[last] = std::max(width - used, 0);
  }
  return w;
}

void Top::put(int y, int x, std::string_view text, int width, attr_t attr,
              bool right) {
  if (width <= 0) {
    return;
  }
  attron(attr);
  mvaddstr(y, x, m_fit.fit(text, width, right).c_str());
  attroff(attr);
}

attr_t Top::colour(short pair) const {
  return m_colour && pair != 0 ? COLOR_PAIR(pair) : A_NORMAL;
}

void Top::draw() {
  erase();
  const int width = COLS;
  const int height = LINES;
  // The key bar takes the last lines, as many as it needs at this width.
  const int body = height - status_lines(width) + 1;
  if (m_help) {
    draw_help(width, body);
  } else if (m_logs) {
    draw_logs(width, body);
  } else {
    draw_panes(width, body);
  }
  draw_status(width, height);
  refresh();
}

void Top::draw_title(int width, const std::string& left) {
  const std::string right =
      core::format_time(std::chrono::floor<std::chrono::seconds>(m_now));
  const attr_t attr = m_colour ? colour(pair_title) : A_REVERSE;
  put(0, 0, left, width, attr);
  const int rw = static_cast<int>(right.size());
  if (width > rw + 1 + static_cast<int>(left.size())) {
    put(0, width - rw - 1, right, rw + 1, attr);
  }
}

void Top::draw_panes(int width, int height) {
  int64_t running = 0;
  for (const auto& q : m_view.queues) {
    running += q.stats.running;
  }
  draw_title(width, "taskq top  " + storage::redact_url(m_ctx.db_path()) + "  "
                        + std::to_string(m_view.queues.size()) + " queues, "
                        + std::to_string(running) + " running");
  // Each pane: a title line, a header line and its rows. The queues and
  // the failures take at most a quarter of the rows each, or what the
  // tasks leave over; the tasks the rest.
  const int rows = std::max(height - 2 - 3 * 2, 3);
  auto need = [&](Pane p) {
    return std::max(static_cast<int>(pane(p).rows.size()), 1);
  };
  int q = std::min(need(Pane::queues), std::max(rows / 4, 1));
  int f = std::min(need(Pane::failures), std::max(rows / 4, 1));
  int t = std::max(rows - q - f, 1);
  int spare = t - need(Pane::tasks);
  if (spare > 0) {
    const int more_f = std::min(spare, need(Pane::failures) - f);
    f += more_f;
    spare -= more_f;
    const int more_q = std::min(spare, need(Pane::queues) - q);
    q += more_q;
    t -= more_f + more_q;
  }
  int y = 1;
  y = draw_pane(Pane::queues, "Queues", y, q, width);
  y = draw_pane(Pane::tasks, "Tasks (running first, then newest)", y, t, width);
  draw_pane(Pane::failures, "Recent failures", y, f, width);
  m_page = t;
}

int Top::draw_pane(Pane which, const std::string& name, int y, int rows,
                   int width) {
  PaneView& p = pane(which);
  const bool active = which == m_pane && !m_logs;
  const std::string title = (active ? "> " : "  ") + name + " ("
                            + std::to_string(p.rows.size())
                            + (p.rows.size() >= k_rows ? "+" : "") + ")";
  put(y, 0, title, width, (active ? A_BOLD : A_NORMAL) | colour(pair_header));
  ++y;
  const std::vector<int> widths = lay_out(p.columns, p.rows, width, m_fit);
  auto draw_cells = [&](int line, const std::vector<std::string>& cells,
                        attr_t attr) {
    int x = 0;
    for (size_t i = 0; i < p.columns.size() && x < width; ++i) {
      if (widths[i] < 0) {
        continue;
      }
      if (x > 0) {
        put(line, x, " ", 1, attr);
        ++x;
      }
      const int shown = std::min(widths[i], width - x);
      const std::string_view text =
          i < cells.size() ? std::string_view(cells[i]) : "";
      put(line, x, text, shown, attr, p.columns[i].right);
      x += widths[i];
    }
  };
  std::vector<std::string> header;
  for (const Column& c : p.columns) {
    header.emplace_back(c.title);
  }
  draw_cells(y, header, A_BOLD);
  ++y;
  const int n = static_cast<int>(p.rows.size());
  p.offset = std::clamp(p.offset, std::max(p.index - rows + 1, 0),
                        std::max(std::min(p.index, n - 1), 0));
  for (int i = 0; i < rows; ++i) {
    const int r = p.offset + i;
    if (r >= n) {
      if (n == 0 && i == 0) {
        put(y, 2, "(none)", width - 2, A_DIM);
      }
      ++y;
      continue;
    }
    const Row& row = p.rows[static_cast<size_t>(r)];
    attr_t attr = colour(row.pair);
    if (r == p.index && active) {
      attr |= A_REVERSE;
    }
    if (!m_colour && row.pair == pair_failed) {
      attr |= A_BOLD;
    }
    draw_cells(y, row.cells, attr);
    ++y;
  }
  return y;
}

void Top::draw_logs(int width, int height) {
  draw_title(width, "taskq top  task " + std::to_string(*m_logs)
                        + (m_log_events ? " events and errors" : " output"));
  const int rows = std::max(height - 2, 1);
  const int top = max_log_offset();
  m_log_offset = m_log_follow ? top : std::clamp(m_log_offset, 0, top);
  for (int i = 0; i < rows; ++i) {
    const auto r = static_cast<size_t>(m_log_offset + i);
    if (r >= m_log_lines.size()) {
      break;
    }
    put(1 + i, 0, m_log_lines[r], width, A_NORMAL);
  }
}

void Top::draw_help(int width, int height) {
  constexpr size_t k_names_width = 24;
  draw_title(width, "taskq top  keys");
  std::vector<std::string> lines;
  const char* heads[] = {
      "In the panes:", "In a task's output or events:", "In this list:"};
  for (const Screen screen : {Screen::panes, Screen::logs, Screen::help}) {
    if (!lines.empty()) {
      lines.emplace_back();
    }
    lines.emplace_back(heads[static_cast<int>(screen)]);
    for (const Key& k : k_keys) {
      if (k.screen != screen) {
        continue;
      }
      // The keys, then what they do, its words wrapped under each other.
      std::string line = "  " + std::string(k.names);
      const std::string_view does = k.does;
      size_t at = 0;
      while (at < does.size()) {
        line.resize(std::max<size_t>(line.size(), k_names_width) + 1, ' ');
        const size_t room = static_cast<size_t>(
            std::max(width - static_cast<int>(line.size()), 20));
        size_t end = std::min(at + room, does.size());
        if (end < does.size()) {
          const size_t space = does.rfind(' ', end);
          if (space != std::string_view::npos && space > at) {
            end = space;
          }
        }
        line += does.substr(at, end - at);
        lines.push_back(std::move(line));
        line.clear();
        at = end < does.size() && does[end] == ' ' ? end + 1 : end;
      }
    }
  }
  const int rows = std::max(height - 2, 1);
  const int most = std::max(static_cast<int>(lines.size()) - rows, 0);
  m_help_offset = std::clamp(m_help_offset, 0, most);
  for (int i = 0; i < rows; ++i) {
    const auto r = static_cast<size_t>(m_help_offset + i);
    if (r >= lines.size()) {
      break;
    }
    put(1 + i, 0, lines[r], width, A_NORMAL);
  }
}

namespace {

// The key bar's entries laid out on lines at most `width` wide, two spaces
// apart; an entry never breaks.
std::vector<std::string> wrap_bar(const std::vector<std::string>& entries,
                                  int width) {
  std::vector<std::string> lines(1);
  for (const std::string& e : entries) {
    std::string& line = lines.back();
    if (!line.empty() && static_cast<int>(line.size() + 2 + e.size()) > width) {
      lines.push_back(e);
    } else {
      line += (line.empty() ? "" : "  ") + e;
    }
  }
  return lines;
}

} // namespace

int Top::status_lines(int width) const {
  const Screen screen =
      m_help ? Screen::help : (m_logs ? Screen::logs : Screen::panes);
  return static_cast<int>(wrap_bar(key_bar(screen), width).size());
}

int Top::draw_status(int width, int height) {
  const Screen screen =
      m_help ? Screen::help : (m_logs ? Screen::logs : Screen::panes);
  std::vector<std::string> lines = wrap_bar(key_bar(screen), width);
  const int n = static_cast<int>(lines.size());
  std::string text;
  attr_t attr = A_NORMAL;
  if (m_confirm) {
    text = m_confirm->question;
    attr = A_BOLD | colour(pair_failed);
  } else if (!m_message.empty() && Clock::now() < m_message_until) {
    text = m_message;
    attr = A_BOLD;
  } else if (m_conn.down()) {
    text = m_down;
    attr = A_BOLD | colour(pair_failed);
  }
  if (!text.empty()) {
    // In place of the key bar's last line, the rest of it kept.
    lines.back() = text;
  }
  for (int i = 0; i < n; ++i) {
    put(height - n + i, 0, lines[static_cast<size_t>(i)], width,
        i == n - 1 ? attr : A_NORMAL);
  }
  return n;
}

} // namespace taskq::cli::top
