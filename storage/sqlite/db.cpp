// SqliteDb: a connection to a SQLite file: its busy handler, group commit,
// the checkpoints that keep its WAL short, and its transactions.
#include "storage/sqlite/db.hpp"

#include "core/error.hpp"
#include "storage/sqlite/permissions.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <pwd.h>
#include <random>
#include <string>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace taskq::storage {

// SQLite's default busy handler sleeps up to 100 ms at a time; under
// contention between many short transactions that wastes most of the
// wait. This one sleeps 50 µs to 2 ms, randomised so waiters spread out,
// until the deadline. One per connection.
struct SqliteDb::BusyState {
  int timeout_ms = busy_timeout_ms();
  bool no_wait = false; // set while a best-effort checkpoint runs
  int commits =
      0; // this connection's commits, counted up to k_short_commits + 1
  std::chrono::steady_clock::time_point start;
  std::minstd_rand rng{std::random_device{}()};
  SqliteDb::WalSync* sync = nullptr; // told of each commit, once deferred
};

// SqliteDb::defer_sync's thread. The connection runs with synchronous =
// NORMAL, under which a WAL commit writes its frames and returns without
// syncing them; this thread syncs the WAL file whenever the connection
// has committed since its last sync. A commit whose frames were written
// before a sync began is on disk when that sync returns: what FULL does
// within each commit, done once for every commit that waited meanwhile.
// SQLite's own syncs (before and after a checkpoint copies the WAL into
// the database file) are unchanged.
class SqliteDb::WalSync {
public:
  explicit WalSync(std::string wal) : m_wal(std::move(wal)) {
    // No signal is ever delivered to this thread: `run` takes its signals
    // through a signalfd, which needs them blocked in every thread.
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    m_event = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (m_event < 0) {
      throw Error(ErrorKind::unavailable, "eventfd: " + errno_text(errno));
    }
    // Opened now if it is there, so that a write error the kernel records
    // from here on is seen by this descriptor's syncs.
    if (const std::string error = open_wal(); !error.empty()) {
      if (m_fd >= 0) {
        ::close(m_fd);
      }
      ::close(m_event);
      throw Error(ErrorKind::unavailable,
                  "cannot open " + m_wal + ": " + error);
    }
    pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
      m_thread = std::thread([this] { loop(); });
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      ::close(m_event);
      if (m_fd >= 0) {
        ::close(m_fd);
      }
      throw;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  // Syncs what was committed, then stops.
  ~WalSync() {
    {
      const std::lock_guard lock(m_mutex);
      m_stop = true;
    }
    m_work.notify_one();
    m_thread.join();
    if (m_fd >= 0) {
      ::close(m_fd);
    }
    ::close(m_event);
  }
  WalSync(const WalSync&) = delete;
  WalSync& operator=(const WalSync&) = delete;

  // The connection has committed (its WAL hook).
  void committed() {
    {
      const std::lock_guard lock(m_mutex);
      ++m_committed;
    }
    m_work.notify_one();
  }

  uint64_t committed_count() const {
    const std::lock_guard lock(m_mutex);
    return m_committed;
  }

  // Readable after each sync (and a failed one); read to clear.
  int event_fd() const { return m_event; }

  bool synced(uint64_t seq) const {
    const std::lock_guard lock(m_mutex);
    return m_synced >= seq || !m_error.empty();
  }

  bool wait(uint64_t seq) {
    std::unique_lock lock(m_mutex);
    const bool waited = m_synced < seq;
    m_done.wait(lock, [&] { return m_synced >= seq || !m_error.empty(); });
    if (m_synced < seq) {
      throw Error(ErrorKind::unavailable,
                  "cannot sync " + m_wal + ": " + m_error);
    }
    return waited;
  }

private:
  void loop() {
    std::unique_lock lock(m_mutex);
    while (true) {
      m_work.wait(lock, [&] { return m_stop || m_committed > m_synced; });
      if (m_committed == m_synced) {
        return; // stopping, and nothing is left to sync
      }
      const uint64_t target = m_committed;
      lock.unlock();
      const std::string error = sync_once();
      lock.lock();
      if (!error.empty()) {
        m_error = error; // every wait from now on throws
        m_done.notify_all();
        signal();
        return;
      }
      m_synced = target;
      m_done.notify_all();
      signal();
    }
  }

  void signal() const {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(m_event, &one, sizeof one);
  }

  static std::string errno_text(int e) {
    char buffer[128];
    return strerror_r(e, buffer, sizeof buffer); // GNU: thread-safe
  }

  // Opens the WAL, and syncs its directory as SQLite does for a journal
  // it creates (a directory that cannot be synced is no error, as for
  // SQLite); empty, or the failure. m_fd stays -1 when there is no WAL yet,
  // and then this says nothing.
  std::string open_wal() {
    m_fd = ::open(m_wal.c_str(), O_RDONLY | O_CLOEXEC);
    if (m_fd < 0) {
      return errno == ENOENT ? "" : errno_text(errno);
    }
    const auto slash = m_wal.find_last_of('/');
    sync_path(slash == std::string::npos ? "." : m_wal.substr(0, slash + 1));
    return {};
  }

  // One fdatasync of the WAL; the text of the failure, or empty. Through
  // the descriptor opened when the sync was deferred, so the file SQLite
  // writes (its own descriptor's) whatever happens to its name meanwhile:
  // the database moved, or its directory renamed.
  std::string sync_once() {
    if (m_fd < 0) {
      if (std::string error = open_wal(); !error.empty()) {
        return error;
      }
      if (m_fd < 0) {
        return "the WAL file is missing";
      }
    }
    return data_sync(m_fd);
  }

  static std::string data_sync(int fd) {
    while (::fdatasync(fd) != 0) {
      if (errno != EINTR) {
        return errno_text(errno);
      }
    }
    return {};
  }

  static std::string sync_path(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return errno_text(errno);
    }
    std::string error = data_sync(fd);
    ::close(fd);
    return error;
  }

