#include "web/app.hpp"

#include "core/error.hpp"

#include <algorithm>

#include "web/assets.hpp"
#include "web/live.hpp"
#include "web/view.hpp"

namespace taskq::web {

StorePool::StorePool(Open open, size_t max)
    : m_open(std::move(open)), m_max(max) {}

StorePool::Lease StorePool::take() {
  std::unique_lock lock(m_mutex);
  m_freed.wait(lock, [&] { return !m_idle.empty() || m_out < m_max; });
  return lend(lock);
}

StorePool::Lease StorePool::lend(std::unique_lock<std::mutex>& lock) {
  ++m_out;
  if (!m_idle.empty()) {
    auto store = std::move(m_idle.back());
    m_idle.pop_back();
    return Lease(*this, std::move(store));
  }
  lock.unlock();
  try {
    return Lease(*this, m_open());
  } catch (...) {
    lock.lock();
    --m_out;
    m_freed.notify_one();
    throw;
  }
}

std::optional<StorePool::Lease> StorePool::try_take() {
  std::unique_lock lock(m_mutex);
  if (m_idle.empty() && m_out >= m_max) {
    return std::nullopt;
  }
  return lend(lock);
}

void StorePool::give_back(std::unique_ptr<storage::TaskStore> store) {
  std::lock_guard lock(m_mutex);
  --m_out;
  if (store) {
    m_idle.push_back(std::move(store));
  }
  m_freed.notify_one();
}

StorePool::Lease::~Lease() {
  if (m_pool != nullptr) {
    m_pool->give_back(std::move(m_store));
  }
}

namespace {

// Headers on every answer: no script but ours, no frames, no sniffing.
void harden(Response& r) {
  r.headers.emplace_back(
      "Content-Security-Policy",
      "default-src 'none'; script-src 'self'; style-src 'self'; "
      "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
      "frame-ancestors 'none'; base-uri 'none'");
  r.headers.emplace_back("X-Frame-Options", "DENY");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "same-origin");
  r.headers.emplace_back("Cross-Origin-Opener-Policy", "same-origin");
  if (std::none_of(r.headers.begin(), r.headers.end(),
                   [](const auto& h) { return h.first == "Cache-Control"; })) {
    r.headers.emplace_back("Cache-Control", "no-store");
  }
}

// Equal in time that does not depend on where they differ.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  }
  return diff == 0;
}

std::optional<std::string> cookie(const Request& req, std::string_view name) {
  const std::string* all = req.header("cookie");
  if (all == nullptr) {
    return std::nullopt;
  }
  std::string_view rest = *all;
  while (!rest.empty()) {
    const size_t semi = rest.find(';');
    std::string_view item = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view{}
                                          : rest.substr(semi + 1);
    while (!item.empty() && item.front() == ' ') {
      item.remove_prefix(1);
    }
    if (item.size() > name.size() && item.substr(0, name.size()) == name
        && item[name.size()] == '=') {
      return std::string(item.substr(name.size() + 1));
    }
  }
  return std::nullopt;
}

bool wants_json(const Request& req) {
  if (const std::string* f = req.param("format")) {
    return *f == "json";
  }
  const std::string* accept = req.header("accept");
  return accept != nullptr
         && accept->find("application/json") != std::string::npos
         && accept->find("text/html") == std::string::npos;
}

// The path split at '/', without empty segments.
std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    const size_t slash = path.find('/');
    const std::string_view seg = path.substr(0, slash);
    if (!seg.empty()) {
      out.push_back(seg);
    }
    if (slash == std::string_view::npos) {
      break;
    }
    path.remove_prefix(slash + 1);
  }
  return out;
}

// Why a request is malformed, or empty when it is not.
std::string malformed(const Request& req) {
  if (req.path.size() > 2048) {
    return "the path is too long";
  }
  if (!valid_utf8(req.path) || req.path.find('\0') != std::string::npos) {
    return "the path is not UTF-8 text";
  }
  for (const auto seg : segments(req.path)) {
    if (seg == ".." || seg == ".") {
      return "the path may not hold . or .. segments";
    }
  }
  if (req.query.size() > 64) {
    return "too many query parameters";
  }
  for (const auto& [k, v] : req.query) {
    if (!valid_utf8(k) || !valid_utf8(v) || v.size() > 4096) {
      return "a query parameter is not UTF-8 text, or too long";
    }
  }
  return {};
}

