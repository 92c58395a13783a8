#include "storage/task_store.hpp"

#include "core/error.hpp"
#include "storage/db.hpp"
#include "storage/migrations.hpp"
#include "storage/store_detail.hpp"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <string_view>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

namespace taskq::storage {

using core::Message;
using core::Millis;
using core::Task;
using core::TaskState;
using core::Time;
using core::to_unix_ms;
using namespace detail;

namespace detail {

// The eligibility test shared by leasing, `list --state ready` and stats;
// its first terms are the tasks_ready partial index's WHERE clause, so the
// planner can use that index.
constexpr std::string_view k_ready_where =
    "lease_token IS NULL AND state IN ('runnable', 'sleeping') AND blockers = "
    "0 AND broadcast_until IS NULL "
    "AND run_at <= ?2";

std::string join(std::string_view a, std::string_view b) {
  std::string out(a);
  out += b;
  return out;
}

std::string labels_to_json(const core::Labels& labels) {
  return nlohmann::json(labels).dump();
}

core::Labels labels_from_json(const std::optional<std::string>& text) {
  if (!text || text->empty()) {
    return {};
  }
  return nlohmann::json::parse(*text).get<core::Labels>();
}

std::optional<Millis> opt_millis(const std::optional<int64_t>& ms) {
  if (!ms) {
    return std::nullopt;
  }
  return Millis(*ms);
}

std::optional<int64_t> opt_ms(const std::optional<Millis>& d) {
  if (!d) {
    return std::nullopt;
  }
  return d->count();
}

std::optional<int> opt_int(const std::optional<int64_t>& v) {
  if (!v) {
    return std::nullopt;
  }
  return static_cast<int>(*v);
}

std::optional<int64_t> opt_int64(const std::optional<int>& v) {
  if (!v) {
    return std::nullopt;
  }
  return *v;
}

std::optional<std::string> opt_backoff(const std::optional<core::Backoff>& b) {
  if (!b) {
    return std::nullopt;
  }
  return std::string(core::to_string(*b));
}

// Reads a row selected with k_task_columns (errors are loaded separately).
Task read_task(const Statement& st) {
  Task t;
  t.id = st.get_int(0);
  t.rev = st.get_int(1);
  t.queue = st.get_text(2);
  t.state = core::parse_state(st.get_text(3)).value_or(TaskState::fault);
  t.payload = st.get_text(4);
  t.labels = labels_from_json(st.get_opt_text(5));
  t.priority = st.get_int(6);
  t.attempts = st.get_int(7);
  t.max_attempts = st.get_opt_int(8);
  t.run_at = core::from_unix_ms(st.get_int(9));
  t.created_at = core::from_unix_ms(st.get_int(10));
  t.updated_at = core::from_unix_ms(st.get_int(11));
  if (!st.is_null(12)) {
    t.lease = core::Lease{st.get_text(12), st.get_text(13),
                          core::from_unix_ms(st.get_int(14))};
  }
  t.checkpoint = st.get_opt_text(15);
  t.checkpoint_requested = st.get_int(16) != 0;
  t.result = st.get_opt_text(17);
  t.reason = st.get_opt_text(18).value_or("");
  t.policy.max_errors = opt_int(st.get_opt_int(19));
  t.policy.window = opt_millis(st.get_opt_int(20));
  t.policy.retry_delay = opt_millis(st.get_opt_int(21));
  if (auto b = st.get_opt_text(22)) {
    t.policy.backoff = core::parse_backoff(*b);
  }
  t.policy.max_delay = opt_millis(st.get_opt_int(23));
  t.retry_of = st.get_opt_int(24);
  t.unique_key = st.get_opt_text(25);
  if (auto after = st.get_opt_text(26)) {
    t.after = nlohmann::json::parse(*after).get<std::vector<int64_t>>();
  }
  t.waiting = st.get_int(27) > 0;
  t.root = labels_from_json(st.get_opt_text(28));
  t.to_worker = st.get_opt_text(29);
  if (auto until = st.get_opt_int(30)) {
    t.broadcast_until = core::from_unix_ms(*until);
  }
  t.trigger = st.get_opt_text(31);
  t.schedule = st.get_opt_text(32);
  t.gate = st.get_opt_text(33);
  t.sync = labels_from_json(st.get_opt_text(34));
  return t;
}

std::string random_token() {
  static std::random_device device;
  std::array<uint32_t, 4> words{};
  for (auto& w : words) {
    w = device();
  }
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out;
  for (uint32_t w : words) {
    for (int shift = 28; shift >= 0; shift -= 4) {
      out += k_hex[(w >> shift) & 0xf];
    }
  }
  return out;
}

std::string task_ref(int64_t id) {
  return "task " + std::to_string(id);
}

// Creates the folders of `path` that are missing, mode 0700 (whatever the
// umask), like the database file's 0600.
void create_private_folders(const std::string& path) {
  const std::filesystem::path parent =
      std::filesystem::path(path).parent_path();
  std::filesystem::path at;
  for (const auto& part : parent) {
    at /= part;
    if (::mkdir(at.c_str(), 0700) != 0 && errno != EEXIST) {
      throw Error(ErrorKind::unavailable, "cannot create folder " + at.string()
                                              + ": " + std::strerror(errno));
    }
  }
}

// Creates `path`'s folder and the file itself with mode 0600 when missing,
// so SQLite (and its -wal/-shm files, which copy the mode) never makes it
// world-readable.
// Creates the file at `path` (mode 0600); false when another process made
// it first.
bool create_private_file(const std::string& path) {
  create_private_folders(path);
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST) {
    throw Error(ErrorKind::unavailable,
                "cannot create database " + path + ": " + std::strerror(errno));
  }
  if (fd >= 0) {
    ::close(fd);
  }
  return fd >= 0;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// What a file that exists at a database path is, when it is not a regular
// file (SQLite would write a -journal beside it): "" for a regular file.
std::string not_a_file(const struct stat& st) {
  if (S_ISREG(st.st_mode)) {
    return "";
  }
  if (S_ISDIR(st.st_mode)) {
    return "a folder";
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    return "a device";
  }
  if (S_ISFIFO(st.st_mode)) {
    return "a fifo";
  }
  if (S_ISSOCK(st.st_mode)) {
    return "a socket";
  }
  return "not a regular file";
}

} // namespace detail

int latest_schema_version() {
  return migrations().back().version;
}

// ---------------------------------------------------------------------------
// Shared helpers over one connection. They assume a transaction is open.
// ---------------------------------------------------------------------------
namespace detail {

int read_user_version(Db& db) {
  Statement st(db, "PRAGMA user_version");
  st.step();
  return static_cast<int>(st.get_int(0));
}

// taskq's mark in a database file's header (PRAGMA application_id):
// "tskq". Set with every migration, so a new database carries it from the
// first commit that gives it tables.
constexpr int k_application_id = 0x74736b71;

void apply_migrations(Db& db) {
  for (const auto& m : migrations()) {
    Transaction tx(db);
    // Another process may have migrated since we looked.
    if (read_user_version(db) >= m.version) {
      continue;
    }
    db.exec(std::string(m.sql).c_str(),
            "cannot apply migration " + std::string(m.name));
    db.exec(("PRAGMA user_version = " + std::to_string(m.version)
             + "; PRAGMA application_id = " + std::to_string(k_application_id))
                .c_str(),
            "cannot record the schema version");
    tx.commit();
  }
}

// Whose the database open on `db` is, read without writing anything.
enum class Owner { taskq, empty, other };

Owner owner_of(Db& db) {
  Transaction tx(db, Transaction::Kind::read);
  Statement st(db, "SELECT (SELECT application_id FROM pragma_application_id), "
                   "(SELECT user_version FROM pragma_user_version), "
                   "(SELECT count(*) FROM sqlite_schema), "
                   "(SELECT count(*) FROM sqlite_schema WHERE type = 'table' "
                   "AND name IN ('tasks', 'queues', 'task_errors', 'events'))");
  st.step();
  const int64_t app = st.get_int(0);
  const int64_t version = st.get_int(1);
  const int64_t objects = st.get_int(2);
  const int64_t taskq_tables = st.get_int(3);
  if (app == k_application_id) {
    return Owner::taskq;
  }
  if (app != 0) {
    return Owner::other;
  }
  if (objects == 0 && version == 0) {
    return Owner::empty;
  }
  // Made before taskq marked its files: its schema version and the tables
  // of its first migration.
  if (version > 0 && taskq_tables == 4) {
    return Owner::taskq;
  }
  return Owner::other;
}

std::optional<Task> load_task(Db& db, int64_t id) {
  Statement st(
      db, join(join("SELECT ", k_task_columns), " FROM tasks WHERE id = ?1"));
  st.bind(1, id);
  if (!st.step()) {
    return std::nullopt;
  }
  return read_task(st);
}

std::vector<core::ErrorEntry> load_errors(Db& db, int64_t id) {
  Statement st(db, "SELECT time, message FROM task_errors WHERE task_id = ?1 "
                   "ORDER BY time, rowid");
  st.bind(1, id);
  std::vector<core::ErrorEntry> out;
  while (st.step()) {
    out.push_back({core::from_unix_ms(st.get_int(0)), st.get_text(1)});
  }
  return out;
}

Task load_full(Db& db, int64_t id) {
  auto task = load_task(db, id);
  if (!task) {
    throw Error(ErrorKind::not_found, "no " + task_ref(id));
  }
  task->errors = load_errors(db, id);
  return *task;
}

QueueRow load_queue(Db& db, const std::string& name) {
  Statement st(db, "SELECT paused, max_running, max_attempts, max_errors, "
                   "error_window_ms, retry_delay_ms, backoff, max_delay_ms "
                   "FROM queues WHERE name = ?1");
  st.bind(1, name);
  QueueRow q;
  if (!st.step()) {
    return q;
  }
  q.paused = st.get_int(0) != 0;
  q.max_running = st.get_opt_int(1);
  q.max_attempts = st.get_opt_int(2);
  q.policy.max_errors = opt_int(st.get_opt_int(3));
  q.policy.window = opt_millis(st.get_opt_int(4));
  q.policy.retry_delay = opt_millis(st.get_opt_int(5));
  if (auto b = st.get_opt_text(6)) {
    q.policy.backoff = core::parse_backoff(*b);
  }
  q.policy.max_delay = opt_millis(st.get_opt_int(7));
  return q;
}

void bump_queue_counter(Db& db, const std::string& queue, QueueCounter c,
                        int64_t by) {
  const char* sql =
      c == QueueCounter::errors
          ? "INSERT INTO queues (name, errors_total) VALUES (?1, ?2) "
            "ON CONFLICT (name) DO UPDATE SET errors_total = errors_total + ?2"
          : "INSERT INTO queues (name, leases_expired_total) VALUES (?1, ?2) "
            "ON CONFLICT (name) DO UPDATE SET "
            "leases_expired_total = leases_expired_total + ?2";
  Statement(db, sql).bind(1, queue).bind(2, by).run();
}

void log_event(Db& db, int64_t task_id, Time now, std::string_view message,
               std::optional<TaskState> from, std::optional<TaskState> to,
               std::string_view actor, std::string_view detail) {
  Statement st(db, "INSERT INTO events (task_id, time, message, from_state, "
                   "to_state, actor, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
                   "?7)");
  st.bind(1, task_id).bind(2, to_unix_ms(now)).bind(3, message);
  if (from) {
    st.bind(4, core::to_string(*from));
  } else {
    st.bind_null(4);
  }
  if (to) {
    st.bind(5, core::to_string(*to));
  } else {
    st.bind_null(5);
  }
  st.bind(6, actor);
  if (detail.empty()) {
    st.bind_null(7);
  } else {
    st.bind(7, detail);
  }
  st.run();
}

void append_error(Db& db, int64_t task_id, Time now, std::string_view message,
                  int64_t keep) {
  Statement(db, "INSERT INTO task_errors (task_id, time, message) "
                "VALUES (?1, ?2, ?3)")
      .bind(1, task_id)
      .bind(2, to_unix_ms(now))
      .bind(3, message)
      .run();
  Statement(db, "DELETE FROM task_errors WHERE task_id = ?1 AND rowid NOT IN "
                "(SELECT rowid FROM task_errors WHERE task_id = ?1 "
                "ORDER BY time DESC, rowid DESC LIMIT ?2)")
      .bind(1, task_id)
      .bind(2, keep)
      .run();
}

// Clears the task's lease; when `revoked_by` is set, remembers the token and
// why it was revoked so the worker can be told.
void clear_lease(Db& db, const Task& task,
                 const std::optional<std::string>& revoked_by) {
  Statement st(db, "UPDATE tasks SET lease_token = NULL, lease_worker = NULL, "
                   "lease_expires = NULL, revoked_token = coalesce(?2, "
                   "revoked_token), revoked_reason = coalesce(?3, "
                   "revoked_reason) WHERE id = ?1");
  st.bind(1, task.id);
  if (revoked_by && task.lease) {
    st.bind(2, task.lease->token).bind(3, *revoked_by);
  } else {
    st.bind_null(2).bind_null(3);
  }
  st.run();
}

// What follows a task's end: its dependents, gates, the label index.
void settle_finished(Db& db, int64_t id, TaskState state, Time now);

void set_state(Db& db, int64_t id, TaskState state, Time now) {
  Statement(db, "UPDATE tasks SET state = ?2, rev = rev + 1, updated_at = ?3 "
                "WHERE id = ?1")
      .bind(1, id)
      .bind(2, core::to_string(state))
      .bind(3, to_unix_ms(now))
      .run();
  if (core::is_terminal(state)) {
    settle_finished(db, id, state, now);
  }
}

void set_reason(Db& db, int64_t id, std::string_view reason) {
  Statement(db, "UPDATE tasks SET reason = ?2 WHERE id = ?1")
      .bind(1, id)
      .bind(2, reason)
      .run();
}

void set_run_at(Db& db, int64_t id, Time at) {
  Statement(db, "UPDATE tasks SET run_at = ?2 WHERE id = ?1")
      .bind(1, id)
      .bind(2, to_unix_ms(at))
      .run();
}

// "<message> by <actor>" when an operator revoked `token` on task `id`.
std::optional<std::string> find_revoked(Db& db, int64_t id,
                                        const std::string& token) {
  Statement st(db, "SELECT revoked_reason FROM tasks WHERE id = ?1 AND "
                   "revoked_token = ?2");
  st.bind(1, id).bind(2, token);
  if (!st.step()) {
    return std::nullopt;
  }
  return st.get_text(0);
}

std::string refusal(const Task& task, Message msg) {
  return "cannot " + std::string(core::to_string(msg)) + " " + task_ref(task.id)
         + ": it is " + std::string(core::to_string(task.state));
}

// Loads a task for a worker write: it must exist (not_found) and `token`
// must be its live lease (conflict, naming who revoked it when known).
Task require_lease(Db& db, int64_t id, const std::string& token, Time now) {
  Task task = load_full(db, id);
  if (task.lease && task.lease->token == token) {
    if (task.lease->live(now)) {
      return task;
    }
    throw Error(ErrorKind::conflict,
                "lease lost: the lease on " + task_ref(id) + " expired at "
                    + core::format_time(task.lease->expires_at));
  }
  if (const auto revoked = find_revoked(db, id, token)) {
    throw Error(ErrorKind::conflict, "lease lost: " + task_ref(id)
                                         + " was revoked (" + *revoked + ")");
  }
  if (task.leased(now)) {
    throw Error(ErrorKind::conflict, "lease lost: " + task_ref(id)
                                         + " is leased by another worker ("
                                         + task.lease->worker + ")");
  }
  throw Error(ErrorKind::conflict,
              "lease lost: " + task_ref(id) + " is not leased with this token");
}

} // namespace detail

// ---------------------------------------------------------------------------
// Opening and migrations
// ---------------------------------------------------------------------------

namespace {

// Opens the regular file at `path` for taskq: refuses another program's
// database and one newer than this binary; initialises an empty file and
// migrates an older one.
std::unique_ptr<Db> open_file(const std::string& path) {
  auto db = std::make_unique<Db>(path, false);
  if (file_exists(path + "-wal")) {
    // Closing would checkpoint a WAL that is already there into the file:
    // another program's must stay as found.
    db->keep_wal_on_close();
  }
  // Only reads until the file is known to be taskq's or empty: another
  // program's database is left byte for byte as it was.
  const Owner owner = owner_of(*db);
  if (owner == Owner::other) {
    throw Error(ErrorKind::unavailable,
                "cannot use database " + path
                    + ": it is not a taskq database (it holds another "
                      "program's tables); give taskq a file of its own");
  }
  db->keep_wal_on_close();
  // FULL: a command that returned has its change on disk, also across a
  // power loss (NORMAL in WAL mode may lose the last commits).
  db->exec("PRAGMA synchronous = FULL", "cannot configure " + path);
  const int version = read_user_version(*db);
  if (version > latest_schema_version()) {
    throw Error(ErrorKind::unavailable,
                "cannot use database " + path + ": its schema version "
                    + std::to_string(version)
                    + " is newer than this taskq understands ("
                    + std::to_string(latest_schema_version())
                    + "); upgrade taskq");
  }
  if (version < latest_schema_version()) {
    if (owner == Owner::empty) {
      // WAL lets readers run while a writer commits; the mode is stored in
      // the file, so it is set once, when taskq first creates the schema.
      db->enable_wal();
    }
    apply_migrations(*db);
  }
  return db;
}

} // namespace

TaskStore::TaskStore(const std::string& path, OpenMode mode, Clock clock)
    : m_clock(std::move(clock)) {
  // Decided before SQLite opens anything: it would write a -journal beside
  // a device such as /dev/null.
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists) {
    if (const std::string what = not_a_file(st); !what.empty()) {
      throw Error(ErrorKind::unavailable, "cannot use database " + path
                                              + ": it is " + what
                                              + ", not a regular file");
    }
  }
  if (!exists && mode == OpenMode::read) {
    // Reading a database that was never written: an empty one, in memory.
    m_db = std::make_unique<Db>(":memory:", true);
    apply_migrations(*m_db);
    return;
  }
  if (!exists) {
    const bool created = create_private_file(path);
    try {
      m_db = open_file(path);
    } catch (...) {
      // Initialising the file this process made failed (a full disk): take
      // it back, unless another process has begun writing to it (its
      // journal or WAL is there, or the file has grown).
      m_db.reset();
      struct stat now {};
      if (created && ::stat(path.c_str(), &now) == 0 && now.st_size == 0
          && !file_exists(path + "-journal") && !file_exists(path + "-wal")) {
        ::unlink(path.c_str());
      }
      throw;
    }
    return;
  }
  m_db = open_file(path);
}