  const std::string m_wal;
  mutable std::mutex m_mutex;
  std::condition_variable m_work; // a commit to sync, or stop
  std::condition_variable m_done; // a sync ended
  uint64_t m_committed = 0;
  uint64_t m_synced = 0;
  bool m_stop = false;
  std::string m_error;
  int m_event = -1;
  // Used by the thread only, once it runs.
  int m_fd = -1;
  std::thread m_thread;
};

namespace {

using BusyState = SqliteDb::BusyState;

int on_busy(void* arg, int attempt) {
  auto* state = static_cast<BusyState*>(arg);
  if (state->no_wait) {
    return 0;
  }
  const auto now = std::chrono::steady_clock::now();
  if (attempt == 0) {
    state->start = now;
  }
  if (now - state->start >= std::chrono::milliseconds(state->timeout_ms)) {
    return 0;
  }
  const int cap_us = attempt < 10 ? 200 : 2000;
  std::uniform_int_distribution<int> jitter(50, cap_us);
  std::this_thread::sleep_for(std::chrono::microseconds(jitter(state->rng)));
  return 1;
}

// WAL frames (pages) after which a commit checkpoints and restarts the WAL;
// past k_wal_truncate_frames (a bulk write, or readers that held the
// checkpoint back), it truncates the file too. SQLite's own autocheckpoint
// threshold: each checkpoint syncs the database file, and at 256 frames a
// `run --stream` without --prefetch checkpointed every 25 tasks (8-10% of
// its time against this; bench/stream).
constexpr int k_wal_restart_frames = 1000;
constexpr int k_wal_truncate_frames = 2 * k_wal_restart_frames;
// A connection's first few commits (all those of a command such as `add`,
// `lease` or `done`) truncate the WAL past a lower threshold instead.
constexpr int k_short_commits = 8;
constexpr int k_wal_short_frames = 64;

// Replaces SQLite's autocheckpoint. taskq closes without a checkpoint (see
// Db::Db), and a process that opens the database alone rebuilds the WAL
// index, forgetting how much was already copied back; a passive checkpoint
// then never lets the WAL start over, and every open reads it all. So once
// the WAL passes the threshold, the committing process copies it back and
// restarts it, without waiting: if a reader is in the way, a later commit
// tries again. Restarted, not truncated: the next commit writes from the
// WAL's start over blocks the file already has, and an fdatasync that need
// not grow the file costs a third less (bench/stream); an open reads the
// frames only up to the first one left from before the restart. A WAL
// grown past twice the threshold is truncated instead, so that it neither
// stays on disk at that size nor is read whole by the next open.
//
// A restart takes effect only at the next write of the process that
// checkpointed: one that exits first leaves the WAL whole, and the next
// process to open it reads every frame again (and, past the threshold,
// copies them all back again). So a connection's first k_short_commits
// commits, which are all a single command makes, truncate the WAL once
// it passes k_wal_short_frames: each open then reads at most that many
// frames (`taskq add`, `lease` and `done` cost 3.7-5.5 ms at 1-2 MB of
// WAL against 3.1 ms here), for one checkpoint every dozen commands.
//
// It also tells the processes waiting on a ChangeFeed that the commit is
// visible. Their wake-up from the WAL's write comes before it is (SQLite
// writes the frames, syncs them, then publishes them in the WAL index): a
// reader woken by the write can look too early, and a long-lived writer
// such as `run` may write nothing more for a while. Touching the database
// file after the commit (this hook runs once it is visible) wakes them
// again. The database, not the WAL: a WAL whose inode changed between two
// commits costs the next commit's fdatasync a journal commit (run --stream
// without --prefetch was 8-20% slower), while the database file is synced
// only by a checkpoint.
int on_wal_commit(void* arg, sqlite3* db, const char* name, int frames) {
  if (const char* file = sqlite3_db_filename(db, name);
      file != nullptr && *file != '\0') {
    ::utimensat(AT_FDCWD, file, nullptr, 0);
  }
  auto* state = static_cast<BusyState*>(arg);
  if (state->sync != nullptr) {
    state->sync->committed();
  }
  // Counted no further than needed: `run` may commit for months.
  state->commits = std::min(state->commits + 1, k_short_commits + 1);
  const bool short_lived = state->commits <= k_short_commits;
  if (frames < (short_lived ? k_wal_short_frames : k_wal_restart_frames)) {
    return SQLITE_OK;
  }
  state->no_wait = true;
  sqlite3_wal_checkpoint_v2(db, name,
                            short_lived || frames > k_wal_truncate_frames
                                ? SQLITE_CHECKPOINT_TRUNCATE
                                : SQLITE_CHECKPOINT_RESTART,
                            nullptr, nullptr);
  state->no_wait = false;
  return SQLITE_OK;
}

ErrorKind kind_for(int rc) {
  switch (rc & 0xff) {
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
  case SQLITE_NOTADB:
  case SQLITE_CORRUPT:
  case SQLITE_CANTOPEN:
  case SQLITE_READONLY:
  case SQLITE_PERM:
  case SQLITE_AUTH:
  case SQLITE_FULL:
  case SQLITE_IOERR:
    return ErrorKind::unavailable;
  default:
    return ErrorKind::internal;
  }
}

} // namespace

