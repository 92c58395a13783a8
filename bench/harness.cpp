// The timing harness behind bench/run: starts processes with posix_spawn,
// times each from spawn to exit (CLOCK_MONOTONIC), and takes its CPU time
// and peak RSS from wait4()'s rusage (the figure `/usr/bin/time -f %M`
// prints). Interleaving and medians live here so that a shell fork never
// sits inside a timed interval.
//
//   taskq_bench_harness single --taskq T --sqlite3 S --tdb DB --bdb DB
//       [--queue Q] [--reps N] [--warmup N] [--samples CSV]
//     (a): per repetition, one `taskq add`, `lease`, `done` against the
//     sqlite3 shell running the equivalent statement on a twin database,
//     each pair in alternating order (A B, then B A, ...).
//
//   taskq_bench_harness lease-scale --taskq T --small DB --large DB
//       [--sqlite3 S --bsmall DB --blarge DB] [--queue Q] [--reps N]
//       [--warmup N] [--samples CSV]
//     (c): `taskq lease` on a queue of 1,000 against one of 1,000,000,
//     alternating; with --sqlite3, the shell's lease statement likewise.
//
//   taskq_bench_harness lease-backlog --taskq T --empty DB --future DB
//       --blocked DB [--queue Q] [--expect TEXT] [--reps N] [--warmup N]
//       [--samples CSV]
//     bench/run's (e): `taskq lease` on a queue of a few due tasks
//     (--empty), on the same with 100,000 future-dated tasks besides
//     (--future) and with 100,000 dependency-blocked ones besides
//     (--blocked), in rotation (A B C, B C A, C A B, ...); every lease's
//     output must contain TEXT (the due tasks' mark). Series lease_empty,
//     lease_future, lease_blocked.
//
//   taskq_bench_harness run -- CMD [ARG...]
//     Runs CMD once (stdout and stderr captured) and prints one line:
//     `wall_us=N cpu_us=N rss_kb=N rc=N out=FIRST-LINE-OF-STDOUT`.
//
// For bench/pg (PostgreSQL):
//
//   taskq_bench_harness pg-single --taskq T --psql P --tdb URL --bdb URL
//       [--queue Q] [--reps N] [--warmup N] [--samples CSV]
//     bench/pg's (a): as `single`, against psql running the equivalent
//     statement (server clock, FOR UPDATE SKIP LOCKED) on a twin database.
//     Series add_taskq, add_psql, lease_taskq, ... and floor_true.
//
//   taskq_bench_harness multi --n W --dir D -- CMD [ARG...]
//     bench/pg's (c): starts W copies of CMD at once (stdout and stderr to
//     D/out.K and D/err.K) and waits for all; prints `wall_us=N cpu_us=N
//     failed=N`: wall time from the first spawn to the last exit, the CPU
//     time of all, how many exited non-zero.
//
// For bench/wakeup (whose (e) and (f) are its own, not bench/run's):
//
//   taskq_bench_harness wakeup-latency --taskq T --sqlite3 S|--psql P
//       --tdb DB --bdb DB --probe-dir DIR [--queue Q] [--reps N]
//       [--warmup N] [--timeout-ms N] [--samples CSV]
//     (e): a `taskq run Q -- <this> probe DIR/taskq.probe` waits on --tdb;
//     per repetition, alternating, `taskq add Q --payload {"t":T0}` against
//     the shell's INSERT of that row into --bdb followed by starting the
//     probe directly. Prints `series wake_taskq|wake_sqlite3 n=N med_us=N
//     p25_us=N p75_us=N p95_us=N max_us=N writer_med_us=N`. With --psql
//     (bench/pg's (d)) DB are PostgreSQL URLs and the baseline is psql's
//     INSERT, series wake_psql.
//
//   taskq_bench_harness wakeup-idle --taskq T --db DB --probe-file F
//       [--queue Q] [--seconds S]
//     (f): a `taskq run` on an empty queue beside `sleep`; once both are
//     blocked, their CPU time over S seconds. Prints `idle NAME window_us=N
//     cpu_us=N ticks_cpu_us=N switches=N lifetime_cpu_us=N` per process.
//
//   taskq_bench_harness follow-latency --taskq T --sqlite3 S --tdb DB
//       --bdb DB [--queue Q] [--reps N] [--warmup N] [--timeout-ms N]
//       [--samples CSV]
//     (g): a `taskq events --follow` waits on --tdb; per repetition,
//     alternating, from just before `taskq add Q` is spawned to the
//     follower's line for the new task, against the shell's INSERT of the
//     same row into --bdb (the floor: the write alone). Prints `series
//     follow_taskq|follow_sqlite3 n=N med_us=N ... writer_med_us=N`.
//
//   taskq_bench_harness probe FILE
//     The handler of (e): appends `$TASKQ_ID,NS` to FILE, NS being its
//     start (CLOCK_MONOTONIC) minus the "t" of $TASKQ_PAYLOAD.
//
// Common options: --synchronous MODE, --no-ckpt-on-close 0|1 and
// --busy-timeout-ms N give the baseline taskq's connection settings;
// --max-seconds S with --min-reps N (default 20) end a loop early once it
// has run S seconds; lease-scale's --prefix P names its series P<name>.
//
// The summaries are lines of `series NAME n=N med_us=N p25_us=N p75_us=N
// cpu_med_us=N rss_med_kb=N rss_max_kb=N`, one per series, for bench/run to
// put into its table. Any failing command stops the harness with its
// stderr and exit status 1: a figure is never made of failed runs.

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <map>
#include <poll.h>
#include <spawn.h>
#include <string>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <vector>

extern char** environ;

namespace {

struct Result {
  int status = 0; // exit code, or 128 + signal
  int64_t wall_us = 0;
  int64_t cpu_us = 0;
  int64_t rss_kb = 0;
  std::string out;
  std::string err;
};

// Background processes (bench/wakeup's `taskq run`, `sleep`) that must not
// outlive a failed harness.
std::vector<pid_t> g_background;

[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "taskq_bench_harness: %s\n", what.c_str());
  for (const pid_t pid : g_background) {
    kill(pid, SIGKILL);
  }
  std::exit(1);
}

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t tv_us(const timeval& tv) {
  return static_cast<int64_t>(tv.tv_sec) * 1000000 + tv.tv_usec;
}

std::string show(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) {
      s += ' ';
    }
    s += a.find_first_of(" '\"") == std::string::npos ? a : "'" + a + "'";
  }
  return s;
}

// Runs argv (stdin /dev/null, stdout and stderr into pipes we drain) and
// waits for it. The interval runs from just before posix_spawn to just
// after wait4 returns.
Result spawn(const std::vector<std::string>& argv) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    fatal(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);

  Result r;
  pid_t pid = 0;
  const int64_t t0 = now_ns();
  const int rc =
      posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    fatal("cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) {
        continue;
      }
      fatal(std::string("poll: ") + std::strerror(errno));
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) {
        continue;
      }
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0) {
    if (errno != EINTR) {
      fatal(std::string("wait4: ") + std::strerror(errno));
    }
  }
  const int64_t t1 = now_ns();
  r.wall_us = (t1 - t0) / 1000;
  r.cpu_us = tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
  r.rss_kb = ru.ru_maxrss;
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

