// TaskStore: operator messages (send), retry, and what show, list and stats
// report. Each test runs on a real SQLite file.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <map>
#include <tuple>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

TEST_CASE("an operator pause on a leased task revokes the lease") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  const std::string token = *token_of(*leased);

  const auto changed = send_one(store, id, Message::pause, t0 + 1s);
  CHECK(ids_of(changed) == std::vector<int64_t>{id});
  const auto paused = store.find(id);
  REQUIRE(paused);
  CHECK(paused->state == TaskState::paused);
  CHECK_FALSE(paused->leased(t0 + 1s));
  CHECK(store.revoked_reason(id, token) == std::string("pause"));

  // The worker learns it at its next write and can no longer complete.
  const std::string why = error_message(
      [&] { store.heartbeat(id, token, std::nullopt, std::nullopt, t0 + 2s); });
  CHECK(contains(why, "pause"));
  CHECK(error_kind([&] {
          store.heartbeat(id, token, std::nullopt, std::nullopt, t0 + 2s);
        })
        == ErrorKind::conflict);
  CHECK(error_kind([&] { store.complete(id, token, std::nullopt, t0 + 2s); })
        == ErrorKind::conflict);
  const auto after = store.find(id);
  REQUIRE(after);
  check_unchanged(*paused, *after);
}

TEST_CASE("an operator kill on a leased task revokes the lease") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  const std::string token = *token_of(*leased);

  send_one(store, id, Message::kill, t0 + 1s);
  const auto killed = store.find(id);
  REQUIRE(killed);
  CHECK(killed->state == TaskState::killed);
  CHECK(store.revoked_reason(id, token) == std::string("kill"));
  CHECK(
      error_kind([&] { store.fail(id, token, fail_request("boom"), t0 + 2s); })
      == ErrorKind::conflict);
  CHECK(error_kind([&] { store.complete(id, token, std::nullopt, t0 + 2s); })
        == ErrorKind::conflict);
  const auto after = store.find(id);
  REQUIRE(after);
  check_unchanged(*killed, *after);
}

TEST_CASE("an operator sleep or release on a leased task revokes the lease "
          "and names the message") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t sleeper = add_task(store, "q");
  const int64_t releaser = add_task(store, "q");
  auto req = lease_request("q");
  req.count = 2;
  const auto leased = store.lease(req, t0);
  REQUIRE(leased.size() == 2);
  REQUIRE(leased[0].id == sleeper);
  const std::string sleeper_token = *token_of(leased[0]);
  const std::string releaser_token = *token_of(leased[1]);

  send_one(store, sleeper, Message::sleep, t0 + 1s, t0 + 1h);
  send_one(store, releaser, Message::release, t0 + 1s);

  const auto slept = store.find(sleeper);
  REQUIRE(slept);
  CHECK(slept->state == TaskState::sleeping);
  CHECK(slept->run_at == t0 + 1h);
  CHECK(store.revoked_reason(sleeper, sleeper_token) == std::string("sleep"));
  CHECK(error_kind([&] {
          store.complete(sleeper, sleeper_token, std::nullopt, t0 + 2s);
        })
        == ErrorKind::conflict);

  const auto released = store.find(releaser);
  REQUIRE(released);
  CHECK(released->state == TaskState::runnable);
  CHECK_FALSE(released->leased(t0 + 1s));
  CHECK(store.revoked_reason(releaser, releaser_token)
        == std::string("release"));
  CHECK(error_kind([&] {
          store.complete(releaser, releaser_token, std::nullopt, t0 + 2s);
        })
        == ErrorKind::conflict);
  // A released task is eligible again at once.
  const auto again = lease_one(store, "q", t0 + 2s);
  REQUIRE(again);
  CHECK(again->id == releaser);
}

TEST_CASE("revoked_reason is empty for a live or unknown token") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  CHECK_FALSE(store.revoked_reason(id, *token_of(*leased)));
  CHECK_FALSE(store.revoked_reason(id, "never-issued"));
}