TaskStore::~TaskStore() = default;

int TaskStore::schema_version() {
  return read_user_version(*m_db);
}

int TaskStore::migrate() {
  apply_migrations(*m_db);
  return read_user_version(*m_db);
}

// ---------------------------------------------------------------------------
// Producing work
// ---------------------------------------------------------------------------

namespace detail {

// A prepared INSERT of `rows` tasks at once, bound once with the
// prototype; only the payloads change from one execution to the next.
// Payload i is parameter k_first_payload + i. Inserting many rows per
// statement runs the per-statement work (cursors on the table and its
// indexes, the AUTOINCREMENT counter) once per batch instead of once per
// row: about 2.5 times fewer instructions for a bulk add.
class Inserter {
public:
  // `blockers` is how many of t.after are unfinished; `state` the state
  // the tasks start in (paused when a dependency already failed).
  Inserter(Db& db, const NewTask& t, Time now, const std::string& actor,
           int rows = 1, int64_t blockers = 0,
           TaskState state = TaskState::runnable)
      : m_st(db, insert_sql(rows)), m_rows(rows) {
    m_st.bind(1, t.queue);
    if (t.labels.empty()) {
      m_st.bind_null(3);
    } else {
      m_st.bind(3, labels_to_json(t.labels));
    }
    m_st.bind(4, t.priority)
        .bind(5, t.max_attempts)
        .bind(6, to_unix_ms(t.run_at.value_or(now)))
        .bind(7, to_unix_ms(now))
        .bind(8, opt_int64(t.policy.max_errors))
        .bind(9, opt_ms(t.policy.window))
        .bind(10, opt_ms(t.policy.retry_delay))
        .bind(11, opt_backoff(t.policy.backoff))
        .bind(12, opt_ms(t.policy.max_delay))
        .bind(13, t.retry_of)
        .bind(14, actor)
        .bind(15, t.to_worker)
        .bind(16, t.trigger)
        .bind(17, t.broadcast_ttl
                      ? std::optional(to_unix_ms(now + *t.broadcast_ttl))
                      : std::nullopt)
        .bind(18, t.root.empty() ? std::nullopt
                                 : std::optional(labels_to_json(t.root)))
        .bind(19, t.after.empty()
                      ? std::nullopt
                      : std::optional(nlohmann::json(t.after).dump()))
        .bind(20, blockers)
        .bind(21, t.unique_key)
        .bind(22, core::to_string(state));
  }

  // Inserts one task per payload (exactly `rows` of them); returns the id
  // of the first. The ids of one statement are consecutive: the write
  // lock is held, and AUTOINCREMENT gives each row the last id plus one.
  int64_t insert(const std::string* payloads, Db& db) {
    for (int i = 0; i < m_rows; ++i) {
      m_st.bind_borrowed(k_first_payload + i, payloads[i]);
    }
    m_st.run();
    m_st.reset();
    return sqlite3_last_insert_rowid(db.handle()) - (m_rows - 1);
  }

