// The event log as the web view's overview reads it: the last hour's and
// day's completions, failures and errors by bucket with wait and run
// percentiles (history), and the hour's errors grouped by message
// (error_groups). Each read is bounded (storage/web_types.hpp).

#include "storage/model/rows.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace taskq::storage {

using namespace detail;

// ---------------------------------------------------------------------------
// History
// ---------------------------------------------------------------------------

namespace {

// The p-th percentile (nearest rank) of `v`, sorted.
core::Millis percentile(const std::vector<int64_t>& v, int p) {
  const size_t rank = (v.size() * static_cast<size_t>(p) + 99) / 100;
  return core::Millis(v.at(rank == 0 ? 0 : rank - 1));
}

Percentiles percentiles(std::vector<int64_t> v) {
  Percentiles out;
  out.samples = static_cast<int64_t>(v.size());
  if (!v.empty()) {
    std::sort(v.begin(), v.end());
    out.p50 = percentile(v, 50);
    out.p95 = percentile(v, 95);
  }
  return out;
}

// The latest k_history_events events in [from, now] (all queues: the
// bound is on what is read), joined to their task when a queue is asked.
std::string recent_events(bool by_queue) {
  const std::string latest =
      "(SELECT id, task_id, time, message, from_state, to_state, actor FROM "
      "events WHERE time >= ?1 AND time <= ?2 ORDER BY time DESC LIMIT ?3) w";
  return by_queue ? " FROM " + latest
                        + " JOIN tasks t ON t.id = w.task_id WHERE t.queue = ?4"
                  : " FROM " + latest + " WHERE ?4 IS NULL";
}

} // namespace