bool allowed(const Rights& r, std::string_view kind) {
  return kind == "operate" ? r.operate : kind == "bulk" ? r.bulk : r.queues;
}

} // namespace

App::App(AppOptions options, StorePool::Open open,
         std::function<core::Time()> clock)
    : m_options(std::move(options)), m_stores(std::move(open), 4),
      m_clock(std::move(clock)),
      m_live(std::make_unique<Live>(m_stores, m_clock)) {}

App::~App() = default;

void App::stop() {
  m_live->stop();
}

Response App::handle(const Request& request) {
  Response r = route(request);
  harden(r);
  return r;
}

Response App::route(const Request& request) {
  Request req = request;
  // Behind a proxy that keeps the prefix, as behind one that strips it.
  if (!m_options.prefix.empty() && req.path.rfind(m_options.prefix, 0) == 0
      && (req.path.size() == m_options.prefix.size()
          || req.path[m_options.prefix.size()] == '/')) {
    req.path.erase(0, m_options.prefix.size());
    if (req.path.empty()) {
      req.path = "/";
    }
  }
  const bool json = wants_json(req);
  if (const std::string why = malformed(req); !why.empty()) {
    return error_answer(nullptr, 400, why);
  }
  if (req.method != "GET" && req.method != "HEAD" && req.method != "POST") {
    Response r = error_answer(nullptr, 405, "use GET or POST");
    r.headers.emplace_back("Allow", "GET, HEAD, POST");
    return r;
  }
  if (req.body_too_big) {
    return error_answer(nullptr, 413, "the request's body is too big");
  }
  const auto parts = segments(req.path);
  // Assets need no login: the login page itself uses them.
  if (parts.size() == 2 && parts[0] == "assets") {
    return asset(parts[1]);
  }

  // Who asks: a token by header (scripts) or by cookie (a browser).
  std::string user = "anonymous";
  bool bearer = false;
  if (m_options.token) {
    const std::string* auth = req.header("authorization");
    const auto from_cookie = cookie(req, "taskq_token");
    if (auth != nullptr && auth->rfind("Bearer ", 0) == 0
        && same_secret(auth->substr(7), *m_options.token)) {
      bearer = true;
    } else if (!(from_cookie && same_secret(*from_cookie, *m_options.token))) {
      if (parts.size() == 1 && parts[0] == "login" && req.method == "POST") {
        const auto form = parse_form<Pairs>(req.body);
        for (const auto& [k, v] : form) {
          if (k == "token" && same_secret(v, *m_options.token)) {
            Response r;
            r.status = 303;
            r.type = "text/plain; charset=utf-8";
            r.headers.emplace_back("Location", m_options.prefix + "/");
            r.headers.emplace_back(
                "Set-Cookie",
                "taskq_token=" + v + "; Path="
                    + (m_options.prefix.empty() ? "/" : m_options.prefix)
                    + "; HttpOnly; SameSite=Strict"
                    + (m_options.tls ? "; Secure" : ""));
            return r;
          }
        }
      }
      const bool login = parts.size() == 1 && parts[0] == "login";
      if (login && req.method == "POST") {
        return login_page(m_options, true); // a wrong token
      }
      if (json || req.method == "POST") {
        Response r = error_answer(nullptr, 401, "a token is needed");
        r.headers.emplace_back("WWW-Authenticate", "Bearer");
        return r;
      }
      return login_page(m_options, false);
    }
    user = "token";
  }

  // A state change comes from our own pages (or a script with a token):
  // a browser says where a POST comes from, Sec-Fetch-Site or Origin.
  if (req.method == "POST" && !bearer) {
    const std::string* site = req.header("sec-fetch-site");
    const std::string* origin = req.header("origin");
    const std::string* host = req.header("host");
    if (site != nullptr && *site != "same-origin") {
      return error_answer(nullptr, 403,
                          "refused: a cross-site request may not change "
                          "anything");
    }
    if (site == nullptr && origin != nullptr
        && (host == nullptr
            || (*origin != "http://" + *host
                && *origin != "https://" + *host))) {
      return error_answer(nullptr, 403,
                          "refused: a cross-site request may not change "
                          "anything");
    }
  }

  if (parts.size() == 1 && parts[0] == "live" && req.method != "POST") {
    return m_live->stream(req); // needs no store of its own
  }
  std::optional<StorePool::Lease> lease;
  try {
    lease.emplace(m_stores.take());
  } catch (const Error& e) {
    return error_answer(nullptr, 503, e.what());
  }
  StorePool::Lease& store = *lease;
  View view{
      req,  *store,    m_clock(), m_options, "web:" + user + "@" + req.peer,
      json, &m_follow, &m_stores};
  try {
    const bool post = req.method == "POST";
    if (parts.empty()) {
      return post ? error_answer(&view, 405, "use GET") : overview_page(view);
    }
    if (parts[0] == "tasks") {
      if (parts.size() == 1) {
        return post ? error_answer(&view, 405, "use GET") : tasks_page(view);
      }
      if (parts.size() == 2 && parts[1] == "bulk" && !post) {
        return bulk_page(view);
      }
      if (parts.size() == 2 && parts[1] == "bulk" && post) {
        if (!allowed(m_options.rights, "bulk")) {
          return error_answer(&view, 403,
                              "read-only: bulk actions need serve "
                              "--allow-actions");
        }
        return bulk_action(view);
      }
      const auto id = parse_id_text(parts[1]);
      if (!id) {
        return error_answer(&view, 400,
                            "not a task id: " + std::string(parts[1]));
      }
      if (parts.size() == 2 && !post) {
        return task_page(view, *id);
      }
      if (parts.size() == 3 && !post && parts[2] == "output") {
        return task_output(view, *id);
      }
      if (parts.size() == 3 && post) {
        if (!allowed(m_options.rights, "operate")) {
          return error_answer(&view, 403,
                              "read-only: actions need serve "
                              "--allow-actions");
        }
        return task_action(view, *id, parts[2]);
      }
    }
    if (parts[0] == "queues") {
      if (parts.size() == 1 && !post) {
        return queues_page(view);
      }
      if (parts.size() == 3 && post) {
        if (!allowed(m_options.rights, "queues")) {
          return error_answer(&view, 403,
                              "read-only: queue actions need serve "
                              "--allow-actions");
        }
        return queue_action(view, std::string(parts[1]), parts[2]);
      }
    }
    if (parts[0] == "schedules") {
      if (parts.size() == 1 && !post) {
        return schedules_page(view);
      }
      if (parts.size() == 3 && post) {
        if (!allowed(m_options.rights, "queues")) {
          return error_answer(&view, 403,
                              "read-only: schedule actions need serve "
                              "--allow-actions");
        }
        return schedule_action(view, std::string(parts[1]), parts[2]);
      }
    }
    if (parts[0] == "gates" && parts.size() == 1 && !post) {
      return gates_page(view);
    }
    if (parts[0] == "flows") {
      if (parts.size() == 1 && !post) {
        return flows_page(view);
      }
      const auto id = parts.size() > 1 ? parse_id_text(parts[1]) : std::nullopt;
      if (parts.size() > 1 && !id) {
        return error_answer(&view, 400,
                            "not a flow id: " + std::string(parts[1]));
      }
      if (parts.size() == 2 && !post) {
        return flow_page(view, *id);
      }
      if (parts.size() == 3 && post) {
        if (!allowed(m_options.rights, "operate")) {
          return error_answer(&view, 403,
                              "read-only: actions need serve "
                              "--allow-actions");
        }
        return flow_action(view, *id, parts[2]);
      }
    }
    return error_answer(&view, 404, "no such page: " + req.path);
  } catch (const Error& e) {
    switch (e.kind()) {
    case ErrorKind::usage:
      return error_answer(&view, 400, e.what());
    case ErrorKind::not_found:
      return error_answer(&view, 404, e.what());
    case ErrorKind::conflict:
      return error_answer(&view, 409, e.what());
    case ErrorKind::unavailable:
      store.discard();
      return error_answer(&view, 503, e.what());
    default:
      return error_answer(&view, 500, e.what());
    }
  }
}

} // namespace taskq::web