TEST_CASE("an operator run on a leased task keeps the lease") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  send_one(store, id, Message::run, t0 + 1s);
  const auto stored = store.find(id);
  REQUIRE(stored);
  CHECK(stored->leased(t0 + 1s));
  CHECK(token_of(*stored) == token_of(*leased));
  CHECK(store.complete(id, *token_of(*leased), std::nullopt, t0 + 2s).state
        == TaskState::completed);
}

TEST_CASE("a refused message is a conflict and leaves the task unchanged") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  send_one(store, id, Message::kill, t0);
  const auto before = store.find(id);
  REQUIRE(before);
  CHECK(before->state == TaskState::killed);

  const std::string why =
      error_message([&] { send_one(store, id, Message::run, t0 + 1s); });
  CHECK(contains(why, "run"));
  CHECK(contains(why, "killed"));
  for (const Message msg :
       {Message::run, Message::pause, Message::sleep, Message::release,
        Message::checkpoint, Message::kill}) {
    CAPTURE(core::to_string(msg));
    CHECK(error_kind([&] { send_one(store, id, msg, t0 + 1s, t0 + 1h); })
          == ErrorKind::conflict);
  }
  const auto after = store.find(id);
  REQUIRE(after);
  check_unchanged(*before, *after);
}

TEST_CASE("operator messages follow the transition table from paused and "
          "sleeping") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");

  send_one(store, id, Message::pause, t0);
  REQUIRE(store.find(id));
  CHECK(store.find(id)->state == TaskState::paused);
  send_one(store, id, Message::sleep, t0, t0 + 1h);
  REQUIRE(store.find(id));
  CHECK(store.find(id)->state == TaskState::sleeping);
  CHECK_FALSE(lease_one(store, "q", t0 + 30min));
  send_one(store, id, Message::run, t0 + 30min);
  REQUIRE(store.find(id));
  CHECK(store.find(id)->state == TaskState::runnable);
  const auto leased = lease_one(store, "q", t0 + 30min);
  REQUIRE(leased);
  CHECK(leased->id == id);
}

TEST_CASE("a paused task is never leased until resumed") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  send_one(store, id, Message::pause, t0);
  CHECK_FALSE(lease_one(store, "q", t0 + 1h));
  send_one(store, id, Message::run, t0 + 1h);
  CHECK(lease_one(store, "q", t0 + 1h));
}

TEST_CASE("operators cannot send complete or error") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto before = store.find(id);
  REQUIRE(before);
  for (const Message msg : {Message::complete, Message::error}) {
    CAPTURE(core::to_string(msg));
    const auto kind = error_kind([&] { send_one(store, id, msg, t0); });
    CHECK(kind.has_value());
  }
  const auto after = store.find(id);
  REQUIRE(after);
  check_unchanged(*before, *after);
}

TEST_CASE("send to several ids is all or nothing when one refuses") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = add_task(store, "q");
  const int64_t b = add_task(store, "q");
  const int64_t c = add_task(store, "q");
  send_one(store, b, Message::kill, t0);
  const auto a_before = store.find(a);
  const auto b_before = store.find(b);
  const auto c_before = store.find(c);
  REQUIRE(a_before);
  REQUIRE(b_before);
  REQUIRE(c_before);

  CHECK(error_kind([&] {
          store.send(by_ids({a, b, c}), Message::pause, std::nullopt,
                     k_operator, t0 + 1s);
        })
        == ErrorKind::conflict);
  check_unchanged(*a_before, *store.find(a));
  check_unchanged(*b_before, *store.find(b));
  check_unchanged(*c_before, *store.find(c));
}

TEST_CASE("send to several ids is all or nothing when one is missing") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = add_task(store, "q");
  const int64_t b = add_task(store, "q");
  const auto a_before = store.find(a);
  REQUIRE(a_before);
  CHECK(error_kind([&] {
          store.send(by_ids({a, 9999, b}), Message::kill, std::nullopt,
                     k_operator, t0 + 1s);
        })
        == ErrorKind::not_found);
  check_unchanged(*a_before, *store.find(a));
  REQUIRE(store.find(b));
  CHECK(store.find(b)->state == TaskState::runnable);
}

