// libpq for the PostgreSQL backend: loading it on first use, its messages
// on one line and without passwords, and the change feed's connection that
// LISTENs for taskq's NOTIFY.

#include "storage/pg/libpq.hpp"

#include "core/error.hpp"
#include "storage/change_feed.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <dlfcn.h>
#include <string_view>
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

// libpq's message about a connection to `url`, on one line and without
// the URL's passwords: libpq quotes a malformed URL back in full ("...
// in URI: \"postgresql://user:secret@[::1/db\"").
std::string connect_error(const char* message, const std::string& url) {
  std::string out = one_line(message);
  const std::string redacted = redact_url(url);
  for (size_t p = out.find(url); p != std::string::npos;
       p = out.find(url, p + redacted.size())) {
    out.replace(p, url.size(), redacted);
  }
  // What may be left of a password (user:PASSWORD@, password=PASSWORD)
  // inside the quoted parts of the message, where libpq echoes the URL.
  std::vector<std::string_view> secrets;
  const std::string_view u(url);
  const size_t scheme = u.find("://");
  if (scheme != std::string_view::npos) {
    const size_t start = scheme + 3;
    const size_t end = std::min(u.find_first_of("/?", start), u.size());
    const size_t at = u.rfind('@', end);
    const size_t colon = u.find(':', start);
    if (at != std::string_view::npos && at > start
        && colon != std::string_view::npos && colon < at) {
      secrets.push_back(u.substr(colon + 1, at - colon - 1));
    }
  }
  for (size_t p = u.find("password="); p != std::string_view::npos;
       p = u.find("password=", p + 1)) {
    const size_t value = p + 9;
    secrets.push_back(
        u.substr(value, std::min(u.find('&', value), u.size()) - value));
  }
  for (size_t open = out.find('"'); open != std::string::npos;) {
    size_t close = out.find('"', open + 1);
    if (close == std::string::npos) {
      close = out.size();
    }
    for (const std::string_view secret : secrets) {
      for (size_t p = secret.empty() ? std::string::npos
                                     : out.find(secret, open + 1);
           p != std::string::npos && p + secret.size() <= close;
           p = out.find(secret, p + 3)) {
        out.replace(p, secret.size(), "***");
        close = close + 3 - secret.size();
      }
    }
    open =
        close + 1 < out.size() ? out.find('"', close + 1) : std::string::npos;
  }
  return out;
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

struct PgListener::Conn {
  struct Finish {
    void operator()(PGconn* c) const { pq().PQfinish(c); }
  };
  std::unique_ptr<PGconn, Finish> conn;
};

PgListener::PgListener(const std::string& url, int own_pid)
    : m_conn(std::make_unique<Conn>()), m_own_pid(own_pid) {
  m_conn->conn.reset(pq().PQconnectdb(url.c_str()));
  PGconn* c = m_conn->conn.get();
  if (c == nullptr || pq().PQstatus(c) != CONNECTION_OK) {
    throw Error(ErrorKind::unavailable,
                "cannot connect to database " + redact_url(url) + ": "
                    + connect_error(c == nullptr ? "out of memory"
                                                 : pq().PQerrorMessage(c),
                                    url));
  }
  pq().PQsetNoticeProcessor(c, no_notices, nullptr);
  Result r(pq().PQexec(c, "LISTEN taskq"));
  if (pq().PQresultStatus(r.get()) != PGRES_COMMAND_OK) {
    throw Error(ErrorKind::unavailable,
                "cannot listen for changes of database " + redact_url(url)
                    + ": " + connect_error(pq().PQerrorMessage(c), url));
  }
  pq().PQsetnonblocking(c, 1);
}

PgListener::~PgListener() = default;

int PgListener::fd() const {
  return pq().PQsocket(m_conn->conn.get());
}

bool PgListener::drain() {
  PGconn* c = m_conn->conn.get();
  if (pq().PQconsumeInput(c) == 0) {
    throw Error(ErrorKind::unavailable,
                "lost the connection to the database while waiting: "
                    + one_line(pq().PQerrorMessage(c)));
  }
  bool got = false;
  while (PGnotify* n = pq().PQnotifies(c)) {
    got = got || n->be_pid != m_own_pid;
    pq().PQfreemem(n);
  }
  return got;
}

} // namespace taskq::storage
