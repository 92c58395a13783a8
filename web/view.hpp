#pragma once

// What a page is given, and the shell every page shares (web/layout.cpp):
// the document around a page's body, JSON and error answers, links under
// the view's prefix.

#include "core/time.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "web/app.hpp"
#include "web/html.hpp"
#include "web/http.hpp"

namespace taskq::web {

struct View {
  const Request& request;
  storage::TaskStore& store;
  core::Time now;
  const AppOptions& options;
  std::string actor; // `web:USER@ADDR`, as the event log names it
  bool json = false; // the client asked for JSON (Accept, or ?format=json)
  OutputFollow* follow = nullptr; // the answers of output followed live
  StorePool* stores = nullptr;    // a second store, for reads side by side

  // `path` (starting with /) under the view's prefix.
  std::string link(std::string_view path) const {
    return options.prefix + std::string(path);
  }
};

// A whole HTML page: head, navigation (`section` marked current), `body`.
Response page(const View& view, std::string_view title,
              std::string_view section, const Html& body);

// JSON text as the answer (application/json).
Response json_answer(std::string text, int status = 200);

// An error as a page, or as {"error": "..."} to a JSON client; `message`
// reads like the CLI's (without the `taskq: `).
Response error_answer(const View* view, int status, std::string_view message);

// 303 See Other to `path` under the prefix (after a POST form).
Response see_other(const View& view, std::string_view path);

// A time as the page shows it: <time datetime=UTC>relative</time>; the
// script turns it to UTC or local on the reader's switch.
Html time_html(core::Time t, core::Time now);

// The state as a page shows it: running/frozen for a leased runnable task.
std::string display_state(const core::Task& task, core::Time now);

// A number from a query or form value: digits only, in range; else nullopt.
std::optional<int64_t> parse_id_text(std::string_view text);

// --- the pages (web/page_*.cpp) ---
Response overview_page(View& view);
Response tasks_page(View& view);
Response task_page(View& view, int64_t id);
Response task_action(View& view, int64_t id, std::string_view action);
// GET /tasks/ID/output?attempt=A&stream=S&after=C: what the attempt's
// stream printed after chunk C, as JSON (web/follow.hpp).
Response task_output(View& view, int64_t id);
Response bulk_page(View& view);   // GET /tasks/bulk: count, confirm
Response bulk_action(View& view); // POST /tasks/bulk
Response queues_page(View& view);
Response queue_action(View& view, const std::string& queue,
                      std::string_view action);
Response schedules_page(View& view); // GET /schedules
Response schedule_action(View& view, const std::string& name,
                         std::string_view action); // pause, resume
Response gates_page(View& view);                   // GET /gates
Response flows_page(View& view);                   // GET /flows[?state=S]
Response flow_page(View& view, int64_t id);        // GET /flows/ID
Response flow_action(View& view, int64_t id,
                     std::string_view action); // suspend, resume

} // namespace taskq::web