TEST_CASE("send to several ids changes them all when all accept") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = add_task(store, "q");
  const int64_t b = add_task(store, "q");
  const auto changed = store.send(by_ids({a, b}), Message::pause, std::nullopt,
                                  k_operator, t0 + 1s);
  CHECK(sorted(ids_of(changed)) == std::vector<int64_t>{a, b});
  CHECK(store.find(a)->state == TaskState::paused);
  CHECK(store.find(b)->state == TaskState::paused);
}

TEST_CASE("a bulk send by queue applies only where the state allows it") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t completed = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  store.complete(completed, *token_of(*leased), std::nullopt, t0);
  const int64_t runnable = add_task(store, "q");
  const int64_t paused = add_task(store, "q");
  const int64_t sleeping = add_task(store, "q");
  const int64_t killed = add_task(store, "q");
  const int64_t other_queue = add_task(store, "other");
  send_one(store, paused, Message::pause, t0);
  send_one(store, sleeping, Message::sleep, t0, t0 + 1h);
  send_one(store, killed, Message::kill, t0);
  const auto completed_before = store.find(completed);
  const auto killed_before = store.find(killed);
  const auto other_before = store.find(other_queue);
  REQUIRE(completed_before);
  REQUIRE(killed_before);
  REQUIRE(other_before);

  // kill accepts runnable, sleeping and paused; terminal states refuse it,
  // which is no error in a bulk send.
  const auto changed = store.send(by_queue("q"), Message::kill, std::nullopt,
                                  k_operator, t0 + 1s);
  CHECK(sorted(ids_of(changed))
        == std::vector<int64_t>{runnable, paused, sleeping});
  CHECK(store.find(runnable)->state == TaskState::killed);
  CHECK(store.find(paused)->state == TaskState::killed);
  CHECK(store.find(sleeping)->state == TaskState::killed);
  check_unchanged(*completed_before, *store.find(completed));
  check_unchanged(*killed_before, *store.find(killed));
  check_unchanged(*other_before, *store.find(other_queue));

  // Nothing left to change: an empty result, not an error.
  CHECK(
      store
          .send(by_queue("q"), Message::kill, std::nullopt, k_operator, t0 + 2s)
          .empty());
}

TEST_CASE("a bulk kill by state and label changes only the selected tasks") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask red = new_task("q");
  red.labels = {{"colour", "red"}};
  storage::NewTask blue = new_task("q");
  blue.labels = {{"colour", "blue"}};
  const int64_t red_runnable = store.add(red, t0, k_operator);
  const int64_t red_paused = store.add(red, t0, k_operator);
  const int64_t blue_runnable = store.add(blue, t0, k_operator);
  send_one(store, red_paused, Message::pause, t0);

  storage::Selector sel;
  sel.states = {"runnable"};
  sel.match = {core::LabelPattern{"colour", "red"}};
  const auto changed =
      store.send(sel, Message::kill, std::nullopt, k_operator, t0 + 1s);
  CHECK(ids_of(changed) == std::vector<int64_t>{red_runnable});
  CHECK(store.find(red_runnable)->state == TaskState::killed);
  CHECK(store.find(red_paused)->state == TaskState::paused);
  CHECK(store.find(blue_runnable)->state == TaskState::runnable);
}

