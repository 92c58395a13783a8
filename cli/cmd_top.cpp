// taskq top: a full-screen view of the queues, the unfinished tasks and the
// recent failures that follows the database as it changes, with keys to
// pause, resume and kill the selected task or queue and to read a task's
// history. Drawn with ncurses; the rules stay in storage (the same calls
// as the pause, resume, kill and queue commands).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/time.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <clocale>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <filesystem>
#include <langinfo.h>
#include <optional>
#include <poll.h>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

// Functions rather than macros: curses.h would otherwise define clear(),
// erase(), move(), refresh(), ... as macros, which rewrite any member of
// the same name that follows.
#define NCURSES_NOMACROS
#include <curses.h>

namespace taskq::cli {
namespace {

using Clock = std::chrono::steady_clock;

// How many rows of each kind one snapshot reads: more than a screen holds.
constexpr int64_t k_rows = 200;
// The view reloads at most this often on changes (a busy queue commits
// thousands of times a second), and at least this often without any (so
// that leases running out and the last minute's counts move on). A reload
// that takes long (a big database) spaces them out further: reading
// takes at most a fifth of the time.
constexpr std::chrono::milliseconds k_min_reload{50};
constexpr std::chrono::milliseconds k_max_reload{5000};
// How long after the first wake-up of a change it reads: a commit comes as
// a few writes, and reading at the first would miss it.
constexpr std::chrono::milliseconds k_settle{20};
// How long a message (an action's result) stays on the status line.
constexpr std::chrono::seconds k_message_time{6};

volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_signal(int sig) {
  g_signal = sig;
}

// `d` in at most 5 columns: 45s, 3m05s, 2h07m, 3d04h.
std::string short_duration(core::Millis d) {
  int64_t s = std::max<int64_t>(d.count(), 0) / 1000;
  auto two = [](int64_t n) { return (n < 10 ? "0" : "") + std::to_string(n); };
  if (s < 60) {
    return std::to_string(s) + "s";
  }
  if (s < 3600) {
    return std::to_string(s / 60) + "m" + two(s % 60) + "s";
  }
  if (s < 86400) {
    return std::to_string(s / 3600) + "h" + two(s % 3600 / 60) + "m";
  }
  return std::to_string(s / 86400) + "d" + two(s % 86400 / 3600) + "h";
}

// How the terminal shows text: one cell per column, `…` or `~` where cut.
class TextFit {
public:
  TextFit() {
    const char* codeset = nl_langinfo(CODESET);
    m_utf8 = codeset != nullptr && std::strcmp(codeset, "UTF-8") == 0;
  }

  // `text` as one line of at most `width` columns: control characters
  // become spaces; bytes that are not UTF-8 (and, outside a UTF-8 locale,
  // every non-ASCII character) become `?`. Padded to `width` with spaces,
  // on the left when `right`.
  std::string fit(std::string_view text, int width, bool right) const {
    std::string out;
    int used = 0;
    std::mbstate_t state{};
    size_t i = 0;
    bool cut = false;
    while (i < text.size()) {
      std::string piece;
      int w = 1;
      const auto byte = static_cast<unsigned char>(text[i]);
      if (byte < 0x80) {
        piece = byte < 0x20 || byte == 0x7f ? ' ' : static_cast<char>(byte);
        ++i;
      } else {
        wchar_t wc = 0;
        const size_t n =
            m_utf8 ? std::mbrtowc(&wc, text.data() + i, text.size() - i, &state)
                   : static_cast<size_t>(-1);
        if (n == 0 || n == static_cast<size_t>(-1)
            || n == static_cast<size_t>(-2)) {
          state = std::mbstate_t{};
          piece = "?";
          ++i;
        } else {
          w = ::wcwidth(wc);
          piece.assign(text.substr(i, n));
          if (w < 0) {
            piece = "?";
            w = 1;
          }
          i += n;
        }
      }
      if (used + w > width) {
        cut = true;
        break;
      }
      out += piece;
      used += w;
    }
    if (cut && width > 0) {
      // Make room for the mark: drop whole characters from the end.
      while (used > width - 1 && !out.empty()) {
        size_t start = out.size() - 1;
        while (start > 0
               && (static_cast<unsigned char>(out[start]) & 0xc0) == 0x80) {
          --start;
        }
        const std::string last = out.substr(start);
        out.resize(start);
        used -= width_of(last);
      }
      out += m_utf8 ? "\u2026" : "~";
      ++used;
    }
    const std::string pad(static_cast<size_t>(std::max(width - used, 0)), ' ');
    return right ? pad + out : out + pad;
  }

private:
  int width_of(const std::string& piece) const {
    if (piece.size() == 1) {
      return 1;
    }
    wchar_t wc = 0;
    std::mbstate_t state{};
    std::mbrtowc(&wc, piece.data(), piece.size(), &state);
    return std::max(::wcwidth(wc), 1);
  }

