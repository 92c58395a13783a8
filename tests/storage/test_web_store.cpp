// What the web view reads and the checks its actions carry
// (storage/features/web_store.cpp): keyset pages, counts, the history from the
// event log, errors grouped, and a stale view refused.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <set>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

// Every page of `sel` (limit rows each), following next_cursor in the
// selector's direction; the ids in the order the pages gave them.
std::vector<int64_t> all_pages(TaskStore& store, storage::Selector sel,
                               Time now, int* pages = nullptr) {
  std::vector<int64_t> out;
  for (int n = 1;; ++n) {
    const storage::TaskPage page = store.task_page(sel, now);
    for (const auto& t : page.tasks) {
      out.push_back(t.id);
    }
    if (pages != nullptr) {
      *pages = n;
    }
    if (!page.next_cursor) {
      return out;
    }
    REQUIRE(n < 1000);
    (sel.newest ? sel.before_id : sel.after_id) = *page.next_cursor;
  }
}

std::vector<int64_t> reversed(std::vector<int64_t> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

storage::NewTask labelled(const std::string& queue, const std::string& color) {
  storage::NewTask t = new_task(queue);
  t.labels["color"] = color;
  return t;
}

} // namespace

TEST_CASE("keyset pages give every selected task once, in either direction") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  std::vector<int64_t> a_ids;
  std::vector<int64_t> red;
  for (int i = 0; i < 23; ++i) {
    const std::string color = i % 3 == 0 ? "red" : "blue";
    const int64_t id = store.add(labelled(i % 4 == 3 ? "b" : "a", color),
                                 t0 + std::chrono::seconds(i), k_operator);
    if (i % 4 != 3) {
      a_ids.push_back(id);
      if (color == "red") {
        red.push_back(id);
      }
    }
  }
  storage::Selector sel = by_queue("a");
  sel.limit = 4;
  int pages = 0;
  CHECK(all_pages(store, sel, t0 + 1h, &pages) == a_ids);
  CHECK(pages == 5); // 18 tasks: 4 full pages and one of 2
  sel.newest = true;
  CHECK(all_pages(store, sel, t0 + 1h) == reversed(a_ids));

  // Labels, read after the SQL.
  sel.match = {*core::parse_label_pattern("color=red")};
  CHECK(all_pages(store, sel, t0 + 1h) == reversed(red));
  sel.newest = false;
  sel.limit = 2;
  CHECK(all_pages(store, sel, t0 + 1h) == red);

  // A page asked for with a cursor starts after it.
  storage::Selector after = by_queue("a");
  after.after_id = a_ids[10];
  after.limit = 3;
  const auto page = store.task_page(after, t0 + 1h);
  CHECK(ids_of(page.tasks)
        == std::vector<int64_t>{a_ids[11], a_ids[12], a_ids[13]});
  CHECK(page.next_cursor == a_ids[13]);
}

TEST_CASE("keyset pages of settled states over every queue, read queue by "
          "queue, give every task once in id order") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  std::vector<int64_t> killed;
  std::vector<int64_t> settled; // killed or paused
  for (int i = 0; i < 31; ++i) {
    // Three queues, interleaved, so that each page draws on several.
    const int64_t id =
        store.add(labelled("q" + std::to_string(i % 3), "red"), t0, k_operator);
    if (i % 5 == 4) {
      continue; // stays runnable: never listed
    }
    const bool kill = i % 2 == 0;
    send_one(store, id, kill ? Message::kill : Message::pause, t0 + 1s);
    settled.push_back(id);
    if (kill) {
      killed.push_back(id);
    }
  }
  storage::Selector sel = by_state("killed");
  for (const int64_t limit : {1, 2, 4, 50}) {
    CAPTURE(limit);
    sel.limit = limit;
    sel.newest = false;
    CHECK(all_pages(store, sel, t0 + 1h) == killed);
    sel.newest = true;
    CHECK(all_pages(store, sel, t0 + 1h) == reversed(killed));
  }
  sel.states = {"paused", "killed"};
  sel.limit = 3;
  CHECK(all_pages(store, sel, t0 + 1h) == reversed(settled));
  sel.newest = false;
  CHECK(all_pages(store, sel, t0 + 1h) == settled);
  CHECK(store.count(sel, t0 + 1h) == static_cast<int64_t>(settled.size()));
}

