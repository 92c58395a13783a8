// Every lock taskq takes, and SQLite's no-ops (storage/model/locks.hpp).
#include "storage/model/locks.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace taskq::storage::detail {

bool takes_row_locks(const Db& db) {
  return db.backend() == Backend::postgresql;
}

std::string_view row_lock(const Db& db, std::string_view clause) {
  return takes_row_locks(db) ? clause : std::string_view();
}

void lock_task(Db& db, int64_t id) {
  if (takes_row_locks(db) && !db.holds_task(id)) {
    Statement(db, "SELECT 1 FROM tasks WHERE id = ?1 FOR UPDATE")
        .bind(1, id)
        .run();
  }
}

void lock_tasks(Db& db, std::vector<int64_t> ids) {
  if (!takes_row_locks(db) || ids.empty()) {
    return;
  }
  std::sort(ids.begin(), ids.end());
  Statement(db, "SELECT 1 FROM tasks WHERE id IN (SELECT CAST(value AS "
                "BIGINT) FROM "
                    + db.dialect().json_array_rows("?1")
                    + ") ORDER BY id FOR UPDATE")
      .bind(1, nlohmann::json(ids).dump())
      .run();
}

void share_tasks(Db& db, std::vector<int64_t> ids) {
  if (!takes_row_locks(db) || ids.empty()) {
    return;
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  Statement lock(db, "SELECT 1 FROM tasks WHERE id = ?1 FOR SHARE");
  for (const int64_t id : ids) {
    lock.bind(1, id).run();
    lock.reset();
  }
}

void lock_flow(Db& db, const std::string& link) {
  if (!takes_row_locks(db)) {
    return;
  }
  const auto j = nlohmann::json::parse(link, nullptr, false);
  if (j.is_object() && j.contains("id") && j["id"].is_number_integer()) {
    Statement(db, "SELECT 1 FROM flows WHERE id = ?1 FOR UPDATE")
        .bind(1, j["id"].get<int64_t>())
        .run();
  }
}

const std::string& writers_barrier_sql() {
  static const std::string sql =
      "BEGIN; SET LOCAL lock_timeout = '1s'; SELECT pg_advisory_xact_lock("
      + std::to_string(k_writers_key) + "); COMMIT";
  return sql;
}

void lock_migrations(Db& db) {
  const std::string sql =
      "SELECT pg_advisory_xact_lock(" + std::to_string(k_migration_key) + ")";
  db.exec(sql.c_str(), "cannot lock taskq's schema for its migrations");
}

} // namespace taskq::storage::detail