TEST_CASE("retry creates a new linked task with the same spec") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  storage::NewTask spec = new_task("q", R"({"file":"a.png"})");
  spec.labels = {{"kind", "image"}};
  spec.priority = 4;
  spec.max_attempts = 3;
  const int64_t old_id = store.add(spec, t0, k_operator);
  send_one(store, old_id, Message::kill, t0);
  const auto old_before = store.find(old_id);
  REQUIRE(old_before);

  const int64_t new_id = store.retry(old_id, k_operator, t0 + 1h);
  CHECK(new_id != old_id);
  const auto fresh = store.find(new_id);
  REQUIRE(fresh);
  CHECK(fresh->retry_of == old_id);
  CHECK(fresh->queue == "q");
  CHECK(fresh->payload == R"({"file":"a.png"})");
  CHECK(fresh->labels == core::Labels{{"kind", "image"}});
  CHECK(fresh->priority == 4);
  CHECK(fresh->max_attempts == 3);
  CHECK(fresh->state == TaskState::runnable);
  CHECK(fresh->attempts == 0);
  CHECK(fresh->errors.empty());
  CHECK(fresh->created_at == t0 + 1h);
  // The old task stays as it was: terminal is final.
  check_unchanged(*old_before, *store.find(old_id));
  const auto leased = lease_one(store, "q", t0 + 1h);
  REQUIRE(leased);
  CHECK(leased->id == new_id);
}

TEST_CASE("a task's command is stored as given, in bulk too, and retry "
          "copies it") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const std::vector<std::string> argv = {"convert", "a b.png",    "$(x)",
                                         "",        "h\u00e9llo", "*"};
  storage::NewTask spec = new_task("q");
  spec.command = argv;
  const int64_t id = store.add(spec, t0, k_operator);
  CHECK(store.find(id)->command == argv);
  CHECK(store.find(add_task(store, "q"))->command.empty());

  std::vector<std::string> payloads = {"1", "2", "3"};
  size_t next = 0;
  std::vector<int64_t> bulk;
  store.add_many(
      spec,
      [&](std::string& out) {
        if (next == payloads.size()) {
          return false;
        }
        out = payloads[next++];
        return true;
      },
      [&](int64_t added) { bulk.push_back(added); }, t0, k_operator);
  REQUIRE(bulk.size() == 3);
  for (const int64_t added : bulk) {
    CHECK(store.find(added)->command == argv);
  }

  send_one(store, id, Message::kill, t0);
  const int64_t again = store.retry(id, k_operator, t0 + 1h);
  CHECK(store.find(again)->command == argv);
}

TEST_CASE("retry of a failed task works; of a live or missing task it is "
          "refused") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t failed = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0);
  REQUIRE(leased);
  store.fail(failed, *token_of(*leased),
             fail_request("bad input", storage::FailMode::no_retry), t0);
  const int64_t live = add_task(store, "q");

  const int64_t retried = store.retry(failed, k_operator, t0);
  REQUIRE(store.find(retried));
  CHECK(store.find(retried)->retry_of == failed);
  CHECK(error_kind([&] { store.retry(live, k_operator, t0); })
        == ErrorKind::conflict);
  CHECK(error_kind([&] { store.retry(4242, k_operator, t0); })
        == ErrorKind::not_found);
}

TEST_CASE("show returns the task's events in order with from, to and "
          "actor") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  REQUIRE(lease_one(store, "q", t0 + 1s, 5min, "w1"));
  store.send(by_ids({id}), Message::pause, std::nullopt, "alice@host", t0 + 2s);
  store.send(by_ids({id}), Message::run, std::nullopt, "bob@host", t0 + 3s);
  store.send(by_ids({id}), Message::kill, std::nullopt, "carol@host", t0 + 4s);
  // A refused message records nothing.
  CHECK_THROWS(store.send(by_ids({id}), Message::run, std::nullopt, "dave@host",
                          t0 + 5s));

  const auto detail = store.show(id);
  CHECK(detail.task.id == id);
  CHECK(detail.task.state == TaskState::killed);
  const auto& events = detail.events;
  REQUIRE(events.size() >= 4);
  for (std::size_t i = 1; i < events.size(); ++i) {
    CHECK(events[i - 1].id < events[i].id);
    CHECK(events[i - 1].time <= events[i].time);
  }
  for (const auto& e : events) {
    CHECK(e.task_id == id);
    CHECK(e.actor != "dave@host");
  }

  // The operator messages, in order, exactly.
  std::vector<core::Event> operator_events;
  bool saw_lease_by_worker = false;
  for (const auto& e : events) {
    if (e.message == "pause" || e.message == "run" || e.message == "kill") {
      operator_events.push_back(e);
    }
    if (e.message == "lease" && e.actor == "w1") {
      saw_lease_by_worker = true;
    }
  }
  CHECK(saw_lease_by_worker);
  REQUIRE(operator_events.size() == 3);
  CHECK(operator_events[0].message == "pause");
  CHECK(operator_events[0].from == "runnable");
  CHECK(operator_events[0].to == "paused");
  CHECK(operator_events[0].actor == "alice@host");
  CHECK(operator_events[0].time == t0 + 2s);
  CHECK(operator_events[1].message == "run");
  CHECK(operator_events[1].from == "paused");
  CHECK(operator_events[1].to == "runnable");
  CHECK(operator_events[1].actor == "bob@host");
  CHECK(operator_events[2].message == "kill");
  CHECK(operator_events[2].from == "runnable");
  CHECK(operator_events[2].to == "killed");
  CHECK(operator_events[2].actor == "carol@host");
  CHECK(operator_events[2].time == t0 + 4s);
}

