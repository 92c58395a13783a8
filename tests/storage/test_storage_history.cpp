// Nothing grows with finished history (issue 15): the per-queue counts
// the triggers of migration 8 keep agree with the tasks whatever the mix
// of writes, bulk operator messages change what the per-task path did,
// and `list --state ready|runnable` reads no finished task.
#include "core/error.hpp"
#include "storage/store_detail.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>
#include <sqlite3.h>

#include <chrono>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

const char* const k_states[] = {"runnable",  "sleeping", "paused",
                                "completed", "failed",   "killed"};

// Each queue's stats, by queue.
std::map<std::string, storage::QueueStats> stats_by_queue(TaskStore& store,
                                                          Time now) {
  std::map<std::string, storage::QueueStats> out;
  for (auto& s : store.stats(std::nullopt, now)) {
    out[s.queue] = s;
  }
  return out;
}

int64_t count_of(const storage::QueueStats& s, const std::string& state) {
  return state == "runnable"    ? s.runnable
         : state == "sleeping"  ? s.sleeping
         : state == "paused"    ? s.paused
         : state == "completed" ? s.completed
         : state == "failed"    ? s.failed
                                : s.killed;
}

// stats' counts, and its time-dependent ones, against the tasks listed
// (each state, running, ready) and db check's recount.
void check_counts(TaskStore& store, const std::vector<std::string>& queues,
                  Time now) {
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

} // namespace

TEST_CASE("counts: a random mix of writes keeps every queue's counts exact") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  std::mt19937 rng(15);
  const std::vector<std::string> queues = {"a", "b", "c"};
  const auto pick = [&rng](size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  Time now = t0;
  std::vector<int64_t> ids;
  for (int step = 0; step < 400; ++step) {
    now += 1s;
    const std::string& q = queues[pick(queues.size())];
    const size_t op = pick(12);
    try {
      if (op <= 2 || ids.empty()) {
        storage::NewTask t = new_task(q);
        if (pick(4) == 0) {
          t.run_at = now + 1h; // delayed
        }
        if (pick(5) == 0 && !ids.empty()) {
          t.after = {ids[pick(ids.size())]};
        }
        if (pick(4) == 0) {
          t.labels = {{"k", std::to_string(pick(3))}};
        }
        ids.push_back(store.add(t, now, k_operator));
      } else if (op == 3) {
        std::vector<std::string> lines = {"1", "2", "3"};
        size_t at = 0;
        store.add_many(
            new_task(q),
            [&](std::string& line) {
              if (at == lines.size()) {
                return false;
              }
              line = lines[at++];
              return true;
            },
            [](int64_t) {}, now, k_operator);
      } else if (op == 4) {
        if (auto t = lease_one(store, q, now, pick(2) == 0 ? 5min : 2s)) {
          if (pick(2) == 0) {
            store.complete(t->id, *token_of(*t), std::nullopt, now);
          } else if (pick(2) == 0) {
            store.fail(t->id, *token_of(*t),
                       fail_request("boom", pick(2) == 0
                                                ? storage::FailMode::policy
                                                : storage::FailMode::no_retry),
                       now);
          }
        }
      } else if (op == 5) {
        const Message msgs[] = {Message::pause, Message::run, Message::kill,
                                Message::sleep, Message::release};
        const Message msg = msgs[pick(5)];
        store.send(by_ids({ids[pick(ids.size())]}), msg,
                   msg == Message::sleep ? std::optional(now + 10min)
                                         : std::nullopt,
                   k_operator, now);
      } else if (op == 6) {
        const Message msgs[] = {Message::pause,   Message::run,
                                Message::kill,    Message::sleep,
                                Message::release, Message::checkpoint};
        const Message msg = msgs[pick(6)];
        storage::Selector sel = by_queue(q);
        if (pick(2) == 0) {
          sel.states = {pick(2) == 0 ? "ready" : "paused"};
        }
        if (pick(3) == 0) {
          sel.match = {*core::parse_label_pattern("k=1")};
        }
        store.send_bulk(sel, msg,
                        msg == Message::sleep ? std::optional(now + 10min)
                                              : std::nullopt,
                        k_operator, now);
      } else if (op == 7) {
        store.redrive(q, queues[pick(queues.size())], k_operator, now);
      } else if (op == 8) {
        storage::PurgeRequest req;
        req.queue = q;
        req.force = pick(3) == 0;
        store.purge(req, now);
      } else if (op == 9) {
        store.retry_many(by_state("killed"), storage::LiveRetry::again,
                         k_operator, now);
      } else if (op == 10) {
        store.requeue(q, k_operator, now);
      } else {
        now += 30min; // leases run out, delayed tasks fall due
      }
    } catch (const taskq::Error&) {
      // A refused message or an id purged meanwhile: nothing changed.
    }
    if (step % 50 == 49) {
      check_counts(store, queues, now);
    }
  }
  check_counts(store, queues, now);
}

