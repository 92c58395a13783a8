// The overview: per queue its counts, the oldest ready task's age and the
// leases about to run out; throughput and wait and run times over the last
// hour and day, drawn as SVG from the event log; the last hour's errors
// grouped by message; the workers and their leases.

#include "core/duration.hpp"
#include "core/error.hpp"
#include "core/task_json.hpp"

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>

#include "web/view.hpp"

namespace taskq::web {

namespace {

std::string millis_text(const std::optional<core::Millis>& m) {
  return m ? core::format_elapsed(*m) : "-";
}

// Bars of completed (and failed, stacked) per bucket, as inline SVG.
Html chart(const storage::HistoryWindow& w, std::string_view label) {
  int64_t top = 1;
  for (const auto& b : w.buckets) {
    top = std::max(top, b.completed + b.failed);
  }
  const size_t n = std::max<size_t>(w.buckets.size(), 1);
  const double width = 600.0 / static_cast<double>(n);
  Html h;
  h.put("<figure class=\"chart\"><svg viewBox=\"0 0 600 120\" role=\"img\" "
        "aria-label=\"{}: at most {} tasks a bucket\" "
        "preserveAspectRatio=\"none\">",
        label, top);
  for (size_t i = 0; i < w.buckets.size(); ++i) {
    const auto& b = w.buckets[i];
    const double x = static_cast<double>(i) * width;
    const auto height = [&](int64_t v) {
      return static_cast<int>(110.0 * static_cast<double>(v)
                              / static_cast<double>(top));
    };
    const int hc = height(b.completed);
    const int hf = height(b.failed);
    const std::string xs = std::to_string(static_cast<int>(x));
    const std::string ws =
        std::to_string(std::max(1, static_cast<int>(width) - 1));
    if (hc > 0) {
      h.put("<rect class=\"ok\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\">"
            "<title>{} completed</title></rect>",
            xs, 120 - hc, ws, hc, b.completed);
    }
    if (hf > 0) {
      h.put("<rect class=\"bad\" x=\"{}\" y=\"{}\" width=\"{}\" "
            "height=\"{}\"><title>{} failed</title></rect>",
            xs, 120 - hc - hf, ws, hf, b.failed);
    }
  }
  int64_t done = 0, failed = 0;
  for (const auto& b : w.buckets) {
    done += b.completed;
    failed += b.failed;
  }
  h.put("</svg><figcaption>{}: {} completed, {} failed; wait p50 {}, p95 "
        "{}; run p50 {}, p95 {}{}</figcaption></figure>",
        label, done, failed, millis_text(w.wait.p50), millis_text(w.wait.p95),
        millis_text(w.run.p50), millis_text(w.run.p95),
        w.bounded ? " (from the latest events only)" : "");
  return h;
}

// What the page reads from the event log, beside the queues' stats.
struct Recent {
  storage::History history;
  std::vector<storage::ErrorGroup> groups;
  bool groups_bounded = false;
  std::vector<storage::WorkerInfo> workers;
};

Recent read_recent(storage::TaskStore& store, core::Time now) {
  Recent r;
  r.history = store.history(std::nullopt, now);
  r.groups = store.error_groups(now - core::Millis{3600 * 1000}, 20,
                                &r.groups_bounded);
  // Workers seen in the last hour, within the events the charts read (so
  // the page reads an hour's events once, bounded); one holding a lease
  // is there whatever its last event.
  r.workers = store.workers(r.history.hour.counted_from, now);
  return r;
}

} // namespace

Response overview_page(View& view) {
  // The event log's reads go on a second store of the pool while stats
  // reads on this one, when the pool has one free: the page costs the
  // longer of the two, not their sum.
  std::optional<StorePool::Lease> second = !view.json && view.stores != nullptr
                                               ? view.stores->try_take()
                                               : std::nullopt;
  std::future<Recent> recent;
  if (second) {
    recent = std::async(std::launch::async, [&second, now = view.now] {
      try {
        return read_recent(**second, now);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::unavailable) {
          second->discard(); // its connection broke: not given back
        }
        throw;
      }
    });
  }
  const auto stats = view.store.stats(std::nullopt, view.now);
  if (view.json) {
    // stats -o json: one object a queue (here in an array).
    std::string out = "[";
    for (const auto& s : stats) {
      out += out.size() == 1 ? "" : ",";
      core::Json j;
      j["queue"] = s.queue;
      j["runnable"] = s.runnable;
      j["sleeping"] = s.sleeping;
      j["paused"] = s.paused;
      j["completed"] = s.completed;
      j["failed"] = s.failed;
      j["killed"] = s.killed;
      j["running"] = s.running;
      j["ready"] = s.ready;
      j["delayed"] = s.delayed;
      j["oldest_ready_seconds"] =
          s.oldest_ready_age ? core::Json(
              static_cast<double>(s.oldest_ready_age->count()) / 1000.0)
                             : core::Json(nullptr);
      j["completed_last_minute"] = s.completed_last_minute;
      j["completed_last_hour"] = s.completed_last_hour;
      out += core::dump_json(j);
    }
    out += "]";
    return json_answer(std::move(out));
  }
  Html b;
  b.put("<h1>Overview</h1><div class=\"scroll\"><table class=\"queues\">"
        "<thead><tr><th>queue</th><th>ready</th><th>running</th>"
        "<th>delayed</th><th>sleeping</th><th>paused</th><th>completed</th>"
        "<th>failed</th><th>killed</th><th>oldest ready</th>"
        "<th>done/min</th></tr></thead><tbody>");
  const auto cell = [&](const std::string& q, std::string_view state,
                        int64_t n) {
    Html c;
    if (n == 0) {
      c.put("<td class=\"zero\">0</td>");
    } else {
      c.put("<td><a href=\"{}\">{}</a></td>",
            view.link("/tasks?queue=" + url_encode(q)
                      + "&state=" + std::string(state)),
            n);
    }
    return c;
  };
  for (const auto& s : stats) {
    b.put("<tr><th scope=\"row\"><a href=\"{}\">{}</a></th>{}{}{}{}{}{}{}{}"
          "<td>{}</td><td>{}</td></tr>",
          view.link("/tasks?queue=" + url_encode(s.queue)), s.queue,
          cell(s.queue, "ready", s.ready), cell(s.queue, "running", s.running),
          cell(s.queue, "runnable", s.delayed),
          cell(s.queue, "sleeping", s.sleeping),
          cell(s.queue, "paused", s.paused),
          cell(s.queue, "completed", s.completed),
          cell(s.queue, "failed", s.failed), cell(s.queue, "killed", s.killed),
          millis_text(s.oldest_ready_age), s.completed_last_minute);
  }
  b.put("</tbody></table></div>");
  if (stats.empty()) {
    b.put("<p class=\"empty\">No tasks yet: <code>taskq add QUEUE -- "
          "CMD</code> adds one.</p>");
  }
  const Recent r =
      recent.valid() ? recent.get() : read_recent(view.store, view.now);
  const auto& history = r.history;
  b.put("<section><h2>Throughput</h2>{}{}</section>",
        chart(history.hour, "Last hour"), chart(history.day, "Last day"));
  const bool bounded = r.groups_bounded;
  const auto& groups = r.groups;
  b.put("<section><h2>Errors in the last hour</h2>");
  if (groups.empty()) {
    b.put("<p class=\"empty\">None.</p>");
  } else {
    b.put("<div class=\"scroll\"><table class=\"errors\"><thead><tr>"
          "<th>error</th><th>count</th><th>queues</th><th>latest</th>"
          "<th>tasks</th></tr></thead><tbody>");
    for (const auto& g : groups) {
      std::string queues;
      for (const auto& q : g.queues) {
        queues += (queues.empty() ? "" : ", ") + q;
      }
      Html ids;
      for (const int64_t id : g.sample_ids) {
        ids.put("<a href=\"{}\">{}</a> ",
                view.link("/tasks/" + std::to_string(id)), id);
      }
      b.put("<tr><td class=\"error\">{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td></tr>",
            g.message, g.count, queues, time_html(g.latest, view.now), ids);
    }
    b.put("</tbody></table></div>");
    if (bounded) {
      b.put("<p class=\"note\">Counted from the latest {} errors only.</p>",
            storage::k_error_rows);
    }
  }
  b.put("</section>");
  const auto& workers = r.workers;
  b.put("<section><h2>Workers</h2>");
  if (history.hour.bounded) {
    b.put("<p class=\"note\">Seen since {} (the latest events only).</p>",
          time_html(history.hour.counted_from, view.now));
  }
  if (workers.empty()) {
    b.put("<p class=\"empty\">No worker seen in the last hour.</p>");
  } else {
    b.put("<div class=\"scroll\"><table class=\"workers\"><thead><tr>"
          "<th>worker</th><th>leases</th><th>last seen</th>"
          "<th>last heartbeat</th></tr></thead><tbody>");
    for (const auto& w : workers) {
      Html leases;
      // Its first ten leases; the running page lists them all.
      constexpr size_t shown = 10;
      for (size_t i = 0; i < w.running.size() && i < shown; ++i) {
        const auto& t = w.running[i];
        leases.put("<a href=\"{}\">{}</a> ({}, until {}) ",
                   view.link("/tasks/" + std::to_string(t.id)), t.id, t.queue,
                   time_html(t.expires_at, view.now));
      }
      if (w.running.size() > shown) {
        leases.put("<a href=\"{}\">and {} more</a>",
                   view.link("/tasks?state=running"), w.running.size() - shown);
      }
      b.put("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", w.name,
            leases, time_html(w.last_seen, view.now),
            w.last_heartbeat ? time_html(*w.last_heartbeat, view.now)
                             : Html().put("-"));
    }
    b.put("</tbody></table></div>");
  }
  b.put("</section>");
  return page(view, "Overview", "overview", b);
}

} // namespace taskq::web