TEST_CASE("adding a task records an add event by its actor") {
  // core::Event: message is "a Message name, or `add`, `lease`, ...", and
  // `from` is "empty when none"; add() takes the actor for this record.
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = store.add(new_task("q"), t0, "alice@host");
  int64_t bulk_id = 0;
  bool produced = false;
  store.add_many(
      new_task("q"),
      [&](std::string& payload) {
        if (produced) {
          return false;
        }
        produced = true;
        payload = "1";
        return true;
      },
      [&](int64_t new_id) { bulk_id = new_id; }, t0 + 1s, "bob@host");

  for (const auto& [task_id, actor, time] :
       {std::tuple{id, std::string("alice@host"), t0},
        std::tuple{bulk_id, std::string("bob@host"), t0 + 1s}}) {
    CAPTURE(task_id);
    const auto events = store.show(task_id).events;
    REQUIRE_FALSE(events.empty());
    CHECK(events.front().message == "add");
    CHECK(events.front().from == "");
    CHECK(events.front().to == "runnable");
    CHECK(events.front().actor == actor);
    CHECK(events.front().time == time);
  }
}

TEST_CASE("a send naming a task twice changes it once") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  store.send(by_ids({id, id}), Message::kill, std::nullopt, k_operator, t0);
  REQUIRE(store.find(id));
  CHECK(store.find(id)->state == TaskState::killed);
  int kills = 0;
  for (const auto& e : store.show(id).events) {
    kills += e.message == "kill" ? 1 : 0;
  }
  CHECK(kills == 1);
}

TEST_CASE("a send with neither ids nor filters is refused and changes "
          "nothing") {
  // Selector: "Either ids, or filters"; an empty one must not mean "all".
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t a = add_task(store, "q");
  const int64_t b = add_task(store, "other");
  CHECK(error_kind([&] {
          store.send(storage::Selector{}, Message::kill, std::nullopt,
                     k_operator, t0);
        })
        == ErrorKind::usage);
  CHECK(store.find(a)->state == TaskState::runnable);
  CHECK(store.find(b)->state == TaskState::runnable);
}

TEST_CASE("an operator sleep without a time is a usage error") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto before = store.find(id);
  REQUIRE(before);
  CHECK(error_kind([&] { send_one(store, id, Message::sleep, t0); })
        == ErrorKind::usage);
  check_unchanged(*before, *store.find(id));
}

