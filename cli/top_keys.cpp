// The keys of `taskq top` (k_keys, the one list of them): moving between
// panes and rows; pause, resume, freeze, continue and kill, asking first
// before what throws a running command's work away; the log view and the
// list of keys.
#include "cli/output.hpp"
#include "cli/top_view.hpp"
#include "core/error.hpp"

#include <algorithm>

namespace taskq::cli::top {

// clang-format off
namespace {

const Key k_key_table[] = {
  // The panes.
  {Screen::panes, Action::next_pane, {'\t'}, "Tab",
   "the next pane (queues, tasks, recent failures)", "Tab pane"},
  {Screen::panes, Action::prev_pane, {KEY_BTAB}, "Shift-Tab",
   "the previous pane", nullptr},
  {Screen::panes, Action::down, {'j', KEY_DOWN}, "j Down",
   "select the next row", "j/k row"},
  {Screen::panes, Action::up, {'k', KEY_UP}, "k Up",
   "select the row before", nullptr},
  {Screen::panes, Action::page_down, {KEY_NPAGE}, "PgDn",
   "a page down", "PgUp/PgDn page"},
  {Screen::panes, Action::page_up, {KEY_PPAGE}, "PgUp", "a page up", nullptr},
  {Screen::panes, Action::first, {'g', KEY_HOME}, "g Home",
   "the first row", "g/G first/last"},
  {Screen::panes, Action::last, {'G', KEY_END}, "G End", "the last row",
   nullptr},
  {Screen::panes, Action::pause, {'p'}, "p",
   "pause the selected task (taskq pause), asking first when it is running: "
   "its command is stopped and starts over when resumed; or the selected "
   "queue (taskq queue pause: no new leases)", "p pause"},
  {Screen::panes, Action::resume, {'r'}, "r",
   "resume the selected task (taskq resume) or queue (taskq queue resume)",
   "r resume"},
  {Screen::panes, Action::freeze, {'f'}, "f",
   "freeze the selected task's running command where it is (taskq freeze: "
   "SIGSTOP, nothing is lost)", "f freeze"},
  {Screen::panes, Action::proceed, {'c'}, "c",
   "continue the selected task's frozen command (taskq continue: SIGCONT)",
   "c continue"},
  {Screen::panes, Action::kill, {'K', 'x'}, "K x",
   "kill the selected task, or every unfinished task of the selected queue "
   "(taskq kill), after a y: a running command is stopped", "K kill"},
  {Screen::panes, Action::output, {'l', '\r', KEY_ENTER}, "l Enter",
   "the selected task's output (its latest attempt's, as taskq logs)",
   "l output"},
  {Screen::panes, Action::events, {'e'}, "e",
   "the selected task's state, events and errors (as taskq show)",
   "e events"},
  {Screen::panes, Action::redraw, {12}, "Ctrl-L", "redraw the screen", nullptr},
  {Screen::panes, Action::help, {'?'}, "?", "this list of keys", "? keys"},
  {Screen::panes, Action::quit, {'q', 'Q'}, "q", "quit", "q quit"},
  // A task's output or events.
  {Screen::logs, Action::back, {'q', 'Q', 27, KEY_LEFT, KEY_BACKSPACE},
   "q Esc Left Backspace", "back to the panes", "q/Esc back"},
  {Screen::logs, Action::output, {'l'}, "l",
   "the output (from the output: back)", "l output"},
  {Screen::logs, Action::events, {'e'}, "e",
   "the events and errors (from them: back)", "e events"},
  {Screen::logs, Action::down, {'j', KEY_DOWN}, "j Down", "a line down",
   "j/k scroll"},
  {Screen::logs, Action::up, {'k', KEY_UP}, "k Up", "a line up", nullptr},
  {Screen::logs, Action::page_down, {KEY_NPAGE, ' '}, "PgDn Space",
   "a page down", "PgUp/PgDn page"},
  {Screen::logs, Action::page_up, {KEY_PPAGE}, "PgUp", "a page up", nullptr},
  {Screen::logs, Action::first, {'g', KEY_HOME}, "g Home", "the first line",
   "g/G top/end"},
  {Screen::logs, Action::last, {'G', KEY_END}, "G End",
   "the last line (and follow what is added)", nullptr},
  // This list.
  {Screen::help, Action::down, {'j', KEY_DOWN, KEY_NPAGE, ' '},
   "j Down PgDn Space", "scroll down", "j/k scroll"},
  {Screen::help, Action::up, {'k', KEY_UP, KEY_PPAGE}, "k Up PgUp",
   "scroll up", nullptr},
  {Screen::help, Action::back, {'q', 'Q', 27}, "q Esc",
   "back (so does any other key)", "q back"},
};
// clang-format on

} // namespace

const std::span<const Key> k_keys(k_key_table);

const Key* find_key(Screen screen, int ch) {
  for (const Key& k : k_keys) {
    if (k.screen != screen) {
      continue;
    }
    for (const int code : k.codes) {
      if (code == 0) {
        break;
      }
      if (code == ch) {
        return &k;
      }
    }
  }
  return nullptr;
}

std::vector<std::string> key_bar(Screen screen) {
  std::vector<std::string> out;
  for (const Key& k : k_keys) {
    if (k.screen == screen && k.bar != nullptr) {
      out.emplace_back(k.bar);
    }
  }
  return out;
}

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
      act(c.action, c.pane, c.key);
    } else {
      say(c.no);
    }
    return;
  }
  if (m_help) {
    on_help_key(ch);
    return;
  }
  if (m_logs) {
    on_log_key(ch);
    return;
  }
  const Key* key = find_key(Screen::panes, ch);
  if (key == nullptr) {
    say("? lists the keys");
    return;
  }
  PaneView& p = pane(m_pane);
  switch (key->action) {
  case Action::quit:
    m_quit = true;
    return;
  case Action::next_pane:
  case Action::prev_pane: {
    const int step = key->action == Action::next_pane ? 1 : 2;
    m_pane = k_panes[(static_cast<int>(m_pane) + step) % 3];
    return;
  }
  case Action::down:
    move_selection(p, 1);
    return;
  case Action::up:
    move_selection(p, -1);
    return;
  case Action::page_down:
    move_selection(p, std::max(m_page, 1));
    return;
  case Action::page_up:
    move_selection(p, -std::max(m_page, 1));
    return;
  case Action::first:
    move_selection(p, -static_cast<int>(p.rows.size()));
    return;
  case Action::last:
    move_selection(p, static_cast<int>(p.rows.size()));
    return;
  case Action::redraw:
    clearok(curscr, TRUE);
    return;
  case Action::help:
    m_help = true;
    m_help_offset = 0;
    return;
  case Action::back:
    return;
  case Action::pause:
  case Action::resume:
  case Action::freeze:
  case Action::proceed:
  case Action::kill:
  case Action::output:
  case Action::events:
    break;
  }
  if (p.selected.empty()) {
    say("nothing selected");
    return;
  }
  if (key->action == Action::output || key->action == Action::events) {
    const bool events = key->action == Action::events;
    if (m_pane == Pane::queues) {
      say(std::string(events ? "events" : "output")
          + " are a task's: select one with Tab");
      return;
    }
    m_logs = parse_id(p.selected);
    m_log_events = events;
    m_log_offset = 0;
    m_log_follow = true;
    reload();
    return;
  }
  ask_or_act(key->action);
}