Result must(const std::vector<std::string>& argv, int want = 0) {
  Result r = spawn(argv);
  if (r.status != want) {
    fatal("exit " + std::to_string(r.status) + " (wanted "
          + std::to_string(want) + ") from: " + show(argv) + "\n" + r.err
          + r.out);
  }
  return r;
}

// The first integer after `"key":` in a JSON text, or -1.
int64_t json_int(const std::string& text, const std::string& key) {
  const auto at = text.find("\"" + key + "\":");
  if (at == std::string::npos) {
    return -1;
  }
  return std::strtoll(text.c_str() + at + key.size() + 3, nullptr, 10);
}

// The first string value after `"key":"` in a JSON text, or "".
std::string json_str(const std::string& text, const std::string& key) {
  const std::string pat = "\"" + key + "\":\"";
  const auto at = text.find(pat);
  if (at == std::string::npos) {
    return "";
  }
  const auto from = at + pat.size();
  const auto to = text.find('"', from);
  return to == std::string::npos ? "" : text.substr(from, to - from);
}

struct Sample {
  int64_t wall_us, cpu_us, rss_kb;
};

class Series {
public:
  void add(const std::string& name, int rep, const Result& r) {
    if (m_samples.find(name) == m_samples.end()) {
      m_order.push_back(name);
    }
    m_samples[name].push_back({r.wall_us, r.cpu_us, r.rss_kb});
    m_rows.push_back(
        name + "," + std::to_string(rep) + "," + std::to_string(r.wall_us) + ","
        + std::to_string(r.cpu_us) + "," + std::to_string(r.rss_kb));
  }

  void print(const std::string& samples_file) const {
    for (const auto& name : m_order) {
      const auto& v = m_samples.at(name);
      std::vector<int64_t> wall, cpu, rss;
      for (const auto& s : v) {
        wall.push_back(s.wall_us);
        cpu.push_back(s.cpu_us);
        rss.push_back(s.rss_kb);
      }
      std::printf(
          "series %s n=%zu med_us=%lld p25_us=%lld p75_us=%lld "
          "cpu_med_us=%lld rss_med_kb=%lld rss_max_kb=%lld\n",
          name.c_str(), v.size(), static_cast<long long>(quantile(wall, 0.5)),
          static_cast<long long>(quantile(wall, 0.25)),
          static_cast<long long>(quantile(wall, 0.75)),
          static_cast<long long>(quantile(cpu, 0.5)),
          static_cast<long long>(quantile(rss, 0.5)),
          static_cast<long long>(*std::max_element(rss.begin(), rss.end())));
    }
    if (!samples_file.empty()) {
      FILE* f = std::fopen(samples_file.c_str(), "w");
      if (f == nullptr) {
        fatal(samples_file + ": " + std::strerror(errno));
      }
      std::fprintf(f, "series,rep,wall_us,cpu_us,rss_kb\n");
      for (const auto& row : m_rows) {
        std::fprintf(f, "%s\n", row.c_str());
      }
      std::fclose(f);
    }
  }

private:
  static int64_t quantile(std::vector<int64_t> v, double q) {
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<size_t>(pos);
    const auto hi = std::min(lo + 1, v.size() - 1);
    const double frac = pos - static_cast<double>(lo);
    return static_cast<int64_t>(static_cast<double>(v[lo]) * (1 - frac)
                                + static_cast<double>(v[hi]) * frac + 0.5);
  }

  std::vector<std::string> m_order;
  std::map<std::string, std::vector<Sample>> m_samples;
  std::vector<std::string> m_rows;
};

struct Options {
  std::map<std::string, std::string> values;
  std::vector<std::string> rest; // after `--`

  std::string get(const std::string& key, const std::string& def = "") const {
    const auto it = values.find(key);
    if (it != values.end()) {
      return it->second;
    }
    if (def.empty()) {
      fatal("missing --" + key);
    }
    return def;
  }
  bool has(const std::string& key) const { return values.count(key) != 0; }
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      o.rest.assign(argv + i + 1, argv + argc);
      break;
    }
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) {
      fatal("bad argument: " + a);
    }
    o.values[a.substr(2)] = argv[++i];
  }
  return o;
}

// taskq's connection settings, which the baseline copies (bench/run reads
// them from storage/ and passes them on).
struct Settings {
  std::string synchronous = "NORMAL";
  bool no_ckpt_on_close = false;
  std::string busy_timeout_ms = "30000";
};
Settings g_settings;

// The sqlite3 shell with taskq's connection settings: the database is in
// WAL mode already (persistent in the file), `.timeout` is the busy
// timeout, `.dbconfig no_ckpt_on_close` as taskq sets it, and the write
// runs in BEGIN IMMEDIATE ... COMMIT as taskq's do. -json prints the
// RETURNING row(s), as taskq prints JSON.
std::vector<std::string> shell(const std::string& sqlite3,
                               const std::string& db,
                               const std::string& statement) {
  std::vector<std::string> argv = {sqlite3,
                                   "-batch",
                                   "-bail",
                                   "-init",
                                   "/dev/null",
                                   "-cmd",
                                   ".timeout " + g_settings.busy_timeout_ms};
  if (g_settings.no_ckpt_on_close) {
    // .dbconfig echoes the setting: keep that off the output.
    for (const char* c : {".output /dev/null", ".dbconfig no_ckpt_on_close on",
                          ".output stdout"}) {
      argv.emplace_back("-cmd");
      argv.emplace_back(c);
    }
  }
  argv.emplace_back("-json");
  argv.push_back(db);
  argv.push_back("PRAGMA synchronous=" + g_settings.synchronous
                 + "; PRAGMA foreign_keys=OFF; BEGIN IMMEDIATE; " + statement
                 + "; COMMIT;");
  return argv;
}

// Stops a measurement loop early, past --max-seconds, once --min-reps are
// done: a pathologically slow command must not hold the run for an hour.
class Budget {
public:
  explicit Budget(const Options& o)
      : m_min_reps(std::stoi(o.get("min-reps", "20"))),
        m_max_ns(
            static_cast<int64_t>(std::stod(o.get("max-seconds", "0")) * 1e9)) {}
  bool over(int reps_done) const {
    return reps_done >= m_min_reps && m_max_ns > 0
           && now_ns() - m_start > m_max_ns;
  }

private:
  int m_min_reps;
  int64_t m_max_ns;
  int64_t m_start = now_ns();
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    q += c;
    if (c == '\'') {
      q += '\'';
    }
  }
  return q + "'";
}

const char* const kPayload = R"({"file":"img/000042.png","size":31337})";

// The statements one `taskq add`, `lease` and `done` run (see README.md).
std::string sql_add(const std::string& queue,
                    const std::string& payload = kPayload) {
  const std::string now = std::to_string(unix_ms());
  return "INSERT INTO tasks(queue, state, payload, priority, run_at, "
         "created_at, updated_at) VALUES("
         + quote(queue) + ", 'runnable', " + quote(payload) + ", 0, " + now
         + ", " + now + ", " + now + ") RETURNING id";
}

