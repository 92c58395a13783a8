#include "core/bytes.hpp"
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/handler_env.hpp"
#include "core/json_text.hpp"
#include "core/outcome.hpp"
#include "core/text.hpp"
#include "worker/child.hpp"
#include "worker/lease_source.hpp"
#include "worker/lease_watch.hpp"
#include "worker/outcome.hpp"
#include "worker/policy.hpp"
#include "worker/run.hpp"
#include "worker/supervise.hpp"
#include "worker/wait.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <list>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace taskq::worker {
namespace {

// What one stream of a handler printed: the part not stored yet, and with
// --tag the start of a line not passed on yet.
struct Stream {
  core::OutputSpool spool{0};
  std::string partial_line;
};

// One task whose handler is running.
struct Running {
  core::Task task;
  Child child;
  Instant started;
  Instant next_heartbeat;
  std::optional<Instant> deadline; // --timeout
  std::optional<Instant> kill_at;  // SIGKILL, once asked to stop
  core::StopCause cause = core::StopCause::none;
  std::string revoked_by; // the operator's message, when revoked
  core::OutputTail tail;
  std::string out; // stdout, with --result-stdout
  bool out_too_big = false;
  Stream out_stream; // kept (--keep-output) and tagged (--tag) output
  Stream err_stream;
  std::optional<Instant> flush_at;  // store what the spools hold
  storage::OutputWrite last_output; // what is left, with the outcome
  std::optional<core::ChildExit> exit;
  bool checkpoint_unheard = false; // said once that it would not be sent
};

// A per-task handler's environment; what is too large for one is said on
// stderr and left out.
std::vector<std::string> child_environment(const core::Task& t,
                                           const std::string& db_path,
                                           const std::string& worker) {
  auto made = core::task_environment(
      t, core::inherited_environment(environ, core::HandlerKind::per_task),
      db_path, worker);
  for (const auto& left_out : made.left_out) {
    const std::string line = core::left_out_message(t.id, left_out);
    std::fputs(line.c_str(), stderr);
  }
  return std::move(made.env);
}

class Runner {
public:
  Runner(const RunOptions& o, Host& host)
      : m_ahead_hold(lease_ahead_hold()), m_o(o), m_host(host),
        m_store(host.store()), m_feed(m_store.changes()),
        m_db_path(handler_db_path(host.db_path())), m_worker(host.worker()) {
    m_request.queues = o.queues;
    m_request.match = o.match;
    m_request.lease_for = o.lease_for;
    m_request.worker = m_worker;
    m_heartbeat_every = heartbeat_every(o.lease_for);
  }

  ~Runner() {
    // Only an error leaves the loop with handlers running: unwatched, they
    // would run on while their tasks are leased again once the leases
    // expire.
    for (auto& r : m_running) {
      if (!r.exit) {
        r.child.kill_and_wait();
      }
    }
  }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  RunSummary run() {
    while (true) {
      if (m_stopping) {
        release_ahead();
      }
      start_ahead();
      // Until it is full or finds nothing: no wake-up of its own commits
      // comes to say "look again" (a task that could not start is
      // recorded without one).
      while (m_looks.look && can_take()) {
        take_work();
      }
      if (m_running.empty()) {
        if (m_stopping || max_reached() || (m_o.until_empty && !m_looks.look)) {
          break;
        }
      }
      wait_and_handle();
      finish_exited();
      look_if_changed_elsewhere();
    }
    release_ahead();
    return m_summary;
  }

private:
  bool max_reached() const {
    return m_o.max_tasks && m_summary.leased >= *m_o.max_tasks;
  }

  bool can_take() const {
    return !m_stopping && static_cast<int>(m_running.size()) < m_o.concurrency
           && !max_reached();
  }

