// `taskq run --stream`: long-lived handlers fed one task per line.
#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/handler_env.hpp"
#include "core/json_text.hpp"
#include "core/outcome.hpp"
#include "core/stream_protocol.hpp"
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
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace taskq::worker {
namespace {

// A task written to a handler, until its outcome.
struct Held {
  core::Task task;
  Instant sent;
  std::optional<Instant> deadline; // --timeout
  // Cancelled (timed out, revoked): its outcome is settled, and the
  // handler is stopped unless it answers by then.
  std::optional<Instant> give_up_at;
};

struct Handler {
  int number = 0;
  Child proc;
  bool running = false;      // started and not reaped
  bool stdin_closed = false; // told to finish (EOF)
  bool stopped_by_us = false;
  std::string in_buf;       // not yet written to its stdin
  std::string out_buf;      // read from its stdout, not yet a whole line
  std::optional<Held> held; // the task it works on
  // With --prefetch: tasks written after `held`, waiting in its stdin, so
  // that it never waits for taskq between two tasks. Empty while `held`
  // is, except for a handler being stopped.
  std::deque<Held> ahead;
  Instant started;
  std::optional<Instant> restart_at;
  Restarts restarts; // its deaths in a row and restart back-off
};

// An outcome waiting to be written.
struct Pending {
  enum class Kind { complete, fail, release } kind = Kind::complete;
  core::Task task;
  std::optional<std::string> result;
  storage::FailRequest fail;
  std::optional<core::Millis> delay;
  // Not in the summary: a task leased ahead given back unsent, which the
  // summary never counted as leased.
  bool uncounted = false;
};

class StreamRunner {
public:
  StreamRunner(const RunOptions& o, const StreamOptions& s, Host& host)
      : m_ahead_hold(lease_ahead_hold()), m_o(o), m_s(s), m_host(host),
        m_store(host.store()), m_feed(m_store.changes()),
        m_worker(host.worker()) {
    m_request.queues = o.queues;
    m_request.match = o.match;
    m_request.lease_for = o.lease_for;
    m_request.worker = m_worker;
    m_heartbeat_every = heartbeat_every(o.lease_for);
    m_inherited =
        core::inherited_environment(environ, core::HandlerKind::stream);
    m_db_path = handler_db_path(host.db_path());
    m_handlers.resize(static_cast<size_t>(o.concurrency));
    // Group commit, without --prefetch: a commit no longer waits for the
    // disk; a task leased in one waits for it before its handler sees it.
    // (--prefetch commits in batches already; there the waits cost more
    // than the syncs they save: 10,000 tasks, 500-580 ms synced in the
    // commit, 530-570 ms deferred, 670-710 ms deferred without blocking.)
    m_deferred = m_s.prefetch <= 1 && m_store.defer_sync();
  }

  ~StreamRunner() {
    for (auto& h : m_handlers) {
      if (h.running) {
        h.proc.kill_and_wait();
      }
    }
  }
  StreamRunner(const StreamRunner&) = delete;
  StreamRunner& operator=(const StreamRunner&) = delete;

  RunSummary run() {
    for (size_t i = 0; i < m_handlers.size(); ++i) {
      m_handlers[i].number = static_cast<int>(i) + 1;
      start(m_handlers[i]);
    }
    m_next_heartbeat = Clock::now() + m_heartbeat_every;
    try {
      loop();
    } catch (...) {
      // Whatever this worker holds goes back at once rather than when the
      // leases expire.
      give_back_all();
      throw;
    }
    flush();
    // What this run committed is on disk before it says it is done.
    m_store.wait_durable(m_store.commit_seq());
    return m_summary;
  }

private:
  void loop() {
    while (true) {
      // What was leased ahead goes to the handler that just answered
      // before the commit of that answer: the handler works while it
      // commits.
      dispatch();
      if (!m_stopping && m_looks.look && wants_more()) {
        take_work();
      }
      dispatch();
      if (!m_stopping && idle() && !m_looks.look
          && (m_o.until_empty || max_reached())) {
        begin_stop(false);
      }
      if (!m_stopping && max_reached() && idle()) {
        begin_stop(false);
      }
      if (m_stopping && none_running()) {
        return;
      }
      if (!m_pending.empty() && flush_now()) {
        flush();
        continue;
      }
      wait_and_handle();
    }
  }

  // --- state -----------------------------------------------------------

  bool max_reached() const {
    return m_o.max_tasks && m_summary.leased >= *m_o.max_tasks;
  }

  int free_handlers() const {
    int n = 0;
    for (const auto& h : m_handlers) {
      n += !h.held && !h.stdin_closed ? 1 : 0;
    }
    return n;
  }

  // Nothing leased, nothing written to a handler, nothing to record.
  bool idle() const {
    if (!m_queue.empty() || !m_pending.empty()) {
      return false;
    }
    return std::none_of(m_handlers.begin(), m_handlers.end(),
                        [](const Handler& h) { return busy(h); });
  }

  static bool busy(const Handler& h) {
    return h.held.has_value() || !h.ahead.empty();
  }

  // How many tasks one handler may have waiting in its stdin behind the
  // one it works on: the prefetched tasks, shared among the handlers.
  int lookahead() const {
    return worker::lookahead(m_s.prefetch, m_o.concurrency);
  }

  int ahead_total() const {
    size_t n = 0;
    for (const auto& h : m_handlers) {
      n += h.ahead.size();
    }
    return static_cast<int>(n);
  }

  bool none_running() const {
    return std::none_of(m_handlers.begin(), m_handlers.end(),
                        [](const Handler& h) { return h.running; });
  }

  bool wants_more() const {
    if (max_reached()) {
      return false;
    }
    const auto queued = static_cast<int>(m_queue.size());
    if (queued < free_handlers() + ahead_wanted()) {
      return true;
    }
    return m_s.prefetch > 1
           && queued + ahead_total() < std::max(1, m_s.prefetch / 2);
  }

  bool flush_now() const {
    FlushState f;
    f.prefetch = m_s.prefetch;
    f.stopping = m_stopping;
    f.pending = m_pending.size();
    f.flush_at = m_flush_at;
    f.idle = m_queue.empty() && free_handlers() == m_o.concurrency;
    return flush_due(f, Clock::now());
  }

  // --- leasing -----------------------------------------------------------

  // Leases what the handlers and the prefetch queue can take, with the
  // outcomes that wait when there are any (one transaction).
  void take_work() {
    const bool only_if_due = m_looks.begin();
    if (m_feed.drain()) {
      check_leases(true);
    }
    const core::Time now = m_host.live_now();
    if (m_pending.empty() && only_if_due
        && !m_store.anything_due(m_o.queues, now, m_worker)) {
      wake_when_due(now);
      return;
    }
    write_batch(true);
  }

  // Lease ahead, without --prefetch: with handlers that answer within
  // m_ahead_hold, one task more than the free handlers take is leased in
  // the transaction that writes an outcome, and written to the handler
  // that answers next the moment it answers, so that the commit of that
  // answer (its fsync) runs while the handler works. As in per-task `run`
  // (worker/per_task.cpp): held at most m_ahead_hold (then given back, its
  // attempt too), checked again before it is written (an operator's kill
  // or pause in between: not written), given back when run stops. Never
  // with --max-tasks, nor with TASKQ_LEASE_AHEAD_MS=0; --prefetch has its
  // own look-ahead.
  //
  // With group commit (SQLite), as many as keep the handler from waiting
  // for a sync (m_ahead_depth): the task written next was leased some
  // commits ago, and its sync ended while the handler worked on the ones
  // before it; a sync that takes longer than a task makes the next one
  // cover the commits made meanwhile, and the depth grow.
  int ahead_wanted() const {
    if (m_s.prefetch > 1 || !m_quick || m_stopping || m_o.max_tasks
        || m_ahead_hold.count() == 0 || m_o.lease_for < 3 * m_ahead_hold) {
      return 0;
    }
    if (!m_deferred) {
      return 1;
    }
    // No more than the handler gets through in half the hold.
    const auto half = m_ahead_hold / 2;
    const int fit = static_cast<int>(std::clamp<int64_t>(
        half.count() / std::max<int64_t>(1, m_answer_took.count()), 1,
        k_max_ahead));
    return std::min(m_ahead_depth, fit);
  }

  // How many tasks to lease now.
  int wanted() const {
    const auto queued = static_cast<int>(m_queue.size());
    int want = std::max(1, free_handlers() + ahead_wanted() - queued);
    if (m_s.prefetch > 1) {
      want = std::max(want, free_handlers() + m_s.prefetch - 1 - queued
                                - ahead_total());
    }
    if (m_o.max_tasks) {
      want = static_cast<int>(
          std::min<int64_t>(want, *m_o.max_tasks - m_summary.leased));
    }
    return want;
  }

  void wake_when_due(core::Time seen) {
    if (const auto due = m_store.next_due(m_o.queues, seen)) {
      const auto in = *due - m_host.live_now();
      m_looks.wake_at = Clock::now() + std::max(core::Millis{0}, in);
    }
  }

  // --- handlers ------------------------------------------------------------

  void start(Handler& h) {
    h.restart_at.reset();
    ChildSpec spec;
    spec.path = m_o.command_path;
    spec.argv = m_o.command;
    spec.env =
        core::stream_environment(m_inherited, m_db_path, m_worker, h.number);
    spec.stdin_pipe = true;
    spec.capture_stdout = true;
    spec.capture_stderr = false; // the worker's, as the protocol says
    h.proc = Child::spawn(spec);
    h.running = true;
    h.stdin_closed = false;
    h.stopped_by_us = false;
    h.in_buf.clear();
    h.out_buf.clear();
    h.started = Clock::now();
    if (m_o.verbose) {
      say("handler " + std::to_string(h.number) + " started (pid "
          + std::to_string(h.proc.pid()) + ")");
    }
  }

  // Hands the leased tasks to the handlers: first one to each that has
  // none, then, with --prefetch, the rest in turn up to lookahead() each,
  // written behind the one it works on. One write per handler.
  void dispatch() {
    hold_front();
    if (m_s.prefetch <= 1 && m_queue_waited && !m_queue.empty()
        && std::any_of(m_handlers.begin(), m_handlers.end(),
                       [](const Handler& h) { return !h.held; })) {
      drop_revoked_ahead();
    }
    for (auto& h : m_handlers) {
      if (!h.running || h.stdin_closed || h.stopped_by_us) {
        continue;
      }
      if (m_stopping) {
        if (!busy(h)) {
          close_stdin(h);
        }
        continue;
      }
      if (!h.held && next_ready()) {
        h.held = hand(h);
      }
    }
    const auto ahead_max = static_cast<size_t>(lookahead());
    for (bool more = ahead_max > 0; more && next_ready();) {
      more = false;
      for (auto& h : m_handlers) {
        if (!next_ready()) {
          break;
        }
        if (h.running && !h.stdin_closed && !h.stopped_by_us && h.held
            && !h.held->give_up_at && h.ahead.size() < ahead_max) {
          h.ahead.push_back(hand(h));
          more = true;
        }
      }
    }
    for (auto& h : m_handlers) {
      if (!h.in_buf.empty()) {
        write_some(h);
      }
    }
  }

  // Drops from m_queue what lost its lease while it waited there (an
  // operator's kill or pause, an expiry): it must not reach a handler.
  // No read when no other connection has committed since the last look.
  void drop_revoked_ahead() {
    m_queue_waited = false;
    const core::Time now = m_host.live_now();
    const bool others = changed_by_others(m_store, m_version);
    for (auto it = m_queue.begin(); it != m_queue.end();) {
      bool held = it->lease->expires_at > now;
      if (held && others) {
        try {
          held = m_store.lease_held(it->id, it->lease->token, now);
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::unavailable) {
            throw;
          }
          // No answer: a lease lost meanwhile is found by check_leases,
          // and its handler told.
        }
      }
      if (held) {
        ++it;
        continue;
      }
      ++m_summary.revoked;
      if (m_o.verbose) {
        say_task(it->id, "lease lost before it was sent; dropped");
      }
      it = m_queue.erase(it);
    }
  }

  // What was leased ahead and waited m_ahead_hold goes back (its attempt
  // too): the handlers are slower than lease-ahead is for.
  void give_back_ahead() {
    m_quick = false;
    m_ahead_depth = 2;
    if (m_o.verbose) {
      for (const auto& t : m_queue) {
        say_task(t.id, "leased ahead and not sent within "
                           + core::format_duration(m_ahead_hold)
                           + "; given back");
      }
    }
    give_back_unsent();
  }

  // What is leased and was never written to a handler goes back (its
  // attempt too), due at once. The summary counts it neither as leased
  // nor as released, as per-task `run` does what it leased ahead.
  void give_back_unsent() {
    m_ahead_until.reset();
    m_leased_in.clear();
    for (auto& t : m_queue) {
      --m_summary.leased;
      outcome(Pending{Pending::Kind::release,
                      std::move(t),
                      std::nullopt,
                      {},
                      std::nullopt,
                      true});
    }
    m_queue.clear();
  }

  // The commit that leased m_queue's front (group commit); the last one
  // when it is not on record, which is never too early.
  uint64_t front_commit() const {
    if (front_on_record()) {
      return m_leased_in.front().commit;
    }
    return m_store.commit_seq();
  }

  // m_leased_in's front is about m_queue's front: the same task under the
  // same lease (a task dropped and leased again by this run is another
  // entry).
  bool front_on_record() const {
    return !m_leased_in.empty() && !m_queue.empty()
           && m_leased_in.front().id == m_queue.front().id
           && m_leased_in.front().token == m_queue.front().lease->token;
  }

  // Whether m_queue's front may go to a handler now: its lease is on disk.
  // A task leased ahead that is not there yet makes lease-ahead deeper (see
  // ahead_wanted); the poll wakes when the sync ends (durable_fd).
  bool next_ready() {
    if (m_queue.empty()) {
      return false;
    }
    if (!m_deferred) {
      return true;
    }
    hold_front();
    const uint64_t commit = front_commit();
    if (m_store.durable(commit)) {
      return true;
    }
    if (commit < m_store.commit_seq() && m_waited_for != m_queue.front().id) {
      m_waited_for = m_queue.front().id;
      m_ahead_depth = std::min(m_ahead_depth + 1, k_max_ahead);
      m_ahead_unwaited = 0;
    }
    return false;
  }

  // The next leased task, its line added to what `h` is to read.
  Held hand(Handler& h) {
    hold_front();
    const uint64_t commit = front_commit();
    // Its lease is on disk before its handler sees it (group commit):
    // dispatch() waits for that without blocking; this makes sure. (Still
    // in m_queue if the sync failed: given back as run ends.)
    m_store.wait_durable(commit);
    if (front_on_record()) {
      m_leased_in.pop_front();
    }
    core::Task t = std::move(m_queue.front());
    m_queue.pop_front();
    if (commit < m_store.commit_seq() && m_waited_for != t.id
        && ++m_ahead_unwaited >= k_ahead_settle && m_ahead_depth > 2) {
      // k_ahead_settle tasks leased ahead in a row were on disk by the
      // time they were wanted: one fewer is enough.
      --m_ahead_depth;
      m_ahead_unwaited = 0;
    }
    hold_front();
    const Instant now = Clock::now();
    if (h.proc.stdin_pipe()) {
      h.in_buf += "{\"task\":";
      h.in_buf += m_host.task_json(t, m_host.live_now());
      h.in_buf += "}\n";
    }
    Held held{std::move(t), now, std::nullopt, std::nullopt};
    if (m_o.timeout && !h.held) {
      held.deadline = now + *m_o.timeout;
    }
    if (m_o.verbose) {
      say_task(held.task.id, "sent to handler " + std::to_string(h.number)
                                 + " (attempt "
                                 + std::to_string(held.task.attempts) + ")");
    }
    return held;
  }

  // m_leased_in's front made to be m_queue's (what was dropped from
  // m_queue meanwhile goes), and the hold of a task leased ahead, which
  // runs m_ahead_hold from its lease, made to follow m_queue's front, the
  // task written next.
  void hold_front() {
    while (m_leased_in.size() > m_queue.size() && !front_on_record()) {
      m_leased_in.pop_front();
    }
    if (!m_ahead_until) {
      return;
    }
    if (m_queue.empty()) {
      m_ahead_until.reset();
    } else if (front_on_record()) {
      m_ahead_until = m_leased_in.front().leased + m_ahead_hold;
    }
  }

  // The task `id` of `h` is over: the next one written to it becomes the
  // one it works on; its --timeout (and a cancel's grace) starts now.
  void drop(Handler& h, int64_t id) {
    if (!h.held || h.held->task.id != id) {
      const auto it =
          std::find_if(h.ahead.begin(), h.ahead.end(),
                       [id](const Held& x) { return x.task.id == id; });
      if (it != h.ahead.end()) {
        h.ahead.erase(it);
      }
      return;
    }
    h.held.reset();
    if (h.ahead.empty()) {
      return;
    }
    h.held = std::move(h.ahead.front());
    h.ahead.pop_front();
    const Instant now = Clock::now();
    if (m_o.timeout && !h.held->give_up_at) {
      h.held->deadline = now + *m_o.timeout;
    }
    if (h.held->give_up_at) {
      h.held->give_up_at = now + m_o.grace;
    }
  }

  // The task `id` written to `h` and not answered yet, or null.
  static Held* find_held(Handler& h, int64_t id) {
    if (h.held && h.held->task.id == id) {
      return &*h.held;
    }
    for (auto& x : h.ahead) {
      if (x.task.id == id) {
        return &x;
      }
    }
    return nullptr;
  }

  void send(Handler& h, const std::string& line) {
    if (!h.proc.stdin_pipe()) {
      return;
    }
    h.in_buf += line;
    write_some(h);
  }

  void write_some(Handler& h) {
    while (!h.in_buf.empty() && h.proc.stdin_pipe()) {
      const ssize_t n =
          ::write(h.proc.stdin_pipe().get(), h.in_buf.data(), h.in_buf.size());
      if (n > 0) {
        h.in_buf.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return; // the poll waits until it can take more
      }
      // EPIPE: it closed its stdin or died; its end is handled when it is
      // reaped.
      h.in_buf.clear();
      h.proc.stdin_pipe().reset();
      return;
    }
    if (h.in_buf.empty() && h.stdin_closed) {
      h.proc.stdin_pipe().reset();
    }
  }

  void close_stdin(Handler& h) {
    if (h.stdin_closed) {
      return;
    }
    h.stdin_closed = true;
    if (h.in_buf.empty()) {
      h.proc.stdin_pipe().reset();
    }
  }

  void cancel(Handler& h, Held& held, const std::string& reason) {
    held.give_up_at = Clock::now() + m_o.grace;
    held.deadline.reset();
    send(h,
         nlohmann::json{{"cancel", {{"id", held.task.id}, {"reason", reason}}}}
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
             + "\n");
  }

  // Stops the handler's process group; its end is handled when reaped.
  void kill_handler(Handler& h) {
    if (h.running && !h.stopped_by_us) {
      h.stopped_by_us = true;
      h.proc.signal_group(SIGKILL);
    }
  }

  void reap() {
    reap_ended([this](pid_t pid, int status) {
      for (auto& h : m_handlers) {
        if (h.running && h.proc.pid() == pid) {
          ended(h, status);
        }
      }
    });
  }

  void ended(Handler& h, int status) {
    // What it wrote before it ended still counts.
    if (h.proc.stdout_pipe()) {
      read_output(h);
    }
    // Whatever it started goes with it.
    h.proc.signal_group(SIGKILL);
    h.running = false;
    h.proc.stdin_pipe().reset();
    h.proc.stdout_pipe().reset();
    const bool asked = h.stopped_by_us || m_stopping || h.stdin_closed;
    const std::string how =
        WIFSIGNALED(status)
            ? "was killed by " + core::signal_name(WTERMSIG(status))
            : "exited " + std::to_string(WEXITSTATUS(status));
    if (busy(h)) {
      if (h.held && !h.held->give_up_at) {
        std::fprintf(stderr,
                     "taskq: handler %d %s while working on task %lld; the "
                     "task is released\n",
                     h.number, how.c_str(),
                     static_cast<long long>(h.held->task.id));
      }
      // The tasks written behind it go back too, unseen or not.
      std::deque<Held> gone = std::move(h.ahead);
      h.ahead.clear();
      if (h.held) {
        gone.push_front(std::move(*h.held));
        h.held.reset();
      }
      for (auto& held : gone) {
        if (!held.give_up_at) {
          outcome(Pending{Pending::Kind::release,
                          std::move(held.task),
                          std::nullopt,
                          {},
                          std::nullopt});
        }
      }
    } else if (!asked) {
      std::fprintf(stderr, "taskq: handler %d %s\n", h.number, how.c_str());
    }
    if (m_stopping) {
      return;
    }
    const Instant now = Clock::now();
    if (h.stopped_by_us) {
      h.restart_at = now; // it ignored a cancel: a new one at once
      return;
    }
    const auto restart_at = h.restarts.died(h.started, now);
    if (!restart_at) {
      const auto& r = h.restarts;
      throw Error(
          ErrorKind::internal,
          "handler keeps dying (" + std::to_string(r.deaths) + " times in "
              + core::format_duration(
                  std::chrono::duration_cast<core::Millis>(now - r.first_death))
              + " without an outcome): " + core::command_line(m_o.command));
    }
    h.restart_at = *restart_at;
  }

  // --- the handler's lines ---------------------------------------------

  void read_output(Handler& h) {
    std::string data;
    const bool open = read_available(h.proc.stdout_pipe().get(), data);
    h.out_buf += data;
    size_t from = 0;
    while (true) {
      const size_t nl = h.out_buf.find('\n', from);
      if (nl == std::string::npos) {
        break;
      }
      const std::string_view line(h.out_buf.data() + from, nl - from);
      from = nl + 1;
      on_line(h, line);
      if (h.stopped_by_us) {
        h.out_buf.clear(); // being stopped: what follows is not read
        return;
      }
    }
    h.out_buf.erase(0, from);
    if (h.out_buf.size() > core::k_max_handler_line) {
      garbage(h, h.out_buf, "a line longer than 16 MiB");
      h.out_buf.clear();
    }
    if (!open) {
      h.proc.stdout_pipe().reset();
      if (h.running) {
        // No more answers can come: it is as good as dead.
        if (!h.out_buf.empty()) {
          garbage(h, h.out_buf, "a last line without its newline");
          h.out_buf.clear();
        }
        h.proc.signal_group(SIGKILL);
      }
    }
  }

  void on_line(Handler& h, std::string_view text) {
    const auto line = core::read_handler_line(text);
    if (line.kind == core::HandlerLine::Kind::blank) {
      return;
    }
    if (!text.empty() && text.back() == '\r') {
      text.remove_suffix(1);
    }
    if (line.kind == core::HandlerLine::Kind::garbage) {
      garbage(h, text, line.why);
      return;
    }
    const int64_t id = line.id;
    Held* const found = find_held(h, id);
    if (found == nullptr) {
      if (std::find(m_finished.begin(), m_finished.end(), id)
          != m_finished.end()) {
        std::fprintf(stderr,
                     "taskq: handler %d: task %lld is no longer its own; "
                     "ignored: %s\n",
                     h.number, static_cast<long long>(id),
                     core::quote_line(text).c_str());
        return;
      }
      garbage(h, text, "task " + std::to_string(id) + " is not its own");
      return;
    }
    Held& held = *found;
    const auto m = core::read_handler_message(line.body);
    if (!m.verb) {
      malformed(h, held, text, m.error);
      return;
    }
    if (*m.verb == core::HandlerVerb::heartbeat
        || *m.verb == core::HandlerVerb::checkpoint) {
      if (held.give_up_at) {
        return; // cancelled: its lease is not ours to extend
      }
      heartbeat(h, held, m.value);
      return;
    }
    if (held.give_up_at) {
      // Cancelled, and it answered in time: the outcome was settled when
      // the cancel went out.
      if (m_o.verbose) {
        say_task(held.task.id, "its handler's answer after the cancel is "
                               "ignored");
      }
      settled(held.task.id);
      drop(h, held.task.id);
      return;
    }
    if (!m.error.empty()) {
      malformed(h, held, text, m.error);
      return;
    }
    switch (*m.verb) {
    case core::HandlerVerb::done:
      finish(h, Pending{Pending::Kind::complete,
                        std::move(held.task),
                        m.value,
                        {},
                        std::nullopt});
      return;
    case core::HandlerVerb::fail: {
      storage::FailRequest req;
      req.error = *m.value;
      if (m.no_retry) {
        req.mode = storage::FailMode::no_retry;
      }
      finish(h, Pending{Pending::Kind::fail, std::move(held.task), std::nullopt,
                        req, std::nullopt});
      return;
    }
    default:
      finish(h, Pending{Pending::Kind::release,
                        std::move(held.task),
                        std::nullopt,
                        {},
                        m.delay.value_or(m_o.release_delay)});
      return;
    }
  }

  // A line about task `held` of `h` that is no outcome (`why`): the task
  // fails with the reason, unless it was cancelled.
  void malformed(Handler& h, Held& held, std::string_view line,
                 const std::string& why) {
    std::fprintf(stderr, "taskq: handler %d: malformed line: %s (%s)\n",
                 h.number, core::quote_line(line).c_str(), why.c_str());
    if (held.give_up_at) {
      return;
    }
    storage::FailRequest req;
    req.error = "malformed handler output: " + why;
    finish(h, Pending{Pending::Kind::fail, std::move(held.task), std::nullopt,
                      req, std::nullopt});
  }

  // Task `id` is settled: a later line about it is ignored, not garbage.
  void settled(int64_t id) {
    m_finished.push_back(id);
    if (m_finished.size() > 256) {
      m_finished.pop_front();
    }
  }

  // The handler ended its task with `p`.
  void finish(Handler& h, Pending p) {
    h.restarts.answered();
    const int64_t id = p.task.id;
    if (h.held && h.held->task.id == id) {
      const auto took = Clock::now() - h.held->sent;
      m_quick = took < m_ahead_hold;
      m_answer_took = std::chrono::duration_cast<core::Millis>(took);
    }
    settled(id);
    outcome(std::move(p));
    drop(h, id);
  }

  // A line that is not an outcome of the handler's task: the handler is
  // stopped, its task fails with the reason, and it is started again.
  void garbage(Handler& h, std::string_view line, const std::string& why) {
    std::fprintf(stderr, "taskq: handler %d: malformed line (%s): %s\n",
                 h.number, why.c_str(), core::quote_line(line).c_str());
    if (h.held && !h.held->give_up_at) {
      storage::FailRequest req;
      req.error =
          "handler sent garbage (" + why + "): " + core::quote_line(line);
      Pending p{Pending::Kind::fail, std::move(h.held->task), std::nullopt, req,
                std::nullopt};
      h.held.reset();
      settled(p.task.id);
      outcome(std::move(p));
    }
    h.held.reset();
    kill_handler(h);
  }

  // --- the database ------------------------------------------------------

  void outcome(Pending p) {
    if (m_pending.empty()) {
      m_flush_at = Clock::now() + m_s.flush;
    }
    m_pending.push_back(std::move(p));
  }

  // Writes the outcomes that wait, each checked against its lease.
  void flush() {
    const bool lease = !m_stopping && m_looks.look && wants_more();
    if (lease) {
      m_looks.begin();
    }
    write_batch(lease);
  }

  // One transaction: the outcomes that wait, then (with `lease`) the next
  // tasks.
  void write_batch(bool lease) {
    m_flush_at.reset();
    std::vector<Pending> batch;
    batch.swap(m_pending);
    std::vector<storage::Outcome> outcomes;
    outcomes.reserve(batch.size());
    for (auto& p : batch) {
      storage::Outcome o;
      o.kind =
          p.kind == Pending::Kind::complete ? storage::Outcome::Kind::complete
          : p.kind == Pending::Kind::fail   ? storage::Outcome::Kind::fail
                                            : storage::Outcome::Kind::release;
      o.id = p.task.id;
      o.token = p.task.lease->token;
      // Copied: a locked database sends `batch` back to m_pending, to be
      // written again.
      o.result = p.result;
      o.fail = p.fail;
      o.delay = p.delay;
      outcomes.push_back(std::move(o));
    }
    std::optional<storage::LeaseRequest> next;
    int want = 0;
    const bool ahead = lease && ahead_wanted() > 0;
    if (lease) {
      want = wanted();
      m_request.count = want;
      // A task an operator took back while its handler still works on it
      // must not reach a second handler.
      m_request.skip.clear();
      for (const auto& h : m_handlers) {
        if (h.held) {
          m_request.skip.push_back(h.held->task.id);
        }
        for (const auto& held : h.ahead) {
          m_request.skip.push_back(held.task.id);
        }
      }
      next = m_request;
    }
    const core::Time now = m_host.live_now();
    storage::BatchResult done;
    try {
      done = m_store.apply_outcomes(outcomes, next, now);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::unavailable) {
        throw;
      }
      // Locked past the busy timeout: nothing was written; again shortly.
      std::fprintf(stderr, "taskq: run: %s; trying again in 1s\n", e.what());
      m_pending = std::move(batch);
      m_flush_at = Clock::now() + std::chrono::seconds(1);
      m_looks.wake_at = Clock::now() + std::chrono::seconds(1);
      return;
    }
    for (size_t i = 0; i < batch.size() && i < done.outcomes.size(); ++i) {
      counted(batch[i], done.outcomes[i]);
    }
    // Only now, once the lease is committed, does a handler see the task:
    // a task written to a handler before the commit would run even if the
    // commit never happened (`run` killed meanwhile), beside the worker
    // that leases it next, without a lease of its own.
    m_summary.leased += static_cast<int64_t>(done.leased.size());
    const bool full = static_cast<int>(done.leased.size()) == want;
    if (m_queue.empty()) {
      m_queue_waited = false;
      m_ahead_until.reset();
      m_leased_in.clear();
    }
    const uint64_t commit = m_store.commit_seq();
    const Instant leased = Clock::now();
    for (auto& t : done.leased) {
      m_leased_in.push_back(Queued{t.id, t.lease->token, commit, leased});
      m_queue.push_back(std::move(t));
    }
    if (ahead && !done.leased.empty() && !m_ahead_until) {
      m_ahead_until = leased + m_ahead_hold;
      hold_front();
    }
    if (!lease || full) {
      m_looks.look = true; // there may be more
      return;
    }
    wake_when_due(now);
  }

  void counted(const Pending& p, const storage::OutcomeResult& r) {
    if (p.uncounted) {
      return;
    }
    const int64_t id = p.task.id;
    if (!r.task) {
      ++m_summary.revoked;
      std::fprintf(stderr,
                   "taskq: task %lld: %s; its outcome was not recorded\n",
                   static_cast<long long>(id), r.lost.c_str());
      return;
    }
    std::string what;
    switch (p.kind) {
    case Pending::Kind::complete:
      ++m_summary.completed;
      what = "completed";
      break;
    case Pending::Kind::release:
      ++m_summary.released;
      what = "released";
      break;
    case Pending::Kind::fail:
      if (r.task->state == core::TaskState::sleeping) {
        ++m_summary.retrying;
        if (!m_summary.retry_at || r.task->run_at < *m_summary.retry_at) {
          m_summary.retry_at = r.task->run_at;
        }
        what = "will retry at " + core::format_time(r.task->run_at) + ": "
               + p.fail.error;
      } else {
        ++m_summary.failed;
        what = "failed for good: " + p.fail.error;
      }
      break;
    }
    if (m_o.verbose) {
      say_task(id, what);
    }
  }

  void heartbeat(Handler& h, Held& held,
                 const std::optional<std::string>& checkpoint) {
    if (worker::heartbeat(m_store, held.task, m_o.lease_for, checkpoint,
                          m_host.live_now())
            .kind
        == Beat::Kind::lost) {
      revoke(h, held);
    }
  }

  // Every lease this worker holds, extended; lost ones are revoked.
  void heartbeat_all() {
    for (auto& h : m_handlers) {
      if (h.held && !h.held->give_up_at) {
        heartbeat(h, *h.held, std::nullopt);
      }
      for (auto& held : h.ahead) {
        if (!held.give_up_at) {
          heartbeat(h, held, std::nullopt);
        }
      }
    }
    const core::Time now = m_host.live_now();
    for (auto it = m_queue.begin(); it != m_queue.end();) {
      bool lost = false;
      try {
        m_store.heartbeat(it->id, it->lease->token, m_o.lease_for, std::nullopt,
                          now);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::conflict
            || e.kind() == ErrorKind::not_found) {
          lost = true;
        } else if (e.kind() != ErrorKind::unavailable) {
          throw;
        }
      }
      if (lost) {
        ++m_summary.revoked;
        it = m_queue.erase(it);
      } else {
        ++it;
      }
    }
  }

  // After a change to the database: has an operator taken a lease?
  void check_leases(bool force) {
    const Instant now_i = Clock::now();
    if (!force && now_i < m_last_check + k_lease_check_every) {
      m_check_at = m_last_check + k_lease_check_every;
      return;
    }
    m_check_at.reset();
    m_last_check = now_i;
    const core::Time now = m_host.live_now();
    try {
      const auto lost = [&](const Held& held) {
        return !held.give_up_at
               && !m_store.lease_held(held.task.id, held.task.lease->token,
                                      now);
      };
      for (auto& h : m_handlers) {
        if (h.held && lost(*h.held)) {
          revoke(h, *h.held);
        }
      }
      // The tasks waiting behind the ones in hand, and those not yet
      // written, less often: there may be many.
      if (now_i < m_last_queue_check + k_queue_check_every) {
        if (!m_queue.empty() || ahead_total() > 0) {
          m_check_at = m_last_queue_check + k_queue_check_every;
        }
        return;
      }
      m_last_queue_check = now_i;
      for (auto& h : m_handlers) {
        for (auto& held : h.ahead) {
          if (lost(held)) {
            revoke(h, held);
          }
        }
      }
      for (auto it = m_queue.begin(); it != m_queue.end();) {
        if (!m_store.lease_held(it->id, it->lease->token, now)) {
          ++m_summary.revoked;
          if (m_o.verbose) {
            say_task(it->id, "lease lost before it was sent; dropped");
          }
          it = m_queue.erase(it);
        } else {
          ++it;
        }
      }
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::unavailable) {
        throw;
      }
    }
  }

  void revoke(Handler& h, Held& held) {
    std::string by;
    try {
      by = m_store.revoked_reason(held.task.id, held.task.lease->token)
               .value_or("");
    } catch (const Error&) {
      by.clear();
    }
    ++m_summary.revoked;
    settled(held.task.id);
    const std::string reason = by.empty() ? "lease lost" : by;
    if (m_o.verbose || by.empty()) {
      std::fprintf(
          stderr, "taskq: task %lld: lease %s; cancelling it in handler %d\n",
          static_cast<long long>(held.task.id),
          by.empty() ? "lost" : ("revoked by " + by).c_str(), h.number);
    }
    cancel(h, held, reason);
  }

  // Everything leased and not recorded goes back, due at once: at the end
  // of a run that stops, or when it fails.
  void give_back_all() {
    for (auto& h : m_handlers) {
      if (h.held) {
        h.ahead.push_front(std::move(*h.held));
        h.held.reset();
      }
      for (auto& held : h.ahead) {
        if (!held.give_up_at) {
          m_pending.push_back(Pending{Pending::Kind::release,
                                      std::move(held.task),
                                      std::nullopt,
                                      {},
                                      std::nullopt});
        }
      }
      h.ahead.clear();
    }
    give_back_unsent();
    try {
      write_batch(false);
    } catch (const Error& e) {
      std::fprintf(stderr, "taskq: run: giving back its tasks: %s\n", e.what());
    }
  }

  // --- the loop's waits ----------------------------------------------------

  // A signal reached `run` (worker::signal_asks).
  void on_signal(int sig) {
    reap();
    switch (signal_asks(sig, m_stopping)) {
    case SignalAsks::reap:
      return;
    case SignalAsks::stop:
      begin_stop(true);
      return;
    case SignalAsks::kill:
      for (auto& h : m_handlers) {
        kill_handler(h);
      }
      return;
    }
  }

  void begin_stop(bool signalled) {
    if (m_stopping) {
      return;
    }
    m_stopping = true;
    m_stop_kill_at = Clock::now() + m_o.grace;
    int working = 0;
    for (const auto& h : m_handlers) {
      working += h.held ? 1 : 0;
    }
    if (signalled && working > 0) {
      std::fprintf(stderr,
                   "taskq: run: stopping; %d handler(s) get %s to finish their "
                   "task (signal again to stop them now)\n",
                   working, core::format_duration(m_o.grace).c_str());
    }
    // Prefetched tasks no handler has seen go back at once.
    give_back_unsent();
    for (auto& h : m_handlers) {
      h.restart_at.reset();
      if (!busy(h)) {
        close_stdin(h);
      }
    }
  }

  void wait_and_handle() {
    Wait wait(m_signals.fd(), m_feed);
    // A task that waits for its lease's sync goes out when the sync ends.
    const int synced_fd = !m_queue.empty() && !m_store.durable(front_commit())
                              ? m_store.durable_fd()
                              : -1;
    const size_t synced =
        synced_fd >= 0 ? wait.add(synced_fd, POLLIN) : wait.size();
    const size_t first = wait.size();
    std::vector<std::pair<Handler*, bool>> owners; // (handler, is stdin)
    for (auto& h : m_handlers) {
      if (h.proc.stdout_pipe()) {
        wait.add(h.proc.stdout_pipe().get(), POLLIN);
        owners.emplace_back(&h, false);
      }
      if (h.proc.stdin_pipe() && !h.in_buf.empty()) {
        wait.add(h.proc.stdin_pipe().get(), POLLOUT);
        owners.emplace_back(&h, true);
      }
    }
    if (!m_stopping && wants_more()) {
      wait.until(m_looks.wake_at);
      wait.feed_fallback();
    }
    if (!m_pending.empty()) {
      wait.until(m_flush_at);
    }
    wait.until(m_check_at);
    if (!idle()) {
      wait.until(m_next_heartbeat);
    }
    wait.until(m_ahead_until);
    m_queue_waited = m_queue_waited || !m_queue.empty();
    if (m_stopping) {
      wait.until(m_stop_kill_at);
    }
    for (const auto& h : m_handlers) {
      wait.until(h.restart_at);
      if (h.held) {
        wait.until(h.held->deadline);
        wait.until(h.held->give_up_at);
      }
    }
    wait.poll();
    if (wait.signalled()) {
      for (const int sig : m_signals.take()) {
        on_signal(sig);
      }
    }
    if (synced_fd >= 0 && (wait.revents(synced) & POLLIN) != 0) {
      uint64_t syncs = 0;
      [[maybe_unused]] const ssize_t n =
          ::read(synced_fd, &syncs, sizeof syncs);
    }
    for (size_t i = first; i < wait.size(); ++i) {
      if (wait.revents(i) == 0) {
        continue;
      }
      auto& [h, is_stdin] = owners[i - first];
      if (is_stdin) {
        write_some(*h);
      } else if (h->proc.stdout_pipe()) {
        read_output(*h);
      }
    }
    const Instant now = Clock::now();
    const bool db_changed = wait.db_changed(m_feed, now);
    if (db_changed) {
      m_looks.changed();
      check_leases(false);
    } else if (m_check_at && now >= *m_check_at) {
      check_leases(true);
    }
    m_looks.wake(now);
    on_timers(now);
  }

  void on_timers(Instant now) {
    hold_front(); // m_queue may have lost tasks in this wait's checks
    if (m_ahead_until && now >= *m_ahead_until) {
      give_back_ahead();
    }
    for (auto& h : m_handlers) {
      if (h.held && h.held->deadline && now >= *h.held->deadline) {
        Held& held = *h.held;
        const std::string why =
            "timed out after " + core::format_duration(*m_o.timeout);
        storage::FailRequest req;
        req.error = why;
        settled(held.task.id);
        outcome(Pending{Pending::Kind::fail, held.task, std::nullopt, req,
                        std::nullopt});
        std::fprintf(stderr,
                     "taskq: task %lld: %s; cancelling it in handler "
                     "%d\n",
                     static_cast<long long>(held.task.id), why.c_str(),
                     h.number);
        cancel(h, held, why);
      }
      if (h.held && h.held->give_up_at && now >= *h.held->give_up_at) {
        std::fprintf(stderr,
                     "taskq: handler %d did not answer the cancel of task "
                     "%lld within %s; stopping it\n",
                     h.number, static_cast<long long>(h.held->task.id),
                     core::format_duration(m_o.grace).c_str());
        h.held->give_up_at = Instant::max();
        kill_handler(h);
      }
      if (h.restart_at && now >= *h.restart_at && !h.running && !m_stopping) {
        start(h);
      }
    }
    if (m_stopping && m_stop_kill_at && now >= *m_stop_kill_at) {
      m_stop_kill_at.reset();
      for (auto& h : m_handlers) {
        kill_handler(h);
      }
    }
    if (now >= m_next_heartbeat) {
      m_next_heartbeat = now + m_heartbeat_every;
      heartbeat_all();
    }
  }

  void say(const std::string& what) {
    std::fprintf(stderr, "%s taskq: %s\n",
                 core::format_time(m_host.live_now()).c_str(), what.c_str());
  }
  void say_task(int64_t id, const std::string& what) {
    say("task " + std::to_string(id) + ": " + what);
  }

  const core::Millis m_ahead_hold; // how long a task leased ahead is held
  const RunOptions& m_o;
  const StreamOptions& m_s;
  Host& m_host;
  SignalFeed m_signals; // before the store, as in worker/per_task.cpp
  storage::TaskStore& m_store;
  storage::ChangeFeed m_feed;
  std::string m_worker;
  std::vector<std::string> m_inherited; // of every handler's environment
  std::string m_db_path;                // TASKQ_DB
  storage::LeaseRequest m_request;
  core::Millis m_heartbeat_every{};
  std::vector<Handler> m_handlers;
  std::deque<core::Task> m_queue; // leased, not yet sent
  // What leased each task of m_queue, in its order (it may hold tasks
  // since dropped from m_queue): the commit to wait for, the hold's start.
  struct Queued {
    int64_t id;
    std::string token;
    uint64_t commit;
    Instant leased;
  };
  std::deque<Queued> m_leased_in;
  bool m_deferred = false;        // group commit (TaskStore::defer_sync)
  int m_ahead_depth = 2;          // ahead_wanted() with group commit
  int m_ahead_unwaited = 0;       // tasks handed since the depth last changed
  int64_t m_waited_for = 0;       // the last task that waited for its sync
  core::Millis m_answer_took{0};  // how long the last answer took
  std::vector<Pending> m_pending; // outcomes not yet written
  std::deque<int64_t> m_finished; // ids lately settled, for late lines
  std::optional<Instant> m_flush_at; // write m_pending by then
  Instant m_next_heartbeat;
  Instant m_last_check;
  Instant m_last_queue_check;
  std::optional<Instant> m_check_at;
  RunSummary m_summary;
  Looks m_looks; // when to look for tasks to lease
  bool m_stopping = false;
  std::optional<Instant> m_stop_kill_at;
  bool m_quick = false; // the last answer came within m_ahead_hold
  // Set when a lease ahead was taken; then what m_queue holds goes back.
  std::optional<Instant> m_ahead_until;
  bool m_queue_waited = false;      // m_queue was held across a poll
  std::optional<int64_t> m_version; // changed_by_others' last look
};

} // namespace

RunSummary run_stream(const RunOptions& o, const StreamOptions& s, Host& host) {
  StreamRunner runner(o, s, host);
  return runner.run();
}

} // namespace taskq::worker