  int64_t insert(const std::string& payload, Db& db) {
    return insert(&payload, db);
  }

private:
  static constexpr int k_first_payload = 23;

  static std::string insert_sql(int rows) {
    std::string sql = "INSERT INTO tasks (queue, state, payload, labels, "
                      "priority, max_attempts, run_at, created_at, "
                      "updated_at, max_errors, error_window_ms, "
                      "retry_delay_ms, backoff, max_delay_ms, retry_of, "
                      "created_by, to_worker, trigger_key, broadcast_until, "
                      "root, after_ids, blockers, unique_key) VALUES ";
    for (int i = 0; i < rows; ++i) {
      sql += i == 0 ? "(" : ", (";
      sql += "?1, ?22, ?" + std::to_string(k_first_payload + i)
             + ", ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
               "?15, ?16, ?17, ?18, ?19, ?20, ?21)";
    }
    return sql;
  }

  Statement m_st;
  int m_rows;
};

// Rows per statement of a bulk add: past 64 the gain is under 3%.
constexpr int k_batch_rows = 64;

// Refuses combinations that mean nothing (usage).
void check_new_task(const NewTask& t) {
  if (t.broadcast_ttl
      && (t.to_worker || !t.after.empty() || !t.root.empty() || t.unique_key)) {
    throw Error(ErrorKind::usage, "a broadcast goes to every worker: it takes "
                                  "no --to, --after, --root or --unique");
  }
  if (t.broadcast_ttl && t.broadcast_ttl->count() <= 0) {
    throw Error(ErrorKind::usage, "a broadcast's ttl must be positive");
  }
  for (const int64_t dep : t.after) {
    if (dep <= 0) {
      throw Error(ErrorKind::usage, "--after takes task ids (positive)");
    }
  }
}

// Where a new task's `after` list stands: the unfinished tasks it waits
// for, and the first one that already ended failed or killed.
struct Deps {
  std::vector<int64_t> unfinished;
  std::optional<std::pair<int64_t, TaskState>> broken;
};

Deps check_deps(Db& db, const std::vector<int64_t>& after) {
  Deps deps;
  Statement st(db, "SELECT state FROM tasks WHERE id = ?1");
  for (const int64_t dep : after) {
    st.bind(1, dep);
    if (!st.step()) {
      throw Error(ErrorKind::not_found, "no " + task_ref(dep) + " (--after)");
    }
    const TaskState state =
        core::parse_state(st.get_text(0)).value_or(TaskState::runnable);
    st.reset();
    if (state == TaskState::completed) {
      continue;
    }
    if (core::is_terminal(state)) {
      if (!deps.broken) {
        deps.broken.emplace(dep, state);
      }
    } else if (std::find(deps.unfinished.begin(), deps.unfinished.end(), dep)
               == deps.unfinished.end()) {
      deps.unfinished.push_back(dep);
    }
  }
  return deps;
}

std::string broken_dep_reason(int64_t dep, TaskState state) {
  return "dependency " + std::to_string(dep)
         + (state == TaskState::killed ? " was killed" : " failed");
}

// The rows beside a new task: its labels in task_labels, its unfinished
// dependencies in task_deps, and the reason when it starts paused.
class Companions {
public:
  Companions(Db& db, const NewTask& t, const Deps& deps)
      : m_labels(db, "INSERT OR IGNORE INTO task_labels (key, value, task_id) "
                     "VALUES (?1, ?2, ?3)"),
        m_deps(db, "INSERT OR IGNORE INTO task_deps (dep_id, task_id) "
                   "VALUES (?1, ?2)"),
        m_task(t), m_info(deps) {}

  void add(Db& db, int64_t id, Time now) {
    for (const auto& [key, value] : m_task.labels) {
      m_labels.bind(1, key).bind(2, value).bind(3, id);
      m_labels.run();
      m_labels.reset();
    }
    if (m_info.broken) {
      const auto [dep, state] = *m_info.broken;
      set_reason(db, id, broken_dep_reason(dep, state));
      log_event(db, id, now, "pause", TaskState::runnable, TaskState::paused,
                k_system_actor, broken_dep_reason(dep, state));
      return;
    }
    for (const int64_t dep : m_info.unfinished) {
      m_deps.bind(1, dep).bind(2, id);
      m_deps.run();
      m_deps.reset();
    }
  }

  int64_t blockers() const {
    return m_info.broken ? 0 : static_cast<int64_t>(m_info.unfinished.size());
  }
  TaskState state() const {
    return m_info.broken ? TaskState::paused : TaskState::runnable;
  }

private:
  Statement m_labels;
  Statement m_deps;
  const NewTask& m_task;
  const Deps& m_info;
};

// Adds one task with everything beside it; returns its id.
int64_t insert_task(Db& db, const NewTask& t, Time now,
                    const std::string& actor) {
  check_new_task(t);
  const Deps deps = check_deps(db, t.after);
  Companions companions(db, t, deps);
  Inserter ins(db, t, now, actor, 1, companions.blockers(), companions.state());
  const int64_t id = ins.insert(t.payload, db);
  companions.add(db, id, now);
  return id;
}

// The first unfinished task other than `self` that has every label of
// `root`, if any: the task that makes a `--root` task obsolete.
std::optional<int64_t> obsoleted_by(Db& db, const core::Labels& root,
                                    int64_t self) {
  if (root.empty()) {
    return std::nullopt;
  }
  const auto& [key, value] = *root.begin();
  Statement first(db, "SELECT task_id FROM task_labels WHERE key = ?1 "
                      "AND value = ?2 AND task_id <> ?3 ORDER BY task_id");
  Statement has(db, "SELECT 1 FROM task_labels WHERE key = ?1 AND value = ?2 "
                    "AND task_id = ?3");
  first.bind(1, key).bind(2, value).bind(3, self);
  while (first.step()) {
    const int64_t other = first.get_int(0);
    bool all = true;
    for (auto it = std::next(root.begin()); all && it != root.end(); ++it) {
      has.bind(1, it->first).bind(2, it->second).bind(3, other);
      all = has.step();
      has.reset();
    }
    if (all) {
      return other;
    }
  }
  return std::nullopt;
}

std::vector<std::string> strings_from_json(const std::string& text) {
  return nlohmann::json::parse(text).get<std::vector<std::string>>();
}

// A completed task with `--trigger key` covers that key on every gate that
// has it; a gate with all its keys covered emits its task and re-arms.
void cover_gates(Db& db, const std::string& key, Time now) {
  std::vector<std::tuple<std::string, std::vector<std::string>,
                         std::vector<std::string>>>
      touched;
  {
    Statement st(db, "SELECT name, keys, covered FROM gates ORDER BY name");
    while (st.step()) {
      auto keys = strings_from_json(st.get_text(1));
      if (std::binary_search(keys.begin(), keys.end(), key)) {
        touched.emplace_back(st.get_text(0), std::move(keys),
                             strings_from_json(st.get_text(2)));
      }
    }
  }
  for (auto& [name, keys, covered] : touched) {
    if (!std::binary_search(covered.begin(), covered.end(), key)) {
      covered.insert(std::upper_bound(covered.begin(), covered.end(), key),
                     key);
    }
    if (covered != keys) {
      Statement(db, "UPDATE gates SET covered = ?2 WHERE name = ?1")
          .bind(1, name)
          .bind(2, nlohmann::json(covered).dump())
          .run();
      continue;
    }
    NewTask emit;
    {
      Statement st(db, "SELECT queue, payload, labels, priority FROM gates "
                       "WHERE name = ?1");
      st.bind(1, name);
      st.step();
      emit.queue = st.get_text(0);
      emit.payload = st.get_text(1);
      emit.labels = labels_from_json(st.get_opt_text(2));
      emit.priority = st.get_int(3);
    }
    const int64_t id = insert_task(db, emit, now, "gate:" + name);
    Statement(db, "UPDATE tasks SET gate = ?2 WHERE id = ?1")
        .bind(1, id)
        .bind(2, name)
        .run();
    Statement(db, "UPDATE gates SET covered = '[]', emitted = emitted + 1, "
                  "last_task = ?2 WHERE name = ?1")
        .bind(1, name)
        .bind(2, id)
        .run();
  }
}

void settle_finished(Db& db, int64_t id, TaskState state, Time now) {
  core::Labels labels;
  std::optional<std::string> trigger;
  {
    Statement st(db, "SELECT labels, trigger_key FROM tasks WHERE id = ?1");
    st.bind(1, id);
    st.step();
    labels = labels_from_json(st.get_opt_text(0));
    trigger = st.get_opt_text(1);
  }
  {
    Statement drop(db, "DELETE FROM task_labels WHERE key = ?1 AND value = ?2 "
                       "AND task_id = ?3");
    for (const auto& [key, value] : labels) {
      drop.bind(1, key).bind(2, value).bind(3, id);
      drop.run();
      drop.reset();
    }
  }
  // Dependents still waiting: one fewer to wait for, or, when this one did
  // not complete, paused for an operator to decide.
  std::vector<std::pair<int64_t, TaskState>> waiting;
  {
    Statement st(db, "SELECT t.id, t.state FROM task_deps d JOIN tasks t "
                     "ON t.id = d.task_id WHERE d.dep_id = ?1 "
                     "AND t.blockers > 0 ORDER BY t.id");
    st.bind(1, id);
    while (st.step()) {
      waiting.emplace_back(
          st.get_int(0),
          core::parse_state(st.get_text(1)).value_or(TaskState::runnable));
    }
  }
  for (const auto& [dependent, dep_state] : waiting) {
    if (state == TaskState::completed) {
      Statement(db, "UPDATE tasks SET blockers = blockers - 1, "
                    "rev = rev + 1, updated_at = ?2 WHERE id = ?1")
          .bind(1, dependent)
          .bind(2, to_unix_ms(now))
          .run();
      continue;
    }
    const std::string reason = broken_dep_reason(id, state);
    Statement(db, "UPDATE tasks SET blockers = 0, state = 'paused', "
                  "reason = ?2, rev = rev + 1, updated_at = ?3 WHERE id = ?1")
        .bind(1, dependent)
        .bind(2, reason)
        .bind(3, to_unix_ms(now))
        .run();
    log_event(db, dependent, now, "pause", dep_state, TaskState::paused,
              k_system_actor, reason);
  }
  if (state == TaskState::completed && trigger) {
    cover_gates(db, *trigger, now);
  }
}

core::Event creation_event(int64_t task_id, Time created_at, std::string actor,
                           std::optional<int64_t> retry_of) {
  core::Event e;
  e.task_id = task_id;
  e.time = created_at;
  e.message = "add";
  e.to = core::to_string(TaskState::runnable);
  e.actor = std::move(actor);
  if (retry_of) {
    e.detail = "retry of " + task_ref(*retry_of);
  }
  return e;
}

core::Event read_event(const Statement& st) {
  core::Event e;
  e.id = st.get_int(0);
  e.task_id = st.get_int(1);
  e.time = core::from_unix_ms(st.get_int(2));
  e.message = st.get_text(3);
  e.from = st.get_opt_text(4).value_or("");
  e.to = st.get_opt_text(5).value_or("");
  e.actor = st.get_opt_text(6).value_or("");
  e.detail = st.get_opt_text(7).value_or("");
  return e;
}

} // namespace detail