TEST_CASE("keyset pages over states read from several indexes (running and "
          "runnable) give each task once") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  std::vector<int64_t> ids;
  for (int i = 0; i < 12; ++i) {
    ids.push_back(add_task(store, "q"));
  }
  for (int i = 0; i < 5; ++i) {
    REQUIRE(lease_one(store, "q", t0));
  }
  send_one(store, ids[7], Message::pause, t0);
  storage::Selector sel = by_queue("q");
  sel.states = {"running", "runnable"};
  sel.limit = 2;
  std::vector<int64_t> want;
  for (const int64_t id : ids) {
    if (id != ids[7]) {
      want.push_back(id);
    }
  }
  CHECK(all_pages(store, sel, t0 + 1s) == want);
  sel.newest = true;
  CHECK(all_pages(store, sel, t0 + 1s) == reversed(want));
  CHECK(store.count(sel, t0 + 1s) == static_cast<int64_t>(want.size()));
  sel.states = {"running"};
  CHECK(all_pages(store, sel, t0 + 1s)
        == reversed(std::vector<int64_t>(ids.begin(), ids.begin() + 5)));
}

TEST_CASE("pages of runnable tasks of every queue, from the primary key's "
          "window or the indexes, give every runnable task once in order") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  std::vector<int64_t> runnable;
  for (int i = 0; i < 40; ++i) {
    const int64_t id =
        store.add(labelled("q" + std::to_string(i % 3), "red"), t0, k_operator);
    if (i % 4 == 1) {
      send_one(store, id, i % 8 == 1 ? Message::pause : Message::kill, t0);
    } else {
      runnable.push_back(id);
    }
  }
  for (int i = 0; i < 4; ++i) {
    REQUIRE(lease_one(store, "q" + std::to_string(i % 3), t0)); // running
  }
  storage::Selector sel = by_state("runnable");
  for (const int64_t limit : {1, 3, 7, 29, 30, 50}) {
    CAPTURE(limit);
    sel.limit = limit;
    sel.newest = true;
    CHECK(all_pages(store, sel, t0 + 1s) == reversed(runnable));
    sel.newest = false;
    CHECK(all_pages(store, sel, t0 + 1s) == runnable);
  }
  // A cursor in the middle: the page after it.
  storage::Selector after = by_state("runnable");
  after.after_id = runnable[10];
  after.limit = 3;
  CHECK(ids_of(store.task_page(after, t0 + 1s).tasks)
        == std::vector<int64_t>(runnable.begin() + 11, runnable.begin() + 14));
}

TEST_CASE("a page's rows cut the payload and keep the latest error") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const std::string big = "\"" + std::string(5000, 'x') + "\"";
  const int64_t id = add_task(store, "q", t0, big);
  const auto leased = lease_one(store, "q", t0 + 1s);
  REQUIRE(leased);
  store.fail(id, leased->lease->token, fail_request("disk full"), t0 + 2s);
  const auto page = store.task_page(by_queue("q"), t0 + 3s);
  REQUIRE(page.tasks.size() == 1);
  CHECK(page.tasks[0].payload.size()
        == static_cast<size_t>(storage::k_page_value_chars));
  REQUIRE(page.tasks[0].errors.size() == 1);
  CHECK(page.tasks[0].errors[0].message == "disk full");
  CHECK(page.tasks[0].lease_started == t0 + 1s);
  CHECK(store.find(id)->payload == big); // the whole, elsewhere
}

