// libpq for the PostgreSQL backend: loading it on first use, its messages
// on one line and without passwords, and the change feed's connection that
// LISTENs for taskq's NOTIFY.

#include "storage/pg/libpq.hpp"

#include "core/error.hpp"
#include "core/reconnect.hpp"
#include "storage/pg/schema_url.hpp"
#include "storage/pg/tx_sql.hpp"
#include "storage/pg/wire.hpp"
#include "storage/seam/change_feed.hpp"
#include "storage/seam/db.hpp"
#include "storage/seam/server_wait.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <dlfcn.h>
#include <string_view>
#include <tuple>
#include <vector>

namespace taskq::storage::libpq {

// The functions of libpq.so.5; unavailable when it cannot be loaded.
const LibPq& pq() {
  static const LibPq* loaded = nullptr;
  if (loaded != nullptr) {
    return *loaded;
  }
  // Lazy binding, as for a linked library: loading libpq and the 23
  // libraries it needs costs about 4 ms, binding all their symbols now more.
  void* lib = ::dlopen("libpq.so.5", RTLD_LAZY | RTLD_LOCAL);
  const auto missing = [](const std::string& what) {
    return Error(ErrorKind::unavailable, "cannot use a PostgreSQL database: "
                                             + what + " (install libpq5)");
  };
  if (lib == nullptr) {
    const char* why = ::dlerror();
    throw missing(why == nullptr ? "cannot load libpq.so.5" : why);
  }
  static LibPq table;
#define X(name)                                                                \
  table.name = reinterpret_cast<decltype(table.name)>(::dlsym(lib, #name));    \
  if (table.name == nullptr) {                                                 \
    throw missing("libpq.so.5 has no " #name);                                 \
  }
  TASKQ_LIBPQ_FUNCTIONS(X)
#undef X
  loaded = &table;
  return table;
}

// libpq's messages end with a newline and may span lines ("connection to
// server ... failed: FATAL:  ...\n\tIs the server running ..."): taskq
// prints one line, each run of spaces and tabs as one space.
std::string one_line(const char* text) {
  std::string out;
  for (const char* p = text == nullptr ? "" : text; *p != '\0'; ++p) {
    if (*p == '\n') {
      out += "; ";
    } else if (*p == ' ' || *p == '\t') {
      if (!out.empty() && !out.ends_with(' ')) {
        out += ' ';
      }
    } else if (*p != '\r') {
      out += *p;
    }
  }
  while (out.ends_with("; ") || out.ends_with(' ')) {
    out.erase(out.size() - (out.ends_with("; ") ? 2 : 1));
  }
  return out;
}

namespace {

// Whether `needle` occurs in `text` where a byte marked secret lies.
bool covers_secret(std::string_view text, const std::vector<bool>& secret,
                   std::string_view needle) {
  for (size_t p = text.find(needle); p != std::string_view::npos;
       p = text.find(needle, p + 1)) {
    for (size_t i = p; i < p + needle.size(); ++i) {
      if (secret[i]) {
        return true;
      }
    }
  }
  return false;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

void replace_all(std::string& text, std::string_view what,
                 std::string_view with) {
  if (what.empty()) {
    return;
  }
  for (size_t p = text.find(what); p != std::string::npos;
       p = text.find(what, p + with.size())) {
    text.replace(p, what.size(), with);
  }
}

} // namespace

// libpq's message about a connection to `url`, on one line and without
// the URL's passwords. libpq quotes a malformed URL back in full ("... in
// URI: \"postgresql://user:secret@[::1/db\""), and the parts it read from
// one (a port, a database's name, a parameter), decoded or not: a URL
// whose password holds an unencoded '/' or '?' puts pieces of it there.
// So a quoted part of the message that is found in the URL, as written or
// decoded, where a secret lies is hidden whole; so is a secret anywhere.
std::string connect_error(const char* message, const std::string& url) {
  std::string out = one_line(message);
  const std::string redacted = redact_url(url);
  const std::string as_read = libpq_url(url);
  replace_all(out, url, redacted);
  replace_all(out, as_read, redacted);
  const std::vector<UrlSpan> spans = url_secrets(url);
  if (spans.empty()) {
    return out;
  }
  std::vector<bool> secret(url.size(), false);
  for (const UrlSpan& s : spans) {
    for (size_t i = s.begin; i < s.end; ++i) {
      secret[i] = true;
    }
  }
  std::string decoded;
  std::vector<bool> decoded_secret;
  for (size_t i = 0; i < url.size();) {
    if (url[i] == '%' && i + 2 < url.size() && hex_digit(url[i + 1]) >= 0
        && hex_digit(url[i + 2]) >= 0) {
      decoded +=
          static_cast<char>(hex_digit(url[i + 1]) * 16 + hex_digit(url[i + 2]));
      decoded_secret.push_back(secret[i] || secret[i + 1] || secret[i + 2]);
      i += 3;
    } else {
      decoded += url[i];
      decoded_secret.push_back(secret[i]);
      ++i;
    }
  }
  for (size_t open = out.find('"'); open != std::string::npos;) {
    const size_t close = out.find('"', open + 1);
    if (close == std::string::npos) {
      break;
    }
    const std::string quoted = out.substr(open + 1, close - open - 1);
    size_t next = close + 1;
    if (!quoted.empty()
        && (covers_secret(url, secret, quoted)
            || covers_secret(as_read, secret, quoted)
            || covers_secret(decoded, decoded_secret, quoted))) {
      out.replace(open + 1, quoted.size(), "***");
      next = open + 5;
    }
    open = next < out.size() ? out.find('"', next) : std::string::npos;
  }
  for (const UrlSpan& s : spans) {
    const std::string_view raw =
        std::string_view(url).substr(s.begin, s.end - s.begin);
    const std::string plain = percent_decode(raw);
    // A short one would hide ordinary words; quoted, it is hidden above.
    for (const std::string_view whole : {raw, std::string_view(plain)}) {
      if (whole.size() >= 3) {
        replace_all(out, whole, "***");
      }
    }
  }
  return out;
}

ConnectParams connect_params(const std::string& url, const char* options,
                             core::Millis bound, const std::string& host,
                             const std::string& port) {
  ConnectParams p;
  // First, so that the URL's own connect_timeout wins (libpq keeps the
  // last value of a key); PGCONNECT_TIMEOUT is read only for a key not
  // given at all.
  if (const char* env = std::getenv("PGCONNECT_TIMEOUT");
      env == nullptr || *env == '\0') {
    p.add("connect_timeout", k_default_connect_timeout);
  }
  if (bound.count() > 0) {
    pg::add_keepalives(p, bound);
  }
  p.add("dbname", libpq_url(url));
  p.add("fallback_application_name", "taskq");
  if (options != nullptr) {
    p.add("options", options);
  }
  // After dbname: a key that follows the URL overrides the URL's.
  if (!host.empty()) {
    p.add("host", host);
  }
  if (!port.empty()) {
    p.add("port", port);
  }
  return p;
}

PGconn* connect(const ConnectParams& params, const std::string& url,
                core::Millis bound) {
  pg::Deadline d(bound.count() > 0 ? std::optional(bound) : std::nullopt);
  PGconn* c = pg::connect_within(params, d);
  if (c == nullptr && d.passed()) {
    throw ConnectionLost("cannot connect to database " + redact_url(url) + ": "
                         + (d.stopping()
                                ? std::string("stopped waiting for the server "
                                              "(stopping)")
                                : "no answer from the server in "
                                      + core::format_duration(bound)));
  }
  return c;
}

void no_notices(void*, const char*) {}

} // namespace taskq::storage::libpq

// --- the change feed's listener ---------------------------------------------

namespace taskq::storage {

using libpq::connect_error;
using libpq::no_notices;
using libpq::one_line;
using libpq::pq;
using libpq::Result;

// The listening connection, and what makes it again when it breaks (a
// server restart): until then the listener has no descriptor (fd() is -1,
// so the ChangeFeed polls), each drain() says "look again", and tries to
// LISTEN again with core's reconnect back-off; the drain that makes it
// again also says "look again", for what was committed meanwhile.
//
// An idle connection hears nothing from a network gone silent: every
// half of the answer bound without a word from the server, drain() sends
// an empty query, and a connection that does not answer it within the
// bound counts as broken.
struct PgListener::Conn {
  struct Finish {
    void operator()(PGconn* c) const { pq().PQfinish(c); }
  };
  std::unique_ptr<PGconn, Finish> conn;
  std::string url;
  std::string host; // the server's own, past a pooler (listen=)
  std::string port;
  core::Millis bound{0}; // the answer bound (0: none)
  int failed = 0;        // tries since the connection broke
  std::chrono::steady_clock::time_point retry_at{};
  std::chrono::steady_clock::time_point heard{}; // the server's last word
  std::optional<std::chrono::steady_clock::time_point> ping_sent;

  void broke(std::chrono::steady_clock::time_point now) {
    conn.reset();
    ping_sent.reset();
    failed = 1;
    retry_at = now + core::reconnect_delay(1);
  }
};

namespace {

// Connects to `url` (at `host` and `port` when given) and LISTENs; throws
// unavailable when it cannot.
PGconn* listen_on(const std::string& url, const std::string& host,
                  const std::string& port, core::Millis bound) {
  PGconn* c = libpq::connect(
      libpq::connect_params(url, nullptr, bound, host, port), url);
  const auto fail = [&](const std::string& what) {
    const std::string at = host.empty() && port.empty()
                               ? std::string()
                               : " at its listen= address "
                                     + (host.empty() ? "" : host)
                                     + (port.empty() ? "" : ":" + port);
    std::string message =
        what + redact_url(url) + at + ": "
        + connect_error(c == nullptr ? "out of memory" : pq().PQerrorMessage(c),
                        url);
    if (c != nullptr) {
      pq().PQfinish(c);
    }
    throw Error(ErrorKind::unavailable, message);
  };
  if (c == nullptr || pq().PQstatus(c) != CONNECTION_OK) {
    fail("cannot connect to database ");
  }
  pq().PQsetNoticeProcessor(c, no_notices, nullptr);
  pg::Deadline d(bound.count() > 0 ? std::optional(bound) : std::nullopt);
  const Result r = pg::exec_within(c, "LISTEN taskq", d);
  if (!r || pq().PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
    fail("cannot listen for changes of database ");
  }
  return c;
}

} // namespace

PgListener::PgListener(const std::string& url, int own_pid,
                       const std::string& listen,
                       std::optional<core::Millis> bound)
    : m_conn(std::make_unique<Conn>()), m_own_pid(own_pid) {
  m_conn->url = url;
  m_conn->bound = bound.value_or(answer_timeout());
  if (!listen.empty()) {
    std::tie(m_conn->host, m_conn->port) = pg::listen_host_port(listen);
  }
  m_conn->conn.reset(listen_on(url, m_conn->host, m_conn->port, m_conn->bound));
  m_conn->heard = std::chrono::steady_clock::now();
}

PgListener::~PgListener() = default;

int PgListener::fd() const {
  return m_conn->conn ? pq().PQsocket(m_conn->conn.get()) : -1;
}

PgListener::Heard PgListener::drain() {
  const auto now = std::chrono::steady_clock::now();
  Conn& k = *m_conn;
  if (!k.conn) {
    if (now >= k.retry_at) {
      try {
        k.conn.reset(listen_on(k.url, k.host, k.port, k.bound));
        k.failed = 0;
        k.heard = now;
      } catch (const Error&) {
        k.retry_at = now + core::reconnect_delay(++k.failed);
      }
    }
    return Heard::loud; // look again: what came meanwhile was not heard
  }
  PGconn* c = k.conn.get();
  if (pq().PQconsumeInput(c) == 0) {
    k.broke(now); // the server went away: listen again later (see Conn)
    return Heard::loud;
  }
  // The ping's answer first: reading it parses what follows it (a
  // notification) into libpq's queue, taken just after. PQgetResult is
  // asked only when it will not wait (PQisBusy).
  while (k.ping_sent && pq().PQisBusy(c) == 0) {
    PGresult* r = pq().PQgetResult(c);
    if (r == nullptr) {
      k.ping_sent.reset();
      k.heard = now;
      break;
    }
    pq().PQclear(r);
  }
  Heard got = Heard::nothing;
  while (PGnotify* n = pq().PQnotifies(c)) {
    if (n->be_pid != m_own_pid) {
      const bool quiet = n->extra != nullptr
                         && std::string_view(n->extra) == pg::k_quiet_payload;
      got = quiet && got != Heard::loud ? Heard::quiet : Heard::loud;
    }
    k.heard = now;
    pq().PQfreemem(n);
  }
  if (k.bound.count() <= 0) {
    return got;
  }
  if (k.ping_sent && now >= *k.ping_sent + k.bound) {
    k.broke(now); // silent: listen again on a fresh connection
    return Heard::loud;
  }
  if (!k.ping_sent && now >= k.heard + k.bound / 2) {
    if (pq().PQsendQuery(c, "") == 0 || pq().PQflush(c) < 0) {
      k.broke(now);
      return Heard::loud;
    }
    k.ping_sent = now;
  }
  return got;
}

} // namespace taskq::storage
