#include "web/serve.hpp"

#include <csignal>

namespace taskq::web {

std::string view_url(const ServeOptions& options, uint16_t port) {
  std::string host = options.server.host;
  if (host.find(':') != std::string::npos) {
    host = "[" + host + "]"; // an IPv6 address
  }
  return std::string(options.app.tls ? "https" : "http") + "://" + host + ":"
         + std::to_string(port) + options.app.prefix + "/";
}

int serve(const ServeOptions& options, StorePool::Open open,
          std::function<core::Time()> clock,
          const std::function<void(const std::string& url)>& ready) {
  App app(options.app, std::move(open), std::move(clock));
  int signal = 0;
  {
    Server server(options.server,
                  [&app](const Request& r) { return app.handle(r); });
    ready(view_url(options, server.port()));
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGTERM);
    while (sigwait(&stops, &signal) != 0) {
    }
    app.stop(); // live streams end, so the server's threads can
  }
  return signal;
}

} // namespace taskq::web
