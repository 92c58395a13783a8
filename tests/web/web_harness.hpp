#pragma once

// The web view's HTTP tests: web::App and web::Server in this process on
// 127.0.0.1 (a free port) over a real database (TempDb: SQLite, or
// PostgreSQL with TASKQ_TEST_BACKEND=postgresql), and a small HTTP/1.1
// client over a real socket that sends whatever bytes a test gives it.

#include "core/task_json.hpp"
#include "core/time.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <poll.h>
#include <string>
#include <string_view>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"
#include "web/app.hpp"
#include "web/http.hpp"

namespace taskq::test::web_tests {

using namespace std::chrono_literals;

// --- the client ---

struct Answer {
  int status = 0;   // 0: no status line came (the server closed, or stalled)
  std::string head; // the status line and headers, as sent
  std::string body; // as sent (chunks unframed when chunked)
  std::string raw;

  // The first header named `name` (any case), or "".
  std::string header(std::string_view name) const {
    size_t at = head.find("\r\n");
    while (at != std::string::npos && at + 2 < head.size()) {
      const size_t end = head.find("\r\n", at + 2);
      const std::string_view line(head.data() + at + 2,
                                  (end == std::string::npos ? head.size() : end)
                                      - at - 2);
      const size_t colon = line.find(':');
      if (colon != std::string_view::npos && colon == name.size()
          && strncasecmp(line.data(), name.data(), name.size()) == 0) {
        std::string_view v = line.substr(colon + 1);
        while (!v.empty() && v.front() == ' ') {
          v.remove_prefix(1);
        }
        return std::string(v);
      }
      at = end;
    }
    return {};
  }
};

class Socket {
public:
  explicit Socket(uint16_t port) {
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(m_fd >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    m_connected =
        ::connect(m_fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  }
  ~Socket() {
    if (m_fd >= 0) {
      ::close(m_fd);
    }
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool connected() const { return m_connected; }

  // Sends every byte; false when the peer is gone.
  bool send_all(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(m_fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        return false;
      }
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads what arrives within `wait`, until `done(text so far)` or EOF.
  // Returns false on EOF (the server closed the connection).
  bool read_until(std::string& into, std::chrono::milliseconds wait,
                  const std::function<bool(const std::string&)>& done) {
    const auto until = std::chrono::steady_clock::now() + wait;
    while (!done(into)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        return true;
      }
      pollfd p{m_fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        continue;
      }
      char buf[16384];
      const ssize_t n = ::recv(m_fd, buf, sizeof buf, 0);
      if (n <= 0) {
        return false;
      }
      into.append(buf, static_cast<size_t>(n));
    }
    return true;
  }

  int fd() const { return m_fd; }

private:
  int m_fd = -1;
  bool m_connected = false;
};

// Chunked transfer coding removed (as much as arrived).
inline std::string unchunk(std::string_view in) {
  std::string out;
  while (!in.empty()) {
    const size_t eol = in.find("\r\n");
    if (eol == std::string_view::npos) {
      break;
    }
    const size_t n =
        std::strtoul(std::string(in.substr(0, eol)).c_str(), nullptr, 16);
    in.remove_prefix(eol + 2);
    if (n == 0) {
      break;
    }
    out += in.substr(0, n);
    in.remove_prefix(std::min(in.size(), n + 2));
  }
  return out;
}

inline Answer parse_answer(std::string raw) {
  Answer a;
  a.raw = std::move(raw);
  const size_t end = a.raw.find("\r\n\r\n");
  if (a.raw.rfind("HTTP/1.", 0) != 0 || end == std::string::npos) {
    return a;
  }
  a.head = a.raw.substr(0, end);
  a.status = std::atoi(a.raw.c_str() + 9);
  const std::string rest = a.raw.substr(end + 4);
  a.body = a.header("Transfer-Encoding") == "chunked" ? unchunk(rest) : rest;
  return a;
}

// Sends `bytes` as they are on a new connection and reads the answer until
// the server closes it (the request should say Connection: close) or
// `wait` passes.
inline Answer exchange(uint16_t port, std::string_view bytes,
                       std::chrono::milliseconds wait = 10s) {
  Socket s(port);
  if (!s.connected()) {
    return {};
  }
  s.send_all(bytes);
  std::string raw;
  s.read_until(raw, wait, [](const std::string&) { return false; });
  return parse_answer(std::move(raw));
}

struct Req {
  std::string method = "GET";
  std::string target = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  bool json = false;

  Req& header(std::string k, std::string v) {
    headers.emplace_back(std::move(k), std::move(v));
    return *this;
  }
  std::string bytes(uint16_t port) const {
    std::string out = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:"
                      + std::to_string(port) + "\r\nConnection: close\r\n";
    if (json) {
      out += "Accept: application/json\r\n";
    }
    for (const auto& [k, v] : headers) {
      out += k + ": " + v + "\r\n";
    }
    if (method == "POST" || !body.empty()) {
      out += "Content-Type: application/x-www-form-urlencoded\r\n";
      out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
    return out + "\r\n" + body;
  }
};

inline Req get(std::string target) {
  Req r;
  r.target = std::move(target);
  return r;
}
inline Req get_json(std::string target) {
  Req r = get(std::move(target));
  r.json = true;
  return r;
}
inline Req post(std::string target, std::string body = "") {
  Req r;
  r.method = "POST";
  r.target = std::move(target);
  r.body = std::move(body);
  return r;
}

// --- the server under test ---

// The time the view and the stores see: fixed, so that pages and the
// CLI's answers agree (the CLI gets it as TASKQ_NOW).
inline const core::Time k_now = t0 + 1h;

struct ServerSetup {
  web::AppOptions app;
  web::ServerOptions server;
  // What the App opens; the TempDb's path when empty.
  std::string open_path;
};

inline web::Rights all_rights() {
  return web::Rights{true, true, true};
}

class Served {
public:
  Served(const std::string& db_path, ServerSetup setup = {}) {
    const std::string path =
        setup.open_path.empty() ? db_path : setup.open_path;
    m_app = std::make_unique<web::App>(
        setup.app,
        [path] {
          return std::make_unique<storage::TaskStore>(
              path, storage::OpenMode::update);
        },
        [] { return k_now; });
    m_server = std::make_unique<web::Server>(
        setup.server,
        [app = m_app.get()](const web::Request& r) { return app->handle(r); });
  }
  ~Served() {
    m_app->stop(); // live streams end, so the server's threads can
    m_server.reset();
    m_app.reset();
  }
  Served(const Served&) = delete;
  Served& operator=(const Served&) = delete;

  uint16_t port() const { return m_server->port(); }
  Answer send(const Req& r, std::chrono::milliseconds wait = 10s) const {
    return exchange(port(), r.bytes(port()), wait);
  }
  Answer raw(std::string_view bytes,
             std::chrono::milliseconds wait = 10s) const {
    return exchange(port(), bytes, wait);
  }

private:
  std::unique_ptr<web::App> m_app;
  std::unique_ptr<web::Server> m_server;
};

// --- the database ---

struct Seeded {
  int64_t runnable = 0;      // alpha: runnable, due
  int64_t paused = 0;        // alpha: paused
  int64_t leased = 0;        // alpha: leased by w1 until k_now + 1h
  int64_t killed = 0;        // alpha: killed
  int64_t hostile = 0;       // <script> in its command, payload, labels, queue
  std::vector<int64_t> beta; // 25 tasks of beta, colors red/blue
};

inline const std::string k_evil = "<script>alert(\"x'1\")</script>";
inline const std::string k_evil_queue = "q<script>\"'";

inline Seeded seed(const std::string& path, bool hostile = false) {
  storage::TaskStore store(path, storage::OpenMode::write);
  Seeded s;
  const auto add = [&](const std::string& queue, core::Time at) {
    return store.add(new_task(queue, "{\"n\":1}"), at, k_operator);
  };
  s.runnable = add("alpha", t0);
  s.paused = add("alpha", t0 + 1s);
  store.send(by_ids({s.paused}), core::Message::pause, std::nullopt, k_operator,
             t0 + 2s);
  s.leased = add("alpha", t0 + 3s);
  {
    storage::LeaseRequest req = lease_request("alpha", 2h);
    req.skip = {s.runnable};
    const auto got = store.lease(req, t0 + 4s);
    REQUIRE(got.size() == 1);
    REQUIRE(got.front().id == s.leased);
  }
  s.killed = add("alpha", t0 + 5s);
  store.send(by_ids({s.killed}), core::Message::kill, std::nullopt, k_operator,
             t0 + 6s);
  for (int i = 0; i < 25; ++i) {
    storage::NewTask t = new_task("beta", "{\"i\":" + std::to_string(i) + "}");
    t.labels["color"] = i % 3 == 0 ? "red" : "blue";
    t.command = {"/bin/echo", "beta-" + std::to_string(i)};
    s.beta.push_back(
        store.add(t, t0 + 10s + std::chrono::seconds(i), k_operator));
  }
  if (hostile) {
    storage::NewTask t = new_task(k_evil_queue);
    core::Json payload;
    payload["html"] = k_evil;
    t.payload = core::dump_json(payload);
    t.labels["evil"] = k_evil;
    t.command = {"/bin/sh", "-c", "echo " + k_evil};
    s.hostile = store.add(t, t0 + 50s, k_operator);
  }
  return s;
}

// Every task's JSON with its events, every queue's settings and the event
// log's end: what must be the same before and after a refused request.
inline std::string snapshot(storage::TaskStore& store) {
  std::string out;
  storage::Selector sel;
  sel.limit = storage::k_page_rows_max;
  for (;;) {
    const storage::TaskPage page = store.task_page(sel, k_now);
    for (const auto& t : page.tasks) {
      const storage::TaskDetail d = store.show(t.id);
      out += core::task_json(d.task, k_now, &d.events) + "\n";
    }
    if (!page.next_cursor) {
      break;
    }
    sel.after_id = *page.next_cursor;
  }
  for (const auto& q : store.queues(k_now)) {
    out += q.name + (q.paused ? " paused\n" : " active\n");
  }
  const storage::EventCursor end = store.events_end();
  out += "events " + std::to_string(end.event_id) + " "
         + std::to_string(end.task_id) + " " + std::to_string(end.flow_event_id)
         + "\n";
  return out;
}

inline std::string snapshot(const std::string& path) {
  storage::TaskStore store(path, storage::OpenMode::read);
  return snapshot(store);
}

inline std::optional<core::Task> find_task(const std::string& path,
                                           int64_t id) {
  storage::TaskStore store(path, storage::OpenMode::read);
  if (!store.find(id)) {
    return std::nullopt;
  }
  return store.show(id).task; // with its freeze, which find leaves out
}

// --- the CLI ---

// What `taskq ARGS` prints on stdout, on the same database at k_now.
inline std::string cli(const std::string& db, const std::string& args) {
  const std::string line = "TASKQ_NOW=" + core::format_time(k_now) + " "
                           + std::string(TASKQ_BIN) + " --db "
                           + detail::sh_quote(db) + " " + args + " 2>/dev/null";
  std::string out;
  FILE* p = ::popen(line.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
    out.append(buf, n);
  }
  ::pclose(p);
  return out;
}

inline bool has(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

} // namespace taskq::test::web_tests
