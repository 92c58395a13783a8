#include "web/http.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "web/mhd.hpp"

namespace taskq::web {

namespace {

const std::string* find(const Pairs& pairs, std::string_view name) {
  for (const auto& [k, v] : pairs) {
    if (k == name) {
      return &v;
    }
  }
  return nullptr;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  });
  return s;
}

// One request's body as it arrives, between libmicrohttpd's calls.
struct Pending {
  std::string body;
  bool too_big = false;
};

// A stream's bytes not yet taken by libmicrohttpd.
struct Streaming {
  Stream next;
  std::string buffer;
  size_t taken = 0;
  bool ended = false;
};

MHD_Result collect(void* cls, MHD_ValueKind, const char* key,
                   const char* value) {
  auto* pairs = static_cast<Pairs*>(cls);
  pairs->emplace_back(key == nullptr ? "" : key, value == nullptr ? "" : value);
  return MHD_YES;
}

ssize_t read_stream(void* cls, uint64_t, char* buf, size_t max) {
  auto* s = static_cast<Streaming*>(cls);
  while (s->taken == s->buffer.size()) {
    if (s->ended) {
      return MHD_CONTENT_READER_END_OF_STREAM;
    }
    s->buffer.clear();
    s->taken = 0;
    if (!s->next(s->buffer)) {
      s->ended = true;
    }
  }
  const size_t n = std::min(max, s->buffer.size() - s->taken);
  std::memcpy(buf, s->buffer.data() + s->taken, n);
  s->taken += n;
  return static_cast<ssize_t>(n);
}

void free_stream(void* cls) {
  delete static_cast<Streaming*>(cls);
}

int hex_digit(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

// libmicrohttpd's unescaping of the path and the query (%HH), except that
// %00 becomes C0 80, an overlong NUL that the view refuses as not UTF-8:
// a NUL would end the C string libmicrohttpd hands on, and /tasks/1%00x
// would be answered as /tasks/1.
size_t unescape(void*, MHD_Connection*, char* s) {
  char* out = s;
  for (const char* in = s; *in != '\0'; ++in) {
    const int hi = *in == '%' ? hex_digit(in[1]) : -1;
    const int lo = hi >= 0 ? hex_digit(in[2]) : -1;
    if (lo < 0) {
      *out++ = *in;
    } else if (hi == 0 && lo == 0) {
      *out++ = '\xC0';
      *out++ = '\x80';
      in += 2;
    } else {
      *out++ = static_cast<char>(hi * 16 + lo);
      in += 2;
    }
  }
  *out = '\0';
  return static_cast<size_t>(out - s);
}

std::string peer_of(MHD_Connection* connection) {
  const auto* info = mhd().MHD_get_connection_info(
      connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info == nullptr || info->client_addr == nullptr) {
    return "?";
  }
  char text[INET6_ADDRSTRLEN] = {};
  const sockaddr* sa = info->client_addr;
  if (sa->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr,
                text, sizeof text);
  } else if (sa->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr,
                text, sizeof text);
  }
  return text;
}

} // namespace

const std::string* Request::header(std::string_view name) const {
  return find(headers, name);
}

const std::string* Request::param(std::string_view name) const {
  return find(query, name);
}

struct Server::State {
  ServerOptions options;
  Handler handler;
  MHD_Daemon* daemon = nullptr;
  sockaddr_storage address{};

  static MHD_Result answer(void* cls, MHD_Connection* connection,
                           const char* url, const char* method, const char*,
                           const char* upload, size_t* upload_size,
                           void** con_cls) {
    auto* self = static_cast<State*>(cls);
    auto* pending = static_cast<Pending*>(*con_cls);
    if (pending == nullptr) {
      *con_cls = new Pending;
      return MHD_YES;
    }
    if (*upload_size != 0) {
      if (!pending->too_big) {
        if (pending->body.size() + *upload_size > self->options.max_body) {
          pending->too_big = true;
          pending->body.clear();
        } else {
          pending->body.append(upload, *upload_size);
        }
      }
      *upload_size = 0;
      return MHD_YES;
    }
    Request req;
    req.method = method == nullptr ? "" : method;
    req.path = url == nullptr ? "" : url;
    req.body = std::move(pending->body);
    req.body_too_big = pending->too_big;
    req.peer = peer_of(connection);
    const LibMhd& m = mhd();
    m.MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &collect,
                                &req.query);
    m.MHD_get_connection_values(connection, MHD_HEADER_KIND, &collect,
                                &req.headers);
    for (auto& [k, v] : req.headers) {
      k = lower(std::move(k));
    }
    Response res;
    try {
      res = self->handler(req);
    } catch (const std::exception&) {
      res = Response{};
      res.status = 500;
      res.type = "text/plain; charset=utf-8";
      res.body = "taskq: internal error\n";
    }
    MHD_Response* out = nullptr;
    if (res.stream) {
      auto* s = new Streaming{std::move(res.stream), {}, 0, false};
      out = m.MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 8192,
                                                &read_stream, s, &free_stream);
    } else {
      out = m.MHD_create_response_from_buffer(res.body.size(), res.body.data(),
                                              MHD_RESPMEM_MUST_COPY);
    }
    if (out == nullptr) {
      return MHD_NO;
    }
    m.MHD_add_response_header(out, "Content-Type", res.type.c_str());
    for (const auto& [k, v] : res.headers) {
      m.MHD_add_response_header(out, k.c_str(), v.c_str());
    }
    const MHD_Result queued = m.MHD_queue_response(
        connection, static_cast<unsigned>(res.status), out);
    m.MHD_destroy_response(out);
    return queued;
  }

  static void completed(void*, MHD_Connection*, void** con_cls,
                        MHD_RequestTerminationCode) {
    delete static_cast<Pending*>(*con_cls);
    *con_cls = nullptr;
  }
};

