// Counting (storage/features/check_store.cpp): stats per queue and state, the
// per-queue counts kept exact whatever the mix of writes, and `db check`:
// a healthy database, a damaged schema, and each broken rule of the tasks
// and flows, counted and named.
#include "core/error.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "flow_scene.hpp"
#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

TEST_CASE("stats counts tasks per queue and state") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const Time now = t0 + 1h;

  // running: leased until after `now`
  add_task(store, "q", t0);
  REQUIRE(lease_one(store, "q", t0, 2h));
  // completed 30 s before now
  add_task(store, "q", t0);
  const auto to_complete = lease_one(store, "q", t0, 2h);
  REQUIRE(to_complete);
  store.complete(to_complete->id, *token_of(*to_complete), std::nullopt,
                 now - 30s);
  // failed
  add_task(store, "q", t0);
  const auto to_fail = lease_one(store, "q", t0);
  REQUIRE(to_fail);
  store.fail(to_fail->id, *token_of(*to_fail),
             fail_request("no", storage::FailMode::no_retry), t0);
  // killed, paused, sleeping until after now
  send_one(store, add_task(store, "q", t0), Message::kill, t0);
  send_one(store, add_task(store, "q", t0), Message::pause, t0);
  send_one(store, add_task(store, "q", t0), Message::sleep, t0, now + 1h);
  // sleeping, due by now: counts as ready
  send_one(store, add_task(store, "q", t0), Message::sleep, t0, now - 5min);
  // ready: due since t0 (the oldest) and since now - 10 min
  add_task(store, "q", t0);
  storage::NewTask recent = new_task("q");
  recent.run_at = now - 10min;
  store.add(recent, t0, k_operator);
  // delayed: runnable, due after now
  storage::NewTask later = new_task("q");
  later.run_at = now + 1h;
  store.add(later, t0, k_operator);
  // another queue
  add_task(store, "other", t0);

  const auto all = store.stats(std::nullopt, now);
  std::map<std::string, storage::QueueStats> by_name;
  for (const auto& s : all) {
    by_name[s.queue] = s;
  }
  REQUIRE(by_name.count("q") == 1);
  REQUIRE(by_name.count("other") == 1);
  const auto& q = by_name["q"];
  CHECK(q.runnable == 4); // running, two ready, delayed
  CHECK(q.sleeping == 2);
  CHECK(q.paused == 1);
  CHECK(q.completed == 1);
  CHECK(q.failed == 1);
  CHECK(q.killed == 1);
  CHECK(q.running == 1);
  CHECK(q.ready == 3); // two runnable, one due sleeping
  CHECK(q.delayed == 1);
  REQUIRE(q.oldest_ready_age);
  CHECK(*q.oldest_ready_age == Millis(1h));
  CHECK(q.completed_last_minute == 1);
  CHECK(q.completed_last_hour == 1);
  CHECK(by_name["other"].runnable == 1);
  CHECK(by_name["other"].ready == 1);

  const auto only_q = store.stats(std::string("q"), now);
  REQUIRE(only_q.size() == 1);
  CHECK(only_q[0].queue == "q");
  CHECK(only_q[0].runnable == 4);

  // Two minutes later the completion is no longer in the last minute.
  const auto later_stats = store.stats(std::string("q"), now + 2min);
  REQUIRE(later_stats.size() == 1);
  CHECK(later_stats[0].completed_last_minute == 0);
  CHECK(later_stats[0].completed_last_hour == 1);
}

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

TEST_CASE("check reports a healthy database as ok") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (int i = 0; i < 5; ++i) {
    add_task(store, "q");
  }
  const auto report = store.check();
  CHECK(report.ok);
  CHECK(report.problems.empty());
  CHECK(report.schema_version == storage::latest_schema_version());
  CHECK(report.tasks == 5);
}

TEST_CASE("check reports a dropped table, an extra index and a changed "
          "column set") {
  TempDb db;
  {
    TaskStore setup(db.path(), OpenMode::write);
    add_task(setup, "q");
    CHECK(setup.check().ok);
  }
  REQUIRE(db.exec("DROP TABLE events; CREATE INDEX mine ON tasks (queue); "
                  "ALTER TABLE queues ADD COLUMN extra TEXT;"));
  const auto report = TaskStore(db.path(), OpenMode::read).check();
  CHECK_FALSE(report.ok);
  std::string all;
  for (const auto& p : report.problems) {
    all += p + "\n";
  }
  CHECK(contains(all, "table events is missing"));
  CHECK(contains(all, "index events_task is missing"));
  CHECK(contains(all, "index mine is not part of taskq's schema"));
  CHECK(contains(all, "table queues differs"));
}

TEST_CASE("check reports a waiting task whose dependency count is off, and "
          "labels missing from the label index") {
  TempDb db;
  {
    TaskStore store(db.path(), OpenMode::write);
    const int64_t dep = add_task(store, "q");
    storage::NewTask waiter = new_task("q");
    waiter.after = {dep};
    waiter.labels = {{"kind", "x"}};
    store.add(waiter, t0, k_operator);
    CHECK(store.check().ok);
  }
  REQUIRE(db.exec("UPDATE tasks SET blockers = 3 WHERE id = 2; "
                  "DELETE FROM task_labels;"));
  TaskStore store(db.path(), OpenMode::read);
  const auto report = store.check();
  CHECK_FALSE(report.ok);
  REQUIRE(report.problems.size() == 2);
  CHECK(contains(report.problems[0], "unfinished dependencies"));
  CHECK(contains(report.problems[1], "label index"));
}