std::string sql_lease(const std::string& queue) {
  const std::string now = std::to_string(unix_ms());
  return "UPDATE tasks SET state = 'runnable', "
         "lease_token = lower(hex(randomblob(16))), "
         "lease_worker = 'bench:1', lease_expires = "
         + now
         + " + 300000, lease_for_ms = 300000, attempts = attempts + 1, "
           "rev = rev + 1, updated_at = "
         + now
         + " WHERE id = (SELECT id FROM tasks WHERE queue = " + quote(queue)
         + " AND lease_token IS NULL AND state IN ('runnable', 'sleeping') "
           "AND run_at <= "
         + now + " ORDER BY priority DESC, run_at, id LIMIT 1) RETURNING *";
}

std::string sql_done(int64_t id, const std::string& token) {
  const std::string now = std::to_string(unix_ms());
  return "UPDATE tasks SET state = 'completed', rev = rev + 1, "
         "updated_at = "
         + now
         + ", lease_token = NULL, lease_worker = NULL, lease_expires = NULL, "
           "lease_for_ms = NULL WHERE id = "
         + std::to_string(id) + " AND lease_token = " + quote(token)
         + " AND lease_expires > " + now + " RETURNING id";
}

struct Leased {
  int64_t id;
  std::string token;
};

Leased leased(const Result& r, const char* token_key,
              const std::vector<std::string>& argv) {
  Leased l{json_int(r.out, "id"), json_str(r.out, token_key)};
  if (l.id < 0 || l.token.empty()) {
    fatal("no leased task (id and " + std::string(token_key)
          + ") in the output of: " + show(argv) + "\n" + r.out);
  }
  return l;
}

// Truncates `db`'s WAL, outside any timed interval, once it is longer than
// 256 frames: a looser bound than taskq's own commands keep (a connection's
// first 8 commits truncate past 64 frames, storage/sqlite/db.cpp).
void keep_wal_short(const std::string& sqlite3, const std::string& db) {
  constexpr std::uintmax_t k_frames = 256;
  constexpr std::uintmax_t k_limit = 32 + k_frames * (24 + 4096);
  std::error_code ec;
  const auto size = std::filesystem::file_size(db + "-wal", ec);
  if (!ec && size > k_limit) {
    must({sqlite3, db, "PRAGMA wal_checkpoint(TRUNCATE)"});
  }
}

int cmd_single(const Options& o) {
  const std::string taskq = o.get("taskq");
  const std::string sqlite3 = o.get("sqlite3");
  const std::string tdb = o.get("tdb");
  const std::string bdb = o.get("bdb");
  const std::string queue = o.get("queue", "bench");
  const int reps = std::stoi(o.get("reps", "200"));
  const int warmup = std::stoi(o.get("warmup", "5"));
  const Budget budget(o);
  Series series;

  for (int rep = -warmup; rep < reps && !budget.over(rep); ++rep) {
    const bool taskq_first = (rep & 1) == 0;
    auto pair = [&](const std::string& op, const std::vector<std::string>& a,
                    const auto& make_b, Result& ra, Result& rb) {
      if (taskq_first) {
        ra = must(a);
        rb = must(make_b());
      } else {
        rb = must(make_b());
        ra = must(a);
      }
      if (rep >= 0) {
        series.add(op + "_taskq", rep, ra);
        series.add(op + "_sqlite3", rep, rb);
      }
    };
    Result ta, ba, tl, bl, td, bd;
    // The cost of starting any process at all, for reference.
    const Result fl = must({"/bin/true"});
    if (rep >= 0) {
      series.add("floor_true", rep, fl);
    }
    // The statement text holds "now", so it is made right before its run.
    pair(
        "add", {taskq, "--db", tdb, "add", queue, "--payload", kPayload},
        [&] { return shell(sqlite3, bdb, sql_add(queue)); }, ta, ba);
    if (json_int("\"id\":" + ta.out, "id") <= 0
        || json_int(ba.out, "id") <= 0) {
      fatal("add printed no id: [" + ta.out + "] [" + ba.out + "]");
    }
    const std::vector<std::string> tlease = {taskq, "--db",  tdb, "lease",
                                             queue, "--for", "5m"};
    pair(
        "lease", tlease, [&] { return shell(sqlite3, bdb, sql_lease(queue)); },
        tl, bl);
    const Leased lt = leased(tl, "token", tlease);
    const Leased lb = leased(bl, "lease_token", {"sqlite3 lease"});
    pair(
        "done",
        {taskq, "--db", tdb, "done", std::to_string(lt.id), "--lease",
         lt.token},
        [&] { return shell(sqlite3, bdb, sql_done(lb.id, lb.token)); }, td, bd);
    // taskq's commands truncate their WAL once a commit leaves more than
    // 64 frames (storage/sqlite/db.cpp), paying for that inside their timed
    // runs. The shell cannot hook commits, so its WAL is given a bound here,
    // 256 frames, untimed: otherwise it grows without limit and slows every
    // baseline run, which would flatter taskq.
    keep_wal_short(sqlite3, bdb);
    if (json_int(bd.out, "id") != lb.id) {
      fatal("the sqlite3 done statement changed no row: " + bd.out);
    }
  }
  series.print(o.has("samples") ? o.get("samples") : "");
  return 0;
}

// --- PostgreSQL (bench/pg)
// ----------------------------------------------------

// The server's clock in ms, as taskq reads it on PostgreSQL.
const char* const k_pg_now =
    "CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT)";

// psql running one statement; its result row printed as JSON (-A -t: the
// value alone), as taskq prints JSON.
std::vector<std::string> psql(const std::string& psql_bin,
                              const std::string& url,
                              const std::string& statement) {
  return {psql_bin,          "-X", "-q", "-A", "-t",     "-v",
          "ON_ERROR_STOP=1", "-d", url,  "-c", statement};
}

std::string pg_add(const std::string& queue,
                   const std::string& payload = kPayload) {
  return std::string("WITH n AS (SELECT ") + k_pg_now
         + " AS ms), r AS (INSERT INTO tasks(queue, state, payload, priority, "
           "run_at, created_at, updated_at) SELECT "
         + quote(queue) + ", 'runnable', " + quote(payload)
         + ", 0, ms, ms, ms FROM n RETURNING id) SELECT row_to_json(r) FROM r";
}

std::string pg_lease(const std::string& queue) {
  return std::string("WITH n AS (SELECT ") + k_pg_now
         + " AS ms), c AS (SELECT id FROM tasks, n WHERE queue = "
         + quote(queue)
         + " AND lease_token IS NULL AND state IN ('runnable', 'sleeping') "
           "AND blockers = 0 AND broadcast_until IS NULL AND run_at <= n.ms "
           "ORDER BY priority DESC, run_at, id LIMIT 1 FOR UPDATE OF tasks "
           "SKIP LOCKED), r AS (UPDATE tasks t SET lease_token = "
           "md5(random()::text), lease_worker = 'bench:1', lease_expires = "
           "n.ms + 300000, lease_for_ms = 300000, attempts = t.attempts + 1, "
           "rev = t.rev + 1, updated_at = n.ms FROM c, n WHERE t.id = c.id "
           "RETURNING t.*) SELECT row_to_json(r) FROM r";
}

