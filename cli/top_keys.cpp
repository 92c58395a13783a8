// The keys of `taskq top`: moving between panes and rows, pause, resume
// and kill (after a yes), and the log view.
#include "cli/output.hpp"
#include "cli/top_view.hpp"
#include "core/error.hpp"

#include <algorithm>

namespace taskq::cli::top {

void Top::say(std::string text) {
  m_message = std::move(text);
  m_message_until = Clock::now() + k_message_time;
}

void Top::on_key(int ch) {
  if (ch == KEY_RESIZE) {
    return; // ncurses has taken the new size; draw() uses it
  }
  if (m_confirm) {
    const Confirm c = *m_confirm;
    m_confirm.reset();
    if (ch == 'y' || ch == 'Y') {
      act('K', c.pane, c.key);
    } else {
      say("not killed");
    }
    return;
  }
  if (m_logs) {
    on_log_key(ch);
    return;
  }
  PaneView& p = pane(m_pane);
  switch (ch) {
  case 'q':
  case 'Q':
    m_quit = true;
    return;
  case '\t':
  case KEY_BTAB: {
    const int step = ch == '\t' ? 1 : 2;
    m_pane = k_panes[(static_cast<int>(m_pane) + step) % 3];
    return;
  }
  case KEY_DOWN:
  case 'j':
    move_selection(p, 1);
    return;
  case KEY_UP:
  case 'k':
    move_selection(p, -1);
    return;
  case KEY_NPAGE:
    move_selection(p, std::max(m_page, 1));
    return;
  case KEY_PPAGE:
    move_selection(p, -std::max(m_page, 1));
    return;
  case KEY_HOME:
  case 'g':
    move_selection(p, -static_cast<int>(p.rows.size()));
    return;
  case KEY_END:
  case 'G':
    move_selection(p, static_cast<int>(p.rows.size()));
    return;
  case 12: // Ctrl-L
    clearok(curscr, TRUE);
    return;
  default:
    break;
  }
  if (p.selected.empty()) {
    if (ch == 'p' || ch == 'r' || ch == 'K' || ch == 'x' || ch == 'l'
        || ch == 'e' || ch == '\r' || ch == KEY_ENTER) {
      say("nothing selected");
    }
    return;
  }
  switch (ch) {
  case 'p':
  case 'r':
    act(ch, m_pane, p.selected);
    return;
  case 'K':
  case 'x':
    m_confirm =
        Confirm{m_pane == Pane::queues ? "kill every unfinished task of queue "
                                             + p.selected + "? (y/n)"
                                       : "kill task " + p.selected + "? (y/n)",
                m_pane, p.selected};
    return;
  case 'l':
  case 'e':
  case '\r':
  case KEY_ENTER:
    if (m_pane == Pane::queues) {
      say(std::string(ch == 'e' ? "events" : "output")
          + " are a task's: select one with Tab");
      return;
    }
    m_logs = parse_id(p.selected);
    m_log_events = ch == 'e';
    m_log_offset = 0;
    m_log_follow = true;
    reload();
    return;
  default:
    return;
  }
}

void Top::on_log_key(int ch) {
  switch (ch) {
  case 'q':
  case 'Q':
  case 27: // Esc
  case KEY_LEFT:
  case KEY_BACKSPACE:
    m_logs.reset();
    m_log_lines.clear();
    return;
  case 'l':
  case 'e':
    // The other view of the same task (or, the same key, back).
    if ((ch == 'e') == m_log_events) {
      m_logs.reset();
      m_log_lines.clear();
      return;
    }
    m_log_events = ch == 'e';
    m_log_offset = 0;
    m_log_follow = true;
    reload();
    return;
  case KEY_DOWN:
  case 'j':
    m_log_offset += 1;
    break;
  case KEY_UP:
  case 'k':
    m_log_offset -= 1;
    break;
  case KEY_NPAGE:
  case ' ':
    m_log_offset += std::max(LINES - 3, 1);
    break;
  case KEY_PPAGE:
    m_log_offset -= std::max(LINES - 3, 1);
    break;
  case KEY_HOME:
  case 'g':
    m_log_offset = 0;
    break;
  case KEY_END:
  case 'G':
    m_log_offset = static_cast<int>(m_log_lines.size());
    break;
  default:
    return;
  }
  // Scrolled to the end, it follows what is appended.
  m_log_follow = m_log_offset >= max_log_offset();
}

int Top::max_log_offset() const {
  return std::max(static_cast<int>(m_log_lines.size()) - (LINES - 2), 0);
}

void Top::act(int what, Pane p, const std::string& key) {
  try {
    storage::TaskStore& store = m_ctx.store(storage::OpenMode::write);
    const core::Time now = m_ctx.live_now();
    if (p == Pane::queues) {
      if (what == 'K') {
        storage::Selector sel;
        sel.queue = key;
        const auto killed = store.send(sel, core::Message::kill, std::nullopt,
                                       m_ctx.actor(), now);
        say("killed " + std::to_string(killed.size()) + " task"
            + (killed.size() == 1 ? "" : "s") + " of queue " + key);
      } else {
        store.set_queue_paused(key, what == 'p');
        say((what == 'p' ? "paused queue " : "resumed queue ") + key);
      }
    } else {
      storage::Selector sel;
      sel.ids = {parse_id(key)};
      const core::Message msg = what == 'p'   ? core::Message::pause
                                : what == 'r' ? core::Message::run
                                              : core::Message::kill;
      store.send(sel, msg, std::nullopt, m_ctx.actor(), now);
      say(std::string(what == 'p'   ? "paused"
                      : what == 'r' ? "resumed"
                                    : "killed")
          + " task " + key);
    }
  } catch (const ConnectionLost& e) {
    // Not done; whether a write in flight committed shows once the
    // connection is back (the next reload).
    m_conn.lost(e, Clock::now());
    say(std::string("not done: ") + e.what());
    return;
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::unavailable) {
      throw;
    }
    say(e.what());
  }
  reload();
}

} // namespace taskq::cli::top