namespace {

// The address to listen at: `host` as a numeric address or a name
// (its first address).
sockaddr_storage resolve(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc =
          ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
      rc != 0 || found == nullptr) {
    throw Error(ErrorKind::usage,
                "cannot listen at " + host + ": " + ::gai_strerror(rc));
  }
  sockaddr_storage out{};
  std::memcpy(&out, found->ai_addr,
              std::min<size_t>(found->ai_addrlen, sizeof out));
  ::freeaddrinfo(found);
  return out;
}

} // namespace

bool loopback_host(const std::string& host) {
  if (host == "localhost") {
    return true;
  }
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6);
  }
  return false;
}

Server::Server(const ServerOptions& options, Handler handler)
    : m_state(std::make_unique<State>()) {
  const LibMhd& m = mhd();
  State& s = *m_state;
  s.options = options;
  s.handler = std::move(handler);
  s.address = resolve(options.host, options.port);
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION
                   | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
  if (s.address.ss_family == AF_INET6) {
    flags |= MHD_USE_IPv6;
  }
  const bool tls = !options.tls_cert.empty() && !options.tls_key.empty();
  if (tls) {
    flags |= MHD_USE_TLS;
  }
  const auto* sa = reinterpret_cast<const sockaddr*>(&s.address);
  if (tls) {
    s.daemon = m.MHD_start_daemon(
        flags, 0, nullptr, nullptr, &State::answer, &s, MHD_OPTION_SOCK_ADDR,
        sa, MHD_OPTION_CONNECTION_LIMIT, options.max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, options.per_address,
        MHD_OPTION_CONNECTION_TIMEOUT, options.idle_seconds,
        MHD_OPTION_NOTIFY_COMPLETED, &State::completed, nullptr,
        MHD_OPTION_UNESCAPE_CALLBACK, &unescape, nullptr,
        MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_HTTPS_MEM_KEY,
        options.tls_key.c_str(), MHD_OPTION_HTTPS_MEM_CERT,
        options.tls_cert.c_str(), MHD_OPTION_END);
  } else {
    s.daemon = m.MHD_start_daemon(
        flags, 0, nullptr, nullptr, &State::answer, &s, MHD_OPTION_SOCK_ADDR,
        sa, MHD_OPTION_CONNECTION_LIMIT, options.max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, options.per_address,
        MHD_OPTION_CONNECTION_TIMEOUT, options.idle_seconds,
        MHD_OPTION_NOTIFY_COMPLETED, &State::completed, nullptr,
        MHD_OPTION_UNESCAPE_CALLBACK, &unescape, nullptr,
        MHD_OPTION_STRICT_FOR_CLIENT, 1, MHD_OPTION_END);
  }
  if (s.daemon == nullptr) {
    throw Error(ErrorKind::unavailable,
                "cannot listen at " + options.host + ":"
                    + std::to_string(options.port)
                    + (tls ? ": the address is taken, or the certificate "
                             "and key are not a pair of PEM files"
                           : ": the address is taken or not this machine's"));
  }
}

Server::~Server() {
  if (m_state && m_state->daemon != nullptr) {
    mhd().MHD_stop_daemon(m_state->daemon);
  }
}

uint16_t Server::port() const {
  const auto* info =
      mhd().MHD_get_daemon_info(m_state->daemon, MHD_DAEMON_INFO_BIND_PORT);
  return info == nullptr ? 0 : info->port;
}

} // namespace taskq::web
