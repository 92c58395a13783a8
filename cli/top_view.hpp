#pragma once
// The full-screen view of `taskq top` (cli/cmd_top.cpp runs it): its
// terminal, snapshots and loop (cli/top_view.cpp), its keys
// (cli/top_keys.cpp) and its drawing (cli/top_draw.cpp).
#include "cli/commands.hpp"
#include "cli/top_text.hpp"
#include "core/time.hpp"
#include "worker/reconnect.hpp"

#include <chrono>
#include <csignal>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// Functions rather than macros: curses.h would otherwise define clear(),
// erase(), move(), refresh(), ... as macros, which rewrite any member of
// the same name that follows.
#define NCURSES_NOMACROS
#include <curses.h>

namespace taskq::cli::top {

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

// The signal that ends the view, 0 until one comes (cli/cmd_top.cpp).
extern volatile std::sig_atomic_t g_signal;

// The colour pairs, when there are colours (0: the terminal's own).
constexpr short pair_title = 1;
constexpr short pair_header = 2;
constexpr short pair_running = 3;
constexpr short pair_waiting = 4; // paused, sleeping, a paused queue
constexpr short pair_failed = 5;
constexpr short pair_delayed = 6;

enum class Pane { queues, tasks, failures };
constexpr Pane k_panes[] = {Pane::queues, Pane::tasks, Pane::failures};

// A column of a pane. Its width follows what it holds: at most `width`
// (0: the last column, which takes what the others leave), at least its
// title; a `shrink` column is cut down to k_shrunk first when the line is
// too narrow for all. A column every row leaves empty is not drawn.
struct Column {
  const char* title;
  int width;
  bool right = false;
  bool shrink = false;
};

// The least a `shrink` column is cut down to, and the least the last
// column keeps before columns to its left are left out, from the right.
constexpr int k_shrunk = 6;
constexpr int k_last_min = 28;

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

// What a key does. Each key of the view is a row of k_keys, which the key
// bar, the help screen (`?`) and on_key all read, so they cannot disagree.
enum class Action {
  next_pane,
  prev_pane,
  down,
  up,
  page_down,
  page_up,
  first,
  last,
  pause,
  resume,
  freeze,
  proceed, // `continue`
  kill,
  output,
  events,
  back,
  redraw,
  help,
  quit,
};

// Where a key works: the three panes, a task's output or events, or the
// list of keys (`?`).
enum class Screen { panes, logs, help };

struct Key {
  Screen screen;
  Action action;
  int codes[5]; // what getch() returns for it; 0 ends the list
  // How `?` and taskq(1) name it ("K x", "Tab"), and what it does.
  const char* names;
  const char* does;
  // In the key bar: "p pause", or nullptr when the row before names it
  // too ("j/k row" for j and k) or it is only an alias there.
  const char* bar;
};

// Every key of top, in the order the key bar and `?` list them.
extern const std::span<const Key> k_keys;

// The row of k_keys that `ch` is on `screen`, nullptr if none.
const Key* find_key(Screen screen, int ch);

// The key bar of `screen`: each row's `bar`, two spaces apart.
std::vector<std::string> key_bar(Screen screen);

// The columns each of `columns` gets on a line `width` wide, showing
// `rows`: -1 for a column left out (every row leaves it empty, or the line
// is too narrow for it). Never more than `width` in all, separators
// included; `measure` gives a text's width on the terminal.
std::vector<int> lay_out(const std::vector<Column>& columns,
                         const std::vector<Row>& rows, int width,
                         const TextFit& measure);

// What a key asks for that needs an answer first: `action` on the row
// `key` of `pane` after a y; `no` is said after anything else.
struct Confirm {
  std::string question;
  Action action = Action::kill;
  Pane pane = Pane::tasks;
  std::string key;
  std::string no;
};

// The full-screen view. Construction takes over the terminal (the
// alternate screen, keys unbuffered and unechoed); destruction gives it
// back as it was, also when an exception unwinds.
class Top {
public:
  // `reconnect_for`: how long to keep trying when the server goes away
  // (std::nullopt: for ever).
  Top(Context& ctx, storage::TaskStore& store,
      std::optional<core::Millis> reconnect_for);

  ~Top();

  Top(const Top&) = delete;
  Top& operator=(const Top&) = delete;

  // Runs until `q` or a signal; returns that signal's number, else 0.
  int run();

private:
  // When to read the database again: a little after it changed (a commit
  // on SQLite wakes the feed as it starts writing), not more often than
  // k_min_reload allows, and every k_max_reload without a change.
  Clock::time_point reload_due() const;

  // The next turn of the wall clock's second, when elapsed times move on.
  static Clock::time_point next_second();

  PaneView& pane(Pane p) { return m_panes[static_cast<int>(p)]; }

  // Reads a new snapshot and rebuilds the rows, keeping each pane's
  // selection on the same queue or task when it is still there.
  void reload();

  // The rows of the snapshot as of m_now; each second moves m_now on (by
  // this host's clock, without asking the database's), so elapsed times
  // count up between reloads.
  void rebuild();

  void fill_queues();

  void fill_tasks(PaneView& p, const std::vector<storage::TopTask>& tasks);

  static void reselect(PaneView& p);

  static void move_selection(PaneView& p, int by);

  void say(std::string text);

  void on_key(int ch);

  void on_log_key(int ch);

  void on_help_key(int ch);

  int max_log_offset() const;

  // Acts on the selected row of the pane: at once, or, when it would
  // throw away a running command's work (a pause or a kill of a running
  // task, a kill of a queue), after a y (m_confirm).
  void ask_or_act(Action what);

  // Pause, resume, freeze, continue or kill the task or queue `key` of
  // `p`, as the pause, resume, freeze, continue and kill commands (or
  // queue pause/resume) do.
  void act(Action what, Pane p, const std::string& key);

  // Writes `text` at (y, x) fitted to `width` columns, in `attr`.
  void put(int y, int x, std::string_view text, int width, attr_t attr,
           bool right = false);

  attr_t colour(short pair) const;

  void draw();

  void draw_title(int width, const std::string& left);

  void draw_panes(int width, int height);

  int draw_pane(Pane which, const std::string& name, int y, int rows,
                int width);

  void draw_logs(int width, int height);

  void draw_help(int width, int height);

  // The key bar (or the question, the message, the lost connection) on
  // the last lines; returns how many lines it took.
  int draw_status(int width, int height);

  // How many lines the key bar takes at `width`.
  int status_lines(int width) const;

  Context& m_ctx;
  storage::TaskStore& m_store;
  storage::ChangeFeed m_feed;
  // The connection to the database server: while it is lost, the last
  // snapshot stays on screen, the status line says so (m_down), and each
  // reload is a try to connect again, until --reconnect-for passes.
  worker::Reconnect m_conn;
  std::string m_down;
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
  bool m_help = false; // the list of keys (`?`) is shown
  int m_help_offset = 0;
  std::string m_message;
  Clock::time_point m_message_until;
  std::optional<int64_t> m_logs; // the task whose logs are shown
  bool m_log_events = false;     // its events and errors, not its output
  std::vector<std::string> m_log_lines;
  int m_log_offset = 0;
  bool m_log_follow = true;
};

} // namespace taskq::cli::top
