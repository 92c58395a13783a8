#include "web/live.hpp"

#include <chrono>
#include <memory>

#include "web/view.hpp"

namespace taskq::web {

using namespace std::chrono_literals;

App::Live::Live(StorePool& stores, std::function<core::Time()> clock)
    : m_stores(stores), m_clock(std::move(clock)) {}

App::Live::~Live() {
  stop();
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

void App::Live::stop() {
  std::lock_guard lock(m_mutex);
  m_stopping = true;
  m_changed.notify_all();
}

void App::Live::look_loop() {
  std::unique_lock lock(m_mutex);
  while (!m_stopping) {
    if (m_streams == 0) {
      m_changed.wait(lock, [&] { return m_stopping || m_streams > 0; });
      continue;
    }
    lock.unlock();
    int64_t seen = -1;
    try {
      auto store = m_stores.take();
      const storage::EventCursor end = store->events_end();
      seen = end.event_id + end.task_id + end.flow_event_id;
    } catch (const std::exception&) {
      seen = -1; // the database is away: look again next time
    }
    lock.lock();
    if (seen >= 0 && seen != m_version) {
      m_version = seen;
      m_changed.notify_all();
    }
    m_changed.wait_for(lock, 1s, [&] { return m_stopping; });
  }
}

Response App::Live::stream(const Request& request) {
  std::unique_lock lock(m_mutex);
  if (m_streams >= k_max_streams || m_stopping) {
    Response r;
    r.status = 429;
    r.type = "text/plain; charset=utf-8";
    r.body = "taskq: too many live pages; this one polls\n";
    r.headers.emplace_back("Retry-After", "10");
    return r;
  }
  ++m_streams;
  if (!m_thread.joinable()) {
    m_thread = std::thread([this] { look_loop(); });
  }
  m_changed.notify_all();
  int64_t last = -1;
  if (const std::string* id = request.header("last-event-id")) {
    last = parse_id_text(*id).value_or(-1);
  }
  // Counted while the stream lives, whoever ends it.
  // (Made in place: a temporary's destructor would take the lock held.)
  struct Count {
    explicit Count(App::Live* l) : live(l) {}
    Count(const Count&) = delete;
    Count& operator=(const Count&) = delete;
    ~Count() {
      std::lock_guard l(live->m_mutex);
      --live->m_streams;
    }
    App::Live* live;
  };
  auto count = std::make_shared<Count>(this);
  auto first = std::make_shared<bool>(true);
  Response r;
  r.type = "text/event-stream";
  r.headers.emplace_back("Cache-Control", "no-store");
  r.headers.emplace_back("X-Accel-Buffering", "no");
  r.stream = [this, count, first, last](std::string& out) mutable {
    std::unique_lock l(m_mutex);
    if (*first) {
      *first = false;
      out += "retry: 3000\n\n";
      if (m_version < 0 || m_version == last) {
        return true;
      }
    } else {
      const bool moved = m_changed.wait_for(l, 15s, [&] {
        return m_stopping || (m_version >= 0 && m_version != last);
      });
      if (m_stopping) {
        return false;
      }
      if (!moved) {
        out += ": still here\n\n";
        return true;
      }
    }
    last = m_version;
    out += "id: " + std::to_string(last)
           + "\nevent: change\ndata: " + std::to_string(last) + "\n\n";
    return true;
  };
  return r;
}

} // namespace taskq::web