  void take_work() {
    const bool only_if_due = m_looks.begin();
    // What changes after this point wakes the poll below. What changed
    // before it may be an operator's message to a running handler, which
    // the poll will no longer report: look at the leases now.
    if (m_feed.drain()) {
      check_leases();
    }
    // One "now" for every question of this look, read before them: a
    // task is then either due (the lease, which decides on the time it
    // takes the lock, no earlier than this) or due later (the timer),
    // never neither, however the clock moves in between.
    const core::Time now = m_host.live_now();
    // A commit anywhere in the database wakes every idle worker: a read
    // first, so that they do not all queue up for the write lock for a
    // change that concerns none of them.
    if (only_if_due && !m_store.anything_due(m_o.queues, now, m_worker)) {
      wake_when_due(now);
      return;
    }
    const int want = room();
    m_request.count = want + ahead_wanted();
    // A task whose handler is still being stopped (an operator released
    // it, and the grace period runs) must not start a second handler.
    m_request.skip.clear();
    for (const auto& r : m_running) {
      m_request.skip.push_back(r.task.id);
    }
    std::vector<core::Task> tasks;
    try {
      tasks = m_store.lease(m_request, now);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::unavailable) {
        throw;
      }
      // Locked past the busy timeout: say so, and try again shortly.
      std::fprintf(stderr, "taskq: run: %s; trying again in 1s\n", e.what());
      m_looks.wake_at = Clock::now() + std::chrono::seconds(1);
      return;
    }
    const bool all = static_cast<int>(tasks.size()) >= want + ahead_wanted();
    start_or_keep(std::move(tasks), want);
    if (all) {
      m_looks.look = true; // there may be more
      return;
    }
    wake_when_due(now);
  }

  // Lease ahead: with handlers that end within m_ahead_hold, the lease
  // that will follow the running task's is taken in the transaction that
  // writes the last outcome, so that when the handler exits the next one
  // starts at once and the commit of its outcome (its fsync) runs while
  // the next handler does. Held at most m_ahead_hold (then released, its
  // attempt given back), checked again just before it starts (an
  // operator's kill or pause in between: not started), released when run
  // stops. Never with --max-tasks (they count what starts), nor with
  // TASKQ_LEASE_AHEAD_MS=0.

  // How many more tasks may start now: the free handler slots, within
  // --max-tasks.
  int room() const {
    int want = m_o.concurrency - static_cast<int>(m_running.size());
    if (m_o.max_tasks) {
      want = static_cast<int>(
          std::min<int64_t>(want, *m_o.max_tasks - m_summary.leased));
    }
    return want;
  }

  int ahead_wanted() const {
    if (!m_quick || m_stopping || m_o.max_tasks || m_ahead_hold.count() == 0
        || m_o.lease_for < 3 * m_ahead_hold) {
      return 0;
    }
    return std::max(0, 1 - static_cast<int>(m_ahead.size()));
  }

  // Starts the first `now` of `tasks`, keeps the rest ahead.
  void start_or_keep(std::vector<core::Task> tasks, int now) {
    for (auto& t : tasks) {
      if (now > 0) {
        --now;
        start(std::move(t));
      } else {
        if (m_ahead.empty()) {
          m_ahead_since = Clock::now();
        }
        m_ahead.push_back(std::move(t));
      }
    }
  }

  // Starts what was leased ahead into the free slots, if it is still ours.
  void start_ahead() {
    while (!m_ahead.empty() && !m_stopping
           && static_cast<int>(m_running.size()) < m_o.concurrency) {
      core::Task t = std::move(m_ahead.front());
      m_ahead.pop_front();
      if (ahead_still_held(t)) {
        start(std::move(t));
      }
    }
  }

  bool ahead_still_held(const core::Task& t) {
    if (t.lease->expires_at <= m_host.live_now()) {
      return false; // another worker may hold it now
    }
    // No commit but ours since the lease (none seen and none pending for
    // look_if_changed_elsewhere): it is still held as leased.
    if (!m_changed_elsewhere && !foreign_change()) {
      return true;
    }
    m_changed_elsewhere = true; // for the running ones and the next look
    return !ahead_revoked(t);
  }

  // Whether an operator took the lease of `t`, leased ahead (said with
  // -v); an unavailable database is no answer: it is checked again.
  bool ahead_revoked(const core::Task& t) {
    try {
      if (m_store.lease_held(t.id, t.lease->token, m_host.live_now())) {
        return false;
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::unavailable) {
        throw;
      }
      return false;
    }
    if (m_o.verbose) {
      say(t.id, "lease revoked before its handler started; not started");
    }
    return true;
  }