int64_t TaskStore::add(const NewTask& task, Time now,
                       const std::string& actor) {
  return add_unique(task, now, actor).id;
}

Added TaskStore::add_unique(const NewTask& task, Time now,
                            const std::string& actor) {
  check_new_task(task);
  Transaction tx(*m_db);
  now = locked_now(now);
  if (task.unique_key) {
    Statement st(*m_db, "SELECT id FROM tasks INDEXED BY tasks_unique "
                        "WHERE queue = ?1 AND unique_key = ?2 "
                        "AND unique_key IS NOT NULL "
                        "AND state NOT IN ('completed', 'failed', 'killed') "
                        "ORDER BY id LIMIT 1");
    st.bind(1, task.queue).bind(2, *task.unique_key);
    if (st.step()) {
      return {st.get_int(0), true, std::nullopt};
    }
  }
  if (const auto by = obsoleted_by(*m_db, task.root, 0)) {
    return {0, false, by};
  }
  const int64_t id = insert_task(*m_db, task, now, actor);
  tx.commit();
  return {id, false, std::nullopt};
}

int64_t TaskStore::add_many(const NewTask& proto,
                            const std::function<bool(std::string&)>& next,
                            const std::function<void(int64_t)>& on_id, Time now,
                            const std::string& actor) {
  check_new_task(proto);
  if (proto.unique_key || !proto.root.empty() || proto.broadcast_ttl) {
    throw Error(ErrorKind::usage, "a bulk add takes no --unique, --root or "
                                  "--broadcast: add those one by one");
  }
  Transaction tx(*m_db);
  now = locked_now(now);
  const Deps deps = check_deps(*m_db, proto.after);
  Companions companions(*m_db, proto, deps);
  // Labels and dependencies take rows of their own; without them a bulk
  // add writes nothing but its tasks.
  const bool companion_rows =
      !proto.labels.empty() || !deps.unfinished.empty() || deps.broken;
  // The payloads of one batch; their buffers are reused batch after batch.
  std::array<std::string, k_batch_rows> batch;
  std::optional<Inserter> many;
  int64_t count = 0;
  const auto report = [&](int64_t first, int rows) {
    for (int i = 0; i < rows; ++i) {
      if (companion_rows) {
        companions.add(*m_db, first + i, now);
      }
      if (on_id) {
        on_id(first + i);
      }
    }
    count += rows;
  };
  int filled = 0;
  while (next(batch[static_cast<size_t>(filled)])) {
    if (++filled == k_batch_rows) {
      if (!many) {
        many.emplace(*m_db, proto, now, actor, k_batch_rows,
                     companions.blockers(), companions.state());
      }
      report(many->insert(batch.data(), *m_db), k_batch_rows);
      filled = 0;
    }
  }
  if (filled > 0) {
    Inserter one(*m_db, proto, now, actor, 1, companions.blockers(),
                 companions.state());
    for (int i = 0; i < filled; ++i) {
      report(one.insert(batch[static_cast<size_t>(i)], *m_db), 1);
    }
  }
  tx.commit();
  return count;
}

std::vector<Task> TaskStore::requeue(const std::string& queue,
                                     const std::string& actor, Time now) {
  Transaction tx(*m_db);
  now = locked_now(now);
  std::vector<std::tuple<int64_t, TaskState, int64_t>> due_later;
  {
    Statement st(*m_db, "SELECT id, state, run_at FROM tasks "
                        "INDEXED BY tasks_ready WHERE queue = ?1 "
                        "AND lease_token IS NULL "
                        "AND state IN ('runnable', 'sleeping') AND blockers = "
                        "0 AND broadcast_until IS NULL "
                        "AND run_at > ?2 ORDER BY id");
    st.bind(1, queue).bind(2, to_unix_ms(now));
    while (st.step()) {
      const auto state = core::parse_state(st.get_text(1));
      due_later.emplace_back(st.get_int(0), state.value_or(TaskState::runnable),
                             st.get_int(2));
    }
  }
  Statement update(*m_db, "UPDATE tasks SET run_at = ?2, rev = rev + 1, "
                          "updated_at = ?2 WHERE id = ?1");
  std::vector<Task> changed;
  for (const auto& [id, state, run_at] : due_later) {
    update.bind(1, id).bind(2, to_unix_ms(now));
    update.run();
    update.reset();
    log_event(*m_db, id, now, "requeue", state, state, actor,
              "due now (was " + core::format_time(core::from_unix_ms(run_at))
                  + ")");
    changed.push_back(load_full(*m_db, id));
  }
  tx.commit();
  return changed;
}

int64_t TaskStore::retry(int64_t id, const std::string& actor, Time now) {
  Transaction tx(*m_db);
  now = locked_now(now);
  const Task old = load_full(*m_db, id);
  if (old.state != TaskState::failed && old.state != TaskState::killed) {
    throw Error(ErrorKind::conflict,
                "cannot retry " + task_ref(id) + ": it is "
                    + std::string(core::to_string(old.state))
                    + " (only failed or killed tasks are retried)");
  }
  NewTask spec;
  spec.queue = old.queue;
  spec.payload = old.payload;
  spec.labels = old.labels;
  spec.priority = old.priority;
  spec.max_attempts = old.max_attempts;
  spec.policy = old.policy;
  spec.retry_of = old.id;
  spec.root = old.root;
  spec.to_worker = old.to_worker;
  spec.trigger = old.trigger;
  const int64_t new_id = insert_task(*m_db, spec, now, actor);
  tx.commit();
  return new_id;
}

// ---------------------------------------------------------------------------
// Leasing
// ---------------------------------------------------------------------------

namespace detail {

// Makes expired leases of `queue` plain unleased tasks again, so they are
// back in the ready index. Costs O(log n) per expired lease.
void reclaim_expired(Db& db, const std::string& queue, Time now) {
  std::vector<std::pair<int64_t, std::string>> expired;
  {
    Statement st(db, "SELECT id, lease_worker FROM tasks WHERE queue = ?1 AND "
                     "lease_token IS NOT NULL AND lease_expires <= ?2");
    st.bind(1, queue).bind(2, to_unix_ms(now));
    while (st.step()) {
      expired.emplace_back(st.get_int(0), st.get_text(1));
    }
  }
  for (const auto& [id, worker] : expired) {
    Statement(db, "UPDATE tasks SET lease_token = NULL, lease_worker = NULL, "
                  "lease_expires = NULL, rev = rev + 1 WHERE id = ?1")
        .bind(1, id)
        .run();
    bump_queue_counter(db, queue, QueueCounter::leases_expired);
    log_event(db, id, now, "expire", TaskState::runnable, TaskState::runnable,
              k_system_actor, "lease of " + worker + " expired");
  }
}

int64_t count_running(Db& db, const std::string& queue, Time now) {
  Statement st(db, "SELECT count(*) FROM tasks WHERE queue = ?1 AND "
                   "lease_token IS NOT NULL AND lease_expires > ?2");
  st.bind(1, queue).bind(2, to_unix_ms(now));
  st.step();
  return st.get_int(0);
}

// The distinct priorities among a queue's unleased runnable and sleeping
// tasks, highest first, one tasks_ready seek each. next_due and
// anything_due look at each priority's run_at range separately, since a
// plain range on run_at, the index's second key, would scan every task.
class PriorityWalk {
public:
  explicit PriorityWalk(Db& db)
      : m_st(db, "SELECT priority FROM tasks INDEXED BY tasks_ready "
                 "WHERE queue = ?1 AND lease_token IS NULL "
                 "AND state IN ('runnable', 'sleeping') AND blockers = 0 AND "
                 "broadcast_until IS NULL AND priority <= ?2 "
                 "ORDER BY priority DESC LIMIT 1") {}

  // Starts over on `queue`.
  void start(const std::string& queue) {
    m_queue = &queue;
    m_below = std::numeric_limits<int64_t>::max();
    m_done = false;
  }

  // The next lower priority, or std::nullopt after the lowest.
  std::optional<int64_t> next() {
    if (m_done) {
      return std::nullopt;
    }
    m_st.bind(1, *m_queue).bind(2, m_below);
    std::optional<int64_t> priority;
    if (m_st.step()) {
      priority = m_st.get_int(0);
    }
    m_st.reset();
    if (!priority || *priority == std::numeric_limits<int64_t>::min()) {
      m_done = true;
    } else {
      m_below = *priority - 1;
    }
    return priority;
  }

private:
  Statement m_st;
  const std::string* m_queue = nullptr;
  int64_t m_below = 0;
  bool m_done = true;
};

// The first task of `queue` in lease order that `worker` may lease now:
// due, unleased, not waiting for dependencies, addressed to any worker or
// to this one, its labels matching `m`. One index seek per distinct
// priority above it, however many tasks wait for a later time.
class Candidates {
public:
  explicit Candidates(Db& db)
      : m_walk(db),
        m_due(db, join(join("SELECT ", k_task_columns),
                       " FROM tasks INDEXED BY tasks_ready WHERE queue = ?1 "
                       "AND lease_token IS NULL AND state IN ('runnable', "
                       "'sleeping') AND blockers = 0 AND broadcast_until IS "
                       "NULL AND priority = ?2 AND run_at <= ?3 "
                       "ORDER BY run_at, id")) {}

