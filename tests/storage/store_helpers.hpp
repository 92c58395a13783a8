#pragma once

#include "core/error.hpp"
#include "core/state.hpp"
#include "core/task.hpp"
#include "core/time.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// Readable values in failure reports.
namespace doctest {
template <> struct StringMaker<taskq::core::Time> {
  static String convert(const taskq::core::Time& t) {
    return taskq::core::format_time(t).c_str();
  }
};
template <> struct StringMaker<taskq::core::TaskState> {
  static String convert(taskq::core::TaskState s) {
    return std::string(taskq::core::to_string(s)).c_str();
  }
};
template <> struct StringMaker<std::optional<taskq::ErrorKind>> {
  static String convert(const std::optional<taskq::ErrorKind>& k) {
    if (!k) {
      return "no error";
    }
    switch (*k) {
    case taskq::ErrorKind::usage:
      return "usage";
    case taskq::ErrorKind::not_found:
      return "not_found";
    case taskq::ErrorKind::conflict:
      return "conflict";
    case taskq::ErrorKind::unavailable:
      return "unavailable";
    case taskq::ErrorKind::internal:
      return "internal";
    }
    return "?";
  }
};
template <> struct StringMaker<taskq::ErrorKind> {
  static String convert(taskq::ErrorKind k) {
    return StringMaker<std::optional<taskq::ErrorKind>>::convert(k);
  }
};
template <> struct StringMaker<std::vector<int64_t>> {
  static String convert(const std::vector<int64_t>& v) {
    std::string out = "{";
    for (std::size_t i = 0; i < v.size(); ++i) {
      out += i == 0 ? "" : ", ";
      out += std::to_string(v[i]);
    }
    return (out + "}").c_str();
  }
};
} // namespace doctest

// Small helpers shared by the storage tests. Every test passes `now`
// explicitly: it starts at t0 and is advanced by hand, never read from the
// clock.
namespace taskq::test {

using namespace std::chrono_literals;
using core::Message;
using core::Millis;
using core::TaskState;
using core::Time;
using storage::OpenMode;
using storage::TaskStore;

inline const Time t0 = *core::parse_time("2026-11-21T08:00:00Z");

inline const std::string k_operator = "alice@host";
inline const std::string k_worker = "w1";

inline storage::NewTask new_task(const std::string& queue,
                                 const std::string& payload = "null") {
  storage::NewTask task;
  task.queue = queue;
  task.payload = payload;
  return task;
}

inline int64_t add_task(TaskStore& store, const std::string& queue,
                        Time now = t0, const std::string& payload = "null") {
  return store.add(new_task(queue, payload), now, k_operator);
}

inline storage::LeaseRequest
lease_request(const std::string& queue, Millis lease_for = 5min,
              const std::string& worker = k_worker) {
  storage::LeaseRequest req;
  req.queues = {queue};
  req.lease_for = lease_for;
  req.worker = worker;
  return req;
}

// Leases at most one task of `queue`.
inline std::optional<core::Task>
lease_one(TaskStore& store, const std::string& queue, Time now,
          Millis lease_for = 5min, const std::string& worker = k_worker) {
  const auto leased = store.lease(lease_request(queue, lease_for, worker), now);
  REQUIRE(leased.size() <= 1);
  if (leased.empty()) {
    return std::nullopt;
  }
  return leased.front();
}

inline storage::Selector by_ids(std::vector<int64_t> ids) {
  storage::Selector sel;
  sel.ids = std::move(ids);
  return sel;
}

inline storage::Selector by_queue(const std::string& queue) {
  storage::Selector sel;
  sel.queue = queue;
  return sel;
}

inline storage::Selector by_state(const std::string& state) {
  storage::Selector sel;
  sel.states = {state};
  return sel;
}

// Sends an operator message to one task.
inline std::vector<core::Task>
send_one(TaskStore& store, int64_t id, Message msg, Time now,
         std::optional<Time> until = std::nullopt) {
  return store.send(by_ids({id}), msg, until, k_operator, now);
}

inline storage::FailRequest
fail_request(const std::string& error,
             storage::FailMode mode = storage::FailMode::policy) {
  storage::FailRequest req;
  req.error = error;
  req.mode = mode;
  return req;
}

// The kind of taskq::Error that `f` throws, or std::nullopt when it returns.
// Any other exception escapes and fails the test.
template <typename F> std::optional<ErrorKind> error_kind(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const taskq::Error& e) {
    return e.kind();
  }
  return std::nullopt;
}

// The message of the taskq::Error that `f` throws; empty when none.
template <typename F> std::string error_message(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const taskq::Error& e) {
    return e.what();
  }
  return {};
}