std::string pg_done(int64_t id, const std::string& token) {
  return std::string("WITH n AS (SELECT ") + k_pg_now
         + " AS ms), r AS (UPDATE tasks t SET state = 'completed', rev = "
           "t.rev + 1, updated_at = n.ms, lease_token = NULL, lease_worker = "
           "NULL, lease_expires = NULL, lease_for_ms = NULL FROM n WHERE t.id "
           "= "
         + std::to_string(id) + " AND t.lease_token = " + quote(token)
         + " AND t.lease_expires > n.ms RETURNING t.id) SELECT row_to_json(r) "
           "FROM r";
}

int cmd_pg_single(const Options& o) {
  const std::string taskq = o.get("taskq");
  const std::string psql_bin = o.get("psql");
  const std::string tdb = o.get("tdb");
  const std::string bdb = o.get("bdb");
  const std::string queue = o.get("queue", "bench");
  const int reps = std::stoi(o.get("reps", "200"));
  const int warmup = std::stoi(o.get("warmup", "5"));
  const Budget budget(o);
  Series series;

  for (int rep = -warmup; rep < reps && !budget.over(rep); ++rep) {
    const bool taskq_first = (rep & 1) == 0;
    auto pair = [&](const std::string& op, const std::vector<std::string>& a,
                    const std::vector<std::string>& b, Result& ra, Result& rb) {
      if (taskq_first) {
        ra = must(a);
        rb = must(b);
      } else {
        rb = must(b);
        ra = must(a);
      }
      if (rep >= 0) {
        series.add(op + "_taskq", rep, ra);
        series.add(op + "_psql", rep, rb);
      }
    };
    Result ta, ba, tl, bl, td, bd;
    const Result fl = must({"/bin/true"});
    if (rep >= 0) {
      series.add("floor_true", rep, fl);
    }
    pair("add", {taskq, "--db", tdb, "add", queue, "--payload", kPayload},
         psql(psql_bin, bdb, pg_add(queue)), ta, ba);
    if (json_int("\"id\":" + ta.out, "id") <= 0
        || json_int(ba.out, "id") <= 0) {
      fatal("add printed no id: [" + ta.out + "] [" + ba.out + "]");
    }
    const std::vector<std::string> tlease = {taskq, "--db",  tdb, "lease",
                                             queue, "--for", "5m"};
    pair("lease", tlease, psql(psql_bin, bdb, pg_lease(queue)), tl, bl);
    const Leased lt = leased(tl, "token", tlease);
    const Leased lb = leased(bl, "lease_token", {"psql lease"});
    pair("done",
         {taskq, "--db", tdb, "done", std::to_string(lt.id), "--lease",
          lt.token},
         psql(psql_bin, bdb, pg_done(lb.id, lb.token)), td, bd);
    if (json_int(bd.out, "id") != lb.id) {
      fatal("the psql done statement changed no row: " + bd.out);
    }
  }
  series.print(o.has("samples") ? o.get("samples") : "");
  return 0;
}

int cmd_multi(const Options& o) {
  if (o.rest.empty()) {
    fatal("multi: no command after --");
  }
  const int n = std::stoi(o.get("n"));
  const std::string dir = o.get("dir");
  std::vector<char*> args;
  for (const auto& a : o.rest) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  std::vector<pid_t> pids;
  const int64_t t0 = now_ns();
  for (int k = 0; k < n; ++k) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    const std::string out = dir + "/out." + std::to_string(k);
    const std::string err = dir + "/err." + std::to_string(k);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = 0;
    const int rc =
        posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      fatal("cannot run " + o.rest[0] + ": " + std::strerror(rc));
    }
    pids.push_back(pid);
    g_background.push_back(pid);
  }
  int64_t cpu_us = 0;
  int failed = 0;
  for (const pid_t pid : pids) {
    int status = 0;
    rusage ru{};
    while (wait4(pid, &status, 0, &ru) < 0) {
      if (errno != EINTR) {
        fatal(std::string("wait4: ") + std::strerror(errno));
      }
    }
    cpu_us += tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
    failed += WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
  }
  g_background.clear();
  const int64_t wall_us = (now_ns() - t0) / 1000;
  std::printf("wall_us=%lld cpu_us=%lld failed=%d\n",
              static_cast<long long>(wall_us), static_cast<long long>(cpu_us),
              failed);
  return 0;
}

// One `lease` of a timed series: its name, what makes the command (the
// shell's statement text holds "now", so it is made right before its run),
// the key of the lease token in its output (taskq prints "token", the
// shell's RETURNING row "lease_token"), and a text its output must hold
// ("" for any).
struct LeaseRun {
  std::string name;
  std::function<std::vector<std::string>()> make;
  std::string token_key = "token";
  std::string expect;
};

// Runs each repetition's leases in rotating order (for two: A B, B A, ...;
// for three: A B C, B C A, C A B, ...), so drift hits every series alike.
// Each must lease a task; warm-up repetitions (negative) are not recorded.
void lease_rotation(Series& series, int rep,
                    const std::vector<LeaseRun>& runs) {
  const int n = static_cast<int>(runs.size());
  const int first = ((rep % n) + n) % n;
  for (int i = 0; i < n; ++i) {
    const LeaseRun& run = runs[static_cast<size_t>((first + i) % n)];
    const std::vector<std::string> argv = run.make();
    const Result r = must(argv);
    leased(r, run.token_key.c_str(), argv);
    if (!run.expect.empty() && r.out.find(run.expect) == std::string::npos) {
      fatal("leased a task without '" + run.expect + "' in it (" + run.name
            + "): " + show(argv) + "\n" + r.out);
    }
    if (rep >= 0) {
      series.add(run.name, rep, r);
    }
  }
}

std::function<std::vector<std::string>()>
taskq_lease(const std::string& taskq, const std::string& db,
            const std::string& queue) {
  return [=] {
    return std::vector<std::string>{taskq, "--db",  db,  "lease",
                                    queue, "--for", "5m"};
  };
}

int cmd_lease_scale(const Options& o) {
  const std::string taskq = o.get("taskq");
  const std::string small = o.get("small");
  const std::string large = o.get("large");
  const std::string queue = o.get("queue", "bench");
  const int reps = std::stoi(o.get("reps", "200"));
  const int warmup = std::stoi(o.get("warmup", "5"));
  const bool baseline = o.has("sqlite3");
  const std::string prefix = o.get("prefix", "-") == "-" ? "" : o.get("prefix");
  const Budget budget(o);
  Series series;

  auto shell_lease = [&](const std::string& db) {
    return [sqlite3 = o.get("sqlite3"), db, queue] {
      return shell(sqlite3, db, sql_lease(queue));
    };
  };
  const std::vector<LeaseRun> t_runs = {
      {prefix + "lease1k_taskq", taskq_lease(taskq, small, queue), "token", ""},
      {prefix + "lease1m_taskq", taskq_lease(taskq, large, queue), "token",
       ""}};
  std::vector<LeaseRun> b_runs;
  if (baseline) {
    b_runs = {{prefix + "lease1k_sqlite3", shell_lease(o.get("bsmall")),
               "lease_token", ""},
              {prefix + "lease1m_sqlite3", shell_lease(o.get("blarge")),
               "lease_token", ""}};
  }
  for (int rep = -warmup; rep < reps && !budget.over(rep); ++rep) {
    lease_rotation(series, rep, t_runs);
    if (baseline) {
      lease_rotation(series, rep, b_runs);
    }
  }
  series.print(o.has("samples") ? o.get("samples") : "");
  return 0;
}

