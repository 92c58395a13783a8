// TaskStore: opening the store on either backend (a PostgreSQL URL or a
// SQLite file), its schema version and migrations, the backend's own part
// of `db check`, backup and vacuum; and what the connection tells (the
// server's clock, the change feed, when a commit is durable).
#include "storage/seam/open_store.hpp"

#include "core/error.hpp"
#include "storage/pg/admin.hpp"
#include "storage/pg/db.hpp"
#include "storage/seam/db.hpp"
#include "storage/seam/migrations.hpp"
#include "storage/sqlite/db.hpp"
#include "storage/sqlite/file.hpp"
#include "storage/task_store.hpp"

#include <memory>
#include <string>
#include <utility>

namespace taskq::storage {

using namespace detail;

int latest_schema_version() {
  return migrations().back().version;
}

TaskStore::TaskStore(const std::string& path, OpenMode mode, Clock clock)
    : m_clock(std::move(clock)) {
  check_db_name(path);
  if (is_postgres_url(path)) {
    // As a missing SQLite file: a database without taskq's schema is
    // unavailable to every mode but `write`, which creates the schema;
    // reads and writes bring an existing one up to date. OpenMode::clock
    // leaves that to open_for().
    m_db = connect_postgres(path);
    if (mode == OpenMode::clock) {
      m_schema_pending = pg_recorded_version(*m_db) != latest_schema_version();
    } else {
      pg_migrate(*m_db, mode == OpenMode::write);
    }
    return;
  }
  m_db = open_sqlite_file(path, mode);
}

TaskStore::~TaskStore() = default;

int TaskStore::schema_version() {
  if (m_db->backend() == Backend::postgresql) {
    return pg_schema_version(*m_db);
  }
  return read_user_version(*m_db);
}

void TaskStore::open_for(OpenMode mode) {
  if (m_schema_pending && mode != OpenMode::clock) {
    pg_migrate(*m_db, mode == OpenMode::write);
    m_schema_pending = false;
  }
}

int TaskStore::migrate() {
  if (m_db->backend() == Backend::postgresql) {
    return pg_migrate(*m_db, true);
  }
  apply_migrations(*m_db);
  return read_user_version(*m_db);
}

namespace detail {

// The backend's own part of `db check`: the server's schema compared with
// what the migrations make, or the SQLite file's integrity and schema.
bool check_file(Db& db, CheckReport& report) {
  if (db.backend() == Backend::postgresql) {
    // The server keeps its own pages consistent; the schema is compared
    // with what the migrations make, applied in a scratch schema.
    report.schema_version = pg_schema_version(db);
    const auto schema = pg_schema_problems(db);
    report.problems.insert(report.problems.end(), schema.begin(), schema.end());
    return schema.empty();
  }
  return check_sqlite_file(db, report);
}

} // namespace detail

void TaskStore::backup(const std::string& dest_path) {
  if (m_db->backend() == Backend::postgresql) {
    throw Error(ErrorKind::usage,
                "db backup copies SQLite files; back up PostgreSQL database "
                    + m_db->path()
                    + " with pg_dump (or move its tasks with taskq export)");
  }
  backup_sqlite_file(static_cast<SqliteDb&>(*m_db), dest_path);
}

void TaskStore::vacuum() {
  if (m_db->backend() == Backend::postgresql) {
    pg_vacuum(*m_db);
    return;
  }
  m_db->exec("VACUUM", "cannot vacuum the database");
}

std::optional<core::Time> TaskStore::server_now() {
  return m_db->server_now();
}

std::optional<int64_t> TaskStore::others_version() {
  return m_db->others_version();
}

std::optional<std::chrono::steady_clock::time_point>
TaskStore::wake_due() const {
  return m_db->wake_due();
}

uint64_t TaskStore::connection_losses() const {
  return m_db->connection_losses();
}

std::string TaskStore::last_connection_loss() const {
  return m_db->last_connection_loss();
}

void TaskStore::wake_owed() {
  m_db->wake_owed();
}

bool TaskStore::defer_sync() {
  return m_db->defer_sync();
}

uint64_t TaskStore::commit_seq() const {
  return m_db->commit_seq();
}

bool TaskStore::wait_durable(uint64_t seq) {
  return m_db->wait_durable(seq);
}

bool TaskStore::durable(uint64_t seq) const {
  return m_db->durable(seq);
}

int TaskStore::durable_fd() const {
  return m_db->durable_fd();
}

ChangeFeed TaskStore::changes() const {
  return ChangeFeed(m_db->feed_source(), m_db->backend_pid());
}

} // namespace taskq::storage