void Top::ask_or_act(Action what) {
  const std::string& key = pane(m_pane).selected;
  if (m_pane == Pane::queues) {
    if (what == Action::freeze || what == Action::proceed) {
      say("freeze and continue act on a task: select one with Tab");
    } else if (what == Action::kill) {
      m_confirm = Confirm{"kill every unfinished task of queue " + key
                              + "? (y/n) running commands are stopped",
                          what, m_pane, key, "not killed"};
    } else {
      act(what, m_pane, key); // a paused queue's running tasks run on
    }
    return;
  }
  if (what != Action::pause && what != Action::kill) {
    act(what, m_pane, key);
    return;
  }
  // Whether its command runs now, read afresh: the snapshot may be older
  // than the lease.
  bool running = false;
  try {
    const auto t = m_store.find(parse_id(key));
    running = t && t->leased(m_ctx.live_now());
  } catch (const ConnectionLost& e) {
    m_conn.lost(e, Clock::now());
    say(std::string("not done: ") + e.what());
    return;
  }
  if (what == Action::kill) {
    m_confirm =
        Confirm{"kill task " + key + "? (y/n)"
                    + (running ? " its running command is stopped" : ""),
                what, m_pane, key, "not killed"};
  } else if (running) {
    m_confirm =
        Confirm{"pause task " + key
                    + "? (y/n) its running command is stopped and "
                      "starts over when resumed (f freezes it)",
                what, m_pane, key, "not paused: task " + key + " runs on"};
  } else {
    act(what, m_pane, key);
  }
}