  std::optional<Task> first(const std::string& queue,
                            const std::vector<core::LabelPattern>& m,
                            const std::string& worker,
                            const std::vector<int64_t>& skip, Time now) {
    m_walk.start(queue);
    while (const auto priority = m_walk.next()) {
      m_due.bind(1, queue).bind(2, *priority).bind(3, to_unix_ms(now));
      while (m_due.step()) {
        Task t = read_task(m_due);
        if ((!t.to_worker || *t.to_worker == worker)
            && core::matches(t.labels, m)
            && std::find(skip.begin(), skip.end(), t.id) == skip.end()) {
          m_due.reset();
          return t;
        }
      }
      m_due.reset();
    }
    return std::nullopt;
  }

private:
  PriorityWalk m_walk;
  Statement m_due;
};

// Hands `worker` the broadcasts of `queue` it has not had yet, up to
// `room` of them, each with a token of its own; ends those past their ttl.
void deliver_broadcasts(Db& db, const std::string& queue,
                        const LeaseRequest& req, size_t room, Time now,
                        std::vector<Task>& out) {
  std::vector<Task> live;
  {
    Statement st(db, join(join("SELECT ", k_task_columns),
                          " FROM tasks INDEXED BY tasks_broadcast "
                          "WHERE queue = ?1 AND broadcast_until IS NOT NULL "
                          "AND state = 'runnable' ORDER BY id"));
    st.bind(1, queue);
    while (st.step()) {
      live.push_back(read_task(st));
    }
  }
  Statement deliver(db, "INSERT OR IGNORE INTO deliveries (task_id, worker, "
                        "token, time) VALUES (?1, ?2, ?3, ?4)");
  for (Task& t : live) {
    if (*t.broadcast_until <= now) {
      set_state(db, t.id, TaskState::completed, now);
      set_reason(db, t.id, "broadcast ended");
      log_event(db, t.id, now, "complete", TaskState::runnable,
                TaskState::completed, k_system_actor,
                "broadcast ended at " + core::format_time(*t.broadcast_until));
      continue;
    }
    if (room == 0 || !core::matches(t.labels, req.match)) {
      continue;
    }
    const std::string token = random_token();
    deliver.bind(1, t.id)
        .bind(2, req.worker)
        .bind(3, token)
        .bind(4, to_unix_ms(now));
    deliver.run();
    deliver.reset();
    if (sqlite3_changes(db.handle()) == 0) {
      continue; // this worker has had it
    }
    log_event(db, t.id, now, "lease", TaskState::runnable, TaskState::runnable,
              req.worker, "broadcast delivery");
    Task copy = load_full(db, t.id);
    copy.lease = core::Lease{token, req.worker, now + req.lease_for};
    out.push_back(std::move(copy));
    --room;
  }
}

// A worker's write with the token of a broadcast delivery: logged as
// `message`, the task unchanged (a broadcast needs no done). std::nullopt
// when `token` is not a delivery of task `id`.
std::optional<Task> delivery_write(Db& db, int64_t id, const std::string& token,
                                   Time now, std::string_view message,
                                   std::string_view detail) {
  std::string worker;
  {
    Statement st(db, "SELECT worker FROM deliveries WHERE task_id = ?1 "
                     "AND token = ?2");
    st.bind(1, id).bind(2, token);
    if (!st.step()) {
      return std::nullopt;
    }
    worker = st.get_text(0);
  }
  Task t = load_full(db, id);
  if (t.state != TaskState::runnable) {
    // Paused, killed, or ended: the delivery is over, as a revoked lease
    // is.
    throw Error(ErrorKind::conflict,
                "lease lost: broadcast " + task_ref(id) + " is "
                    + std::string(core::to_string(t.state)));
  }
  if (t.broadcast_until && *t.broadcast_until <= now) {
    throw Error(ErrorKind::conflict,
                "lease lost: broadcast " + task_ref(id) + " ended at "
                    + core::format_time(*t.broadcast_until));
  }
  log_event(db, id, now, message, t.state, t.state, worker,
            detail.empty() ? std::string("broadcast delivery")
                           : "broadcast delivery: " + std::string(detail));
  t.lease = core::Lease{token, worker, now};
  return t;
}

bool lease_order_before(const Task& a, const Task& b) {
  if (a.priority != b.priority) {
    return a.priority > b.priority;
  }
  if (a.run_at != b.run_at) {
    return a.run_at < b.run_at;
  }
  return a.id < b.id;
}

} // namespace detail

std::vector<Task> TaskStore::lease(const LeaseRequest& req, Time now) {
  Transaction tx(*m_db);
  now = locked_now(now);
  struct Source {
    std::string queue;
    QueueRow settings;
    int64_t capacity; // how many more it may lease (max-running)
  };
  std::vector<Source> sources;
  std::vector<std::string> queues = req.queues;
  std::sort(queues.begin(), queues.end());
  queues.erase(std::unique(queues.begin(), queues.end()), queues.end());
  std::vector<Task> leased;
  for (const auto& q : queues) {
    QueueRow row = load_queue(*m_db, q);
    if (row.paused) {
      continue;
    }
    reclaim_expired(*m_db, q, now);
    emit_schedules(*m_db, &q, now);
    const size_t room =
        static_cast<size_t>(std::max(req.count, 0)) - leased.size();
    deliver_broadcasts(*m_db, q, req, room, now, leased);
    int64_t capacity = req.count;
    if (row.max_running) {
      capacity =
          std::max<int64_t>(0, *row.max_running - count_running(*m_db, q, now));
    }
    sources.push_back({q, std::move(row), capacity});
  }

  Candidates candidates(*m_db);
  while (static_cast<int>(leased.size()) < req.count) {
    std::optional<Task> best;
    Source* from = nullptr;
    for (auto& s : sources) {
      if (s.capacity <= 0) {
        continue;
      }
      auto c = candidates.first(s.queue, req.match, req.worker, req.skip, now);
      if (c && (!best || lease_order_before(*c, *best))) {
        best = std::move(c);
        from = &s;
      }
    }
    if (!best) {
      break;
    }
    Task& t = *best;
    if (const auto by = obsoleted_by(*m_db, t.root, t.id)) {
      // rescue's root: a live task with its root labels made it obsolete.
      const std::string reason = "obsoleted by " + task_ref(*by);
      set_state(*m_db, t.id, TaskState::killed, now);
      set_reason(*m_db, t.id, reason);
      log_event(*m_db, t.id, now, "kill", t.state, TaskState::killed,
                k_system_actor, reason);
      continue;
    }
    const auto limit =
        t.max_attempts ? t.max_attempts : from->settings.max_attempts;
    if (limit && t.attempts >= *limit) {
      // rescue's circuit breaker: park it for an operator instead.
      const std::string reason =
          "reached max attempts (" + std::to_string(*limit) + ")";
      set_state(*m_db, t.id, TaskState::paused, now);
      set_reason(*m_db, t.id, reason);
      log_event(*m_db, t.id, now, "pause", t.state, TaskState::paused,
                k_system_actor, reason);
      continue;
    }
    if (t.state == TaskState::sleeping) {
      log_event(*m_db, t.id, now, "run", TaskState::sleeping,
                TaskState::runnable, k_system_actor, "woke up");
    }
    const Time expires = now + req.lease_for;
    Statement(*m_db,
              "UPDATE tasks SET state = 'runnable', lease_token = ?2, "
              "lease_worker = ?3, lease_expires = ?4, lease_for_ms = ?5, "
              "attempts = attempts + 1, rev = rev + 1, updated_at = ?6 "
              "WHERE id = ?1")
        .bind(1, t.id)
        .bind(2, random_token())
        .bind(3, req.worker)
        .bind(4, to_unix_ms(expires))
        .bind(5, req.lease_for.count())
        .bind(6, to_unix_ms(now))
        .run();
    log_event(*m_db, t.id, now, "lease", TaskState::runnable,
              TaskState::runnable, req.worker,
              "attempt " + std::to_string(t.attempts + 1) + ", until "
                  + core::format_time(expires));
    leased.push_back(load_full(*m_db, t.id));
    --from->capacity;
  }
  tx.commit();
  return leased;
}

// ---------------------------------------------------------------------------
// Worker writes
// ---------------------------------------------------------------------------

HeartbeatResult TaskStore::heartbeat(int64_t id, const std::string& token,
                                     std::optional<Millis> extend,
                                     const std::optional<std::string>& cp,
                                     Time now) {
  Transaction tx(*m_db);
  now = locked_now(now);
  if (delivery_write(*m_db, id, token, now, "heartbeat", "")) {
    tx.commit();
    return {now + extend.value_or(std::chrono::minutes(5)), false};
  }
  const Task task = require_lease(*m_db, id, token, now);
  Statement get_for(*m_db, "SELECT lease_for_ms FROM tasks WHERE id = ?1");
  get_for.bind(1, id);
  get_for.step();
  const Millis by = extend.value_or(Millis(get_for.get_int(0)));
  const Time expires = now + by;
  Statement st(*m_db, "UPDATE tasks SET lease_expires = ?2, rev = rev + 1, "
                      "updated_at = ?3, checkpoint = coalesce(?4, checkpoint), "
                      "checkpoint_req = CASE WHEN ?4 IS NULL THEN "
                      "checkpoint_req ELSE 0 END WHERE id = ?1");
  st.bind(1, id).bind(2, to_unix_ms(expires)).bind(3, to_unix_ms(now));
  st.bind(4, cp);
  st.run();
  if (cp) {
    log_event(*m_db, id, now, "checkpoint", task.state, task.state,
              task.lease->worker, "saved");
  }
  tx.commit();
  return {expires, task.checkpoint_requested && !cp};
}

namespace detail {

Task complete_leased(Db& db, int64_t id, const std::string& token,
                     const std::optional<std::string>& result, Time now,
                     const core::Labels& sync) {
  if (auto b = delivery_write(db, id, token, now, "complete", "done")) {
    if (!sync.empty()) {
      throw Error(ErrorKind::conflict, "cannot store --sync: " + task_ref(id)
                                           + " is a broadcast, not a "
                                             "schedule's task");
    }
    return *b;
  }
  const Task task = require_lease(db, id, token, now);
  const auto next = core::transition(task.state, Message::complete);
  if (!next) {
    throw Error(ErrorKind::conflict, refusal(task, Message::complete));
  }
  if (!sync.empty() && !task.schedule) {
    throw Error(ErrorKind::conflict, "cannot store --sync: " + task_ref(id)
                                         + " was not emitted by a schedule");
  }
  clear_lease(db, task, std::nullopt);
  // The sync state the task reports: what it was given, updated with
  // --sync; its schedule hands it to the next task it emits.
  core::Labels merged = task.sync;
  for (const auto& [k, v] : sync) {
    merged[k] = v;
  }
  if (!sync.empty()) {
    const std::string text = labels_to_json(merged);
    Statement(db, "UPDATE tasks SET sync = ?2 WHERE id = ?1")
        .bind(1, id)
        .bind(2, text)
        .run();
    Statement(db, "UPDATE schedules SET sync = ?2 WHERE name = ?1")
        .bind(1, *task.schedule)
        .bind(2, text)
        .run();
  }
  set_state(db, id, *next, now);
  Statement(db, "UPDATE tasks SET result = ?2 WHERE id = ?1")
      .bind(1, id)
      .bind(2, result)
      .run();
  log_event(db, id, now, "complete", task.state, *next, task.lease->worker, "");
  return load_full(db, id);
}

} // namespace detail

Task TaskStore::complete(int64_t id, const std::string& token,
                         const std::optional<std::string>& result, Time now,
                         const core::Labels& sync) {
  Transaction tx(*m_db);
  now = locked_now(now);
  Task out = complete_leased(*m_db, id, token, result, now, sync);
  tx.commit();
  return out;
}

