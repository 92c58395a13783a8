#include "cli/top_view.hpp"

#include "cli/output.hpp"
#include "core/error.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <poll.h>
#include <unistd.h>

namespace taskq::cli::top {

namespace {

// The lines at the head of both views of task `t`: its state, what it
// runs and, failed, why.
std::vector<std::string> task_head_lines(const core::Task& t, core::Time now) {
  std::vector<std::string> out;
  out.push_back("task " + std::to_string(t.id) + "  queue " + t.queue
                + "  state " + display_state(t, now) + "  attempts "
                + attempts_text(t));
  if (t.leased(now)) {
    out.push_back("worker " + t.lease->worker + ", lease until "
                  + core::format_time(t.lease->expires_at));
  }
  if (t.state == core::TaskState::failed) {
    out.push_back("failed: " + failure_text(t));
  } else if (!t.reason.empty()) {
    out.push_back("reason: " + t.reason);
  }
  if (!t.command.empty()) {
    out.push_back("command: " + command_line(t.command));
  }
  if (t.command.empty() || t.payload != "null") {
    out.push_back("payload: " + t.payload);
  }
  out.emplace_back();
  return out;
}

// The lines the `l` key shows for task `id`: the tail of what its latest
// attempt printed, stdout and stderr in the order written (stderr's lines
// marked), as `taskq logs` prints it. The view reloads on every change, so
// a running task's output follows.
std::vector<std::string> task_output_lines(storage::TaskStore& store,
                                           int64_t id, core::Time now) {
  const auto t = store.find(id);
  if (!t) {
    return {"no task " + std::to_string(id)};
  }
  std::vector<std::string> out = task_head_lines(*t, now);
  if (t->attempts == 0) {
    out.push_back("output: none yet (it has not run)");
    return out;
  }
  const auto chunks = store.output(id, t->attempts, std::nullopt);
  if (chunks.empty()) {
    out.push_back("output of attempt " + std::to_string(t->attempts)
                  + ": none kept (e: its events and errors)");
    return out;
  }
  out.push_back("output of attempt " + std::to_string(t->attempts)
                + " (err| marks stderr; e: events and errors):");
  const size_t first = out.size();
  std::string partial[2];
  const auto emit = [&](size_t s, const std::string& line) {
    out.push_back((s == 0 ? "" : "err| ") + line);
  };
  size_t last = 0;
  for (const storage::OutputChunk& c : chunks) {
    const size_t s = c.stream == "stderr" ? 1 : 0;
    if (s != last && !partial[last].empty()) {
      emit(last, partial[last]);
      partial[last].clear();
    }
    last = s;
    for (const char ch : c.data) {
      if (ch == '\n') {
        emit(s, partial[s]);
        partial[s].clear();
      } else {
        partial[s] += ch == '\t' || ch == '\r' ? ' ' : ch;
      }
    }
  }
  for (size_t s = 0; s < 2; ++s) {
    if (!partial[s].empty()) {
      emit(s, partial[s]);
    }
  }
  // The tail: a screen's worth many times over, never the whole of a
  // large output.
  constexpr size_t k_tail = 1000;
  if (out.size() - first > k_tail) {
    out.erase(out.begin() + static_cast<std::ptrdiff_t>(first),
              out.end() - static_cast<std::ptrdiff_t>(k_tail));
  }
  return out;
}

// The lines the `e` key shows for task `id`: its state, its error history
// (the last error is the last line) and its event log, as `taskq show`
// does.
std::vector<std::string> task_log_lines(storage::TaskStore& store, int64_t id,
                                        core::Time now) {
  const storage::TaskDetail d = store.show(id);
  const core::Task& t = d.task;
  std::vector<std::string> out = task_head_lines(t, now);
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

} // namespace

Top::Top(Context& ctx, storage::TaskStore& store,
         std::optional<core::Millis> reconnect_for)
    : m_ctx(ctx), m_store(store), m_feed(store.changes()),
      m_conn("top", reconnect_for) {
  // Not on stderr, under the screen: the loss stays on the status line
  // while it lasts, the return is said there for a moment.
  m_conn.say_with([this](const std::string& line) {
    if (m_conn.down()) {
      // "WHY; connecting again for up to 5m", the long URL last, so that
      // a narrow status line still shows what top is doing.
      const auto semi = line.rfind("; connecting again");
      m_down = semi == std::string::npos ? "database: " + line
                                         : "database: " + line.substr(semi + 2)
                                               + ": " + line.substr(0, semi);
    } else {
      say(line);
    }
  });
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
  // Names shrink before numbers are left out; the last column takes the
  // rest (lay_out).
  m_panes[0].columns = {{"QUEUE", 24, false, true}, {"READY", 9, true},
                        {"RUNNING", 9, true},       {"DELAYED", 9, true},
                        {"SLEEPING", 9, true},      {"PAUSED", 9, true},
                        {"FAILED", 9, true},        {"DONE/1M", 9, true},
                        {"DONE/1H", 9, true},       {"", 0}};
  m_panes[1].columns = {{"ID", 10, true},
                        {"QUEUE", 16, false, true},
                        {"STATE", 8},
                        {"WORKER", 18, false, true},
                        {"TIME", 8, true},
                        {"ATT", 4, true},
                        {"PAYLOAD / LAST ERROR", 0}};
  m_panes[2].columns = {{"ID", 10, true},     {"QUEUE", 16, false, true},
                        {"FAILED", 10, true}, {"ATT", 4, true},
                        {"TOOK", 6, true},    {"ERROR", 0}};
}

Top::~Top() {
  endwin();
  delscreen(m_screen);
}

int Top::run() {
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
    if (nfds == 2 && rc > 0 && (fds[1].revents & POLLIN) != 0 && m_feed.drain()
        && !m_changed) {
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

Clock::time_point Top::reload_due() const {
  if (const auto next = m_conn.next_try()) {
    return *next; // the connection is lost: the next try
  }
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

Clock::time_point Top::next_second() {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return Clock::now() + std::chrono::milliseconds(1000 - ms % 1000);
}

void Top::reload() {
  m_changed = false;
  const auto started = Clock::now();
  try {
    const core::Time now = m_ctx.live_now();
    m_view = m_store.top_view(now, k_rows);
    m_now = now;
  } catch (const ConnectionLost& e) {
    // The last snapshot stays, its times still counting up (rebuild);
    // the store connects again on the next try (reload_due).
    if (m_loaded_at == Clock::time_point{}) {
      throw; // no snapshot yet: as any command that cannot connect
    }
    m_conn.lost(e, Clock::now());
    if (m_conn.gave_up(Clock::now())) {
      throw Error(ErrorKind::unavailable,
                  "top: " + m_conn.why() + "; not back within --reconnect-for");
    }
    return;
  }
  m_conn.ok(Clock::now());
  m_loaded_at = started;
  m_loaded_now = m_now;
  m_reload_cost = Clock::now() - m_loaded_at;
  rebuild();
  if (m_logs) {
    try {
      m_log_lines = m_log_events ? task_log_lines(m_store, *m_logs, m_now)
                                 : task_output_lines(m_store, *m_logs, m_now);
    } catch (const Error& e) {
      m_log_lines = {e.what()};
    }
  }
}

void Top::rebuild() {
  fill_queues();
  fill_tasks(pane(Pane::tasks), m_view.tasks);
  fill_tasks(pane(Pane::failures), m_view.failures);
  for (PaneView& p : m_panes) {
    reselect(p);
  }
}

void Top::fill_queues() {
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

void Top::fill_tasks(PaneView& p, const std::vector<storage::TopTask>& tasks) {
  const bool failures = &p == &pane(Pane::failures);
  p.rows.clear();
  for (const storage::TopTask& tt : tasks) {
    const core::Task& t = tt.task;
    const std::string state = display_state(t, m_now);
    const std::string id = std::to_string(t.id);
    const std::string attempts = std::to_string(t.attempts);
    std::string detail = tt.last_error
                             ? *tt.last_error
                             : (t.reason.empty() ? what_it_runs(t) : t.reason);
    if (failures) {
      p.rows.push_back(
          {id,
           {id, t.queue, short_duration(m_now - t.updated_at) + " ago",
            attempts, exit_and_took(t).second, failure_text(t)},
           pair_failed});
      continue;
    }
    std::string worker;
    std::string time;
    short colour = 0;
    if (t.leased(m_now)) {
      worker = t.lease->worker;
      // As list and show: a frozen command's time stops.
      time = t.lease_started ? short_duration(running_time(t, m_now)) : "";
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

void Top::reselect(PaneView& p) {
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

void Top::move_selection(PaneView& p, int by) {
  const int n = static_cast<int>(p.rows.size());
  if (n == 0) {
    return;
  }
  p.index = std::clamp(p.index + by, 0, n - 1);
  p.selected = p.rows[static_cast<size_t>(p.index)].key;
}

} // namespace taskq::cli::top
