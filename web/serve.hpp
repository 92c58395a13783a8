#pragma once

// `taskq serve`: the web view served until SIGINT or SIGTERM.

#include "core/time.hpp"

#include <functional>
#include <string>

#include "web/app.hpp"
#include "web/http.hpp"

namespace taskq::web {

struct ServeOptions {
  ServerOptions server; // where it listens, TLS
  AppOptions app;       // prefix, rights, token
};

// The URL the view is reached at (http://HOST:PORT/PREFIX/).
std::string view_url(const ServeOptions& options, uint16_t port);

// Serves until SIGINT or SIGTERM (which must be blocked in every thread
// before this is called: the server's threads inherit the mask). Calls
// `ready` with the URL once it listens. Returns the signal that ended it.
int serve(const ServeOptions& options, StorePool::Open open,
          std::function<core::Time()> clock,
          const std::function<void(const std::string& url)>& ready);

} // namespace taskq::web