TEST_CASE("check counts each broken rule as before") {
  TempDb db;
  {
    TaskStore store(db.path(), OpenMode::write);
    for (int i = 0; i < 4; ++i) {
      add_task(store, "q");
    }
  }
  REQUIRE(db.exec("UPDATE tasks SET state = 'fault' WHERE id <= 2; "
                  "UPDATE tasks SET state = 'paused', lease_token = 't', "
                  "lease_worker = 'w', lease_expires = 1 WHERE id = 3;"));
  TaskStore store(db.path(), OpenMode::read);
  const auto report = store.check();
  CHECK_FALSE(report.ok);
  CHECK(report.tasks == 4);
  REQUIRE(report.problems.size() == 2);
  CHECK(report.problems[0] == "2 task(s) left in the transient fault state");
  CHECK(report.problems[1] == "1 leased task(s) that are not runnable");
}

TEST_CASE("check passes clean flows and reports each broken flow invariant") {
  struct Case {
    const char* sql;
    std::vector<std::string> problems;
  };
  const std::string missing_task =
      "1 flow atom(s) waiting for a task that is missing, finished or works "
      "for another atom";
  const std::string unanswered =
      "1 unfinished task(s) of a flow's atom that no atom waits for";
  const std::string off_document = "1 flow(s) without a document that "
                                   "compiles or whose atoms are not its nodes";
  const std::vector<Case> cases = {
      {"UPDATE flow_atoms SET task_id = 999 WHERE task_id IS NOT NULL",
       {unanswered, missing_task}},
      {"UPDATE tasks SET state = 'completed' WHERE id = 3", {missing_task}},
      {"UPDATE tasks SET flow = "
       "'{\"id\":1,\"atom\":\"b\",\"action\":\"execute\",\"args\":{}}' "
       "WHERE id = 3",
       {missing_task}},
      {"UPDATE tasks SET flow = "
       "'{\"id\":2,\"atom\":\"a\",\"action\":\"execute\",\"args\":{}}' "
       "WHERE id = 3",
       {missing_task}},
      {"UPDATE flow_atoms SET task_id = NULL", {unanswered}},
      {"UPDATE flows SET state = 'SUCCESS' WHERE id = 1",
       {"1 atom(s) of finished or suspended flows still waiting for a task"}},
      {"UPDATE flows SET state = 'SUSPENDED' WHERE id = 1",
       {"1 atom(s) of finished or suspended flows still waiting for a task"}},
      {"INSERT INTO flow_atoms (flow_id, node, name, kind, state, intention) "
       "VALUES (99, 0, 'x', 'task', 'PENDING', 'EXECUTE')",
       {"1 flow atom row(s) of no flow"}},
      {"INSERT INTO flow_events (flow_id, time, name, kind, state) "
       "VALUES (99, 1, 'x', 'flow', 'PENDING')",
       {"1 flow event row(s) of no flow"}},
      {"UPDATE flows SET state = 'Done' WHERE id = 2",
       {"1 flow(s) in an unknown state"}},
      {"UPDATE flow_atoms SET state = 'DONE' WHERE flow_id = 2",
       {"1 flow atom(s) with an unknown kind, state or intention"}},
      {"UPDATE flow_atoms SET state = 'RETRYING' WHERE flow_id = 2",
       {"1 flow atom(s) with an unknown kind, state or intention"}},
      {"UPDATE flow_atoms SET intention = 'LATER' WHERE flow_id = 2",
       {"1 flow atom(s) with an unknown kind, state or intention"}},
      {"UPDATE flow_atoms SET kind = 'job' WHERE flow_id = 2",
       {"1 flow atom(s) with an unknown kind, state or intention",
        off_document}},
      {"UPDATE flow_events SET kind = 'atom' WHERE flow_id = 2 AND "
       "name = 'only' AND state = 'RUNNING'",
       {"1 flow event(s) with an unknown kind or state"}},
      {"UPDATE flow_events SET state = 'REVERT_FAILURE' WHERE flow_id = 2 "
       "AND kind = 'flow' AND state = 'SUCCESS'",
       {"1 flow event(s) with an unknown kind or state"}},
      {"UPDATE flow_documents SET document = '{\"name\": \"one\"}' "
       "WHERE flow_id = 2",
       {off_document}},
      {"DELETE FROM flow_documents WHERE flow_id = 2", {off_document}},
      {"INSERT INTO flow_documents (flow_id, document) VALUES (99, '{}')",
       {"1 flow document row(s) of no flow"}},
      {"UPDATE flow_atoms SET name = 'other' WHERE flow_id = 2",
       {off_document}},
      {"UPDATE flow_atoms SET kind = 'retry' WHERE flow_id = 2",
       {off_document}},
      {"DELETE FROM flow_atoms WHERE flow_id = 2", {off_document}},
      {"INSERT INTO flow_atoms (flow_id, node, name, kind, state, intention) "
       "VALUES (2, 1, 'extra', 'task', 'PENDING', 'EXECUTE')",
       {off_document}},
  };
  for (const Case& c : cases) {
    const std::string sql = c.sql;
    CAPTURE(sql);
    TempDb db;
    {
      TaskStore store(db.path(), OpenMode::write);
      scene(store);
      // Task 3 is atom a's again, after the retry.
      REQUIRE(contains(*store.find(3)->flow, "\"atom\":\"a\""));
      REQUIRE(store.check().ok);
    }
    REQUIRE(db.exec(c.sql));
    TaskStore store(db.path(), OpenMode::write);
    const auto report = store.check();
    std::string problems;
    for (const auto& p : report.problems) {
      problems += p + "; ";
    }
    CAPTURE(problems);
    CHECK_FALSE(report.ok);
    CHECK(report.problems == c.problems);
  }
}
