#pragma once

// The HTTP server under `taskq serve`: requests and responses as values,
// and a Server that runs a handler for each request in the request's own
// thread (libmicrohttpd, one thread per connection, bounded).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskq::web {

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;
  std::string path; // percent-decoded, without the query string
  Pairs query;      // percent-decoded, in order
  Pairs headers;    // names in lower case
  std::string body;
  bool body_too_big = false; // body was cut at the server's limit
  std::string peer;          // the client's address, as text

  // The first header or query value named `name`, if any.
  const std::string* header(std::string_view name) const;
  const std::string* param(std::string_view name) const;
};

// A response sent as a stream: called again and again in the connection's
// thread, it appends what is to be sent next to `out` (it may block for a
// while, a few seconds at most) and returns false when the stream ends.
using Stream = std::function<bool(std::string& out)>;

struct Response {
  int status = 200;
  std::string type = "text/html; charset=utf-8";
  std::string body;
  Pairs headers;
  Stream stream; // when set, `body` is not sent: the stream is
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;    // 0: a free port (Server::port says which)
  std::string tls_cert; // PEM text; with tls_key, HTTPS
  std::string tls_key;  // PEM text
  unsigned max_connections = 256;
  unsigned per_address = 128; // connections from one address
  unsigned idle_seconds = 30; // a connection silent this long is closed
  size_t max_body = 64 * 1024;
};

using Handler = std::function<Response(const Request&)>;

class Server {
public:
  // Listens at once; throws taskq::Error (unavailable) when it cannot.
  Server(const ServerOptions& options, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;

  struct State; // the libmicrohttpd side (web/http.cpp)

private:
  std::unique_ptr<State> m_state;
};

// Whether `host` names only this machine (a loopback address, `localhost`).
bool loopback_host(const std::string& host);

} // namespace taskq::web