TEST_CASE("bulk send: the same end as one message per task") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  // A leased task, a lapsed lease, a sleeper, a paused one, a finished one,
  // a labelled one and a dependent of one killed.
  const int64_t leased = add_task(store, "q");
  const auto t1 = lease_one(store, "q", t0, 5min);
  REQUIRE(t1);
  const int64_t lapsed = add_task(store, "q");
  const auto t2 = lease_one(store, "q", t0, 2s);
  REQUIRE(t2);
  REQUIRE(t2->id == lapsed);
  const int64_t sleeper = add_task(store, "q");
  send_one(store, sleeper, Message::sleep, t0, t0 + 1h);
  const int64_t paused = add_task(store, "q");
  send_one(store, paused, Message::pause, t0);
  const int64_t done = add_task(store, "q");
  {
    const auto t = lease_one(store, "q", t0);
    REQUIRE(t);
    REQUIRE(t->id == done);
    store.complete(done, *token_of(*t), std::nullopt, t0);
  }
  storage::NewTask labelled = new_task("q");
  labelled.labels = {{"team", "x"}};
  const int64_t with_label = store.add(labelled, t0, k_operator);
  storage::NewTask waits = new_task("other");
  waits.after = {with_label};
  const int64_t dependent = store.add(waits, t0, k_operator);

  const Time now = t0 + 10s;
  std::vector<int64_t> ids;
  CHECK(store.send_bulk(by_queue("q"), Message::kill, std::nullopt, k_operator,
                        now, &ids)
        == 5);
  CHECK(ids
        == std::vector<int64_t>{leased, lapsed, sleeper, paused, with_label});
  for (const int64_t id : ids) {
    const auto t = store.find(id);
    REQUIRE(t);
    CHECK(t->state == TaskState::killed);
    CHECK(!t->lease);
    CHECK(t->reason == "killed by " + k_operator);
  }
  CHECK(store.find(done)->state == TaskState::completed);
  // The live lease was revoked, the lapsed one counted as expired.
  CHECK(store.revoked_reason(leased, *token_of(*t1))
        == std::optional<std::string>("kill"));
  CHECK(!store.revoked_reason(lapsed, *token_of(*t2)));
  for (const auto& m : store.metrics(now)) {
    if (m.stats.queue == "q") {
      CHECK(m.leases_expired_total == 1);
    }
  }
  // Followers settled: the dependent paused, the label index emptied.
  CHECK(store.find(dependent)->state == TaskState::paused);
  // Each change logged once, from the state it left.
  const auto shown = store.show(sleeper);
  REQUIRE(!shown.events.empty());
  CHECK(shown.events.back().message == "kill");
  CHECK(shown.events.back().from == "sleeping");
  CHECK(shown.events.back().to == "killed");
  check_counts(store, {"q", "other"}, now);

  // Resume in bulk: a paused task's attempts restart, a sleeper is due.
  const int64_t p2 = add_task(store, "r");
  const int64_t s2 = add_task(store, "r");
  send_one(store, p2, Message::pause, now);
  send_one(store, s2, Message::sleep, now, now + 1h);
  CHECK(store.send_bulk(by_queue("r"), Message::run, std::nullopt, k_operator,
                        now)
        == 2);
  CHECK(store.find(p2)->state == TaskState::runnable);
  CHECK(store.find(s2)->state == TaskState::runnable);
  CHECK(store.find(s2)->run_at == now);
  check_counts(store, {"q", "other", "r"}, now);
}

TEST_CASE("list --state ready|runnable reads partial indexes, no scan of "
          "tasks"
          * sqlite_only()) {
  TempDb db;
  {
    TaskStore store(db.path(), OpenMode::write);
    add_task(store, "q");
  }
  sqlite3* raw = nullptr;
  REQUIRE(
      sqlite3_open_v2(db.path().c_str(), &raw, SQLITE_OPEN_READONLY, nullptr)
      == SQLITE_OK);
  for (const bool queue : {false, true}) {
    for (const char* state : {"ready", "runnable", "running"}) {
      storage::Selector sel;
      if (queue) {
        sel.queue = "q";
      }
      for (const auto& part : storage::detail::select_sqls(sel, state, true)) {
        sqlite3_stmt* st = nullptr;
        REQUIRE(sqlite3_prepare_v2(raw,
                                   ("EXPLAIN QUERY PLAN " + part.sql).c_str(),
                                   -1, &st, nullptr)
                == SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW) {
          const std::string detail =
              reinterpret_cast<const char*>(sqlite3_column_text(st, 3));
          CHECK_MESSAGE(detail != "SCAN tasks", state << ": " << part.sql);
          if (detail.rfind("SCAN tasks", 0) == 0
              || detail.rfind("SEARCH tasks", 0) == 0) {
            CHECK_MESSAGE(detail.find("INDEX tasks_") != std::string::npos,
                          state << ": " << detail);
          }
        }
        sqlite3_finalize(st);
      }
    }
  }
  sqlite3_close(raw);
}
