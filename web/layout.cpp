#include "core/duration.hpp"
#include "core/task_json.hpp"

#include <array>

#include "web/view.hpp"

namespace taskq::web {

namespace {

struct Section {
  std::string_view key;
  std::string_view title;
  std::string_view path;
};

constexpr std::array<Section, 6> k_sections{{
    {"overview", "Overview", "/"},
    {"tasks", "Tasks", "/tasks"},
    {"queues", "Queues", "/queues"},
    {"schedules", "Schedules", "/schedules"},
    {"gates", "Gates", "/gates"},
    {"flows", "Flows", "/flows"},
}};

} // namespace

Response page(const View& view, std::string_view title,
              std::string_view section, const Html& body) {
  Html nav;
  for (const Section& s : k_sections) {
    if (s.key == section) {
      nav.put("<a href=\"{}\" aria-current=\"page\">{}</a>", view.link(s.path),
              s.title);
    } else {
      nav.put("<a href=\"{}\">{}</a>", view.link(s.path), s.title);
    }
  }
  Html doc;
  doc.put("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width, "
          "initial-scale=1\"><title>{} · taskq</title>"
          "<link rel=\"stylesheet\" href=\"{}\">"
          "<script src=\"{}\" defer></script></head>\n"
          "<body data-prefix=\"{}\" data-live=\"{}\">"
          "<header><a class=\"brand\" href=\"{}\">taskq</a><nav>{}</nav>"
          "<button type=\"button\" id=\"tz\" hidden>UTC</button>"
          "<span id=\"live\" role=\"status\" aria-live=\"polite\"></span>"
          "</header>\n<main id=\"main\">{}</main></body></html>\n",
          title, view.link("/assets/taskq.css"), view.link("/assets/taskq.js"),
          view.options.prefix, view.link("/live"), view.link("/"), nav, body);
  Response r;
  r.body = doc.take();
  return r;
}

Response json_answer(std::string text, int status) {
  Response r;
  r.status = status;
  r.type = "application/json";
  r.body = std::move(text);
  r.body += '\n';
  return r;
}

Response error_answer(const View* view, int status, std::string_view message) {
  if (view == nullptr || view->json) {
    return json_answer(core::ObjectWriter().text("error", message).finish(),
                       status);
  }
  Html body;
  body.put("<h1>{}</h1><p class=\"error\">{}</p>", status, message);
  Response r = page(*view, "Error", "", body);
  r.status = status;
  return r;
}

Response see_other(const View& view, std::string_view path) {
  Response r;
  r.status = 303;
  r.type = "text/plain; charset=utf-8";
  r.headers.emplace_back("Location", view.link(path));
  return r;
}

Html time_html(core::Time t, core::Time now) {
  const core::Millis d = t - now;
  const bool past = d.count() <= 0;
  const std::string rel = core::format_duration(past ? -d : d);
  Html h;
  h.put("<time datetime=\"{}\">{}</time>", core::format_time(t),
        past ? rel + " ago" : "in " + rel);
  return h;
}

std::string display_state(const core::Task& t, core::Time now) {
  if (t.state == core::TaskState::runnable && t.leased(now)) {
    return t.frozen ? "frozen" : "running";
  }
  return std::string(core::to_string(t.state));
}

std::optional<int64_t> parse_id_text(std::string_view text) {
  if (text.empty() || text.size() > 18) {
    return std::nullopt;
  }
  int64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    v = v * 10 + (c - '0');
  }
  return v;
}

} // namespace taskq::web