TEST_CASE("why is empty for an eligible task and names each reason "
          "otherwise") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t ready = add_task(store, "q");
  CHECK(store.why(ready, t0, "w").empty());

  storage::NewTask later = new_task("q");
  later.run_at = t0 + 1h;
  const int64_t delayed = store.add(later, t0, k_operator);
  const auto delayed_why = store.why(delayed, t0, "w");
  REQUIRE(delayed_why.size() == 1);
  CHECK(contains(delayed_why[0], core::format_time(t0 + 1h)));
  CHECK(store.why(delayed, t0 + 1h, "w").empty());

  const auto leased = lease_one(store, "q", t0, 5min, "host-b:9");
  REQUIRE(leased);
  REQUIRE(leased->id == ready);
  const auto leased_why = store.why(ready, t0, "w");
  REQUIRE(leased_why.size() == 1);
  CHECK(contains(leased_why[0], "host-b:9"));

  send_one(store, delayed, Message::pause, t0);
  const auto paused_why = store.why(delayed, t0 + 2h, "w");
  REQUIRE(paused_why.size() == 1);
  CHECK(contains(paused_why[0], "paused"));

  CHECK(error_kind([&] { store.why(4242, t0, "w"); }) == ErrorKind::not_found);
}

TEST_CASE("show records the worker as the actor of complete") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto leased = lease_one(store, "q", t0, 5min, "host-a:123");
  REQUIRE(leased);
  store.complete(id, *token_of(*leased), std::nullopt, t0 + 1s);
  const auto detail = store.show(id);
  int completes = 0;
  for (const auto& e : detail.events) {
    if (e.message == "complete") {
      ++completes;
      CHECK(e.from == "runnable");
      CHECK(e.to == "completed");
      CHECK(e.actor == "host-a:123");
      CHECK(e.time == t0 + 1s);
    }
  }
  CHECK(completes == 1);
}

TEST_CASE("list filters by queue, state, running, ready, labels and limit") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const Time now = t0 + 1h;
  storage::NewTask image = new_task("q");
  image.labels = {{"kind", "image"}};
  const int64_t running = store.add(image, t0, k_operator);
  REQUIRE(lease_one(store, "q", t0, 90min)); // live at `now`
  const int64_t ready_a = store.add(image, t0, k_operator);
  const int64_t ready_b = add_task(store, "q");
  storage::NewTask later = new_task("q");
  later.run_at = now + 1h;
  const int64_t delayed = store.add(later, t0, k_operator);
  const int64_t paused = add_task(store, "q");
  send_one(store, paused, Message::pause, t0);
  const int64_t killed = add_task(store, "q");
  send_one(store, killed, Message::kill, t0);
  const int64_t other = add_task(store, "other");

  CHECK(sorted(ids_of(store.list(by_queue("q"), now)))
        == std::vector<int64_t>{running, ready_a, ready_b, delayed, paused,
                                killed});
  CHECK(sorted(ids_of(store.list(storage::Selector{}, now)))
        == std::vector<int64_t>{running, ready_a, ready_b, delayed, paused,
                                killed, other});
  CHECK(sorted(ids_of(store.list(by_state("runnable"), now)))
        == std::vector<int64_t>{running, ready_a, ready_b, delayed, other});
  CHECK(ids_of(store.list(by_state("paused"), now))
        == std::vector<int64_t>{paused});
  CHECK(ids_of(store.list(by_state("killed"), now))
        == std::vector<int64_t>{killed});
  CHECK(ids_of(store.list(by_state("running"), now))
        == std::vector<int64_t>{running});
  CHECK(sorted(ids_of(store.list(by_state("ready"), now)))
        == std::vector<int64_t>{ready_a, ready_b, other});

  storage::Selector ready_in_q = by_queue("q");
  ready_in_q.states = {"ready"};
  CHECK(sorted(ids_of(store.list(ready_in_q, now)))
        == std::vector<int64_t>{ready_a, ready_b});

  // After the lease expires (and before `delayed` is due) the running task
  // is ready again.
  CHECK(sorted(ids_of(store.list(ready_in_q, t0 + 90min)))
        == std::vector<int64_t>{running, ready_a, ready_b});
  CHECK(store.list(by_state("running"), t0 + 90min).empty());

  storage::Selector images;
  images.match = {core::LabelPattern{"kind", "image"}};
  CHECK(sorted(ids_of(store.list(images, now)))
        == std::vector<int64_t>{running, ready_a});

  storage::Selector limited = by_queue("q");
  limited.limit = 2;
  CHECK(store.list(limited, now).size() == 2);
}

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