// lease-backlog: `taskq lease` on a queue of a few due tasks (--empty)
// against the same with a backlog of future-dated tasks (--future) and of
// dependency-blocked ones (--blocked), in rotation. Every lease must print
// --expect (the due tasks' payload mark): a backlog task leased is a
// failure, not a figure.
int cmd_lease_backlog(const Options& o) {
  const std::string taskq = o.get("taskq");
  const std::string queue = o.get("queue", "bench");
  const int reps = std::stoi(o.get("reps", "200"));
  const int warmup = std::stoi(o.get("warmup", "5"));
  const std::string expect = o.get("expect", "-") == "-" ? "" : o.get("expect");
  const Budget budget(o);
  Series series;

  std::vector<LeaseRun> runs;
  for (const char* kind : {"empty", "future", "blocked"}) {
    runs.push_back({std::string("lease_") + kind,
                    taskq_lease(taskq, o.get(kind), queue), "token", expect});
  }
  for (int rep = -warmup; rep < reps && !budget.over(rep); ++rep) {
    lease_rotation(series, rep, runs);
  }
  series.print(o.has("samples") ? o.get("samples") : "");
  return 0;
}

int cmd_run(const Options& o) {
  if (o.rest.empty()) {
    fatal("run: no command after --");
  }
  const Result r = spawn(o.rest);
  std::string first = r.out.substr(0, r.out.find('\n'));
  std::printf("wall_us=%lld cpu_us=%lld rss_kb=%lld rc=%d out=%s\n",
              static_cast<long long>(r.wall_us),
              static_cast<long long>(r.cpu_us),
              static_cast<long long>(r.rss_kb), r.status, first.c_str());
  if (r.status != 0) {
    std::fprintf(stderr, "%s", r.err.c_str());
  }
  return 0;
}

// --- wake-up latency and idle CPU of `taskq run` (bench/wakeup) -------------

// The clock both ends of a wake-up read: system-wide, so a timestamp taken
// here means the same in the probe, and never stepped by NTP.
int64_t mono_ns() {
  return now_ns();
}

// `probe FILE`, the handler `taskq run` starts: appends "ID,NS\n", NS being
// now minus the "t" of TASKQ_PAYLOAD (the sender's clock just before it
// started its writer), to FILE in one write. Nothing else: it is the
// child whose start is timed.
int cmd_probe(int argc, char** argv) {
  const int64_t now = mono_ns();
  if (argc < 3) {
    std::fprintf(stderr, "usage: taskq_bench_harness probe FILE\n");
    return 2;
  }
  const char* payload = std::getenv("TASKQ_PAYLOAD");
  const char* id = std::getenv("TASKQ_ID");
  const int64_t t = payload != nullptr ? json_int(payload, "t") : -1;
  if (t <= 0) {
    std::fprintf(stderr, "probe: no \"t\" in TASKQ_PAYLOAD\n");
    return 1;
  }
  char line[96];
  const int n =
      std::snprintf(line, sizeof line, "%s,%lld\n", id != nullptr ? id : "-",
                    static_cast<long long>(now - t));
  const int fd = open(argv[2], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0 || write(fd, line, static_cast<size_t>(n)) != n) {
    std::perror("probe");
    return 1;
  }
  close(fd);
  return 0;
}

struct Bg { // a process left running, its stdout and stderr in pipes
  pid_t pid = -1;
  int out = -1;
  int err = -1;
};

Bg spawn_bg(const std::vector<std::string>& argv,
            const std::vector<std::string>& extra_env = {}) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    fatal(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    env_store.emplace_back(*e);
  }
  env_store.insert(env_store.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (auto& e : env_store) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  Bg bg;
  const int rc =
      posix_spawnp(&bg.pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    fatal("cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  g_background.push_back(bg.pid);
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  fcntl(err_pipe[0], F_SETFL, O_NONBLOCK);
  bg.out = out_pipe[0];
  bg.err = err_pipe[0];
  return bg;
}

// Appends what fd has now (non-blocking) to sink.
void drain_fd(int fd, std::string& sink) {
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      sink.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

// Stops a background process with SIGTERM and reaps it: its exit status
// (128 + signal when killed), total CPU time, and what it printed.
Result stop_bg(Bg& bg, int64_t deadline_ms = 30000) {
  kill(bg.pid, SIGTERM);
  Result r;
  int status = 0;
  rusage ru{};
  const int64_t until = now_ns() + deadline_ms * 1000000;
  while (true) {
    drain_fd(bg.out, r.out);
    drain_fd(bg.err, r.err);
    const pid_t got = wait4(bg.pid, &status, WNOHANG, &ru);
    if (got == bg.pid) {
      break;
    }
    if (got < 0 && errno != EINTR) {
      fatal(std::string("wait4: ") + std::strerror(errno));
    }
    if (now_ns() > until) {
      kill(bg.pid, SIGKILL);
      fatal("process " + std::to_string(bg.pid) + " did not exit on SIGTERM");
    }
    usleep(2000);
  }
  std::erase(g_background, bg.pid);
  drain_fd(bg.out, r.out);
  drain_fd(bg.err, r.err);
  close(bg.out);
  close(bg.err);
  r.cpu_us = tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string read_text(const std::string& path) {
  std::string s;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return s;
  }
  drain_fd(fd, s);
  close(fd);
  return s;
}

// The system call a process is blocked in (/proc/PID/syscall), or -1 when
// it is running or unknown.
long syscall_of(pid_t pid) {
  const std::string s = read_text("/proc/" + std::to_string(pid) + "/syscall");
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) {
    return -1;
  }
  return std::strtol(s.c_str(), nullptr, 10);
}

bool is_blocking_wait(long nr) {
#if defined(__x86_64__)
  // poll, ppoll, select, pselect6, epoll_wait, epoll_pwait, epoll_pwait2,
  // nanosleep, clock_nanosleep, pause, rt_sigsuspend, rt_sigtimedwait
  for (const long w :
       {7L, 271L, 23L, 270L, 232L, 281L, 441L, 35L, 230L, 34L, 130L, 128L}) {
    if (nr == w) {
      return true;
    }
  }
  return false;
#else
  return nr >= 0;
#endif
}

// Waits (up to timeout_ms) until pid is blocked waiting rather than
// working; false on timeout. Sampled every 0.5 ms: /proc offers nothing to
// wait on.
bool await_blocked(pid_t pid, int64_t timeout_ms) {
  const int64_t until = now_ns() + timeout_ms * 1000000;
  while (now_ns() < until) {
    if (is_blocking_wait(syscall_of(pid))) {
      return true;
    }
    usleep(500);
  }
  return false;
}

struct CpuStat {
  int64_t sched_ns = 0; // sum of /proc/PID/task/*/schedstat's run time
  int64_t ticks = 0;    // utime + stime of /proc/PID/stat
  int64_t switches = 0; // voluntary + involuntary context switches
};

CpuStat cpu_stat(pid_t pid) {
  CpuStat c;
  const std::string dir = "/proc/" + std::to_string(pid);
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator(dir + "/task", ec)) {
    const std::string t = task.path().string();
    c.sched_ns +=
        std::strtoll(read_text(t + "/schedstat").c_str(), nullptr, 10);
    const std::string status = read_text(t + "/status");
    for (const char* key :
         {"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"}) {
      const auto at = status.find(key);
      if (at != std::string::npos) {
        c.switches +=
            std::strtoll(status.c_str() + at + std::strlen(key), nullptr, 10);
      }
    }
  }
  const std::string stat = read_text(dir + "/stat");
  const auto close_paren = stat.rfind(')');
  if (close_paren != std::string::npos) {
    // After "pid (comm)": field 3 is the state; utime and stime are 14, 15.
    const char* p = stat.c_str() + close_paren + 2;
    for (int field = 3; field < 14 && *p != '\0'; ++field) {
      p = std::strchr(p, ' ');
      p = p != nullptr ? p + 1 : "";
    }
    char* end = nullptr;
    const long long ut = std::strtoll(p, &end, 10);
    const long long st = std::strtoll(end, nullptr, 10);
    c.ticks = ut + st;
  }
  return c;
}

// Watches a folder with inotify, so the sender awaits the probe's write
// instead of polling the results file.
class FolderWatch {
public:
  explicit FolderWatch(const std::string& dir)
      : m_fd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (m_fd < 0
        || inotify_add_watch(m_fd, dir.c_str(), IN_MODIFY | IN_CLOSE_WRITE)
               < 0) {
      fatal("inotify on " + dir + ": " + std::strerror(errno));
    }
  }
  ~FolderWatch() { close(m_fd); }
  FolderWatch(const FolderWatch&) = delete;
  FolderWatch& operator=(const FolderWatch&) = delete;
  int fd() const { return m_fd; }
  void drain() const {
    std::string junk;
    drain_fd(m_fd, junk);
  }

private:
  int m_fd;
};