TEST_CASE("a created range is half-open: [from, to)") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q", t0);
  const int64_t mid = add_task(store, "q", t0 + 1h);
  const int64_t mid2 = add_task(store, "q", t0 + 90min);
  add_task(store, "q", t0 + 2h);
  storage::Selector sel = by_queue("q");
  sel.created_from = t0 + 1h;
  sel.created_to = t0 + 2h;
  CHECK(ids_of(store.task_page(sel, t0 + 3h).tasks)
        == std::vector<int64_t>{mid, mid2});
  CHECK(store.count(sel, t0 + 3h) == 2);
  sel.newest = true;
  sel.limit = 1;
  CHECK(all_pages(store, sel, t0 + 3h) == std::vector<int64_t>{mid2, mid});
}

TEST_CASE("a text search finds the text in the command or the payload, and "
          "says when its bound cut it") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask with_command = new_task("q");
  with_command.command = {"convert", "needle.png"};
  const int64_t by_command = store.add(with_command, t0, k_operator);
  const int64_t by_payload =
      add_task(store, "q", t0, R"({"file":"a-needle-b"})");
  add_task(store, "q", t0, R"({"file":"hay"})");
  add_task(store, "other", t0, R"({"file":"needle"})");
  storage::Selector sel = by_queue("q");
  sel.text = "needle";
  auto page = store.task_page(sel, t0);
  CHECK(ids_of(page.tasks) == std::vector<int64_t>{by_command, by_payload});
  CHECK_FALSE(page.text_bounded);
  sel.text = "NEEDLE"; // bytes, case and all
  CHECK(store.task_page(sel, t0).tasks.empty());

  // Among the 2 newest only: the one in the command is older.
  sel.text = "needle";
  add_task(store, "q", t0);
  page = store.task_page(sel, t0, 2);
  CHECK(page.text_bounded);
  CHECK(ids_of(page.tasks).empty()); // the 2 newest: hay and the new one
  page = store.task_page(sel, t0, 3);
  CHECK(page.text_bounded);
  CHECK(ids_of(page.tasks) == std::vector<int64_t>{by_payload});
  CHECK_FALSE(store.task_page(sel, t0, 4).text_bounded);
  CHECK(error_kind([&] { store.count(sel, t0); }) == ErrorKind::usage);
}

TEST_CASE("count is the number of tasks the pages list") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 9; ++i) {
    store.add(labelled(i % 2 == 0 ? "a" : "b", i % 3 == 0 ? "red" : "blue"), t0,
              k_operator);
  }
  const auto leased = lease_one(store, "a", t0);
  REQUIRE(leased);
  store.complete(leased->id, leased->lease->token, std::nullopt, t0 + 1s);
  REQUIRE(lease_one(store, "a", t0 + 1s));
  send_one(store, 9, Message::kill, t0 + 1s);
  send_one(store, 3, Message::pause, t0 + 1s); // red, of queue a
  std::vector<storage::Selector> sels;
  sels.push_back({});
  sels.push_back(by_queue("a"));
  sels.push_back(by_state("completed"));
  sels.push_back(by_state("running"));
  sels.push_back(by_state("ready"));
  sels.push_back(by_state("runnable"));
  {
    storage::Selector s = by_queue("a");
    s.states = {"ready", "killed", "running"};
    sels.push_back(s);
  }
  {
    storage::Selector s;
    s.match = {*core::parse_label_pattern("color=red")};
    sels.push_back(s);
    s.states = {"runnable"};
    sels.push_back(s);
    // Unfinished states only: candidates from task_labels (an exact key,
    // with a value or `*`); a key with `*` reads the states' tasks.
    s.states = {"ready", "paused", "running"};
    sels.push_back(s);
    s.match = {*core::parse_label_pattern("color=*")};
    sels.push_back(s);
    s.match = {*core::parse_label_pattern("*lor=blue")};
    sels.push_back(s);
    s.states = {"sleeping", "runnable"};
    s.match = {*core::parse_label_pattern("*=*"),
               *core::parse_label_pattern("color=blue")};
    sels.push_back(s);
  }
  for (const auto& s : sels) {
    storage::Selector all = s;
    all.limit = storage::k_page_rows_max;
    const auto listed = store.task_page(all, t0 + 2s).tasks.size();
    CHECK(store.count(s, t0 + 2s) == static_cast<int64_t>(listed));
    CHECK(store.list(s, t0 + 2s).size() == listed);
  }
  CHECK(store.count(by_ids({1, 2, 2}), t0) == 2);
  CHECK(error_kind([&] {
          store.count(by_ids({1, 99}), t0);
        })
        == ErrorKind::not_found);
}