Task TaskStore::fail(int64_t id, const std::string& token,
                     const FailRequest& req, Time now) {
  Transaction tx(*m_db);
  now = locked_now(now);
  if (auto b = delivery_write(*m_db, id, token, now, "error", req.error)) {
    tx.commit();
    return *b;
  }
  const Task task = require_lease(*m_db, id, token, now);
  const std::string& worker = task.lease->worker;
  const auto fault = core::transition(task.state, Message::error);
  if (!fault) {
    throw Error(ErrorKind::conflict, refusal(task, Message::error));
  }
  const QueueRow queue = load_queue(*m_db, task.queue);
  const core::ErrorPolicy policy =
      core::resolve_policy(queue.policy, task.policy);
  const int64_t keep =
      std::max<int64_t>(k_error_history, policy.max_errors + 1);
  clear_lease(*m_db, task, std::nullopt);
  append_error(*m_db, id, now, req.error, keep);
  bump_queue_counter(*m_db, task.queue, QueueCounter::errors);

  if (req.mode == FailMode::move_to) {
    // The dead-letter move (MassTasker DeleteOrMove): a fresh start in
    // another queue, its error history kept.
    Statement(*m_db, "UPDATE tasks SET queue = ?2, attempts = 0, run_at = ?3, "
                     "rev = rev + 1, updated_at = ?3 WHERE id = ?1")
        .bind(1, id)
        .bind(2, req.move_to)
        .bind(3, to_unix_ms(now))
        .run();
    log_event(*m_db, id, now, "error", task.state, TaskState::runnable, worker,
              req.error + " (moved from " + task.queue + " to " + req.move_to
                  + ")");
    Task out = load_full(*m_db, id);
    tx.commit();
    return out;
  }

  log_event(*m_db, id, now, "error", task.state, *fault, worker, req.error);
  if (req.mode == FailMode::no_retry) {
    set_state(*m_db, id, TaskState::failed, now);
    set_reason(*m_db, id, req.error);
    log_event(*m_db, id, now, "error", *fault, TaskState::failed,
              k_system_actor, "not retried (--no-retry)");
  } else {
    const auto decision =
        core::decide(load_errors(*m_db, id), now, policy, req.retry_in);
    if (decision.fail) {
      append_error(*m_db, id, now, core::k_exceeded_error_rate, keep);
      set_state(*m_db, id, TaskState::failed, now);
      set_reason(*m_db, id, core::k_exceeded_error_rate);
      log_event(*m_db, id, now, "error", *fault, TaskState::failed,
                k_system_actor, core::k_exceeded_error_rate);
    } else {
      set_state(*m_db, id, TaskState::sleeping, now);
      set_run_at(*m_db, id, *decision.until);
      log_event(*m_db, id, now, "sleep", *fault, TaskState::sleeping,
                k_system_actor,
                "retry at " + core::format_time(*decision.until));
    }
  }
  Task out = load_full(*m_db, id);
  tx.commit();
  return out;
}

Task TaskStore::release(int64_t id, const std::string& token,
                        std::optional<Millis> delay, Time now) {
  Transaction tx(*m_db);
  now = locked_now(now);
  if (auto b = delivery_write(*m_db, id, token, now, "release", "")) {
    tx.commit();
    return *b;
  }
  const Task task = require_lease(*m_db, id, token, now);
  clear_lease(*m_db, task, std::nullopt);
  // Untouched: the attempt this lease used is given back.
  Statement(*m_db, "UPDATE tasks SET attempts = max(attempts - 1, 0), "
                   "run_at = coalesce(?2, run_at), rev = rev + 1, "
                   "updated_at = ?3 WHERE id = ?1")
      .bind(1, id)
      .bind(2, delay ? std::optional(to_unix_ms(now + *delay)) : std::nullopt)
      .bind(3, to_unix_ms(now))
      .run();
  log_event(*m_db, id, now, "release", task.state, task.state,
            task.lease->worker,
            delay ? "due " + core::format_time(now + *delay) : "");
  Task out = load_full(*m_db, id);
  tx.commit();
  return out;
}

Task TaskStore::worker_sleep(int64_t id, const std::string& token, Time until,
                             Time now) {
  Transaction tx(*m_db);
  now = locked_now(now);
  if (auto b = delivery_write(*m_db, id, token, now, "sleep", "")) {
    tx.commit();
    return *b;
  }
  const Task task = require_lease(*m_db, id, token, now);
  const auto next = core::transition(task.state, Message::sleep);
  if (!next) {
    throw Error(ErrorKind::conflict, refusal(task, Message::sleep));
  }
  clear_lease(*m_db, task, std::nullopt);
  set_state(*m_db, id, *next, now);
  set_run_at(*m_db, id, until);
  log_event(*m_db, id, now, "sleep", task.state, *next, task.lease->worker,
            "until " + core::format_time(until));
  Task out = load_full(*m_db, id);
  tx.commit();
  return out;
}

std::optional<std::string> TaskStore::revoked_reason(int64_t id,
                                                     const std::string& token) {
  const auto revoked = find_revoked(*m_db, id, token);
  if (!revoked) {
    return std::nullopt;
  }
  return revoked->substr(0, revoked->find(' ')); // the message
}

bool TaskStore::lease_held(int64_t id, const std::string& token, Time now) {
  Statement st(*m_db, "SELECT 1 FROM tasks WHERE id = ?1 AND lease_token = ?2 "
                      "AND lease_expires > ?3 UNION ALL SELECT 1 FROM "
                      "deliveries d JOIN tasks t ON t.id = d.task_id "
                      "WHERE d.task_id = ?1 AND d.token = ?2 "
                      "AND t.state = 'runnable' AND t.broadcast_until > ?3");
  st.bind(1, id).bind(2, token).bind(3, to_unix_ms(now));
  return st.step();
}

std::optional<Time> TaskStore::next_due(const std::vector<std::string>& queues,
                                        Time now) {
  PriorityWalk priorities(*m_db);
  Statement first_future(*m_db,
                         "SELECT min(run_at) FROM tasks INDEXED BY tasks_ready "
                         "WHERE queue = ?1 AND lease_token IS NULL "
                         "AND state IN ('runnable', 'sleeping') AND blockers = "
                         "0 AND broadcast_until IS NULL AND priority = ?2 "
                         "AND run_at > ?3");
  Statement first_expiry(
      *m_db, "SELECT min(lease_expires) FROM tasks INDEXED BY tasks_leased "
             "WHERE queue = ?1 AND lease_token IS NOT NULL "
             "AND lease_expires > ?2");
  Statement first_tick(*m_db, "SELECT min(due_at) FROM schedules "
                              "WHERE queue = ?1 AND paused = 0 "
                              "AND due_at > ?2");
  const int64_t now_ms = to_unix_ms(now);
  std::optional<int64_t> best;
  const auto consider = [&](Statement& st) {
    if (st.step() && !st.is_null(0)) {
      const int64_t t = st.get_int(0);
      best = best ? std::min(*best, t) : t;
    }
    st.reset();
  };
  Transaction tx(*m_db, Transaction::Kind::read);
  for (const auto& queue : queues) {
    priorities.start(queue);
    while (const auto priority = priorities.next()) {
      first_future.bind(1, queue).bind(2, *priority).bind(3, now_ms);
      consider(first_future);
    }
    first_expiry.bind(1, queue).bind(2, now_ms);
    consider(first_expiry);
    first_tick.bind(1, queue).bind(2, now_ms);
    consider(first_tick);
  }
  tx.commit();
  if (!best) {
    return std::nullopt;
  }
  return core::from_unix_ms(*best);
}

bool TaskStore::anything_due(const std::vector<std::string>& queues, Time now,
                             const std::string& worker) {
  PriorityWalk priorities(*m_db);
  Statement due(*m_db, "SELECT 1 FROM tasks INDEXED BY tasks_ready "
                       "WHERE queue = ?1 AND lease_token IS NULL "
                       "AND state IN ('runnable', 'sleeping') AND blockers = 0 "
                       "AND broadcast_until IS NULL "
                       "AND priority = ?2 AND run_at <= ?3 LIMIT 1");
  Statement expired(*m_db, "SELECT 1 FROM tasks INDEXED BY tasks_leased "
                           "WHERE queue = ?1 AND lease_token IS NOT NULL "
                           "AND lease_expires <= ?2 LIMIT 1");
  Statement tick(*m_db, "SELECT 1 FROM schedules WHERE queue = ?1 "
                        "AND paused = 0 AND due_at <= ?2 LIMIT 1");
  Statement broadcast(*m_db,
                      "SELECT 1 FROM tasks INDEXED BY tasks_broadcast "
                      "WHERE queue = ?1 AND broadcast_until IS NOT NULL "
                      "AND state = 'runnable' AND broadcast_until > ?2 "
                      "AND NOT EXISTS (SELECT 1 FROM deliveries "
                      "WHERE task_id = tasks.id AND worker = ?3) LIMIT 1");
  const int64_t now_ms = to_unix_ms(now);
  const auto found = [](Statement& st) {
    const bool row = st.step();
    st.reset();
    return row;
  };
  Transaction tx(*m_db, Transaction::Kind::read);
  for (const auto& queue : queues) {
    expired.bind(1, queue).bind(2, now_ms);
    tick.bind(1, queue).bind(2, now_ms);
    broadcast.bind(1, queue).bind(2, now_ms).bind(3, worker);
    if (found(expired) || found(tick) || found(broadcast)) {
      return true;
    }
    priorities.start(queue);
    while (const auto priority = priorities.next()) {
      due.bind(1, queue).bind(2, *priority).bind(3, now_ms);
      if (found(due)) {
        return true;
      }
    }
  }
  tx.commit();
  return false;
}

ChangeFeed TaskStore::changes() const {
  return ChangeFeed(m_db->path());
}

// ---------------------------------------------------------------------------
// Operator messages
// ---------------------------------------------------------------------------

namespace {

// Loads the tasks a selector names: ids (each must exist), or filters.
std::vector<Task> select_tasks(Db& db, const Selector& sel, Time now);

} // namespace