// Waits until done() holds, up to timeout_ms, sleeping in poll() on the
// given fds (an inotify fd, a worker's stderr) whose readiness may change
// it; on_ready is called to consume them. False on timeout.
template <typename Done, typename OnReady>
bool await(const std::vector<int>& fds, int64_t timeout_ms, Done done,
           OnReady on_ready) {
  const int64_t until = now_ns() + timeout_ms * 1000000;
  while (true) {
    on_ready();
    if (done()) {
      return true;
    }
    const int64_t left_ms = (until - now_ns()) / 1000000;
    if (left_ms <= 0) {
      return false;
    }
    std::vector<pollfd> p;
    for (const int fd : fds) {
      p.push_back({fd, POLLIN, 0});
    }
    if (poll(p.data(), p.size(), static_cast<int>(left_ms)) < 0
        && errno != EINTR) {
      fatal(std::string("poll: ") + std::strerror(errno));
    }
  }
}

// The probe's records: "ID,NS" lines appended to one file.
class ProbeFile {
public:
  explicit ProbeFile(std::string path) : m_path(std::move(path)) {}
  const std::string& path() const { return m_path; }
  // Reads lines added since the last call; true when one is there.
  bool next(std::string& id, int64_t& ns) {
    if (m_pending.empty()) {
      const std::string all = read_text(m_path);
      if (all.size() > m_offset) {
        m_buf += all.substr(m_offset);
        m_offset = all.size();
      }
      size_t nl = 0;
      while ((nl = m_buf.find('\n')) != std::string::npos) {
        m_pending.push_back(m_buf.substr(0, nl));
        m_buf.erase(0, nl + 1);
      }
    }
    if (m_pending.empty()) {
      return false;
    }
    const std::string line = m_pending.front();
    m_pending.erase(m_pending.begin());
    const auto comma = line.find(',');
    id = line.substr(0, comma);
    ns = std::strtoll(line.c_str() + comma + 1, nullptr, 10);
    return true;
  }

private:
  std::string m_path;
  size_t m_offset = 0;
  std::string m_buf;
  std::vector<std::string> m_pending;
};

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    fatal("cannot find my own executable: " + ec.message());
  }
  return p.string();
}

struct Quantiles {
  size_t n;
  int64_t med, p25, p75, p95, max;
};

Quantiles quantiles(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  auto q = [&](double f) {
    const double pos = f * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<size_t>(pos);
    const auto hi = std::min(lo + 1, v.size() - 1);
    const double frac = pos - static_cast<double>(lo);
    return static_cast<int64_t>(static_cast<double>(v[lo]) * (1 - frac)
                                + static_cast<double>(v[hi]) * frac + 0.5);
  };
  return {v.size(), q(0.5), q(0.25), q(0.75), q(0.95), v.back()};
}

// A latency series (and the median of its writers' times) as one
// `series` line.
void print_latency(const char* name, const std::vector<int64_t>& lat,
                   const std::vector<int64_t>& writer) {
  const Quantiles q = quantiles(lat);
  const Quantiles wq = quantiles(writer);
  std::printf("series %s n=%zu med_us=%lld p25_us=%lld p75_us=%lld "
              "p95_us=%lld max_us=%lld writer_med_us=%lld\n",
              name, q.n, static_cast<long long>(q.med),
              static_cast<long long>(q.p25), static_cast<long long>(q.p75),
              static_cast<long long>(q.p95), static_cast<long long>(q.max),
              static_cast<long long>(wq.med));
}

// The raw latency samples to --samples, when given.
void write_latency_samples(const Options& o,
                           const std::vector<std::string>& rows) {
  if (!o.has("samples")) {
    return;
  }
  FILE* f = std::fopen(o.get("samples").c_str(), "w");
  if (f == nullptr) {
    fatal(o.get("samples") + ": " + std::strerror(errno));
  }
  std::fprintf(f, "series,rep,latency_us,writer_us,id\n");
  for (const auto& row : rows) {
    std::fprintf(f, "%s\n", row.c_str());
  }
  std::fclose(f);
}

