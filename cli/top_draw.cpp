// Drawing `taskq top`: the title, the panes, the log view and the status
// line.
#include "cli/output.hpp"
#include "cli/top_view.hpp"

#include <algorithm>

namespace taskq::cli::top {

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
  if (m_logs) {
    draw_logs(width, height);
  } else {
    draw_panes(width, height);
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
  // Column widths: fixed ones first, the last takes the rest.
  std::vector<int> widths;
  int used = 0;
  for (const Column& c : p.columns) {
    widths.push_back(c.width);
    used += c.width + 1;
  }
  const int last = std::max(width - used, 0);
  auto draw_cells = [&](int line, const std::vector<std::string>& cells,
                        attr_t attr) {
    int x = 0;
    for (size_t i = 0; i < p.columns.size() && x < width; ++i) {
      const int w = p.columns[i].width == 0 ? last : widths[i];
      const int shown = std::min(w, width - x);
      const std::string_view text =
          i < cells.size() ? std::string_view(cells[i]) : "";
      put(line, x, text, shown, attr, p.columns[i].right);
      x += w + 1;
      if (x - 1 < width && i + 1 < p.columns.size()) {
        put(line, x - 1, " ", 1, attr);
      }
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
                        + (m_log_events ? " events and errors" : " output")
                        + "  (q/Esc: back, j/k: scroll)");
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

void Top::draw_status(int width, int height) {
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
  } else if (m_logs) {
    text = m_log_events ? "q/Esc back  l output  j/k up/down  PgUp/PgDn  "
                          "g/G top/end"
                        : "q/Esc back  e events and errors  j/k up/down  "
                          "PgUp/PgDn  g/G top/end";
  } else {
    text = "Tab pane  j/k select  p pause  r resume  K kill  l output  "
           "e events  q quit";
  }
  put(height - 1, 0, text, width, attr);
}

} // namespace taskq::cli::top