  // Gives back what was leased ahead and not started (its attempt too).
  void release_ahead() {
    while (!m_ahead.empty()) {
      core::Task t = std::move(m_ahead.front());
      m_ahead.pop_front();
      try {
        m_store.release(t.id, t.lease->token, std::nullopt, m_host.live_now());
        after_own_commit();
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::conflict && e.kind() != ErrorKind::not_found
            && e.kind() != ErrorKind::unavailable) {
          throw;
        }
        // Lost already, or locked: its lease expires as a crashed
        // worker's would.
      }
    }
  }

  // Sets the timer for the next time after `seen` that a task can become
  // eligible with no write to the database (a delay ending, a lease
  // expiring).
  void wake_when_due(core::Time seen) {
    if (const auto due = m_store.next_due(m_o.queues, seen)) {
      const auto in = *due - m_host.live_now();
      m_looks.wake_at = Clock::now() + std::max(core::Millis{0}, in);
    }
  }

  void start(core::Task t) {
    ++m_summary.leased;
    const Instant now = Clock::now();
    const bool own = m_o.command.empty(); // the task's own command
    if (own && t.command.empty()) {
      // Not the task's fault that this run has nothing to run: but every
      // run like this one would fail it the same way.
      record(t,
             core::Outcome{core::Verdict::fail,
                           "task has no command and run was given no -- CMD"},
             now, nullptr, storage::FailMode::no_retry);
      return;
    }
    try {
      ChildSpec spec;
      spec.argv = own ? t.command : m_o.command;
      if (own) {
        const auto path = resolve_command(spec.argv.front());
        if (!path) {
          throw Error(ErrorKind::internal,
                      "cannot run " + spec.argv.front()
                          + ": no such executable file"
                          + (spec.argv.front().find('/') == std::string::npos
                                 ? " on $PATH"
                                 : ""));
        }
        spec.path = *path;
      } else {
        spec.path = m_o.command_path;
      }
      spec.env = child_environment(t, m_db_path, m_worker);
      spec.stdin_data = core::payload_text(t.payload);
      spec.capture_stdout = m_o.result_stdout || m_o.keep_output > 0 || m_o.tag;
      Running r;
      r.child = Child::spawn(spec);
      r.task = std::move(t);
      r.out_stream.spool = core::OutputSpool(m_o.keep_output);
      r.err_stream.spool = core::OutputSpool(m_o.keep_output);
      r.started = now;
      r.next_heartbeat = now + m_heartbeat_every;
      if (m_o.timeout) {
        r.deadline = now + *m_o.timeout;
      }
      if (m_o.verbose) {
        say(r.task.id,
            "started (attempt " + std::to_string(r.task.attempts) + ")"
                + (own ? ": " + core::command_line(r.task.command) : ""));
      }
      m_running.push_back(std::move(r));
    } catch (const Error& e) {
      // Could not even start: an error like any other, for the policy.
      record(t, core::Outcome{core::Verdict::fail, e.what()}, now);
    }
  }

  // A -v line: "TIME taskq: task ID: WHAT", TIME as RFC 3339 UTC.
  // One line whatever `what` holds (an error's stderr tail, a command's
  // words): control characters are written escaped, \n, \t, \r or \xNN.
  void say(int64_t id, const std::string& what) {
    static constexpr char k_hex[] = "0123456789abcdef";
    std::string line;
    for (const char c : what) {
      const auto byte = static_cast<unsigned char>(c);
      if (c == '\n' || c == '\t' || c == '\r') {
        line += c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r";
      } else if (byte < 0x20 || byte == 0x7f) {
        line += "\\x";
        line += k_hex[byte >> 4];
        line += k_hex[byte & 0xf];
      } else {
        line += c;
      }
    }
    std::fprintf(stderr, "%s taskq: task %lld: %s\n",
                 core::format_time(m_host.live_now()).c_str(),
                 static_cast<long long>(id), line.c_str());
  }

  void stop(Running& r, core::StopCause cause) {
    if (r.cause != core::StopCause::none && cause != core::StopCause::revoked) {
      return; // already stopping; a revocation still wins (nothing to write)
    }
    if (r.exit && cause != core::StopCause::revoked) {
      return; // it ended by itself: its exit decides
    }
    const bool first = r.cause == core::StopCause::none;
    r.cause = cause;
    if (first && !r.exit) {
      r.child.signal_group(SIGTERM);
      r.kill_at = Clock::now() + m_o.grace;
    }
  }

  void wait_and_handle() {
    Wait wait(m_signals.fd(), m_feed);
    const size_t first_pipe = wait.size();
    std::vector<std::pair<Running*, bool>> owners; // (task, is stdout)
    for (auto& r : m_running) {
      if (r.child.stderr_pipe()) {
        wait.add(r.child.stderr_pipe().get(), POLLIN);
        owners.emplace_back(&r, false);
      }
      if (r.child.stdout_pipe()) {
        wait.add(r.child.stdout_pipe().get(), POLLIN);
        owners.emplace_back(&r, true);
      }
    }

    if (can_take()) {
      wait.until(m_looks.wake_at);
      wait.feed_fallback();
    }
    for (const auto& r : m_running) {
      if (!r.exit) {
        wait.until(r.next_heartbeat);
        if (r.cause == core::StopCause::none) {
          wait.until(r.deadline);
        }
        wait.until(r.kill_at);
      }
      wait.until(r.flush_at);
    }
    if (!m_ahead.empty()) {
      wait.until(m_ahead_since + m_ahead_hold);
    }
    wait.poll();
    const Instant now = Clock::now();

    if (wait.signalled()) {
      for (const int sig : m_signals.take()) {
        on_signal(sig);
      }
    }
    bool db_changed = wait.db_changed(m_feed, now);
    if (db_changed && !foreign_change()) {
      db_changed = false; // our own commit: nothing new to see
    }
    if (db_changed) {
      m_looks.changed();
      check_leases();
    }
    m_looks.wake(now);
    for (size_t i = first_pipe; i < wait.size(); ++i) {
      if (wait.revents(i) != 0) {
        auto& [r, is_stdout] = owners[i - first_pipe];
        read_pipe(*r, is_stdout);
      }
    }
    on_timers(now);
  }

  void on_signal(int sig) {
    reap();
    const auto asks = signal_asks(sig, m_stopping);
    if (asks == SignalAsks::reap) {
      return;
    }
    if (asks == SignalAsks::stop) {
      m_stopping = true;
      if (!m_running.empty()) {
        std::fprintf(stderr,
                     "taskq: run: stopping; %zu running task(s) get %s to "
                     "finish (signal again to kill them now)\n",
                     m_running.size(),
                     core::format_duration(m_o.grace).c_str());
      }
      for (auto& r : m_running) {
        stop(r, core::StopCause::shutdown);
      }
      return;
    }
    for (auto& r : m_running) {
      if (!r.exit) {
        r.child.signal_group(SIGKILL);
      }
    }
  }

  void reap() {
    reap_ended([this](pid_t pid, int status) {
      for (auto& r : m_running) {
        if (r.child.pid() == pid) {
          r.exit = exit_of(status);
        }
      }
    });
  }

  // Whether another process has committed since the last look (always
  // true where the store cannot tell); if so, this look counts as made.
  bool foreign_change() { return changed_by_others(m_store, m_version); }

  // After our own commit: the feed's wake-up for it is taken now, and
  // what another process committed meanwhile is looked at all the same.
  // A feed that leaves out our own commits (PostgreSQL's) tells that
  // itself; another process's commit whose notification is still on its
  // way wakes the poll when it comes.
  void after_own_commit() {
    if (m_feed.polling()) {
      return;
    }
    const bool woke = m_feed.drain();
    if (m_feed.skips_own() ? woke : foreign_change()) {
      m_changed_elsewhere = true;
    }
  }

  // What after_own_commit found: as a wake-up of the feed would.
  void look_if_changed_elsewhere() {
    if (!m_changed_elsewhere) {
      return;
    }
    m_changed_elsewhere = false;
    m_looks.changed();
    check_leases();
  }

  // After any change to the database: has an operator taken a lease?
  void check_leases() {
    const core::Time now = m_host.live_now();
    for (auto& r : m_running) {
      if (r.exit || r.cause == core::StopCause::revoked) {
        continue;
      }
      try {
        if (!m_store.lease_held(r.task.id, r.task.lease->token, now)) {
          revoke(r);
        }
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::unavailable) {
          throw;
        }
      }
    }
    // What was leased ahead and revoked since is dropped: never started.
    std::erase_if(m_ahead,
                  [this](const core::Task& t) { return ahead_revoked(t); });
  }

  void revoke(Running& r) {
    try {
      r.revoked_by =
          m_store.revoked_reason(r.task.id, r.task.lease->token).value_or("");
    } catch (const Error&) {
      // Only for the message: the handler is stopped all the same.
      r.revoked_by.clear();
    }
    if (m_o.verbose || r.revoked_by.empty()) {
      std::fprintf(stderr, "taskq: task %lld: lease %s; stopping its handler\n",
                   static_cast<long long>(r.task.id),
                   r.revoked_by.empty()
                       ? "lost"
                       : ("revoked by " + r.revoked_by).c_str());
    }
    stop(r, core::StopCause::revoked);
  }

  void read_pipe(Running& r, bool is_stdout) {
    Fd& fd = is_stdout ? r.child.stdout_pipe() : r.child.stderr_pipe();
    std::string data;
    const bool open = read_available(fd.get(), data);
    if (is_stdout && m_o.result_stdout) {
      if (r.out.size() + data.size() > k_max_result_bytes) {
        r.out_too_big = true;
      } else {
        r.out += data;
      }
    } else if (!data.empty()) {
      if (!is_stdout) {
        r.tail.append(data);
      }
      // The handler's stdout and stderr are the worker's: pass them on.
      pass_on(r, is_stdout, data, false);
    }
    if (!data.empty() && m_o.keep_output > 0) {
      Stream& st = is_stdout ? r.out_stream : r.err_stream;
      st.spool.append(data);
      if (!r.flush_at) {
        r.flush_at = Clock::now() + k_output_flush_every;
      }
      if (st.spool.pending() >= k_output_flush_bytes) {
        flush_output(r);
      }
    }
    if (!open) {
      fd.reset();
    }
  }

  // Writes what a handler printed to the worker's stdout or stderr; with
  // --tag, whole lines only, each after its task id (`last`: the handler
  // is done, so an unfinished line is ended).
  void pass_on(Running& r, bool is_stdout, std::string_view data, bool last) {
    std::FILE* to = is_stdout ? stdout : stderr;
    std::string text;
    if (!m_o.tag) {
      text.assign(data);
    } else {
      std::string& partial =
          (is_stdout ? r.out_stream : r.err_stream).partial_line;
      partial += data;
      const std::string tag = std::to_string(r.task.id) + "\t";
      size_t from = 0;
      while (true) {
        size_t nl = partial.find('\n', from);
        if (nl == std::string::npos) {
          if (partial.size() - from < k_max_tagged_line && !last) {
            break;
          }
          if (from == partial.size()) {
            break;
          }
          nl = partial.size();
          partial += '\n';
        }
        text += tag;
        text.append(partial, from, nl + 1 - from);
        from = nl + 1;
      }
      partial.erase(0, from);
    }
    if (!text.empty()) {
      [[maybe_unused]] const size_t n =
          std::fwrite(text.data(), 1, text.size(), to);
      std::fflush(to);
    }
  }

  // What the spools of `r` hold, taken from them, as a write.
  storage::OutputWrite take_output(Running& r) {
    storage::OutputWrite w;
    w.keep = m_o.keep_output;
    for (Stream* st : {&r.out_stream, &r.err_stream}) {
      if (st->spool.empty()) {
        continue;
      }
      auto [offset, data] = st->spool.take();
      storage::OutputChunk c;
      c.task = r.task.id;
      c.attempt = r.task.attempts;
      c.stream = st == &r.out_stream ? "stdout" : "stderr";
      c.offset = offset;
      c.data = std::move(data);
      w.chunks.push_back(std::move(c));
    }
    return w;
  }

  // Stores what the spools of `r` hold. A database that stays locked keeps
  // it for the next flush (still bounded); any other error is the run's.
  void flush_output(Running& r) {
    r.flush_at.reset();
    storage::OutputWrite w = take_output(r);
    std::vector<storage::OutputChunk>& chunks = w.chunks;
    if (chunks.empty()) {
      return;
    }
    try {
      m_store.append_output(chunks, m_o.keep_output);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::unavailable) {
        throw;
      }
      std::fprintf(stderr, "taskq: task %lld: storing its output: %s\n",
                   static_cast<long long>(r.task.id), e.what());
      for (auto& c : chunks) {
        (c.stream == "stdout" ? r.out_stream : r.err_stream)
            .spool.put_back(c.offset, std::move(c.data));
      }
      r.flush_at = Clock::now() + std::chrono::seconds(1);
    }
  }

  void on_timers(Instant now) {
    if (!m_ahead.empty() && now >= m_ahead_since + m_ahead_hold) {
      m_quick = false; // handlers this slow gain nothing from it
      release_ahead();
    }
    for (auto& r : m_running) {
      if (r.exit) {
        continue;
      }
      if (r.kill_at && now >= *r.kill_at) {
        r.child.signal_group(SIGKILL);
        r.kill_at.reset();
      }
      if (r.cause == core::StopCause::none && r.deadline
          && now >= *r.deadline) {
        stop(r, core::StopCause::timeout);
      }
      if (r.flush_at && now >= *r.flush_at) {
        flush_output(r);
      }
      if (now >= r.next_heartbeat) {
        r.next_heartbeat = now + m_heartbeat_every;
        if (r.cause != core::StopCause::revoked) {
          heartbeat(r);
        }
      }
    }
  }

  void heartbeat(Running& r) {
    const auto beat = worker::heartbeat(m_store, r.task, m_o.lease_for,
                                        std::nullopt, m_host.live_now());
    if (beat.kind == Beat::Kind::lost) {
      revoke(r);
      return;
    }
    if (beat.kind == Beat::Kind::extended && beat.result.checkpoint_requested) {
      if (catches_signal(r.child.pid(), m_o.checkpoint_signal)) {
        r.child.signal_leader(m_o.checkpoint_signal);
      } else if (!r.checkpoint_unheard) {
        r.checkpoint_unheard = true;
        std::fprintf(stderr,
                     "taskq: task %lld: a checkpoint was requested, but "
                     "its handler does not catch %s; not sent\n",
                     static_cast<long long>(r.task.id),
                     core::signal_name(m_o.checkpoint_signal).c_str());
      }
    }
  }

  void finish_exited() {
    std::vector<Pending> done;
    bool quick = true;
    for (auto it = m_running.begin(); it != m_running.end();) {
      if (!it->exit) {
        ++it;
        continue;
      }
      Running& r = *it;
      // What the handler wrote before it exited is in the pipes; a
      // background process it left may hold them open, so do not wait
      // for end of file.
      if (r.child.stderr_pipe()) {
        read_pipe(r, false);
      }
      if (r.child.stdout_pipe()) {
        read_pipe(r, true);
      }
      if (m_o.tag) {
        pass_on(r, true, "", true);
        pass_on(r, false, "", true);
      }
      // Stored with the outcome, in its transaction: one write per task,
      // and whoever sees the attempt end (logs --follow) finds all of it.
      r.flush_at.reset();
      r.last_output = take_output(r);
      if (r.cause != core::StopCause::none) {
        // Whatever the stopped handler started goes with it.
        r.child.signal_group(SIGKILL);
      }
      core::Outcome outcome =
          core::judge(*r.exit, r.cause, m_o.timeout, r.tail.text());
      if (outcome.verdict == core::Verdict::complete && r.out_too_big) {
        outcome = {core::Verdict::fail,
                   "stdout exceeds the 16 MiB a result may hold"};
      }
      done.push_back(Pending{&r.task, outcome, r.started, &r});
      quick = quick && Clock::now() - r.started < m_ahead_hold;
      ++it;
    }
    if (done.empty()) {
      return;
    }
    m_quick = quick;
    // Their handlers are done: what room they leave, the same transaction
    // fills.
    const int left = static_cast<int>(m_running.size() - done.size());
    const bool lease = !m_stopping && left < m_o.concurrency && !max_reached();
    // Those still running are skipped by the lease: the finished ones are
    // not, they are written first.
    std::vector<Running*> ended;
    for (const Pending& p : done) {
      ended.push_back(p.r);
    }
    std::list<Running> finished;
    for (auto e = m_running.begin(); e != m_running.end();) {
      auto next = std::next(e);
      if (std::find(ended.begin(), ended.end(), &*e) != ended.end()) {
        finished.splice(finished.end(), m_running, e);
      }
      e = next;
    }
    // What was leased ahead starts first: its handler runs while the
    // outcomes are written.
    start_ahead();
    std::optional<int> want;
    if (lease) {
      want = std::max(0, room());
    }
    const int ahead = want ? ahead_wanted() : 0;
    const core::Time seen = m_host.live_now();
    std::vector<core::Task> leased = record_all(
        done, want && *want + ahead > 0 ? std::optional(*want + ahead)
                                        : std::nullopt);
    finished.clear();
    m_looks.now();
    if (!want) {
      return;
    }
    const bool all = static_cast<int>(leased.size()) >= *want + ahead;
    start_or_keep(std::move(leased), *want);
    if (!all) {
      // As take_work: nothing more now; look when something comes due.
      m_looks.look = false;
      wake_when_due(seen);
    }
  }

  // A handler's outcome to write: how it ended, and, when it ran (not a
  // task that could not start), its Running.
  struct Pending {
    const core::Task* task;
    core::Outcome outcome;
    Instant started;
    Running* r = nullptr;
    storage::FailMode mode = storage::FailMode::policy;
  };

  // Writes a handler's outcome and counts it. A failure goes to the error
  // policy unless `mode` says otherwise; what the policy decided comes back
  // with the task `fail` returns (sleeping: a retry at its run_at).
  void record(const core::Task& t, const core::Outcome& outcome,
              Instant started, Running* r = nullptr,
              storage::FailMode mode = storage::FailMode::policy) {
    std::vector<Pending> one{Pending{&t, outcome, started, r, mode}};
    record_all(one, std::nullopt);
  }

  // Writes the outcomes of `ps`, and leases per `next` when set, in one
  // transaction (apply_outcomes): the done of the last task and the lease
  // of the next cost one commit. Returns what it leased.
  std::vector<core::Task> record_all(const std::vector<Pending>& ps,
                                     const std::optional<int>& next) {
    const core::Time now = m_host.live_now();
    std::vector<storage::Outcome> batch;
    std::vector<const Pending*> in_batch;
    for (const Pending& p : ps) {
      if (p.outcome.verdict == core::Verdict::none) {
        record_revoked(p);
      } else {
        batch.push_back(to_outcome(p));
        in_batch.push_back(&p);
      }
    }
    std::optional<storage::LeaseRequest> lease;
    if (next) {
      m_request.count = *next;
      m_request.skip.clear();
      for (const auto& r : m_running) {
        m_request.skip.push_back(r.task.id);
      }
      lease = m_request;
    }
    storage::BatchResult res;
    try {
      res = m_store.apply_outcomes(batch, lease, now);
      after_own_commit();
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::conflict && e.kind() != ErrorKind::not_found
          && e.kind() != ErrorKind::unavailable) {
        throw;
      }
      // The database stayed locked (or the task was deleted): nothing
      // was written.
      for (const Pending* p : in_batch) {
        not_recorded(*p, e.what());
      }
      return {};
    }
    for (size_t i = 0; i < in_batch.size(); ++i) {
      const auto& o = res.outcomes[i];
      if (o.task) {
        account(*in_batch[i], *o.task);
      } else {
        // The lease went between the last check and now, or the task was
        // deleted: the task is another holder's, or will be once the
        // lease expires.
        not_recorded(*in_batch[i], o.lost);
      }
    }
    return std::move(res.leased);
  }

  storage::Outcome to_outcome(const Pending& p) const {
    storage::Outcome o;
    o.id = p.task->id;
    o.token = p.task->lease->token;
    if (p.r != nullptr) {
      // Kept in r too: stored apart when the outcome is not written.
      o.output = p.r->last_output;
    }
    switch (p.outcome.verdict) {
    case core::Verdict::complete:
      o.kind = storage::Outcome::Kind::complete;
      if (m_o.result_stdout && p.r != nullptr) {
        o.result = result_from_stdout(p.r->out);
      }
      break;
    case core::Verdict::release:
      // Unfinished at shutdown: due at once, for another worker. A
      // handler's own 75: after --release-delay.
      o.kind = storage::Outcome::Kind::release;
      if (p.r == nullptr || p.r->cause != core::StopCause::shutdown) {
        o.delay = m_o.release_delay;
      }
      break;
    case core::Verdict::fail:
    case core::Verdict::none:
      o.kind = storage::Outcome::Kind::fail;
      o.fail.error = p.outcome.error;
      o.fail.mode = p.mode;
      break;
    }
    return o;
  }

  std::string took(const Pending& p) const {
    return core::format_duration(
        std::chrono::duration_cast<core::Millis>(Clock::now() - p.started));
  }

  // Counts an outcome that was written; `after` is the task after it.
  void account(const Pending& p, const core::Task& after) {
    std::string what;
    switch (p.outcome.verdict) {
    case core::Verdict::complete:
      ++m_summary.completed;
      what = "completed (after " + took(p) + ")";
      break;
    case core::Verdict::release:
      ++m_summary.released;
      what = "released (after " + took(p) + ")";
      break;
    case core::Verdict::fail:
    case core::Verdict::none:
      what = " (after " + took(p) + "): " + p.outcome.error;
      if (after.state == core::TaskState::sleeping) {
        ++m_summary.retrying;
        if (!m_summary.retry_at || after.run_at < *m_summary.retry_at) {
          m_summary.retry_at = after.run_at;
        }
        what = "will retry at " + core::format_time(after.run_at) + what;
      } else {
        // Failed (or a broadcast's delivery, which is not retried).
        ++m_summary.failed;
        what = "failed for good" + what
               + (after.reason.empty() || after.reason == p.outcome.error
                      ? ""
                      : "; " + after.reason);
      }
      break;
    }
    if (m_o.verbose) {
      say(p.task->id, what);
    }
  }

  // A handler stopped because its lease was taken: only its output is
  // stored.
  void record_revoked(const Pending& p) {
    const storage::OutputWrite no_output;
    const storage::OutputWrite& output =
        p.r != nullptr ? p.r->last_output : no_output;
    try {
      m_store.append_output(output.chunks, output.keep);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::unavailable) {
        throw;
      }
      std::fprintf(stderr, "taskq: task %lld: storing its output: %s\n",
                   static_cast<long long>(p.task->id), e.what());
    }
    ++m_summary.revoked;
    if (m_o.verbose) {
      say(p.task->id, "revoked (after " + took(p) + "): "
                          + (p.r != nullptr && !p.r->revoked_by.empty()
                                 ? "an operator's " + p.r->revoked_by
                                 : "lease lost"));
    }
  }

  // An outcome that could not be written (`why`): nothing was, but its
  // attempt's output.
  void not_recorded(const Pending& p, const std::string& why) {
    ++m_summary.revoked;
    std::fprintf(stderr,
                 "taskq: task %lld: %s; its outcome was not "
                 "recorded\n",
                 static_cast<long long>(p.task->id), why.c_str());
    if (p.r == nullptr) {
      return;
    }
    try {
      m_store.append_output(p.r->last_output.chunks,
                            p.r->last_output.keep); // still its attempt's
    } catch (const Error&) {
      // Only the output: the outcome's failure is said above.
    }
  }

  const core::Millis m_ahead_hold; // how long a task leased ahead is held
  const RunOptions& m_o;
  Host& m_host;
  // Before the store: opening it may wait (a PostgreSQL server's connect,
  // LISTEN), and a SIGTERM meanwhile must end the run as it would later,
  // not kill it.
  SignalFeed m_signals;
  storage::TaskStore& m_store;
  storage::ChangeFeed m_feed;
  std::string m_db_path;
  std::string m_worker;
  storage::LeaseRequest m_request;
  core::Millis m_heartbeat_every{};
  std::list<Running> m_running; // stable addresses for the poll owners
  RunSummary m_summary;
  Looks m_looks;           // when to look for tasks to lease
  bool m_stopping = false; // SIGTERM/SIGINT/SIGHUP arrived
  // The store's others_version at the last look: a wake-up that finds it
  // unchanged was caused by our own commit.
  std::optional<int64_t> m_version;
  bool m_changed_elsewhere = false; // seen by after_own_commit
  std::deque<core::Task> m_ahead;   // leased ahead, not started
  Instant m_ahead_since{};          // when the oldest of m_ahead was leased
  bool m_quick = false; // the last handlers ended within m_ahead_hold
};

} // namespace

bool run_failed(const RunSummary& s, FailOn fail_on) {
  switch (fail_on) {
  case FailOn::failed:
    return s.failed > 0;
  case FailOn::retry:
    return s.failed + s.retrying > 0;
  case FailOn::never:
    return false;
  }
  return false;
}

std::string handler_db_path(const std::string& db_path) {
  if (storage::is_postgres_url(db_path)) {
    return db_path;
  }
  return std::filesystem::absolute(db_path).lexically_normal().string();
}

RunSummary run_worker(const RunOptions& o, Host& host) {
  Runner runner(o, host);
  return runner.run();
}

} // namespace taskq::worker