TEST_CASE("the history counts completions, failures and errors per bucket, "
          "and the wait and run times' percentiles") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const Time now = t0 + 24h;
  // Tasks added 20 s apart, each leased 5 s after its add (wait 5 s) and
  // done 20 s later (run 20 s), in the last hour.
  const Time start = now - 50min;
  for (int i = 0; i < 4; ++i) {
    const Time added = start + std::chrono::seconds(20 * i);
    add_task(store, "q", added);
    const auto t = lease_one(store, "q", added + 5s);
    REQUIRE(t);
    store.complete(t->id, t->lease->token, std::nullopt, added + 25s);
  }
  // One that waited 60 s, ran 100 s and failed, 10 hours ago.
  const Time old = now - 10h;
  const int64_t failing = add_task(store, "q", old);
  const auto t = lease_one(store, "q", old + 60s);
  REQUIRE(t);
  store.fail(failing, t->lease->token,
             fail_request("boom", storage::FailMode::no_retry), old + 160s);
  // Another queue's task, done: not in q's history.
  add_task(store, "other", start);
  const auto o = lease_one(store, "other", start + 1s);
  REQUIRE(o);
  store.complete(o->id, o->lease->token, std::nullopt, start + 2s);

  const storage::History h = store.history(std::string("q"), now);
  REQUIRE(h.hour.buckets.size() == 60);
  REQUIRE(h.day.buckets.size() == 48);
  CHECK(h.hour.buckets[0].start == now - 1h);
  CHECK(h.hour.bucket == std::chrono::minutes(1));
  // Completions at start+25s, +45s, +65s, +85s: minutes 10 and 11 of the
  // hour (start is 10 minutes into it).
  CHECK(h.hour.buckets[10].completed == 2);
  CHECK(h.hour.buckets[11].completed == 2);
  int64_t completed = 0;
  for (const auto& b : h.hour.buckets) {
    completed += b.completed;
    CHECK(b.failed == 0);
  }
  CHECK(completed == 4);
  CHECK(h.day.buckets[46].completed == 4); // [now - 1h, now - 30min)
  // 10 h ago + 160 s: half-hour 28 of the day (14 h in).
  CHECK(h.day.buckets[28].failed == 1);
  CHECK(h.day.buckets[28].errors == 1);
  CHECK_FALSE(h.day.bounded);
  CHECK(h.day.counted_from == h.day.from);

  CHECK(h.hour.wait.samples == 4);
  CHECK(h.hour.wait.p50 == Millis(5000));
  CHECK(h.hour.run.p95 == Millis(20000));
  CHECK(h.day.wait.samples == 5);
  CHECK(h.day.wait.p50 == Millis(5000));
  CHECK(h.day.wait.p95 == Millis(60000));
  CHECK(h.day.run.samples == 5);
  CHECK(h.day.run.p95 == Millis(100000));

  const storage::History all = store.history(std::nullopt, now);
  CHECK(all.hour.buckets[10].completed == 3); // with the other queue's
  CHECK(all.hour.wait.samples == 5);
}