std::vector<Task> TaskStore::send(const Selector& sel, Message msg,
                                  std::optional<Time> until,
                                  const std::string& actor, Time now) {
  if (!core::is_operator_message(msg)) {
    throw Error(ErrorKind::usage,
                "an operator cannot send " + std::string(core::to_string(msg)));
  }
  if (msg == Message::sleep && !until) {
    throw Error(ErrorKind::usage, "sleep needs --until TIME or --for DUR");
  }
  if (sel.ids.empty() && !sel.has_filters()) {
    throw Error(ErrorKind::usage, "which tasks? name ids or filters");
  }
  Transaction tx(*m_db);
  now = locked_now(now);
  std::vector<Task> changed;
  for (const Task& task : select_tasks(*m_db, sel, now)) {
    const auto next = core::transition(task.state, msg);
    if (!next) {
      if (sel.has_filters()) {
        continue;
      }
      throw Error(ErrorKind::conflict, refusal(task, msg));
    }
    const std::string name(core::to_string(msg));
    const bool revokes = msg == Message::pause || msg == Message::sleep
                         || msg == Message::kill || msg == Message::release;
    if (revokes && task.lease) {
      if (!task.leased(now)) {
        // A lease that ran out, cleared before any lease reclaimed it.
        bump_queue_counter(*m_db, task.queue, QueueCounter::leases_expired);
      }
      clear_lease(*m_db, task,
                  task.leased(now) ? std::optional(name + " by " + actor)
                                   : std::nullopt);
    }
    set_state(*m_db, task.id, *next, now);
    std::string detail;
    switch (msg) {
    case Message::pause:
    case Message::kill:
      detail = (msg == Message::pause ? "paused by " : "killed by ") + actor;
      set_reason(*m_db, task.id, detail);
      break;
    case Message::sleep:
      detail = "until " + core::format_time(*until);
      set_run_at(*m_db, task.id, *until);
      break;
    case Message::run:
      // Resuming starts afresh: attempts reset (rescue's Cycles), and a
      // sleeper is due at once.
      Statement(*m_db,
                "UPDATE tasks SET reason = NULL, attempts = CASE WHEN ?2 "
                "THEN 0 ELSE attempts END, run_at = CASE WHEN ?3 THEN "
                "min(run_at, ?4) ELSE run_at END WHERE id = ?1")
          .bind(1, task.id)
          .bind(2, int64_t{task.state == TaskState::paused})
          .bind(3, int64_t{task.state == TaskState::sleeping})
          .bind(4, to_unix_ms(now))
          .run();
      break;
    case Message::checkpoint:
      Statement(*m_db, "UPDATE tasks SET checkpoint_req = 1 WHERE id = ?1")
          .bind(1, task.id)
          .run();
      break;
    default:
      break;
    }
    log_event(*m_db, task.id, now, name, task.state, *next, actor, detail);
    changed.push_back(load_full(*m_db, task.id));
  }
  tx.commit();
  return changed;
}

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

namespace {

std::vector<Task> select_tasks(Db& db, const Selector& sel, Time now) {
  std::vector<Task> out;
  if (!sel.ids.empty()) {
    std::vector<int64_t> seen;
    for (int64_t id : sel.ids) {
      if (std::find(seen.begin(), seen.end(), id) == seen.end()) {
        seen.push_back(id);
        out.push_back(load_full(db, id));
      }
    }
    return out;
  }
  // Conditions are added only when given, so the planner sees plain
  // equalities it can look up in an index.
  std::string sql = join(join("SELECT ", k_task_columns),
                         sel.queue ? " FROM tasks WHERE queue = ?1"
                                   : " FROM tasks WHERE ?1 IS NULL");
  const std::string state = sel.state.value_or("");
  if (sel.state && !core::parse_state(state) && state != "running"
      && state != "ready") {
    throw Error(ErrorKind::usage,
                "unknown state '" + state
                    + "': expected runnable, sleeping, paused, completed, "
                      "failed, killed, running or ready");
  }
  if (state == "running") {
    sql += " AND state = 'runnable' AND lease_token IS NOT NULL AND "
           "lease_expires > ?2";
  } else if (state == "ready") {
    sql += " AND state IN ('runnable', 'sleeping') AND blockers = 0 AND "
           "broadcast_until IS NULL AND run_at <= ?2 AND "
           "(lease_token IS NULL OR lease_expires <= ?2)";
  } else if (state == "runnable") {
    sql += " AND state = ?3 AND ?2 IS NOT NULL";
  } else if (!state.empty()) {
    // The literal term lets the planner use the partial tasks_settled.
    sql += " AND state = ?3 AND state <> 'runnable' AND ?2 IS NOT NULL";
  } else {
    sql += " AND ?2 IS NOT NULL";
  }
  sql += " ORDER BY id";
  const bool limit_in_sql = sel.match.empty() && sel.limit;
  if (limit_in_sql) {
    sql += " LIMIT ?4";
  }
  Statement st(db, sql);
  st.bind(1, sel.queue).bind(2, to_unix_ms(now));
  if (!state.empty() && state != "running" && state != "ready") {
    st.bind(3, state);
  }
  if (limit_in_sql) {
    st.bind(4, *sel.limit);
  }
  while (st.step()) {
    Task t = read_task(st);
    if (!core::matches(t.labels, sel.match)) {
      continue;
    }
    out.push_back(std::move(t));
    if (sel.limit && static_cast<int64_t>(out.size()) >= *sel.limit) {
      break;
    }
  }
  for (Task& t : out) {
    t.errors = load_errors(db, t.id);
  }
  return out;
}

} // namespace

std::optional<Task> TaskStore::find(int64_t id) {
  Transaction tx(*m_db, Transaction::Kind::read);
  auto task = load_task(*m_db, id);
  if (task) {
    task->errors = load_errors(*m_db, id);
  }
  return task;
}

TaskDetail TaskStore::show(int64_t id) {
  Transaction tx(*m_db, Transaction::Kind::read);
  TaskDetail out{load_full(*m_db, id), {}};
  {
    Statement by(*m_db, "SELECT created_by FROM tasks WHERE id = ?1");
    by.bind(1, id);
    by.step();
    out.events.push_back(creation_event(id, out.task.created_at, by.get_text(0),
                                        out.task.retry_of));
  }
  Statement st(*m_db, join(join("SELECT ", k_event_columns),
                           " FROM events WHERE task_id = ?1 ORDER BY id"));
  st.bind(1, id);
  while (st.step()) {
    out.events.push_back(read_event(st));
  }
  return out;
}

std::vector<Task> TaskStore::list(const Selector& sel, Time now) {
  Transaction tx(*m_db, Transaction::Kind::read);
  return select_tasks(*m_db, sel, now);
}

