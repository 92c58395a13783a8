#include "web/assets.hpp"

#include "web/html.hpp"

namespace taskq::web {

Response asset(std::string_view name) {
  const auto text = asset_text(name);
  Response r;
  if (!text) {
    r.status = 404;
    r.type = "text/plain; charset=utf-8";
    r.body = "taskq: no such asset\n";
    return r;
  }
  r.type = name.ends_with(".css") ? "text/css; charset=utf-8"
                                  : "text/javascript; charset=utf-8";
  r.body = std::string(*text);
  r.headers.emplace_back("Cache-Control", "max-age=86400");
  return r;
}

Response login_page(const AppOptions& options, bool failed) {
  Html h;
  h.put("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, "
        "initial-scale=1\"><title>Sign in · taskq</title>"
        "<link rel=\"stylesheet\" href=\"{}/assets/taskq.css\"></head>"
        "<body><main id=\"main\" class=\"login\"><h1>taskq</h1>",
        options.prefix);
  if (failed) {
    h.put("<p class=\"error\" role=\"alert\">That token is not this "
          "server's.</p>");
  }
  h.put("<form method=\"post\" action=\"{}/login\"><label for=\"token\">"
        "Token (the first line of serve's --token-file)</label>"
        "<input id=\"token\" name=\"token\" type=\"password\" "
        "autocomplete=\"current-password\" required>"
        "<button type=\"submit\">Sign in</button></form></main></body>"
        "</html>\n",
        options.prefix);
  Response r;
  r.status = 401;
  r.body = h.take();
  return r;
}

} // namespace taskq::web