  bool m_utf8 = false;
};

// The colour pairs, when there are colours (0: the terminal's own).
constexpr short pair_title = 1;
constexpr short pair_header = 2;
constexpr short pair_running = 3;
constexpr short pair_waiting = 4; // paused, sleeping, a paused queue
constexpr short pair_failed = 5;
constexpr short pair_delayed = 6;

enum class Pane { queues, tasks, failures };
constexpr Pane k_panes[] = {Pane::queues, Pane::tasks, Pane::failures};

struct Column {
  const char* title;
  int width; // 0: the rest of the line
  bool right = false;
};

// One line of a pane: what identifies it (a queue's name, a task's id),
// its cells and the colour of its state.
struct Row {
  std::string key;
  std::vector<std::string> cells;
  short pair = 0;
};

struct PaneView {
  std::vector<Column> columns;
  std::vector<Row> rows;
  std::string selected; // the key of the selected row, kept across reloads
  int index = 0;        // its position
  int offset = 0;       // the first row shown
};

// What a key asks for that needs an answer first.
struct Confirm {
  std::string question;
  Pane pane = Pane::tasks;
  std::string key;
};

// The lines the `l` key shows for task `id`, newest last.
//
// HOOK (taskq logs): this is the one place that decides what "open the
// selected task's logs" shows. Until stored output is in this build it
// shows the task's state, its error history (the last error is the last
// line) and its event log, as `taskq show` does; once `taskq logs` is,
// show the latest attempt's stdout and stderr here instead (the view
// reloads on every change, so a running task's output follows).
std::vector<std::string> task_log_lines(storage::TaskStore& store, int64_t id,
                                        core::Time now) {
  const storage::TaskDetail d = store.show(id);
  const core::Task& t = d.task;
  std::vector<std::string> out;
  out.push_back(
      "task " + std::to_string(t.id) + "  queue " + t.queue + "  state "
      + display_state(t, now) + "  attempts " + std::to_string(t.attempts)
      + (t.max_attempts ? " of " + std::to_string(*t.max_attempts) : ""));
  if (t.leased(now)) {
    out.push_back("worker " + t.lease->worker + ", lease until "
                  + core::format_time(t.lease->expires_at));
  }
  if (!t.reason.empty()) {
    out.push_back("reason: " + t.reason);
  }
  out.push_back("payload: " + t.payload);
  out.emplace_back();
  out.push_back("events:");
  for (const core::Event& e : d.events) {
    std::string line = "  " + core::format_time(e.time) + "  " + e.message;
    if (!e.from.empty() || !e.to.empty()) {
      line += "  " + e.from + " -> " + e.to;
    }
    if (!e.actor.empty()) {
      line += "  by " + e.actor;
    }
    if (!e.detail.empty()) {
      line += ": " + e.detail;
    }
    out.push_back(std::move(line));
  }
  out.emplace_back();
  out.push_back(t.errors.empty() ? "errors: none" : "errors, oldest first:");
  for (const core::ErrorEntry& e : t.errors) {
    out.push_back("  " + core::format_time(e.time) + "  " + e.message);
  }
  return out;
}

// The full-screen view. Construction takes over the terminal (the
// alternate screen, keys unbuffered and unechoed); destruction gives it
// back as it was, also when an exception unwinds.
class Top {
public:
  Top(Context& ctx, storage::TaskStore& store)
      : m_ctx(ctx), m_store(store), m_feed(store.changes()) {
    m_screen = newterm(nullptr, stdout, stdin);
    if (m_screen == nullptr) {
      const char* term = std::getenv("TERM");
      throw Error(ErrorKind::usage,
                  std::string("top cannot drive this terminal (TERM=")
                      + (term != nullptr ? term : "") + ")");
    }
    cbreak(); // keys as they are typed; Ctrl-C still sends SIGINT
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE); // keys are read when poll(2) says they came
    set_escdelay(25);
    curs_set(0);
    const char* no_color = std::getenv("NO_COLOR");
    m_colour = (no_color == nullptr || *no_color == '\0') && has_colors();
    if (m_colour) {
      start_color();
      use_default_colors();
      init_pair(pair_title, COLOR_BLACK, COLOR_CYAN);
      init_pair(pair_header, COLOR_CYAN, -1);
      init_pair(pair_running, COLOR_GREEN, -1);
      init_pair(pair_waiting, COLOR_YELLOW, -1);
      init_pair(pair_failed, COLOR_RED, -1);
      init_pair(pair_delayed, COLOR_BLUE, -1);
    }
    m_panes[0].columns = {{"QUEUE", 20},         {"READY", 7, true},
                          {"RUNNING", 7, true},  {"DELAYED", 7, true},
                          {"SLEEPING", 8, true}, {"PAUSED", 6, true},
                          {"FAILED", 6, true},   {"DONE/1M", 7, true},
                          {"DONE/1H", 7, true},  {"", 0}};
    m_panes[1].columns = {{"ID", 7, true},
                          {"QUEUE", 16},
                          {"STATE", 8},
                          {"WORKER", 18},
                          {"TIME", 7, true},
                          {"ATT", 3, true},
                          {"PAYLOAD / LAST ERROR", 0}};
    m_panes[2].columns = {{"ID", 7, true},
                          {"QUEUE", 16},
                          {"FAILED", 9, true},
                          {"ATT", 3, true},
                          {"ERROR", 0}};
  }