void SqliteDb::Close::operator()(sqlite3* db) const {
  sqlite3_close_v2(db);
}

SqliteDb::~SqliteDb() {
  m_busy->sync = nullptr;
  m_sync.reset();
  for (auto& [sql, entry] : m_cache) {
    sqlite3_finalize(entry.stmt);
  }
}

uint64_t SqliteDb::prepares() {
  return s_prepares.load(std::memory_order_relaxed);
}

namespace {

// Once per process, before SQLite initializes itself: no allocation
// statistics (taskq reads none), whose upkeep takes a global mutex around
// every malloc and free.
void configure_sqlite() {
  static const bool done = [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return true;
  }();
  (void)done;
}

} // namespace

SqliteDb::SqliteDb(const std::string& path, bool create)
    : Db(Backend::sqlite, path), m_busy(std::make_unique<BusyState>()) {
  configure_sqlite();
  sqlite3* raw = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX;
  if (create) {
    flags |= SQLITE_OPEN_CREATE;
  }
  const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  m_handle.reset(raw);
  if (rc != SQLITE_OK) {
    fail(rc, "cannot open database " + path);
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_handler(raw, on_busy, m_busy.get());
  sqlite3_wal_hook(raw, on_wal_commit, m_busy.get());
}

void SqliteDb::keep_wal_on_close() {
  // Every invocation is a short-lived process: checkpointing the WAL each
  // time the last connection closes would cost two more fsyncs and a WAL
  // re-creation per command. on_wal_commit keeps the WAL short instead.
  sqlite3_db_config(m_handle.get(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1,
                    nullptr);
}

void SqliteDb::enable_wal() {
  const auto deadline = std::chrono::steady_clock::now()
                        + std::chrono::milliseconds(m_busy->timeout_ms);
  while (true) {
    const int rc = sqlite3_exec(m_handle.get(), "PRAGMA journal_mode = WAL",
                                nullptr, nullptr, nullptr);
    const int primary = rc & 0xff;
    if (rc == SQLITE_OK) {
      return;
    }
    if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED)
        || std::chrono::steady_clock::now() >= deadline) {
      fail(rc, "cannot switch " + path() + " to WAL mode");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void SqliteDb::fail(int rc, std::string_view context) const {
  std::string message(context.empty() ? "database error" : context);
  const char* why =
      m_handle ? sqlite3_errmsg(m_handle.get()) : sqlite3_errstr(rc);
  if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) {
    why = "database is locked past the busy timeout";
  }
  const int primary = rc & 0xff;
  if (primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY
      || primary == SQLITE_PERM || primary == SQLITE_IOERR) {
    // "unable to open database file" says nothing of why: a permission
    // usually, which is said in words, naming the file.
    const std::string problem = permission_problem(path());
    if (!problem.empty()) {
      throw Error(ErrorKind::unavailable,
                  message + ": permission denied: " + problem);
    }
  }
  message += ": ";
  message += why;
  if (context.find(path()) == std::string_view::npos) {
    message += " (database " + path() + ")";
  }
  throw Error(kind_for(rc), message);
}

void SqliteDb::exec(const char* sql, std::string_view context) {
  ++s_prepares; // at least one
  char* err = nullptr;
  const int rc = sqlite3_exec(m_handle.get(), sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) {
    fail(rc, context);
  }
}

std::optional<int64_t> SqliteDb::others_version() {
  try {
    const auto st = prepare("PRAGMA data_version"); // cached after the first
    if (!st->step()) {
      return std::nullopt;
    }
    return st->get_int(0);
  } catch (const Error&) {
    return std::nullopt;
  }
}

void SqliteDb::begin(TxKind kind) {
  run_cached(kind == TxKind::write ? "BEGIN IMMEDIATE" : "BEGIN",
             "cannot start a transaction");
}

void SqliteDb::commit() {
  run_cached("COMMIT", "cannot commit");
}

bool SqliteDb::defer_sync() {
  if (m_sync) {
    return true;
  }
  const char* wal =
      sqlite3_filename_wal(sqlite3_db_filename(m_handle.get(), "main"));
  bool in_wal = false;
  if (wal != nullptr && *wal != '\0') {
    const auto st = prepare("PRAGMA journal_mode");
    in_wal = st->step() && st->get_text(0) == "wal";
  }
  if (!in_wal) {
    return false; // in memory, or a rollback journal: commits stay synced
  }
  try {
    m_sync = std::make_unique<WalSync>(wal);
  } catch (const std::exception&) {
    return false; // no thread, no eventfd: commits stay synced
  }
  try {
    exec("PRAGMA synchronous = NORMAL", "cannot configure " + path());
  } catch (...) {
    m_sync.reset();
    throw;
  }
  m_busy->sync = m_sync.get();
  return true;
}

uint64_t SqliteDb::commit_seq() const {
  return m_sync ? m_sync->committed_count() : 0;
}

bool SqliteDb::durable(uint64_t seq) const {
  return !m_sync || m_sync->synced(seq);
}

int SqliteDb::durable_fd() const {
  return m_sync ? m_sync->event_fd() : -1;
}

bool SqliteDb::wait_durable(uint64_t seq) {
  return m_sync && m_sync->wait(seq);
}

void SqliteDb::rollback() noexcept {
  try {
    run_cached("ROLLBACK", "cannot roll back");
  } catch (...) {
    // Nothing to roll back (SQLite already did, after some errors), or it
    // failed: the connection ends the transaction when it closes.
  }
}

std::optional<int64_t> SqliteDb::last_insert_id() const {
  return sqlite3_last_insert_rowid(handle());
}

} // namespace taskq::storage
