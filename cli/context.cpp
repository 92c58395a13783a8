#include "cli/context.hpp"

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/json_text.hpp"
#include "core/new_task.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace taskq::cli {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string(value) : fallback;
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') {
    return env_or("HOSTNAME", "localhost");
  }
  return buf;
}

std::string_view format_name(Format f) {
  switch (f) {
  case Format::table:
    return "table";
  case Format::json:
    return "json";
  case Format::id:
    return "id";
  case Format::env:
    return "env";
  }
  return "?";
}

} // namespace

core::Time Context::now() {
  if (!m_now) {
    if (const char* frozen = std::getenv("TASKQ_NOW")) {
      const auto t = core::parse_time(frozen);
      if (!t) {
        throw Error(ErrorKind::usage,
                    std::string("invalid TASKQ_NOW '") + frozen
                        + "': expected an RFC 3339 time such as "
                          "2026-11-21T08:00:00Z");
      }
      m_now = *t;
    } else if (storage::is_postgres_url(db_path())) {
      // Hosts share the server's clock
      // (doc/reference/postgresql.md#time).
      m_now = store(storage::OpenMode::clock).server_now();
    }
    if (!m_now) {
      m_now = std::chrono::time_point_cast<core::Millis>(
          std::chrono::system_clock::now());
    }
  }
  return *m_now;
}

core::Time Context::live_now() {
  if (std::getenv("TASKQ_NOW") != nullptr) {
    return now();
  }
  if (m_store) {
    if (const auto server = m_store->server_now()) {
      return *server;
    }
  }
  return std::chrono::time_point_cast<core::Millis>(
      std::chrono::system_clock::now());
}

std::string Context::db_path() const {
  if (db_option) {
    if (db_option->empty()) {
      throw Error(ErrorKind::usage, "--db needs a file path");
    }
    // A string that starts like a URL but is none is refused rather than
    // made a file (doc/reference/postgresql.md#connecting).
    storage::check_db_name(*db_option);
    return *db_option;
  }
  if (const char* env = std::getenv("TASKQ_DB"); env && *env) {
    storage::check_db_name(env);
    return env;
  }
  std::string data = env_or("XDG_DATA_HOME", "");
  if (data.empty()) {
    const std::string home = env_or("HOME", "");
    if (home.empty()) {
      throw Error(ErrorKind::unavailable,
                  "cannot find the database: set --db, TASKQ_DB or HOME");
    }
    data = home + "/.local/share";
  }
  return data + "/taskq/taskq.db";
}

std::string Context::worker() const {
  if (worker_option && !worker_option->empty()) {
    return *worker_option;
  }
  return env_or("TASKQ_WORKER", host_name() + ":" + std::to_string(::getpid()));
}

std::string Context::actor() const {
  if (worker_option && !worker_option->empty()) {
    return *worker_option;
  }
  return env_or("TASKQ_WORKER", env_or("USER", env_or("LOGNAME", "operator"))
                                    + "@" + host_name());
}

Format Context::format(Format fallback,
                       std::initializer_list<Format> allowed) const {
  if (!output_option) {
    return fallback;
  }
  for (Format f : allowed) {
    if (*output_option == format_name(f)) {
      return f;
    }
  }
  std::string names;
  for (Format f : allowed) {
    names += (names.empty() ? "" : ", ") + std::string(format_name(f));
  }
  throw Error(ErrorKind::usage, "invalid output format '" + *output_option
                                    + "': this command prints " + names);
}

storage::TaskStore& Context::store(storage::OpenMode mode) {
  if (!m_store) {
    const std::string path = db_path();
    const bool given = db_option || !env_or("TASKQ_DB", "").empty();
    if (given && mode == storage::OpenMode::write
        && !storage::is_postgres_url(path)) {
      // The store creates the default location's folders (mode 0700); a
      // missing folder of a path the user gave is a typo
      // (doc/reference/invocation.md#database).
      const std::filesystem::path folder =
          std::filesystem::path(path).parent_path();
      std::error_code ec;
      if (!folder.empty() && !std::filesystem::exists(folder, ec) && !ec) {
        throw Error(ErrorKind::unavailable,
                    "cannot create database " + path + ": its folder "
                        + folder.string()
                        + " does not exist (taskq creates the default "
                          "location's folders only)");
      }
    }
    // Writes read the time once they hold the write lock.
    m_store = std::make_unique<storage::TaskStore>(
        path, mode, [this] { return live_now(); });
  }
  m_store->open_for(mode);
  return *m_store;
}

int64_t parse_id(const std::string& text) {
  int64_t id = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, id);
  if (text.empty() || ec != std::errc() || ptr != end || id <= 0) {
    if (core::is_duration_unit(text)) {
      throw Error(ErrorKind::usage,
                  "invalid task id '" + text
                      + "': the unit of a duration? quote the whole duration");
    }
    throw Error(ErrorKind::usage,
                "invalid task id '" + text + "': expected a positive integer");
  }
  return id;
}

std::vector<int64_t> parse_ids(const std::vector<std::string>& texts) {
  std::vector<int64_t> ids;
  for (const auto& t : texts) {
    ids.push_back(parse_id(t));
  }
  return ids;
}

core::Millis parse_duration_arg(const std::string& text,
                                const std::string& what) {
  const auto d = core::parse_duration(text);
  if (!d) {
    throw Error(ErrorKind::usage,
                "invalid duration '" + text + "' for " + what
                    + ": expected e.g. 90s, 5m, 5min, 1.5h, 1h30m, "
                      "2d, 1w or a number of seconds");
  }
  return *d;
}