  ~Top() {
    endwin();
    delscreen(m_screen);
  }

  Top(const Top&) = delete;
  Top& operator=(const Top&) = delete;

  // Runs until `q` or a signal; returns that signal's number, else 0.
  int run() {
    sigset_t waiting;
    pthread_sigmask(SIG_SETMASK, nullptr, &waiting);
    for (const int sig : {SIGINT, SIGTERM, SIGWINCH}) {
      sigdelset(&waiting, sig);
    }
    reload();
    draw();
    auto next_tick = next_second();
    while (!m_quit && g_signal == 0) {
      pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {m_feed.fd(), POLLIN, 0}};
      const nfds_t nfds = m_feed.polling() ? 1 : 2;
      const auto wake = std::min(next_tick, reload_due());
      const auto left = std::max(wake - Clock::now(), Clock::duration{0});
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(left);
      const timespec ts{
          static_cast<time_t>(secs.count()),
          static_cast<long>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(left - secs)
                  .count())};
      // Signals are blocked but while waiting here, so none slips in
      // between looking at g_signal and going to sleep.
      const int rc = ppoll(fds, nfds, &ts, &waiting);
      if (rc < 0 && errno != EINTR) {
        throw Error(ErrorKind::internal,
                    std::string("top cannot wait: ") + std::strerror(errno));
      }
      if (g_signal != 0) {
        break;
      }
      bool dirty = false;
      if (nfds == 2 && rc > 0 && (fds[1].revents & POLLIN) != 0
          && m_feed.drain() && !m_changed) {
        m_changed = true;
        m_changed_at = Clock::now();
      }
      // Keys, and KEY_RESIZE, which ncurses makes of a SIGWINCH.
      for (int ch = getch(); ch != ERR && !m_quit; ch = getch()) {
        on_key(ch);
        dirty = true;
      }
      const auto now = Clock::now();
      if (now >= reload_due()) {
        reload();
        dirty = true;
      }
      if (now >= next_tick) {
        next_tick = next_second();
        m_now = m_loaded_now
                + std::chrono::duration_cast<core::Millis>(now - m_loaded_at);
        rebuild();
        dirty = true;
      }
      if (dirty && !m_quit) {
        draw();
      }
    }
    return g_signal;
  }