TEST_CASE("a due time later than the move before the lease starts the wait") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask later = new_task("q");
  later.run_at = t0 + 30s;
  store.add(later, t0, k_operator);
  REQUIRE_FALSE(lease_one(store, "q", t0 + 10s));
  REQUIRE(lease_one(store, "q", t0 + 32s));
  const auto h = store.history(std::nullopt, t0 + 1min);
  CHECK(h.hour.wait.samples == 1);
  CHECK(h.hour.wait.p50 == Millis(2000));
}

TEST_CASE("error_groups groups workers' errors by message, the biggest first") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const auto fail_one = [&](const std::string& queue, const std::string& error,
                            Time at) {
    const int64_t id = add_task(store, queue, at);
    const auto t = lease_one(store, queue, at);
    REQUIRE(t);
    REQUIRE(t->id == id);
    store.fail(id, t->lease->token,
               fail_request(error, storage::FailMode::no_retry), at + 1s);
    return id;
  };
  fail_one("a", "disk full", t0);
  const int64_t late = fail_one("b", "disk full", t0 + 10s);
  fail_one("a", "timeout", t0 + 20s);
  fail_one("a", "disk full", t0 + 30s);
  const int64_t early = fail_one("a", "ancient", t0 - 1h);
  (void)early;
  bool bounded = true;
  const auto groups = store.error_groups(t0, 10, &bounded);
  CHECK_FALSE(bounded);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].message == "disk full");
  CHECK(groups[0].count == 3);
  CHECK(groups[0].queues == std::vector<std::string>{"a", "b"});
  CHECK(groups[0].latest == t0 + 31s);
  REQUIRE(groups[0].sample_ids.size() == 3);
  CHECK(groups[0].sample_ids[1] == late);
  CHECK(groups[1].message == "timeout");
  CHECK(groups[1].count == 1);
  CHECK(store.error_groups(t0, 1).size() == 1);
  CHECK(store.error_groups(t0 - 2h, 10).size() == 3);
}

TEST_CASE("a bulk action carrying the count the operator saw is refused in "
          "its own transaction when another number matches, and changes "
          "nothing") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  std::vector<int64_t> ids;
  for (int i = 0; i < 6; ++i) {
    ids.push_back(add_task(store, "q"));
  }
  storage::Selector sel = by_queue("q");
  sel.states = {"runnable"};
  sel.expect_count = store.count(sel, t0 + 1s);
  REQUIRE(sel.expect_count == 6);
  send_one(store, ids[0], Message::pause, t0 + 1s); // someone else's, since
  const auto states = [&] {
    std::vector<TaskState> out;
    for (const int64_t id : ids) {
      out.push_back(store.find(id)->state);
    }
    return out;
  };
  const auto before = states();
  CHECK(error_kind([&] {
          store.send_bulk(sel, Message::kill, std::nullopt, k_operator,
                          t0 + 2s);
        })
        == ErrorKind::conflict);
  CHECK(states() == before);
  sel.expect_count = 5;
  CHECK(store.send_bulk(sel, Message::kill, std::nullopt, k_operator, t0 + 2s)
        == 5);
  // Retry: the tasks it selects, counted in its transaction.
  storage::Selector killed = by_queue("q");
  killed.states = {"killed"};
  killed.expect_count = 4;
  CHECK(error_kind([&] {
          store.retry_many(killed, storage::LiveRetry::refuse, k_operator,
                           t0 + 3s);
        })
        == ErrorKind::conflict);
  CHECK(store.count(by_state("runnable"), t0 + 3s) == 0);
  killed.expect_count = 5;
  CHECK(
      store.retry_many(killed, storage::LiveRetry::refuse, k_operator, t0 + 3s)
          .size()
      == 5);
  // Only with a filter's whole selection.
  storage::Selector named = by_ids({ids[0]});
  named.expect_count = 1;
  CHECK(error_kind([&] {
          store.send_bulk(named, Message::run, std::nullopt, k_operator,
                          t0 + 4s);
        })
        == ErrorKind::usage);
  storage::Selector cut = by_queue("q");
  cut.limit = 2;
  cut.expect_count = 2;
  CHECK(error_kind([&] {
          store.send_bulk(cut, Message::pause, std::nullopt, k_operator,
                          t0 + 4s);
        })
        == ErrorKind::usage);
}

