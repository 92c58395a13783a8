// The raw-SQLite baseline for `taskq add QUEUE --jsonl FILE` (bench/run,
// measurement (b)): the least a program can do to get the same rows into
// the same schema with the same durability settings.
//
//   taskq_bench_raw_insert [--synchronous MODE] [--no-ckpt-on-close]
//                          DB QUEUE FILE|-
//
// DB must already hold the taskq schema (bench/run creates it with
// `taskq db migrate`). Each non-blank line of FILE becomes one row of
// `tasks`, exactly as taskq writes it (queue, state 'runnable', the line as
// payload, priority 0, run_at = created_at = updated_at = now in ms, rev 1
// and attempts 0 by the column defaults), through one prepared INSERT, in one
// BEGIN IMMEDIATE transaction, with taskq's connection settings (WAL, the
// synchronous MODE (default NORMAL) and checkpoint-on-close that bench/run
// reads from storage/, busy timeout, foreign_keys off, no mutex). No JSON
// parsing, no ids kept: it prints the count, like taskq does.

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

[[noreturn]] void die(sqlite3* db, const char* what) {
  std::fprintf(stderr, "taskq_bench_raw_insert: %s: %s\n", what,
               db != nullptr ? sqlite3_errmsg(db) : "error");
  std::exit(1);
}

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::fprintf(stderr, "taskq_bench_raw_insert: %s: %s\n", sql,
                 err != nullptr ? err : "error");
    sqlite3_free(err);
    std::exit(1);
  }
}

bool blank(const char* s, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') {
      return false;
    }
  }
  return true;
}

} // namespace

int main(int argc, char** argv) {
  std::string synchronous = "NORMAL";
  bool no_ckpt_on_close = false;
  int i = 1;
  for (; i < argc && std::strncmp(argv[i], "--", 2) == 0; ++i) {
    if (std::strcmp(argv[i], "--synchronous") == 0 && i + 1 < argc) {
      synchronous = argv[++i];
    } else if (std::strcmp(argv[i], "--no-ckpt-on-close") == 0) {
      no_ckpt_on_close = true;
    } else {
      break;
    }
  }
  if (argc - i != 3) {
    std::fprintf(stderr, "usage: taskq_bench_raw_insert [--synchronous MODE] "
                         "[--no-ckpt-on-close] DB QUEUE FILE|-\n");
    return 2;
  }
  const char* path = argv[i];
  const char* queue = argv[i + 1];
  const char* file = argv[i + 2];
  FILE* in = std::strcmp(file, "-") == 0 ? stdin : std::fopen(file, "r");
  if (in == nullptr) {
    std::perror(file);
    return 1;
  }

  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                      nullptr)
      != SQLITE_OK) {
    die(db, path);
  }
  if (no_ckpt_on_close) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  }
  exec(db, "PRAGMA journal_mode=WAL");
  exec(db, ("PRAGMA synchronous=" + synchronous).c_str());
  exec(db, "PRAGMA foreign_keys=OFF");
  sqlite3_busy_timeout(db, 30000);

  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();

  sqlite3_stmt* ins = nullptr;
  if (sqlite3_prepare_v3(
          db,
          "INSERT INTO tasks(queue, state, payload, priority, run_at, "
          "created_at, updated_at) VALUES(?1, 'runnable', ?2, 0, ?3, ?3, ?3)",
          -1, SQLITE_PREPARE_PERSISTENT, &ins, nullptr)
      != SQLITE_OK) {
    die(db, "prepare");
  }
  // The queue and the time are the same for every row: bind them once.
  sqlite3_bind_text(ins, 1, queue, -1, SQLITE_STATIC);
  sqlite3_bind_int64(ins, 3, now);

  exec(db, "BEGIN IMMEDIATE");
  char* line = nullptr;
  size_t cap = 0;
  int64_t count = 0;
  for (ssize_t n; (n = getline(&line, &cap, in)) != -1;) {
    auto len = static_cast<size_t>(n);
    if (blank(line, len)) {
      continue;
    }
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
      --len;
    }
    sqlite3_bind_text(ins, 2, line, static_cast<int>(len), SQLITE_STATIC);
    if (sqlite3_step(ins) != SQLITE_DONE) {
      die(db, "insert");
    }
    sqlite3_reset(ins);
    ++count;
  }
  if (std::ferror(in) != 0) {
    std::perror(file);
    return 1;
  }
  exec(db, "COMMIT");
  std::free(line);
  sqlite3_finalize(ins);
  if (sqlite3_close(db) != SQLITE_OK) {
    die(db, "close");
  }
  std::printf("%lld\n", static_cast<long long>(count));
  return 0;
}
