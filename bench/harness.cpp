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
//   taskq_bench_harness run -- CMD [ARG...]
//     Runs CMD once (stdout and stderr captured) and prints one line:
//     `wall_us=N cpu_us=N rss_kb=N rc=N out=FIRST-LINE-OF-STDOUT`.
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
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <poll.h>
#include <spawn.h>
#include <string>
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

[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "taskq_bench_harness: %s\n", what.c_str());
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
std::string sql_add(const std::string& queue) {
  const std::string now = std::to_string(unix_ms());
  return "INSERT INTO tasks(queue, state, payload, priority, run_at, "
         "created_at, updated_at) VALUES("
         + quote(queue) + ", 'runnable', " + quote(kPayload) + ", 0, " + now
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
// the 256 frames at which taskq truncates its own.
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
    // taskq truncates its WAL once a commit leaves more than 256 frames
    // (storage/db.cpp), paying for that inside its timed commands. The
    // shell cannot hook commits, so its WAL is given the same bound here,
    // untimed: otherwise it grows without limit and slows every baseline
    // run, which would flatter taskq.
    keep_wal_short(sqlite3, bdb);
    if (json_int(bd.out, "id") != lb.id) {
      fatal("the sqlite3 done statement changed no row: " + bd.out);
    }
  }
  series.print(o.has("samples") ? o.get("samples") : "");
  return 0;
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

  auto tlease = [&](const std::string& db) {
    return std::vector<std::string>{taskq, "--db",  db,  "lease",
                                    queue, "--for", "5m"};
  };
  for (int rep = -warmup; rep < reps && !budget.over(rep); ++rep) {
    const bool small_first = (rep & 1) == 0;
    auto one = [&](const std::string& name, const auto& make, bool sql) {
      const auto argv = make();
      const Result r = must(argv);
      leased(r, sql ? "lease_token" : "token", argv);
      if (rep >= 0) {
        series.add(prefix + name, rep, r);
      }
    };
    auto t_small = [&] { return tlease(small); };
    auto t_large = [&] { return tlease(large); };
    if (small_first) {
      one("lease1k_taskq", t_small, false);
      one("lease1m_taskq", t_large, false);
    } else {
      one("lease1m_taskq", t_large, false);
      one("lease1k_taskq", t_small, false);
    }
    if (baseline) {
      auto b_small = [&] {
        return shell(o.get("sqlite3"), o.get("bsmall"), sql_lease(queue));
      };
      auto b_large = [&] {
        return shell(o.get("sqlite3"), o.get("blarge"), sql_lease(queue));
      };
      if (small_first) {
        one("lease1k_sqlite3", b_small, true);
        one("lease1m_sqlite3", b_large, true);
      } else {
        one("lease1m_sqlite3", b_large, true);
        one("lease1k_sqlite3", b_small, true);
      }
    }
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

} // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: taskq_bench_harness single|lease-scale|run ...\n");
    return 2;
  }
  const std::string cmd = argv[1];
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
  if (cmd == "run") {
    return cmd_run(o);
  }
  fatal("unknown command: " + cmd);
}
