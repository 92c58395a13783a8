// The event log as a stream: events [--follow] [--queue Q] [--since TIME].
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "worker/reconnect.hpp"

#include <cstdio>
#include <memory>

namespace taskq::cli {
namespace {

struct EventsOptions {
  OptText queue, since;
  bool follow = false;
  std::string reconnect_for = "5m";
};

// Rows fetched per read; a follower reads again at once after a full one.
constexpr int64_t k_batch = 1000;
// How long a follower held back by a gap waits for the commit that fills
// it before it settles the gap.
constexpr core::Millis k_gap_wait{100};

void print_event(const storage::StreamEvent& e, Format format) {
  const core::Event& ev = e.event;
  if (e.flow != 0) {
    if (format == Format::json) {
      print_json(Json{{"time", core::format_time(ev.time)},
                      {"flow", e.flow},
                      {"name", ev.detail},
                      {"message", "flow"},
                      {"to", ev.to},
                      {"actor", ev.actor}});
    } else {
      std::printf(
          "%s  flow %lld  %s  -> %s\n", core::format_time(ev.time).c_str(),
          static_cast<long long>(e.flow), ev.detail.c_str(), ev.to.c_str());
    }
    return;
  }
  if (format == Format::json) {
    Json j;
    j["id"] = ev.id == 0 ? Json(nullptr) : Json(ev.id);
    j["time"] = core::format_time(ev.time);
    j["task"] = ev.task_id;
    j["queue"] = e.queue;
    j["message"] = ev.message;
    j["from"] = ev.from.empty() ? Json(nullptr) : Json(ev.from);
    j["to"] = ev.to.empty() ? Json(nullptr) : Json(ev.to);
    j["actor"] = ev.actor;
    j["detail"] = ev.detail.empty() ? Json(nullptr) : Json(ev.detail);
    print_json(j);
    return;
  }
  std::printf("%s  %lld  %s  %s  %s -> %s  %s%s%s\n",
              core::format_time(ev.time).c_str(),
              static_cast<long long>(ev.task_id), e.queue.c_str(),
              ev.message.c_str(), ev.from.empty() ? "-" : ev.from.c_str(),
              ev.to.empty() ? "-" : ev.to.c_str(), ev.actor.c_str(),
              ev.detail.empty() ? "" : "  ", ev.detail.c_str());
}

void run_events(const EventsOptions& o, Context& ctx) {
  if (o.queue) {
    check_queue_name(*o.queue);
  }
  const auto since = parse_time_arg(o.since, "--since");
  const Format format =
      ctx.format(Format::table, {Format::table, Format::json});
  // A follower waits on the file, so it needs one: it creates the
  // database when missing, as a write would.
  auto& store =
      ctx.store(o.follow ? storage::OpenMode::update : storage::OpenMode::read);
  if (o.queue && format == Format::table) {
    note_unknown_queues(store, {*o.queue}); // its first task may be to come
  }
  // Following without --since starts at the end, as `tail -f` would after
  // a long log: only what happens from now on.
  storage::EventCursor cursor;
  std::optional<storage::ChangeFeed> feed;
  if (o.follow) {
    feed.emplace(store.changes()); // before the first read: nothing is missed
    if (!since) {
      cursor = store.events_end();
    }
  }
  // Following, a read whose connection is lost is made again once the
  // server is back (worker/reconnect.hpp): the cursor goes on from the
  // last event printed, so none is repeated or skipped.
  worker::Reconnect rc("events",
                       o.follow ? worker::parse_reconnect_for(o.reconnect_for)
                                : std::optional(core::Millis{0}));
  while (true) {
    const auto batch = worker::retrying(
        rc, [&] { return store.events(o.queue, since, cursor, k_batch); });
    for (const auto& e : batch) {
      print_event(e, format);
    }
    std::fflush(stdout);
    if (static_cast<int64_t>(batch.size()) == k_batch || cursor.more) {
      continue;
    }
    if (!feed) {
      return;
    }
    // An event held back behind one still in flight is printed after the
    // commit that fills the gap, which wakes the feed; a gap that no
    // commit fills (a rollback) is settled by the read after k_gap_wait.
    feed->wait(cursor.held() ? std::optional(k_gap_wait) : std::nullopt);
    feed->drain();
  }
}

} // namespace

void register_events(CLI::App& app, Context& ctx) {
  auto o = std::make_shared<EventsOptions>();
  CLI::App* events = add_command(
      app, "events",
      "Print the event log (every transition, oldest first); --follow waits "
      "for new events",
      "taskq events --follow --queue thumbs -o json");
  events->add_option("--queue", o->queue, "only tasks of QUEUE")
      ->type_name("QUEUE");
  events->add_option("--since", o->since, "only events at or after TIME")
      ->type_name("TIME");
  events->add_flag("-f,--follow", o->follow,
                   "keep printing new events as they happen (from now on, "
                   "or from --since)");
  events
      ->add_option("--reconnect-for", o->reconnect_for,
                   "with --follow: when the database server goes away, "
                   "keep connecting again for DUR (default 5m; 0: exit 5 "
                   "at once; forever)")
      ->type_name("DUR");
  events->callback([o, &ctx] { run_events(*o, ctx); });
}

} // namespace taskq::cli