std::optional<core::Millis> parse_duration_arg(const OptText& text,
                                               const std::string& what) {
  if (!text) {
    return std::nullopt;
  }
  return parse_duration_arg(*text, what);
}

core::Time time_after(core::Time now, core::Millis d, const std::string& what) {
  const auto t = core::add_checked(now, d);
  if (!t) {
    throw Error(ErrorKind::usage, what + " " + core::format_duration(d)
                                      + " from " + core::format_time(now)
                                      + " ends after "
                                      + core::format_time(core::k_max_time)
                                      + ", the last time taskq keeps");
  }
  return *t;
}

std::optional<core::Time> parse_time_arg(const OptText& text,
                                         const std::string& what) {
  if (!text) {
    return std::nullopt;
  }
  return parse_time_arg(*text, what);
}

std::optional<std::string> parse_json_arg(const OptText& text,
                                          const std::string& what) {
  if (!text) {
    return std::nullopt;
  }
  return parse_json_arg(*text, what);
}

core::Time parse_time_arg(const std::string& text, const std::string& what) {
  const auto t = core::parse_time(text);
  if (!t) {
    throw Error(ErrorKind::usage, "invalid time '" + text + "' for " + what
                                      + ": expected RFC 3339, e.g. "
                                        "2026-11-21T08:00:00Z");
  }
  return *t;
}

std::string parse_json_arg(const std::string& text, const std::string& what) {
  if (const auto why = core::json_error(text)) {
    throw Error(ErrorKind::usage, "invalid JSON for " + what + ": " + *why);
  }
  return minify_json(text);
}

core::Labels parse_labels(const std::vector<std::string>& texts) {
  core::Labels labels;
  for (const auto& t : texts) {
    const auto kv = core::parse_label(t);
    if (!kv) {
      throw Error(ErrorKind::usage,
                  "invalid label '" + t
                      + "': expected KEY=VALUE, KEY made of letters, digits "
                        "and . _ / -, VALUE UTF-8 text without control "
                        "characters");
    }
    labels[kv->first] = kv->second;
  }
  return labels;
}

std::vector<core::LabelPattern>
parse_patterns(const std::vector<std::string>& texts) {
  std::vector<core::LabelPattern> patterns;
  for (const auto& t : texts) {
    const auto p = core::parse_label_pattern(t);
    if (!p) {
      throw Error(
          ErrorKind::usage,
          "invalid label pattern '" + t
              + "': expected KEY=VALUE, where KEY may be *, or have one * "
                "at its start, end or both, and VALUE may be *");
    }
    patterns.push_back(*p);
  }
  return patterns;
}

std::optional<std::string>
parse_trigger(const std::vector<std::string>& texts) {
  if (texts.empty()) {
    return std::nullopt;
  }
  core::NewTaskFields fields;
  fields.trigger = texts.front();
  for (size_t i = 1; i < texts.size(); ++i) {
    *fields.trigger += "," + texts[i];
  }
  if (const auto broken = core::check_new_task(fields)) {
    throw Error(ErrorKind::usage,
                "invalid key '"
                    + core::trigger_keys(*fields.trigger).at(broken->index)
                    + "' in --trigger: expected K1,K2,..., each key 1-128 "
                      "letters, digits and . _ / -");
  }
  return core::normal_trigger(*fields.trigger);
}

bool watch(storage::TaskStore& store, std::optional<core::Millis> timeout,
           const std::function<bool()>& look) {
  const auto deadline =
      std::chrono::steady_clock::now() + timeout.value_or(core::Millis{0});
  std::optional<storage::ChangeFeed> feed;
  while (true) {
    if (feed) {
      feed->drain(); // changes after this look wake the wait below
    }
    if (look()) {
      return true;
    }
    std::optional<core::Millis> left;
    if (timeout) {
      left = std::chrono::ceil<core::Millis>(
          deadline - std::chrono::steady_clock::now());
      if (left->count() <= 0) {
        return false;
      }
    }
    if (!feed) {
      // Watch from before the next look, so no change slips between them.
      feed = store.changes();
      continue;
    }
    feed->wait(left);
  }
}

// Reads the whole file (or stdin for "-"); a file that cannot be read is a
// usage error that says why (a folder, a missing file, no permission).
std::string read_input(const std::string& path) {
  const bool std_in = path == "-";
  const std::string name = std_in ? "stdin" : path;
  const auto fail = [&name](int err) {
    return Error(ErrorKind::usage,
                 "cannot read " + name + ": " + std::strerror(err));
  };
  const int fd =
      std_in ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw fail(errno);
  }
  struct FdCloser {
    int fd;
    bool owned;
    ~FdCloser() {
      if (owned) {
        ::close(fd);
      }
    }
  } closer{fd, !std_in};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    throw fail(EISDIR);
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throw fail(errno);
    }
    if (n == 0) {
      return text;
    }
    text.append(buf, static_cast<size_t>(n));
  }
}

std::string json_string(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false,
                                   nlohmann::json::error_handler_t::replace);
}

WorkerRef worker_ref(const OptText& id_arg, const OptText& lease_arg) {
  const std::string id = id_arg ? *id_arg : env_or("TASKQ_ID", "");
  const std::string token = lease_arg ? *lease_arg : env_or("TASKQ_LEASE", "");
  if (id.empty()) {
    throw Error(ErrorKind::usage, "which task? give an ID or set TASKQ_ID");
  }
  if (token.empty()) {
    throw Error(ErrorKind::usage,
                "this needs the lease token: give --lease TOKEN or set "
                "TASKQ_LEASE");
  }
  return {parse_id(id), token};
}

} // namespace taskq::cli