namespace detail {

std::vector<QueueStats> read_stats(Db& db, const std::optional<std::string>& q,
                                   Time now) {
  Statement st(
      db,
      "SELECT queue, sum(state = 'runnable'), sum(state = 'sleeping'), "
      "sum(state = 'paused'), sum(state = 'completed'), sum(state = 'failed'), "
      "sum(state = 'killed'), "
      "sum(state = 'runnable' AND lease_token IS NOT NULL AND "
      "    lease_expires > ?2), "
      "sum(state IN ('runnable', 'sleeping') AND blockers = 0 AND "
      "broadcast_until IS NULL AND run_at <= ?2 AND "
      "    (lease_token IS NULL OR lease_expires <= ?2)), "
      "sum(state = 'runnable' AND run_at > ?2), "
      "min(CASE WHEN state IN ('runnable', 'sleeping') AND blockers = 0 AND "
      "broadcast_until IS NULL AND run_at <= ?2 AND "
      "    (lease_token IS NULL OR lease_expires <= ?2) THEN run_at END), "
      "sum(state = 'completed' AND updated_at > ?2 - 60000), "
      "sum(state = 'completed' AND updated_at > ?2 - 3600000) "
      "FROM tasks WHERE ?1 IS NULL OR queue = ?1 GROUP BY queue ORDER BY "
      "queue");
  st.bind(1, q).bind(2, to_unix_ms(now));
  std::vector<QueueStats> out;
  while (st.step()) {
    QueueStats s;
    s.queue = st.get_text(0);
    s.runnable = st.get_int(1);
    s.sleeping = st.get_int(2);
    s.paused = st.get_int(3);
    s.completed = st.get_int(4);
    s.failed = st.get_int(5);
    s.killed = st.get_int(6);
    s.running = st.get_int(7);
    s.ready = st.get_int(8);
    s.delayed = st.get_int(9);
    if (auto oldest = st.get_opt_int(10)) {
      s.oldest_ready_age = Millis(to_unix_ms(now) - *oldest);
    }
    s.completed_last_minute = st.get_int(11);
    s.completed_last_hour = st.get_int(12);
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace detail

std::vector<QueueStats> TaskStore::stats(const std::optional<std::string>& q,
                                         Time now) {
  Transaction tx(*m_db, Transaction::Kind::read);
  return read_stats(*m_db, q, now);
}

std::vector<std::string> TaskStore::why(int64_t id, Time now,
                                        const std::string& worker) {
  Transaction tx(*m_db, Transaction::Kind::read);
  const Task t = load_full(*m_db, id);
  std::vector<std::string> reasons;
  const std::string state(core::to_string(t.state));
  if (core::is_terminal(t.state)) {
    reasons.push_back("it is " + state + " (final)"
                      + (t.reason.empty() || t.state == TaskState::completed
                             ? ""
                             : ": " + t.reason));
    return reasons;
  }
  if (t.broadcast_until) {
    if (*t.broadcast_until <= now) {
      reasons.push_back("it is a broadcast that ended at "
                        + core::format_time(*t.broadcast_until)
                        + ": the next lease from " + t.queue + " completes it");
      return reasons;
    }
    Statement st(*m_db, "SELECT count(*), coalesce(sum(worker = ?2), 0) "
                        "FROM deliveries WHERE task_id = ?1");
    st.bind(1, id).bind(2, worker);
    st.step();
    const int64_t n = st.get_int(0);
    reasons.push_back(
        "it is a broadcast: each worker leasing from " + t.queue
        + " receives it once, until " + core::format_time(*t.broadcast_until)
        + " (delivered to " + std::to_string(n)
        + (n == 1 ? " worker" : " workers") + "; " + worker
        + (st.get_int(1) > 0 ? " has had it)" : " has not had it yet)"));
    return reasons;
  }
  if (t.waiting) {
    std::vector<int64_t> open;
    Statement st(*m_db, "SELECT d.dep_id FROM task_deps d JOIN tasks t "
                        "ON t.id = d.dep_id WHERE d.task_id = ?1 "
                        "AND t.state <> 'completed' ORDER BY d.dep_id");
    st.bind(1, id);
    while (st.step()) {
      open.push_back(st.get_int(0));
    }
    std::string list;
    for (size_t i = 0; i < open.size(); ++i) {
      list += i == 0 ? "" : i + 1 == open.size() ? " and " : ", ";
      list += std::to_string(open[i]);
    }
    reasons.push_back(std::string("it is waiting for task")
                      + (open.size() == 1 ? " " : "s ") + list
                      + " to complete");
  }
  if (const auto by = obsoleted_by(*m_db, t.root, t.id)) {
    reasons.push_back("it is obsolete: " + task_ref(*by)
                      + " is unfinished and has its root labels ("
                      + core::format_labels(t.root)
                      + "); the next lease kills it");
  }
  if (t.to_worker && *t.to_worker != worker) {
    reasons.push_back("it is addressed to worker " + *t.to_worker);
  }
  if (t.state == TaskState::paused) {
    reasons.push_back("it is paused" + (t.reason.empty() ? "" : ": " + t.reason)
                      + " (taskq resume " + std::to_string(id) + ")");
  }
  if (t.state == TaskState::sleeping && t.run_at > now) {
    reasons.push_back("it is sleeping until " + core::format_time(t.run_at));
  }
  if (t.state == TaskState::runnable && t.run_at > now) {
    reasons.push_back("it is not due until " + core::format_time(t.run_at));
  }
  if (t.leased(now)) {
    reasons.push_back("it is leased by " + t.lease->worker + " until "
                      + core::format_time(t.lease->expires_at));
  }
  const QueueRow q = load_queue(*m_db, t.queue);
  if (q.paused) {
    reasons.push_back("queue " + t.queue + " is paused");
  }
  if (q.max_running && !t.leased(now)
      && count_running(*m_db, t.queue, now) >= *q.max_running) {
    reasons.push_back("queue " + t.queue + " is at its running limit ("
                      + std::to_string(*q.max_running) + ")");
  }
  const auto limit = t.max_attempts ? t.max_attempts : q.max_attempts;
  if (limit && t.attempts >= *limit && t.state != TaskState::paused) {
    reasons.push_back("it has used its " + std::to_string(*limit)
                      + " attempts: the next lease pauses it");
  }
  return reasons;
}

// ---------------------------------------------------------------------------
// Queues and the database
// ---------------------------------------------------------------------------

void TaskStore::set_queue(const std::string& queue, const QueueSettings& s) {
  Transaction tx(*m_db);
  Statement(*m_db,
            "INSERT INTO queues (name, max_running, max_attempts, max_errors, "
            "error_window_ms, retry_delay_ms, backoff, max_delay_ms) VALUES "
            "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (name) DO UPDATE SET "
            "max_running = coalesce(?2, max_running), "
            "max_attempts = coalesce(?3, max_attempts), "
            "max_errors = coalesce(?4, max_errors), "
            "error_window_ms = coalesce(?5, error_window_ms), "
            "retry_delay_ms = coalesce(?6, retry_delay_ms), "
            "backoff = coalesce(?7, backoff), "
            "max_delay_ms = coalesce(?8, max_delay_ms)")
      .bind(1, queue)
      .bind(2, s.max_running)
      .bind(3, s.max_attempts)
      .bind(4, opt_int64(s.policy.max_errors))
      .bind(5, opt_ms(s.policy.window))
      .bind(6, opt_ms(s.policy.retry_delay))
      .bind(7, opt_backoff(s.policy.backoff))
      .bind(8, opt_ms(s.policy.max_delay))
      .run();
  tx.commit();
}

namespace {

// Every schema object (table, index, trigger, view) by "type name", with
// the SQL that made it (empty for SQLite's automatic indexes). The
// statistics tables of ANALYZE are the planner's, not the schema.
std::map<std::string, std::string> schema_objects(Db& db) {
  Statement st(db, "SELECT type, name, coalesce(sql, '') FROM sqlite_schema "
                   "WHERE name NOT LIKE 'sqlite!_stat%' ESCAPE '!'");
  std::map<std::string, std::string> out;
  while (st.step()) {
    out[st.get_text(0) + " " + st.get_text(1)] = st.get_text(2);
  }
  return out;
}

// How the schema of `db` differs from what the migrations make: one line
// per missing, unexpected or changed table, column set, index or trigger.
std::vector<std::string> schema_problems(Db& db) {
  Db expected_db(":memory:", true);
  apply_migrations(expected_db);
  const auto expected = schema_objects(expected_db);
  const auto actual = schema_objects(db);
  std::vector<std::string> problems;
  const std::string version = std::to_string(latest_schema_version());
  for (const auto& [what, sql] : expected) {
    const auto it = actual.find(what);
    if (it == actual.end()) {
      problems.push_back(what + " is missing from the schema");
    } else if (it->second != sql) {
      problems.push_back(what + " differs from schema version " + version);
    }
  }
  for (const auto& [what, sql] : actual) {
    if (!expected.contains(what)) {
      problems.push_back(what + " is not part of taskq's schema");
    }
  }
  return problems;
}

} // namespace

namespace detail {

namespace {

struct Rule {
  Invariant text;
  const char* offenders; // task ids, one per offending row, of tasks `t`
};

// Each selects from `tasks t`; the scope is added to its WHERE.
const Rule k_rules[] = {
    {{"task(s) left in the transient fault state",
      "its state is fault, which is transient, never stored"},
     "SELECT t.id FROM tasks t WHERE t.state = 'fault'"},
    {{"leased task(s) that are not runnable",
      "it holds a lease but is not runnable"},
     "SELECT t.id FROM tasks t WHERE t.lease_token IS NOT NULL "
     "AND t.state <> 'runnable'"},
    // What leasing trusts: a waiting task's count of unfinished
    // dependencies, and the label index roots are checked against.
    {{"waiting task(s) whose count of unfinished dependencies is off",
      "its 'blockers' is not the number of its unfinished dependencies"},
     "SELECT t.id FROM tasks t WHERE t.blockers > 0 "
     "AND t.blockers <> (SELECT count(*) FROM task_deps d JOIN tasks x "
     "ON x.id = d.dep_id WHERE d.task_id = t.id "
     "AND x.state <> 'completed')"},
    {{"label(s) of unfinished tasks missing from the label index",
      "a label is missing from the label index"},
     "SELECT t.id FROM tasks t, json_each(t.labels) j "
     "WHERE t.labels IS NOT NULL "
     "AND t.state NOT IN ('completed', 'failed', 'killed') "
     "AND NOT EXISTS (SELECT 1 FROM task_labels l WHERE l.key = j.key "
     "AND l.value = j.value AND l.task_id = t.id)"},
};

} // namespace

void find_violations(
    Db& db, const std::optional<std::string>& scope,
    const std::function<void(const Invariant&, int64_t)>& each) {
  for (const Rule& rule : k_rules) {
    Statement st(db, std::string(rule.offenders)
                         + " AND (?1 IS NULL OR t.id IN "
                           "(SELECT value FROM json_each(?1)))");
    st.bind(1, scope);
    while (st.step()) {
      each(rule.text, st.get_int(0));
    }
  }
}

} // namespace detail

CheckReport TaskStore::check() {
  CheckReport report;
  Transaction tx(*m_db, Transaction::Kind::read);
  {
    Statement st(*m_db, "PRAGMA integrity_check");
    while (st.step()) {
      const std::string line = st.get_text(0);
      if (line != "ok") {
        report.problems.push_back(line);
      }
    }
  }
  report.schema_version = read_user_version(*m_db);
  if (auto schema = schema_problems(*m_db); !schema.empty()) {
    // The invariants below read the tables: not without the schema.
    report.problems.insert(report.problems.end(), schema.begin(), schema.end());
    return report;
  }
  {
    Statement st(*m_db, "SELECT count(*) FROM tasks");
    st.step();
    report.tasks = st.get_int(0);
  }
  std::vector<std::pair<const Invariant*, int64_t>> broken; // rule, count
  find_violations(*m_db, std::nullopt,
                  [&](const Invariant& rule, int64_t /*task_id*/) {
                    if (broken.empty() || broken.back().first != &rule) {
                      broken.emplace_back(&rule, 0);
                    }
                    ++broken.back().second;
                  });
  for (const auto& [rule, n] : broken) {
    report.problems.push_back(std::to_string(n) + " "
                              + std::string(rule->summary));
  }
  report.ok = report.problems.empty();
  return report;
}

namespace {

// Removes the temporary file of a backup that did not finish.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    if (!path.empty()) {
      ::unlink(path.c_str());
    }
  }
};

void sync_path(const std::string& path, int flags, const std::string& what) {
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) {
      ::close(fd);
    }
    throw Error(ErrorKind::unavailable,
                "cannot back up to " + what + ": " + std::strerror(err));
  }
  ::close(fd);
}

} // namespace

void TaskStore::backup(const std::string& dest_path) {
  struct stat existing {};
  if (::lstat(dest_path.c_str(), &existing) == 0) {
    throw Error(ErrorKind::usage,
                "cannot back up to " + dest_path + ": the file exists");
  }
  create_private_folders(dest_path);
  // The copy goes to a temporary file in the target's folder (the rename
  // must not cross file systems), renamed into place once it is whole and
  // on disk: a backup killed half-way leaves no file at the target.
  const std::filesystem::path target(dest_path);
  const std::string folder =
      target.has_parent_path() ? target.parent_path().string() : ".";
  std::string temp =
      folder + "/." + target.filename().string() + ".taskq-backup-XXXXXX";
  const int fd = ::mkstemp(temp.data()); // mode 0600
  if (fd < 0) {
    throw Error(ErrorKind::unavailable,
                "cannot back up to " + dest_path + ": " + std::strerror(errno));
  }
  ::close(fd);
  RemoveOnExit cleanup{temp};
  {
    Db dest(temp, false);
    // The file is nothing until it is renamed: no journal to keep, and one
    // fsync at the end instead of one per write.
    dest.exec("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF",
              "cannot back up to " + dest_path);
    sqlite3_backup* b =
        sqlite3_backup_init(dest.handle(), "main", m_db->handle(), "main");
    if (b == nullptr) {
      dest.fail(sqlite3_errcode(dest.handle()),
                "cannot back up to " + dest_path);
    }
    // One step copies everything under a read transaction; writers in WAL
    // mode carry on meanwhile.
    int rc = SQLITE_OK;
    do {
      rc = sqlite3_backup_step(b, -1);
      if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED) {
        sqlite3_sleep(5);
      }
    } while (rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
      m_db->fail(rc, "cannot back up to " + dest_path);
    }
  }
  sync_path(temp, O_RDONLY, dest_path);
  // Never over a file that appeared meanwhile.
  int renamed = ::renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, dest_path.c_str(),
                            RENAME_NOREPLACE);
  if (renamed != 0 && errno == EINVAL) {
    // A file system without RENAME_NOREPLACE.
    renamed = ::lstat(dest_path.c_str(), &existing) == 0
                  ? (errno = EEXIST, -1)
                  : ::rename(temp.c_str(), dest_path.c_str());
  }
  if (renamed != 0) {
    const int err = errno;
    throw Error(err == EEXIST ? ErrorKind::usage : ErrorKind::unavailable,
                "cannot back up to " + dest_path + ": "
                    + (err == EEXIST ? std::string("the file exists")
                                     : std::string(std::strerror(err))));
  }
  cleanup.path.clear();
  sync_path(folder, O_RDONLY | O_DIRECTORY, dest_path);
}

} // namespace taskq::storage
