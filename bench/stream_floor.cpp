// The floor for `taskq run --stream` without --prefetch (bench/stream): the
// least one process can do to lease and complete every ready task of a
// queue, one commit per task, with taskq's durability settings.
//
//   taskq_bench_stream_floor [--synchronous MODE] DB QUEUE
//
// DB holds the taskq schema (`taskq db migrate`) and the tasks. For each
// task, in one BEGIN IMMEDIATE ... COMMIT: the next ready task of QUEUE by
// the tasks_ready partial index (its WHERE clause repeated, so SQLite
// seeks it instead of scanning the table), leased (token, worker,
// expiry, attempts + 1), then completed (state, lease cleared) by its
// token. WAL, the synchronous MODE (default FULL, taskq's), busy timeout,
// foreign_keys off. No events, no JSON: what is left is the commit. Prints
// how many tasks it completed.

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void die(sqlite3* db, const char* what) {
  std::fprintf(stderr, "taskq_bench_stream_floor: %s: %s\n", what,
               db != nullptr ? sqlite3_errmsg(db) : "error");
  std::exit(1);
}

sqlite3_stmt* prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, nullptr)
      != SQLITE_OK) {
    die(db, sql);
  }
  return st;
}

void run(sqlite3* db, sqlite3_stmt* st) {
  if (sqlite3_step(st) != SQLITE_DONE) {
    die(db, sqlite3_sql(st));
  }
  sqlite3_reset(st);
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

int main(int argc, char** argv) {
  std::string synchronous = "FULL";
  int i = 1;
  if (i + 1 < argc && std::strcmp(argv[i], "--synchronous") == 0) {
    synchronous = argv[i + 1];
    i += 2;
  }
  if (argc - i != 2) {
    std::fprintf(stderr, "usage: taskq_bench_stream_floor [--synchronous "
                         "MODE] DB QUEUE\n");
    return 2;
  }
  const char* queue = argv[i + 1];
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(argv[i], &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      nullptr)
      != SQLITE_OK) {
    die(db, "open");
  }
  sqlite3_busy_timeout(db, 5000);
  const std::string pragmas = "PRAGMA journal_mode = WAL; PRAGMA synchronous = "
                              + synchronous + "; PRAGMA foreign_keys = OFF";
  if (sqlite3_exec(db, pragmas.c_str(), nullptr, nullptr, nullptr)
      != SQLITE_OK) {
    die(db, "pragmas");
  }
  sqlite3_stmt* begin = prepare(db, "BEGIN IMMEDIATE");
  sqlite3_stmt* commit = prepare(db, "COMMIT");
  sqlite3_stmt* next = prepare(
      db, "SELECT id FROM tasks INDEXED BY tasks_ready WHERE queue = ?1 "
          "AND lease_token IS NULL AND state IN ('runnable', 'sleeping') "
          "AND blockers = 0 AND broadcast_until IS NULL AND run_at <= ?2 "
          "ORDER BY priority DESC, run_at, id LIMIT 1");
  sqlite3_stmt* lease =
      prepare(db, "UPDATE tasks SET lease_token = ?2, lease_worker = 'floor', "
                  "lease_expires = ?3 + 300000, lease_for_ms = 300000, "
                  "attempts = attempts + 1, rev = rev + 1, updated_at = ?3 "
                  "WHERE id = ?1 AND lease_token IS NULL");
  sqlite3_stmt* complete = prepare(
      db, "UPDATE tasks SET state = 'completed', lease_token = NULL, "
          "lease_worker = NULL, lease_expires = NULL, lease_for_ms = NULL, "
          "rev = rev + 1, updated_at = ?3 WHERE id = ?1 AND lease_token = ?2");
  int64_t done = 0;
  while (true) {
    run(db, begin);
    const int64_t now = now_ms();
    sqlite3_bind_text(next, 1, queue, -1, SQLITE_STATIC);
    sqlite3_bind_int64(next, 2, now);
    const int rc = sqlite3_step(next);
    if (rc != SQLITE_ROW) {
      if (rc != SQLITE_DONE) {
        die(db, "select");
      }
      sqlite3_reset(next);
      run(db, commit);
      break;
    }
    const int64_t id = sqlite3_column_int64(next, 0);
    sqlite3_reset(next);
    char token[32];
    std::snprintf(token, sizeof token, "t%lld", static_cast<long long>(id));
    for (sqlite3_stmt* st : {lease, complete}) {
      sqlite3_bind_int64(st, 1, id);
      sqlite3_bind_text(st, 2, token, -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(st, 3, now);
      run(db, st);
    }
    run(db, commit);
    ++done;
  }
  for (sqlite3_stmt* st : {begin, commit, next, lease, complete}) {
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  std::printf("%lld\n", static_cast<long long>(done));
  return 0;
}
