// taskq top: a full-screen view of the queues, the unfinished tasks and the
// recent failures that follows the database as it changes, with keys to
// pause, resume, freeze, continue and kill the selected task or queue and
// to read a task's history. Drawn with ncurses; the rules stay in storage
// (the same calls as the pause, resume, freeze, continue, kill and queue
// commands).
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/top_view.hpp"
#include "core/error.hpp"
#include "storage/seam/server_wait.hpp"

#include <clocale>
#include <csignal>
#include <filesystem>
#include <memory>
#include <string>
#include <sys/signalfd.h>
#include <unistd.h>

namespace taskq::cli {

namespace top {

volatile std::sig_atomic_t g_signal = 0;

} // namespace top

namespace {

using top::g_signal;
using top::Top;

extern "C" void on_signal(int sig) {
  g_signal = sig;
}

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
    // Blocked, they wait for ppoll; a wait for the database server under
    // way sees them pending through this descriptor, never read, and ends
    // soon (storage/seam/server_wait.hpp).
    sigdelset(&set, SIGWINCH);
    m_stop_fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    storage::set_wait_interrupt(m_stop_fd);
  }
  ~Signals() {
    storage::set_wait_interrupt(-1);
    if (m_stop_fd >= 0) {
      ::close(m_stop_fd);
    }
    sigaction(SIGINT, &m_int, nullptr);
    sigaction(SIGTERM, &m_term, nullptr);
    pthread_sigmask(SIG_SETMASK, &m_mask, nullptr);
  }
  Signals(const Signals&) = delete;
  Signals& operator=(const Signals&) = delete;

private:
  sigset_t m_mask{};
  int m_stop_fd = -1;
  struct sigaction m_int {};
  struct sigaction m_term {};
};

void run_top(const std::string& reconnect_for, Context& ctx) {
  // A screen, not a report: `-o json` is refused (usage) rather than
  // ignored; stats and list print snapshots in every format.
  ctx.format(Format::table, {Format::table});
  const auto limit = worker::parse_reconnect_for(reconnect_for);
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
    Top top(ctx, store, limit);
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
  // The keys as the key bar shows them (cli/top_keys.cpp, k_keys).
  std::string keys;
  for (const std::string& k : top::key_bar(top::Screen::panes)) {
    keys += (keys.empty() ? "" : ", ") + k;
  }
  CLI::App* top = add_command(
      app, "top",
      "A live full-screen view: queues with their counts and completions, "
      "running tasks with worker and elapsed time, recent failures with "
      "their error, fitted to the terminal's width. Keys: "
          + keys
          + " (p on a running task and K ask y/n first). Colour on a "
            "terminal, never with NO_COLOR",
      "taskq top --db jobs.db");
  auto reconnect = std::make_shared<std::string>("5m");
  top->add_option("--reconnect-for", *reconnect,
                  "when the server goes away, keep the last view and retry "
                  "for DUR (default 5m)")
      ->type_name("DUR");
  top->callback([reconnect, &ctx] { run_top(*reconnect, ctx); });
}

} // namespace taskq::cli