History TaskStore::history(const std::optional<std::string>& queue, Time now) {
  Transaction tx(*m_db, Transaction::Kind::read);
  const int64_t now_ms = to_unix_ms(now);
  History h;
  h.day.from = now - std::chrono::hours(24);
  h.day.bucket = std::chrono::minutes(30);
  h.hour.from = now - std::chrono::hours(1);
  h.hour.bucket = std::chrono::minutes(1);
  for (HistoryWindow* w : {&h.day, &h.hour}) {
    const auto n = (now - w->from) / w->bucket;
    for (int64_t i = 0; i < n; ++i) {
      w->buckets.push_back({w->from + i * w->bucket, 0, 0, 0});
    }
  }
  const int64_t from_ms = to_unix_ms(h.day.from);
  const auto bind = [&](Statement& st) {
    st.bind(1, from_ms).bind(2, now_ms).bind(3, k_history_events);
    st.bind(4, queue);
  };
  // What was read: the bound, and the oldest event within it. The same
  // events for both windows: the hour's are the latest of the day's.
  {
    Statement st(*m_db, "SELECT count(*), min(time) FROM (SELECT time FROM "
                        "events WHERE time >= ?1 AND time <= ?2 ORDER BY "
                        "time DESC LIMIT ?3) c");
    st.bind(1, from_ms).bind(2, now_ms).bind(3, k_history_events);
    st.step();
    const bool bounded = st.get_int(0) >= k_history_events;
    for (HistoryWindow* w : {&h.day, &h.hour}) {
      w->counted_from = w->from;
      if (bounded) {
        const Time oldest = core::from_unix_ms(st.get_int(1));
        w->bounded = oldest > w->from;
        w->counted_from = std::max(oldest, w->from);
      }
    }
  }
  // Per minute of the day, the completions, failures and workers' errors
  // (a minute is a bucket of the hour, and a thirtieth of one of the
  // day's: both start at a whole number of minutes before now).
  {
    Statement st(*m_db,
                 "SELECT (w.time - ?1) / 60000, sum(CASE WHEN w.to_state = "
                 "'completed' AND w.from_state <> 'completed' THEN 1 ELSE 0 "
                 "END), sum(CASE WHEN w.to_state = 'failed' AND w.from_state "
                 "<> 'failed' THEN 1 ELSE 0 END), sum(CASE WHEN w.message = "
                 "'error' AND w.actor <> ?5 THEN 1 ELSE 0 END)"
                     + recent_events(queue.has_value())
                     + " GROUP BY (w.time - ?1) / 60000");
    bind(st);
    st.bind(5, k_system_actor);
    while (st.step()) {
      const int64_t minute = st.get_int(0);
      for (HistoryWindow* w : {&h.day, &h.hour}) {
        const int64_t offset =
            minute - (w->from - h.day.from) / std::chrono::minutes(1);
        if (offset < 0 || w->buckets.empty()) {
          continue;
        }
        const auto per = w->bucket / std::chrono::minutes(1);
        const auto i = std::min<int64_t>(
            offset / per, static_cast<int64_t>(w->buckets.size()) - 1);
        HistoryBucket& b = w->buckets[static_cast<size_t>(i)];
        b.completed += st.get_int(1);
        b.failed += st.get_int(2);
        b.errors += st.get_int(3);
      }
    }
  }
  // Samples: the latest k_history_samples leases (wait: from the task's
  // move before the lease, or its creation, or its due time when later,
  // to the lease) and as many workers' ends (run: from the worker's lease
  // before it to it). A lease's wake-up move (taskq's `run`) is part of
  // the lease, not the move before it.
  {
    // A queue's events are joined to their tasks before they are ranked;
    // all queues' are ranked first, so that only the samples are joined.
    const std::string ranked =
        "SELECT w.id, w.task_id, w.time, w.actor, CASE WHEN w.message = "
        "'lease' THEN 1 ELSE 0 END AS lease, row_number() OVER (PARTITION BY "
        "w.message = 'lease' ORDER BY w.time DESC, w.id DESC) AS rank FROM "
        "(SELECT id, task_id, time, message, actor FROM events WHERE time >= "
        "?1 AND time <= ?2 ORDER BY time DESC LIMIT ?3) w"
        + std::string(queue ? " JOIN tasks q ON q.id = w.task_id AND q.queue = "
                              "?4 WHERE"
                            : " WHERE ?4 IS NULL AND")
        + " (w.message = 'lease' OR (w.message IN ('complete', 'error') AND "
          "w.actor <> ?5))";
    Statement st(
        *m_db,
        "SELECT s.lease, s.time, CASE WHEN s.lease = 1 THEN coalesce((SELECT "
        "p.time FROM events p WHERE p.task_id = s.task_id AND p.id < s.id AND "
        "NOT (p.message = 'run' AND p.actor = ?5) ORDER BY p.id DESC LIMIT 1), "
        "t.created_at) ELSE (SELECT p.time FROM events p WHERE p.task_id = "
        "s.task_id AND p.id < s.id AND p.message = 'lease' AND p.actor = "
        "s.actor ORDER BY p.id DESC LIMIT 1) END, t.run_at FROM ("
            + ranked
            + ") s JOIN tasks t ON t.id = s.task_id WHERE s.rank <= ?6");
    bind(st);
    st.bind(3, k_history_sample_events);
    st.bind(5, k_system_actor).bind(6, k_history_samples);
    std::vector<int64_t> wait[2];
    std::vector<int64_t> run[2];
    const int64_t hour_ms = to_unix_ms(h.hour.from);
    while (st.step()) {
      const int64_t at = st.get_int(1);
      const auto start = st.get_opt_int(2);
      if (!start) {
        continue; // its lease was not logged (purged, imported)
      }
      int64_t began = *start;
      if (st.get_int(0) == 1) {
        // Its due time, when it came after the move before the lease and
        // is still the task's (a later move sets a later one).
        const int64_t due = st.get_int(3);
        if (due <= at) {
          began = std::max(began, due);
        }
      }
      auto& into = st.get_int(0) == 1 ? wait : run;
      const int64_t took = std::max<int64_t>(0, at - began);
      into[0].push_back(took);
      if (at >= hour_ms) {
        into[1].push_back(took);
      }
    }
    h.day.wait = percentiles(wait[0]);
    h.day.run = percentiles(run[0]);
    h.hour.wait = percentiles(wait[1]);
    h.hour.run = percentiles(run[1]);
  }
  return h;
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

std::vector<ErrorGroup> TaskStore::error_groups(Time since, int64_t limit,
                                                bool* bounded) {
  Transaction tx(*m_db, Transaction::Kind::read);
  // A range of events_errors (0013_events_errors.sql), the latest first.
  Statement st(*m_db, "SELECT e.task_id, e.time, e.detail, t.queue FROM "
                      "(SELECT task_id, time, detail FROM events WHERE "
                      "message = 'error' AND time >= ?1 AND actor <> ?2 "
                      "ORDER BY time DESC LIMIT ?3) e LEFT JOIN tasks t ON "
                      "t.id = e.task_id");
  st.bind(1, to_unix_ms(since)).bind(2, k_system_actor).bind(3, k_error_rows);
  std::map<std::string, ErrorGroup> groups;
  std::map<std::string, std::set<std::string>> queues;
  int64_t read = 0;
  while (st.step()) {
    ++read;
    const std::string message = st.get_opt_text(2).value_or("");
    ErrorGroup& g = groups[message];
    const Time at = core::from_unix_ms(st.get_int(1));
    if (g.count++ == 0) {
      g.message = message;
      g.latest = at;
    }
    g.latest = std::max(g.latest, at);
    const int64_t id = st.get_int(0);
    if (g.sample_ids.size() < 10
        && std::find(g.sample_ids.begin(), g.sample_ids.end(), id)
               == g.sample_ids.end()) {
      g.sample_ids.push_back(id);
    }
    if (const auto q = st.get_opt_text(3)) {
      queues[message].insert(*q);
    }
  }
  if (bounded != nullptr) {
    *bounded = read >= k_error_rows;
  }
  std::vector<ErrorGroup> out;
  for (auto& [message, g] : groups) {
    const auto& qs = queues[message];
    g.queues.assign(qs.begin(), qs.end());
    out.push_back(std::move(g));
  }
  std::sort(
      out.begin(), out.end(), [](const ErrorGroup& a, const ErrorGroup& b) {
        return a.count != b.count ? a.count > b.count : a.latest > b.latest;
      });
  if (limit >= 0 && static_cast<int64_t>(out.size()) > limit) {
    out.resize(static_cast<size_t>(limit));
  }
  return out;
}

} // namespace taskq::storage