void Top::on_help_key(int ch) {
  const Key* key = find_key(Screen::help, ch);
  if (key == nullptr || key->action == Action::back) {
    m_help = false;
    return;
  }
  m_help_offset += key->action == Action::down ? 1 : -1;
  if (ch == KEY_NPAGE || ch == ' ' || ch == KEY_PPAGE) {
    m_help_offset +=
        (key->action == Action::down ? 1 : -1) * (std::max(LINES - 3, 1) - 1);
  }
}

void Top::on_log_key(int ch) {
  const Key* key = find_key(Screen::logs, ch);
  if (key == nullptr) {
    return;
  }
  switch (key->action) {
  case Action::back:
    m_logs.reset();
    m_log_lines.clear();
    return;
  case Action::output:
  case Action::events: {
    // The other view of the same task (or, the same key, back).
    const bool events = key->action == Action::events;
    if (events == m_log_events) {
      m_logs.reset();
      m_log_lines.clear();
      return;
    }
    m_log_events = events;
    m_log_offset = 0;
    m_log_follow = true;
    reload();
    return;
  }
  case Action::down:
    m_log_offset += 1;
    break;
  case Action::up:
    m_log_offset -= 1;
    break;
  case Action::page_down:
    m_log_offset += std::max(LINES - 3, 1);
    break;
  case Action::page_up:
    m_log_offset -= std::max(LINES - 3, 1);
    break;
  case Action::first:
    m_log_offset = 0;
    break;
  case Action::last:
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

void Top::act(Action what, Pane p, const std::string& key) {
  try {
    storage::TaskStore& store = m_ctx.store(storage::OpenMode::write);
    const core::Time now = m_ctx.live_now();
    if (p == Pane::queues) {
      if (what == Action::kill) {
        storage::Selector sel;
        sel.queue = key;
        const auto killed = store.send(sel, core::Message::kill, std::nullopt,
                                       m_ctx.actor(), now);
        say("killed " + std::to_string(killed.size()) + " task"
            + (killed.size() == 1 ? "" : "s") + " of queue " + key);
      } else {
        store.set_queue_paused(key, what == Action::pause);
        say((what == Action::pause ? "paused queue " : "resumed queue ") + key);
      }
    } else if (what == Action::freeze || what == Action::proceed) {
      const bool freeze = what == Action::freeze;
      store.freeze({parse_id(key)}, freeze, m_ctx.actor(), now);
      say(freeze ? "froze task " + key + " (c continues it)"
                 : "continued task " + key);
    } else {
      storage::Selector sel;
      sel.ids = {parse_id(key)};
      const core::Message msg = what == Action::pause    ? core::Message::pause
                                : what == Action::resume ? core::Message::run
                                                         : core::Message::kill;
      store.send(sel, msg, std::nullopt, m_ctx.actor(), now);
      say(std::string(what == Action::pause    ? "paused"
                      : what == Action::resume ? "resumed"
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
