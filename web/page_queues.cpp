// Queues: each with its settings and counts; pause and resume.

#include "core/error.hpp"
#include "core/error_policy.hpp"
#include "core/task_json.hpp"

#include "web/html.hpp"
#include "web/view.hpp"

namespace taskq::web {

Response queues_page(View& view) {
  const auto queues = view.store.queues(view.now);
  if (view.json) {
    std::string out = "[";
    for (const auto& q : queues) {
      out += out.size() == 1 ? "" : ",";
      out += core::ObjectWriter()
                 .text("queue", q.name)
                 .raw("paused", q.paused ? "true" : "false")
                 .number_or_null("max_running", q.max_running)
                 .number_or_null("max_attempts", q.max_attempts)
                 .finish();
    }
    out += "]";
    return json_answer(std::move(out));
  }
  Html b;
  b.put("<h1>Queues</h1><div class=\"scroll\"><table class=\"queues\">"
        "<thead><tr><th>queue</th><th>state</th><th>max running</th>"
        "<th>max attempts</th><th>unfinished</th><th>action</th></tr>"
        "</thead><tbody>");
  for (const auto& q : queues) {
    const auto& s = q.stats;
    const std::string act = q.paused ? "resume" : "pause";
    Html action;
    if (view.options.rights.queues) {
      action.put("<form method=\"post\" action=\"{}\"><button "
                 "type=\"submit\">{}</button></form>",
                 view.link("/queues/" + url_encode(q.name) + "/" + act), act);
    }
    action.put("<code class=\"cli\">taskq queue {} {}</code>", act, q.name);
    if (view.options.rights.queues) {
      // Its limits: a field left empty leaves that limit as it is, as
      // `queue set` without the option does.
      action.put(
          "<form method=\"post\" action=\"{}\" class=\"limits\"><label>max "
          "running <input name=\"max_running\" type=\"number\" min=\"0\" "
          "inputmode=\"numeric\" value=\"{}\"></label> <label>max attempts "
          "<input name=\"max_attempts\" type=\"number\" min=\"1\" "
          "inputmode=\"numeric\" value=\"{}\"></label> <button "
          "type=\"submit\">set</button></form><code class=\"cli\">taskq "
          "queue set {} --max-running N --max-attempts N</code>",
          view.link("/queues/" + url_encode(q.name) + "/set"),
          q.max_running ? std::to_string(*q.max_running) : "",
          q.max_attempts ? std::to_string(*q.max_attempts) : "", q.name);
    }
    b.put("<tr><th scope=\"row\"><a href=\"{}\">{}</a></th><td>{}</td>"
          "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
          view.link("/tasks?queue=" + url_encode(q.name)), q.name,
          q.paused ? "paused" : "active",
          q.max_running ? std::to_string(*q.max_running) : "-",
          q.max_attempts ? std::to_string(*q.max_attempts) : "-",
          s.runnable + s.sleeping + s.paused, action);
  }
  b.put("</tbody></table></div>");
  return page(view, "Queues", "queues", b);
}

namespace {

// A limit from a form field as `queue set` takes it: empty leaves it as it
// is; otherwise a whole number of at least `least`.
std::optional<int64_t> limit_field(const Pairs& form, std::string_view name,
                                   int64_t least) {
  std::optional<int64_t> out;
  for (const auto& [k, v] : form) {
    if (k != name || v.empty()) {
      continue;
    }
    const auto n = v == "0" ? std::optional<int64_t>(0) : parse_id_text(v);
    if (!n || *n < least) {
      throw Error(ErrorKind::usage, std::string(name)
                                        + " must be a whole "
                                          "number, "
                                        + std::to_string(least)
                                        + " or more: " + v);
    }
    out = n;
  }
  return out;
}

} // namespace

Response queue_action(View& view, const std::string& queue,
                      std::string_view action) {
  if (action != "pause" && action != "resume" && action != "set") {
    return error_answer(&view, 404, "no such action: " + std::string(action));
  }
  view.store.queue(queue, view.now); // not_found when it is not a queue
  if (action == "set") {
    const Pairs form = parse_form<Pairs>(view.request.body);
    storage::QueueSettings settings;
    settings.max_running = limit_field(form, "max_running", 0);
    settings.max_attempts = limit_field(form, "max_attempts", 1);
    view.store.set_queue(queue, settings);
    if (view.json) {
      const auto q = view.store.queue(queue, view.now);
      return json_answer(core::ObjectWriter()
                             .text("queue", queue)
                             .number_or_null("max_running", q.max_running)
                             .number_or_null("max_attempts", q.max_attempts)
                             .finish());
    }
    return see_other(view, "/queues");
  }
  view.store.set_queue_paused(queue, action == "pause");
  if (view.json) {
    return json_answer(core::ObjectWriter()
                           .text("queue", queue)
                           .raw("paused", action == "pause" ? "true" : "false")
                           .finish());
  }
  return see_other(view, "/queues");
}

} // namespace taskq::web
