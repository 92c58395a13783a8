#pragma once

// `taskq serve`'s application: every route, the checks each request
// passes first (authentication, cross-site requests, rights, bad input),
// and the stores it reads and acts through. Pages are in web/page_*.cpp.

#include "core/time.hpp"
#include "storage/task_store.hpp"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "web/follow.hpp"
#include "web/http.hpp"

namespace taskq::web {

// What an operator may do through the view (`--allow-actions` gives all).
struct Rights {
  bool operate = false; // one task: pause, resume, kill, sleep, retry, ...
  bool bulk = false;    // every task that matches a filter
  bool queues = false;  // a queue's pause and resume
};

struct AppOptions {
  std::string prefix;               // "" or "/taskq": where the view lives
  Rights rights;                    // none: read-only
  std::optional<std::string> token; // required of every request, when set
  bool tls = false;                 // cookies are Secure
};

// Stores opened on demand and reused, one request at a time each: the
// database sees at most `max` connections however many requests come.
class StorePool {
public:
  using Open = std::function<std::unique_ptr<storage::TaskStore>()>;
  StorePool(Open open, size_t max);

  class Lease {
  public:
    Lease(StorePool& pool, std::unique_ptr<storage::TaskStore> store)
        : m_pool(&pool), m_store(std::move(store)) {}
    ~Lease();
    Lease(Lease&& other) noexcept
        : m_pool(std::exchange(other.m_pool, nullptr)),
          m_store(std::move(other.m_store)) {}
    Lease& operator=(Lease&&) = delete;
    Lease(const Lease&) = delete;
    storage::TaskStore& operator*() { return *m_store; }
    storage::TaskStore* operator->() { return m_store.get(); }
    // A store whose connection broke is not given back.
    void discard() { m_store.reset(); }

  private:
    StorePool* m_pool;
    std::unique_ptr<storage::TaskStore> m_store;
  };
  Lease take();
  // One when the pool has one free or room to open one; never waits (a
  // request that already holds a store asks this way: two such requests
  // waiting for each other's would wait for ever).
  std::optional<Lease> try_take();

private:
  friend class Lease;
  // An idle store, or a new one (`lock` held on entry, with room).
  Lease lend(std::unique_lock<std::mutex>& lock);
  void give_back(std::unique_ptr<storage::TaskStore> store);

  Open m_open;
  size_t m_max;
  size_t m_out = 0;
  std::vector<std::unique_ptr<storage::TaskStore>> m_idle;
  std::mutex m_mutex;
  std::condition_variable m_freed;
};

class App {
public:
  App(AppOptions options, StorePool::Open open,
      std::function<core::Time()> clock);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  Response handle(const Request& request);

  // Ends the live streams (before the server stops).
  void stop();

  struct Live; // web/live.cpp

private:
  Response route(const Request& request);

  AppOptions m_options;
  StorePool m_stores;
  std::function<core::Time()> m_clock;
  std::unique_ptr<Live> m_live;
  OutputFollow m_follow;
};

} // namespace taskq::web