// `prefix` followed by `n`. Appended rather than `prefix + std::to_string(n)`:
// GCC 12 at -O3 reports a false -Wrestrict on that operator+.
inline std::string numbered(const std::string& prefix, int64_t n) {
  std::string out = prefix;
  out += std::to_string(n);
  return out;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline std::vector<int64_t> ids_of(const std::vector<core::Task>& tasks) {
  std::vector<int64_t> ids;
  ids.reserve(tasks.size());
  for (const auto& t : tasks) {
    ids.push_back(t.id);
  }
  return ids;
}

inline std::vector<int64_t> sorted(std::vector<int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}

inline std::optional<std::string> token_of(const core::Task& task) {
  if (!task.lease) {
    return std::nullopt;
  }
  return task.lease->token;
}

// Asserts that nothing observable about a task changed between two reads.
inline void check_unchanged(const core::Task& before, const core::Task& after) {
  CHECK(after.rev == before.rev);
  CHECK(after.state == before.state);
  CHECK(after.queue == before.queue);
  CHECK(after.attempts == before.attempts);
  CHECK(after.run_at == before.run_at);
  CHECK(after.updated_at == before.updated_at);
  CHECK(token_of(after) == token_of(before));
  CHECK(after.errors.size() == before.errors.size());
  CHECK(after.result == before.result);
  CHECK(after.checkpoint == before.checkpoint);
}

// A chunk of attempt 1's stdout of `task`, for an outcome's output.
inline storage::OutputChunk chunk(int64_t task, const std::string& data) {
  storage::OutputChunk c;
  c.task = task;
  c.attempt = 1;
  c.stream = "stdout";
  c.data = data;
  return c;
}

// Worker outcomes for apply_outcomes, each fenced by the task's lease token.

inline storage::Outcome done(const core::Task& t, const std::string& result) {
  storage::Outcome o;
  o.kind = storage::Outcome::Kind::complete;
  o.id = t.id;
  o.token = t.lease->token;
  o.worker = t.lease->worker;
  o.result = result;
  return o;
}

inline storage::Outcome failed(const core::Task& t, const std::string& error) {
  storage::Outcome o;
  o.kind = storage::Outcome::Kind::fail;
  o.id = t.id;
  o.token = t.lease->token;
  o.worker = t.lease->worker;
  o.fail = fail_request(error, storage::FailMode::no_retry);
  return o;
}

inline storage::Outcome released(const core::Task& t) {
  storage::Outcome o;
  o.kind = storage::Outcome::Kind::release;
  o.id = t.id;
  o.token = t.lease->token;
  o.worker = t.lease->worker;
  o.delay = 10s;
  return o;
}

// Producing and finishing tasks in a test's own words.

inline int64_t add_after(TaskStore& store, const std::string& queue,
                         std::vector<int64_t> after) {
  storage::NewTask spec = new_task(queue);
  spec.after = std::move(after);
  return store.add(spec, t0, k_operator);
}

inline int64_t add_at(TaskStore& store, const std::string& queue, Time run_at,
                      int64_t priority = 0) {
  storage::NewTask spec = new_task(queue);
  spec.run_at = run_at;
  spec.priority = priority;
  return store.add(spec, t0, k_operator);
}

inline core::Task task_of(TaskStore& store, int64_t id) {
  const auto t = store.find(id);
  REQUIRE(t);
  return *t;
}

// Leases task `id` (it must be next in its queue) and completes it.
inline void finish(TaskStore& store, int64_t id, Time now) {
  const auto leased = lease_one(store, task_of(store, id).queue, now);
  REQUIRE(leased);
  REQUIRE(leased->id == id);
  store.complete(id, leased->lease->token, std::nullopt, now);
}

// Every task of the store as export lines (columns and rows beside them,
// flattened to text), to compare two databases or one before and after.
inline std::vector<std::string> dump(TaskStore& store) {
  std::vector<std::string> lines;
  store.export_tasks(std::nullopt, [&](const storage::TaskImage& image) {
    std::string line;
    const auto add_row = [&](const storage::ImageRow& row) {
      for (const auto& [name, value] : row) {
        line += name + "=" + value + ";";
      }
      line += "|";
    };
    add_row(image.task);
    for (const auto* rows :
         {&image.errors, &image.events, &image.deps, &image.deliveries}) {
      for (const auto& row : *rows) {
        add_row(row);
      }
      line += "#";
    }
    lines.push_back(line);
  });
  return lines;
}

// The per-queue counts of stats against the tasks themselves.

inline const char* const k_states[] = {"runnable",  "sleeping", "paused",
                                       "completed", "failed",   "killed"};

// Each queue's stats, by queue.
inline std::map<std::string, storage::QueueStats>
stats_by_queue(TaskStore& store, Time now) {
  std::map<std::string, storage::QueueStats> out;
  for (auto& s : store.stats(std::nullopt, now)) {
    out[s.queue] = s;
  }
  return out;
}

inline int64_t count_of(const storage::QueueStats& s,
                        const std::string& state) {
  return state == "runnable"    ? s.runnable
         : state == "sleeping"  ? s.sleeping
         : state == "paused"    ? s.paused
         : state == "completed" ? s.completed
         : state == "failed"    ? s.failed
                                : s.killed;
}

// stats' counts, and its time-dependent ones, against the tasks listed
// (each state, running, ready) and db check's recount.
inline void check_counts(TaskStore& store,
                         const std::vector<std::string>& queues, Time now) {
  const auto stats = stats_by_queue(store, now);
  for (const std::string& q : queues) {
    storage::Selector sel = by_queue(q);
    int64_t total = 0;
    const auto it = stats.find(q);
    for (const char* state : k_states) {
      sel.states = {state};
      const auto n = static_cast<int64_t>(store.list(sel, now).size());
      total += n;
      CHECK_MESSAGE((it == stats.end() ? 0 : count_of(it->second, state)) == n,
                    q << " " << state);
    }
    CHECK((it != stats.end()) == (total > 0));
    if (it == stats.end()) {
      continue;
    }
    sel.states = {"running"};
    CHECK(it->second.running
          == static_cast<int64_t>(store.list(sel, now).size()));
    sel.states = {"ready"};
    const auto ready = store.list(sel, now);
    CHECK(it->second.ready == static_cast<int64_t>(ready.size()));
    sel.states = {"runnable"};
    int64_t delayed = 0;
    for (const auto& t : store.list(sel, now)) {
      delayed += t.run_at > now ? 1 : 0;
    }
    CHECK(it->second.delayed == delayed);
  }
  const auto report = store.check();
  for (const auto& p : report.problems) {
    MESSAGE(p);
  }
  CHECK(report.ok);
}

} // namespace taskq::test