TEST_CASE("an action carrying the revision the operator saw is refused when "
          "the task changed since, and changes nothing") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto seen = *store.find(id);
  send_one(store, id, Message::pause, t0 + 1s); // someone else's change
  const auto now_task = *store.find(id);

  storage::Selector sel = by_ids({id});
  sel.expect_rev = seen.rev;
  CHECK(error_message([&] {
          store.send(sel, Message::run, std::nullopt, k_operator, t0 + 2s);
        })
        == "task " + std::to_string(id) + " changed since you looked (revision "
               + std::to_string(seen.rev) + ", now "
               + std::to_string(now_task.rev) + ")");
  CHECK(error_kind([&] {
          store.send_bulk(sel, Message::kill, std::nullopt, k_operator,
                          t0 + 2s);
        })
        == ErrorKind::conflict);
  check_unchanged(now_task, *store.find(id));

  sel.expect_rev = now_task.rev; // the view is fresh
  const auto sent =
      store.send(sel, Message::run, std::nullopt, k_operator, t0 + 3s);
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].state == TaskState::runnable);

  // Retry.
  send_one(store, id, Message::kill, t0 + 4s);
  const auto killed = *store.find(id);
  sel.expect_rev = killed.rev - 1;
  CHECK(error_kind([&] {
          store.retry_many(sel, storage::LiveRetry::refuse, k_operator,
                           t0 + 5s);
        })
        == ErrorKind::conflict);
  CHECK(store.list(by_queue("q"), t0 + 5s).size() == 1);
  sel.expect_rev = killed.rev;
  CHECK(store.retry_many(sel, storage::LiveRetry::refuse, k_operator, t0 + 5s)
            .at(0)
            .retry
        > id);

  // Freeze.
  const int64_t running = add_task(store, "f");
  const auto leased = lease_one(store, "f", t0 + 6s);
  REQUIRE(leased);
  const auto before = *store.find(running);
  CHECK(error_kind([&] {
          store.freeze({running}, true, k_operator, t0 + 7s, before.rev + 1);
        })
        == ErrorKind::conflict);
  check_unchanged(before, *store.find(running));
  CHECK(store.freeze({running}, true, k_operator, t0 + 7s, before.rev).size()
        == 1);

  // Only with exactly one id.
  storage::Selector two = by_ids({id, running});
  two.expect_rev = 1;
  CHECK(error_kind([&] {
          store.send(two, Message::pause, std::nullopt, k_operator, t0);
        })
        == ErrorKind::usage);
  storage::Selector filters = by_queue("q");
  filters.expect_rev = 1;
  CHECK(error_kind([&] {
          store.send_bulk(filters, Message::pause, std::nullopt, k_operator,
                          t0);
        })
        == ErrorKind::usage);
  CHECK(error_kind([&] {
          store.freeze({id, running}, false, k_operator, t0, 1);
        })
        == ErrorKind::usage);
}

TEST_CASE("a page's fields are refused where they would be ignored") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  add_task(store, "q");
  storage::Selector sel = by_queue("q");
  sel.created_from = t0;
  CHECK(error_kind([&] {
          store.send_bulk(sel, Message::kill, std::nullopt, k_operator, t0);
        })
        == ErrorKind::usage);
  CHECK(error_kind([&] { store.list(sel, t0); }) == ErrorKind::usage);
  sel.created_from.reset();
  sel.text = "x";
  sel.states = {"killed"};
  CHECK(error_kind([&] {
          store.retry_many(sel, storage::LiveRetry::refuse, k_operator, t0);
        })
        == ErrorKind::usage);
  CHECK(store.list(by_queue("q"), t0).size() == 1);
}