// wakeup-latency: a `taskq run` waits on --tdb; per repetition, in
// alternating order,
//   taskq:   t0, spawn `taskq add Q --payload {"t":t0}`, and the run's
//            probe records (its start) - t0;
//   sqlite3: t0, the sqlite3 shell's INSERT of the same row on --bdb, then
//            spawn the probe directly; it records (its start) - t0.
// Each taskq repetition starts only once the run has finished the task
// before and is blocked waiting again.
int cmd_wakeup_latency(const Options& o) {
  const std::string taskq = o.get("taskq");
  // The baseline: the sqlite3 shell, or with --psql (PostgreSQL) psql.
  const bool pg = o.has("psql");
  const std::string sqlite3 = pg ? "" : o.get("sqlite3");
  const std::string bname = pg ? "psql" : "sqlite3";
  const std::string tdb = o.get("tdb");
  const std::string bdb = o.get("bdb");
  const std::string queue = o.get("queue", "bench");
  const std::string dir = o.get("probe-dir"); // not the databases' folder
  const int reps = std::stoi(o.get("reps", "200"));
  const int warmup = std::stoi(o.get("warmup", "5"));
  const int64_t timeout_ms = std::stoll(o.get("timeout-ms", "10000"));
  const std::string self = self_exe();

  ProbeFile tfile(dir + "/taskq.probe");
  ProbeFile bfile(dir + "/" + bname + ".probe");
  FolderWatch watch(dir);

  Bg worker = spawn_bg({taskq, "--db", tdb, "run", queue, "--verbose", "--",
                        self, "probe", tfile.path()});
  std::string worker_err;
  auto worker_died = [&] {
    int status = 0;
    if (waitpid(worker.pid, &status, WNOHANG) == worker.pid) {
      drain_fd(worker.err, worker_err);
      fatal("`taskq run` exited (status " + std::to_string(status) + "):\n"
            + worker_err);
    }
  };
  if (!await_blocked(worker.pid, timeout_ms)) {
    worker_died();
    fatal("`taskq run` did not settle into waiting");
  }

  std::vector<std::string> rows;
  std::vector<int64_t> t_lat, b_lat, t_writer, b_writer;
  int64_t t_after_exit_neg = 0;
  std::vector<int64_t> t_after_exit;
  auto one_taskq = [&](int rep) {
    // The run finished the task before (its "completed" line) and is
    // blocked waiting again: each sample is a wake-up from idle.
    if (!await_blocked(worker.pid, timeout_ms)) {
      worker_died();
      fatal("`taskq run` is not waiting (rep " + std::to_string(rep) + ")");
    }
    watch.drain();
    const int64_t t0 = mono_ns();
    const std::string payload = "{\"t\":" + std::to_string(t0) + "}";
    const Result add =
        must({taskq, "--db", tdb, "add", queue, "--payload", payload});
    const int64_t writer_exit = t0 + add.wall_us * 1000;
    const std::string id = add.out.substr(0, add.out.find('\n'));
    std::string got_id;
    int64_t ns = 0;
    bool got = false;
    const bool ok = await(
        {watch.fd(), worker.err}, timeout_ms, [&] { return got; },
        [&] {
          watch.drain();
          drain_fd(worker.err, worker_err);
          got = got || tfile.next(got_id, ns);
        });
    if (!ok) {
      worker_died();
      fatal("task " + id + " was not started within "
            + std::to_string(timeout_ms) + " ms of its add (a lost wake-up?)"
            + "\n`taskq run` said:\n" + worker_err);
    }
    if (got_id != id) {
      fatal("the probe ran for task " + got_id + ", not " + id);
    }
    // Then wait for the run to record it, before the next repetition.
    const std::string done_line = "task " + id + ": completed";
    if (!await(
            {worker.err}, timeout_ms,
            [&] { return worker_err.find(done_line) != std::string::npos; },
            [&] { drain_fd(worker.err, worker_err); })) {
      worker_died();
      fatal("`taskq run` did not complete task " + id + ":\n" + worker_err);
    }
    if (rep >= 0) {
      t_lat.push_back(ns / 1000);
      t_writer.push_back(add.wall_us);
      const int64_t after = t0 + ns - writer_exit;
      t_after_exit.push_back(after / 1000);
      t_after_exit_neg += after < 0 ? 1 : 0;
      rows.push_back("taskq," + std::to_string(rep) + ","
                     + std::to_string(ns / 1000) + ","
                     + std::to_string(add.wall_us) + "," + id);
    }
  };
  auto one_sqlite3 = [&](int rep) {
    watch.drain();
    const int64_t t0 = mono_ns();
    const std::string payload = "{\"t\":" + std::to_string(t0) + "}";
    const Result ins =
        must(pg ? psql(o.get("psql"), bdb, pg_add(queue, payload))
                : shell(sqlite3, bdb, sql_add(queue, payload)));
    const int64_t id = json_int(ins.out, "id");
    if (id <= 0) {
      fatal("the " + bname + " INSERT printed no id: " + ins.out);
    }
    Bg probe = spawn_bg(
        {self, "probe", bfile.path()},
        {"TASKQ_ID=" + std::to_string(id), "TASKQ_PAYLOAD=" + payload});
    std::string got_id;
    int64_t ns = 0;
    bool got = false;
    if (!await(
            {watch.fd()}, timeout_ms, [&] { return got; },
            [&] {
              watch.drain();
              got = got || bfile.next(got_id, ns);
            })) {
      fatal("the directly started probe recorded nothing");
    }
    int status = 0;
    waitpid(probe.pid, &status, 0);
    std::erase(g_background, probe.pid);
    close(probe.out);
    close(probe.err);
    if (status != 0 || got_id != std::to_string(id)) {
      fatal("the probe failed for row " + std::to_string(id));
    }
    if (!pg) {
      keep_wal_short(sqlite3, bdb); // as (a) does, untimed
    }
    if (rep >= 0) {
      b_lat.push_back(ns / 1000);
      b_writer.push_back(ins.wall_us);
      rows.push_back(bname + "," + std::to_string(rep) + ","
                     + std::to_string(ns / 1000) + ","
                     + std::to_string(ins.wall_us) + "," + std::to_string(id));
    }
  };
  for (int rep = -warmup; rep < reps; ++rep) {
    if ((rep & 1) == 0) {
      one_taskq(rep);
      one_sqlite3(rep);
    } else {
      one_sqlite3(rep);
      one_taskq(rep);
    }
  }
  if (!await_blocked(worker.pid, timeout_ms)) {
    fatal("`taskq run` is not waiting at the end");
  }
  const Result w = stop_bg(worker);
  worker_err += w.err;
  const std::string want = "leased " + std::to_string(reps + warmup)
                           + ", completed " + std::to_string(reps + warmup);
  if (w.status != 0 || w.out.find(want) == std::string::npos) {
    fatal("`taskq run` ended with status " + std::to_string(w.status)
          + " and summary [" + w.out + "], wanted [" + want + ", ...]\n"
          + worker_err);
  }

  print_latency("wake_taskq", t_lat, t_writer);
  print_latency(pg ? "wake_psql" : "wake_sqlite3", b_lat, b_writer);
  const Quantiles ae = quantiles(t_after_exit);
  std::printf("series wake_after_add_exit n=%zu med_us=%lld p95_us=%lld "
              "before_exit=%lld\n",
              ae.n, static_cast<long long>(ae.med),
              static_cast<long long>(ae.p95),
              static_cast<long long>(t_after_exit_neg));
  write_latency_samples(o, rows);
  return 0;
}

