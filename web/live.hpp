#pragma once

// Live pages: one look at the database a second, however many tabs are
// open, fanned out to every stream (Server-Sent Events). A stream says
// `change` with the event log's position; the page then fetches itself
// again. No tab open: no look at all.

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "web/app.hpp"

namespace taskq::web {

struct App::Live {
  // At most this many streams at once; the next is answered 429 and its
  // page polls instead.
  static constexpr int k_max_streams = 200;

  Live(StorePool& stores, std::function<core::Time()> clock);
  ~Live();
  Live(const Live&) = delete;
  Live& operator=(const Live&) = delete;

  Response stream(const Request& request);
  void stop();

private:
  void look_loop();

  StorePool& m_stores;
  std::function<core::Time()> m_clock;
  std::mutex m_mutex;
  std::condition_variable m_changed;
  int64_t m_version = -1; // the event log's last id seen; -1: not looked
  int m_streams = 0;
  bool m_stopping = false;
  std::thread m_thread;
};

} // namespace taskq::web