private:
  // When to read the database again: a little after it changed (a commit
  // on SQLite wakes the feed as it starts writing), not more often than
  // k_min_reload allows, and every k_max_reload without a change.
  Clock::time_point reload_due() const {
    if (m_feed.polling()) {
      return m_loaded_at + storage::ChangeFeed::k_fallback_poll;
    }
    if (m_changed) {
      return std::max(
          m_changed_at + k_settle,
          m_loaded_at
              + std::max<Clock::duration>(k_min_reload, 5 * m_reload_cost));
    }
    return m_loaded_at + k_max_reload;
  }

  // The next turn of the wall clock's second, when elapsed times move on.
  static Clock::time_point next_second() {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    return Clock::now() + std::chrono::milliseconds(1000 - ms % 1000);
  }

  PaneView& pane(Pane p) { return m_panes[static_cast<int>(p)]; }

  // Reads a new snapshot and rebuilds the rows, keeping each pane's
  // selection on the same queue or task when it is still there.
  void reload() {
    m_changed = false;
    m_loaded_at = Clock::now();
    m_now = m_ctx.live_now();
    m_loaded_now = m_now;
    m_view = m_store.top_view(m_now, k_rows);
    m_reload_cost = Clock::now() - m_loaded_at;
    rebuild();
    if (m_logs) {
      try {
        m_log_lines = task_log_lines(m_store, *m_logs, m_now);
      } catch (const Error& e) {
        m_log_lines = {e.what()};
      }
    }
  }

  // The rows of the snapshot as of m_now; each second moves m_now on (by
  // this host's clock, without asking the database's), so elapsed times
  // count up between reloads.
  void rebuild() {
    fill_queues();
    fill_tasks(pane(Pane::tasks), m_view.tasks);
    fill_tasks(pane(Pane::failures), m_view.failures);
    for (PaneView& p : m_panes) {
      reselect(p);
    }
  }

  void fill_queues() {
    PaneView& p = pane(Pane::queues);
    p.rows.clear();
    for (const storage::TopQueue& q : m_view.queues) {
      const storage::QueueStats& s = q.stats;
      Row r{s.queue,
            {s.queue, std::to_string(s.ready), std::to_string(s.running),
             std::to_string(s.delayed), std::to_string(s.sleeping),
             std::to_string(s.paused), std::to_string(s.failed),
             std::to_string(s.completed_last_minute),
             std::to_string(s.completed_last_hour), q.paused ? "paused" : ""},
            q.paused ? pair_waiting : short{0}};
      p.rows.push_back(std::move(r));
    }
  }

  void fill_tasks(PaneView& p, const std::vector<storage::TopTask>& tasks) {
    const bool failures = &p == &pane(Pane::failures);
    p.rows.clear();
    for (const storage::TopTask& tt : tasks) {
      const core::Task& t = tt.task;
      const std::string state = display_state(t, m_now);
      const std::string id = std::to_string(t.id);
      const std::string attempts = std::to_string(t.attempts);
      std::string detail = tt.last_error
                               ? *tt.last_error
                               : (t.reason.empty() ? t.payload : t.reason);
      if (failures) {
        p.rows.push_back(
            {id,
             {id, t.queue, short_duration(m_now - t.updated_at) + " ago",
              attempts, tt.last_error.value_or(t.reason)},
             pair_failed});
        continue;
      }
      std::string worker;
      std::string time;
      short colour = 0;
      if (t.leased(m_now)) {
        worker = t.lease->worker;
        time = tt.leased_at ? short_duration(m_now - *tt.leased_at) : "";
        colour = pair_running;
      } else if (t.run_at > m_now && t.state != core::TaskState::paused) {
        time = "in " + short_duration(t.run_at - m_now);
        colour =
            t.state == core::TaskState::sleeping ? pair_waiting : pair_delayed;
      } else if (t.state == core::TaskState::paused) {
        colour = pair_waiting;
      }
      if (t.waiting && t.state == core::TaskState::runnable) {
        time = "after";
      }
      if (tt.last_error && colour == 0) {
        colour = pair_failed; // waits for a retry
      }
      p.rows.push_back(
          {id, {id, t.queue, state, worker, time, attempts, detail}, colour});
    }
  }

  static void reselect(PaneView& p) {
    const int n = static_cast<int>(p.rows.size());
    for (int i = 0; i < n; ++i) {
      if (p.rows[static_cast<size_t>(i)].key == p.selected) {
        p.index = i;
        return;
      }
    }
    p.index = std::clamp(p.index, 0, std::max(n - 1, 0));
    p.selected = n > 0 ? p.rows[static_cast<size_t>(p.index)].key : "";
  }

  static void move_selection(PaneView& p, int by) {
    const int n = static_cast<int>(p.rows.size());
    if (n == 0) {
      return;
    }
    p.index = std::clamp(p.index + by, 0, n - 1);
    p.selected = p.rows[static_cast<size_t>(p.index)].key;
  }

  void say(std::string text) {
    m_message = std::move(text);
    m_message_until = Clock::now() + k_message_time;
  }

  void on_key(int ch) {
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
          || ch == '\r' || ch == KEY_ENTER) {
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
      m_confirm = Confirm{m_pane == Pane::queues
                              ? "kill every unfinished task of queue "
                                    + p.selected + "? (y/n)"
                              : "kill task " + p.selected + "? (y/n)",
                          m_pane, p.selected};
      return;
    case 'l':
    case '\r':
    case KEY_ENTER:
      if (m_pane == Pane::queues) {
        say("logs are a task's: select one with Tab");
        return;
      }
      m_logs = parse_id(p.selected);
      m_log_offset = 0;
      m_log_follow = true;
      reload();
      return;
    default:
      return;
    }
  }

  void on_log_key(int ch) {
    switch (ch) {
    case 'q':
    case 'Q':
    case 'l':
    case 27: // Esc
    case KEY_LEFT:
    case KEY_BACKSPACE:
      m_logs.reset();
      m_log_lines.clear();
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

  int max_log_offset() const {
    return std::max(static_cast<int>(m_log_lines.size()) - (LINES - 2), 0);
  }

  // Pause, resume or kill (K) the task or queue `key` of `p`, as the
  // pause, resume and kill commands (or queue pause/resume) do.
  void act(int what, Pane p, const std::string& key) {
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
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::unavailable) {
        throw;
      }
      say(e.what());
    }
    reload();
  }

  // Writes `text` at (y, x) fitted to `width` columns, in `attr`.
  void put(int y, int x, std::string_view text, int width, attr_t attr,
           bool right = false) {
    if (width <= 0) {
      return;
    }
    attron(attr);
    mvaddstr(y, x, m_fit.fit(text, width, right).c_str());
    attroff(attr);
  }

  attr_t colour(short pair) const {
    return m_colour && pair != 0 ? COLOR_PAIR(pair) : A_NORMAL;
  }

  void draw() {
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

  void draw_title(int width, const std::string& left) {
    const std::string right =
        core::format_time(std::chrono::floor<std::chrono::seconds>(m_now));
    const attr_t attr = m_colour ? colour(pair_title) : A_REVERSE;
    put(0, 0, left, width, attr);
    const int rw = static_cast<int>(right.size());
    if (width > rw + 1 + static_cast<int>(left.size())) {
      put(0, width - rw - 1, right, rw + 1, attr);
    }
  }

  void draw_panes(int width, int height) {
    int64_t running = 0;
    for (const auto& q : m_view.queues) {
      running += q.stats.running;
    }
    draw_title(width, "taskq top  " + storage::redact_url(m_ctx.db_path())
                          + "  " + std::to_string(m_view.queues.size())
                          + " queues, " + std::to_string(running) + " running");
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
    y = draw_pane(Pane::tasks, "Tasks (running first, then newest)", y, t,
                  width);
    draw_pane(Pane::failures, "Recent failures", y, f, width);
    m_page = t;
  }

  int draw_pane(Pane which, const std::string& name, int y, int rows,
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

  void draw_logs(int width, int height) {
    draw_title(width, "taskq top  task " + std::to_string(*m_logs)
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

  void draw_status(int width, int height) {
    std::string text;
    attr_t attr = A_NORMAL;
    if (m_confirm) {
      text = m_confirm->question;
      attr = A_BOLD | colour(pair_failed);
    } else if (!m_message.empty() && Clock::now() < m_message_until) {
      text = m_message;
      attr = A_BOLD;
    } else if (m_logs) {
      text = "q/Esc back  j/k up/down  PgUp/PgDn  g/G top/end";
    } else {
      text = "Tab pane  j/k select  p pause  r resume  K kill  l logs  q quit";
    }
    put(height - 1, 0, text, width, attr);
  }

  Context& m_ctx;
  storage::TaskStore& m_store;
  storage::ChangeFeed m_feed;
  SCREEN* m_screen = nullptr;
  TextFit m_fit;
  bool m_colour = false;
  bool m_quit = false;
  bool m_changed = false;         // the feed woke since the last reload
  Clock::time_point m_changed_at; // when it first did
  Clock::time_point m_loaded_at;
  Clock::duration m_reload_cost{}; // how long the last snapshot took
  core::Time m_now;                // the time the rows are drawn for
  core::Time m_loaded_now;         // the time of the snapshot
  storage::TopView m_view;
  PaneView m_panes[3];
  Pane m_pane = Pane::tasks;
  int m_page = 1;
  std::optional<Confirm> m_confirm;
  std::string m_message;
  Clock::time_point m_message_until;
  std::optional<int64_t> m_logs; // the task whose logs are shown
  std::vector<std::string> m_log_lines;
  int m_log_offset = 0;
  bool m_log_follow = true;
};

// SIGINT and SIGTERM end the view cleanly: their handlers only record the
// signal, and they, like SIGWINCH, are delivered only while the view
// waits in ppoll(2). Restores the handlers and the mask on destruction.
class Signals {
public:
  Signals() {
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : {SIGINT, SIGTERM, SIGWINCH}) {
      sigaddset(&set, sig);
    }
    pthread_sigmask(SIG_BLOCK, &set, &m_mask);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &m_int);
    sigaction(SIGTERM, &sa, &m_term);
  }
  ~Signals() {
    sigaction(SIGINT, &m_int, nullptr);
    sigaction(SIGTERM, &m_term, nullptr);
    pthread_sigmask(SIG_SETMASK, &m_mask, nullptr);
  }
  Signals(const Signals&) = delete;
  Signals& operator=(const Signals&) = delete;

private:
  sigset_t m_mask{};
  struct sigaction m_int {};
  struct sigaction m_term {};
};

void run_top(Context& ctx) {
  // A screen, not a report: `-o json` is refused (usage) rather than
  // ignored; stats and list print snapshots in every format.
  ctx.format(Format::table, {Format::table});
  if (isatty(STDOUT_FILENO) == 0 || isatty(STDIN_FILENO) == 0) {
    throw Error(ErrorKind::usage,
                "top needs a terminal on stdin and stdout (for a snapshot: "
                "taskq stats, taskq list)");
  }
  const std::string path = ctx.db_path();
  std::error_code ec;
  if (!storage::is_postgres_url(path) && !std::filesystem::exists(path, ec)) {
    throw Error(ErrorKind::unavailable,
                "no database at " + path + " (the first add creates it)");
  }
  storage::TaskStore& store = ctx.store(storage::OpenMode::read);
  std::setlocale(LC_CTYPE, ""); // for UTF-8 text, as the terminal shows it
  int sig = 0;
  {
    Signals signals;
    Top top(ctx, store);
    sig = top.run();
  } // the terminal is restored here, before the signal ends the process
  if (sig != 0) {
    // End as the signal would have, so a calling shell sees why.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

} // namespace

void register_top(CLI::App& app, Context& ctx) {
  CLI::App* top = add_command(
      app, "top",
      "A live full-screen view: queues with their counts and completions, "
      "running tasks with worker and elapsed time, recent failures with "
      "their error. Keys: Tab pane, j/k select, p pause, r resume, K kill "
      "(asks y/n), l logs, q quit. Colour on a terminal, never with NO_COLOR",
      "taskq top --db jobs.db");
  top->callback([&ctx] { run_top(ctx); });
}

} // namespace taskq::cli