// follow-latency: a `taskq events --follow -o json` waits on --tdb; per
// repetition, alternating,
//   taskq:   t0, spawn `taskq add Q`, and the follower's line for the new
//            task arrives at t1: latency t1 - t0;
//   sqlite3: t0, the sqlite3 shell's INSERT of the same row on --bdb, to
//            its exit: the floor, a write by another process with nobody
//            watching.
// Each taskq repetition starts once the follower is blocked waiting again.
int cmd_follow_latency(const Options& o) {
  const std::string taskq = o.get("taskq");
  const std::string sqlite3 = o.get("sqlite3");
  const std::string tdb = o.get("tdb");
  const std::string bdb = o.get("bdb");
  const std::string queue = o.get("queue", "bench");
  const int reps = std::stoi(o.get("reps", "200"));
  const int warmup = std::stoi(o.get("warmup", "5"));
  const int64_t timeout_ms = std::stoll(o.get("timeout-ms", "10000"));

  Bg follower = spawn_bg({taskq, "--db", tdb, "events", "--follow", "--queue",
                          queue, "-o", "json"});
  std::string seen;
  std::string follower_err;
  auto follower_died = [&] {
    int status = 0;
    if (waitpid(follower.pid, &status, WNOHANG) == follower.pid) {
      drain_fd(follower.err, follower_err);
      fatal("`taskq events --follow` exited (status " + std::to_string(status)
            + "):\n" + follower_err);
    }
  };
  std::vector<std::string> rows;
  std::vector<int64_t> t_lat, t_writer, b_writer;
  auto one_taskq = [&](int rep) {
    if (!await_blocked(follower.pid, timeout_ms)) {
      follower_died();
      fatal("`taskq events --follow` is not waiting (rep " + std::to_string(rep)
            + ")");
    }
    drain_fd(follower.out, seen);
    seen.clear();
    const int64_t t0 = mono_ns();
    const Result add = must({taskq, "--db", tdb, "add", queue});
    const std::string id = add.out.substr(0, add.out.find('\n'));
    const std::string want = "\"task\":" + id + ",";
    if (!await(
            {follower.out}, timeout_ms,
            [&] { return seen.find(want) != std::string::npos; },
            [&] { drain_fd(follower.out, seen); })) {
      follower_died();
      fatal("task " + id + "'s add was not shown within "
            + std::to_string(timeout_ms) + " ms; the follower printed:\n"
            + seen);
    }
    const int64_t t1 = mono_ns();
    if (rep >= 0) {
      t_lat.push_back((t1 - t0) / 1000);
      t_writer.push_back(add.wall_us);
      rows.push_back("taskq," + std::to_string(rep) + ","
                     + std::to_string((t1 - t0) / 1000) + ","
                     + std::to_string(add.wall_us) + "," + id);
    }
  };
  auto one_sqlite3 = [&](int rep) {
    const Result ins = must(shell(sqlite3, bdb, sql_add(queue, "null")));
    keep_wal_short(sqlite3, bdb); // as (a) does, untimed
    if (rep >= 0) {
      b_writer.push_back(ins.wall_us);
      rows.push_back("sqlite3," + std::to_string(rep) + ","
                     + std::to_string(ins.wall_us) + ","
                     + std::to_string(ins.wall_us) + ","
                     + std::to_string(json_int(ins.out, "id")));
    }
  };
  for (int rep = -warmup; rep < reps; ++rep) {
    if ((rep & 1) == 0) {
      one_taskq(rep);
      one_sqlite3(rep);
    } else {
      one_sqlite3(rep);
      one_taskq(rep);
    }
  }
  stop_bg(follower);
  print_latency("follow_taskq", t_lat, t_writer);
  print_latency("follow_sqlite3", b_writer, b_writer);
  write_latency_samples(o, rows);
  return 0;
}

// wakeup-idle: a `taskq run` on an empty queue and, beside it, a process
// blocked in sleep(3); once both wait, their CPU time over --seconds.
int cmd_wakeup_idle(const Options& o) {
  const std::string taskq = o.get("taskq");
  const std::string db = o.get("db");
  const std::string queue = o.get("queue", "bench");
  const std::string probe_file = o.get("probe-file");
  const double seconds = std::stod(o.get("seconds", "10"));
  const std::string self = self_exe();

  struct Idle {
    const char* name;
    Bg bg;
    CpuStat before, after;
    Result end;
  };
  Idle procs[2] = {{"idle_taskq",
                    spawn_bg({taskq, "--db", db, "run", queue, "--", self,
                              "probe", probe_file}),
                    {},
                    {},
                    {}},
                   {"idle_sleep", spawn_bg({"sleep", "100000"}), {}, {}, {}}};
  for (auto& p : procs) {
    if (!await_blocked(p.bg.pid, 10000)) {
      stop_bg(p.bg);
      fatal(std::string(p.name) + ": the process did not settle into waiting");
    }
  }
  usleep(100000); // startup done: a margin before the window opens
  for (auto& p : procs) {
    p.before = cpu_stat(p.bg.pid);
  }
  const int64_t t0 = now_ns();
  usleep(static_cast<useconds_t>(seconds * 1e6));
  for (auto& p : procs) {
    p.after = cpu_stat(p.bg.pid);
  }
  const int64_t window_us = (now_ns() - t0) / 1000;
  for (auto& p : procs) {
    p.end = stop_bg(p.bg);
  }
  if (procs[0].end.status != 0) {
    fatal("`taskq run` exited " + std::to_string(procs[0].end.status)
          + " on SIGTERM (wanted 0):\n" + procs[0].end.err);
  }
  if (procs[0].end.out.find("leased 0:") == std::string::npos) {
    fatal("`taskq run` on an empty queue leased something: "
          + procs[0].end.out);
  }
  const long hz = sysconf(_SC_CLK_TCK);
  for (const auto& p : procs) {
    std::printf(
        "idle %s window_us=%lld cpu_us=%lld ticks_cpu_us=%lld "
        "switches=%lld lifetime_cpu_us=%lld\n",
        p.name, static_cast<long long>(window_us),
        static_cast<long long>((p.after.sched_ns - p.before.sched_ns) / 1000),
        static_cast<long long>((p.after.ticks - p.before.ticks) * 1000000 / hz),
        static_cast<long long>(p.after.switches - p.before.switches),
        static_cast<long long>(p.end.cpu_us));
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: taskq_bench_harness "
        "single|lease-scale|lease-backlog|run|wakeup-latency|wakeup-idle|"
        "follow-latency|pg-single|multi|"
        "probe ...\n");
    return 2;
  }
  const std::string cmd = argv[1];
  if (cmd == "probe") {
    return cmd_probe(argc, argv);
  }
  const Options o = parse(argc, argv);
  g_settings.synchronous = o.get("synchronous", "NORMAL");
  g_settings.no_ckpt_on_close = o.get("no-ckpt-on-close", "0") == "1";
  g_settings.busy_timeout_ms = o.get("busy-timeout-ms", "30000");
  if (cmd == "single") {
    return cmd_single(o);
  }
  if (cmd == "lease-scale") {
    return cmd_lease_scale(o);
  }
  if (cmd == "lease-backlog") {
    return cmd_lease_backlog(o);
  }
  if (cmd == "run") {
    return cmd_run(o);
  }
  if (cmd == "wakeup-latency") {
    return cmd_wakeup_latency(o);
  }
  if (cmd == "wakeup-idle") {
    return cmd_wakeup_idle(o);
  }
  if (cmd == "follow-latency") {
    return cmd_follow_latency(o);
  }
  if (cmd == "pg-single") {
    return cmd_pg_single(o);
  }
  if (cmd == "multi") {
    return cmd_multi(o);
  }
  fatal("unknown command: " + cmd);
}
