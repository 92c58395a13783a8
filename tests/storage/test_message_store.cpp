// Operator messages (storage/features/message_store.cpp): what pause, run,
// sleep, release and kill do to a task and its lease, the transition table they
// follow, and sends to several ids, to a queue or to a filter (all or
// nothing, the same end as one message per task). Reads of tasks (find,
// show, list, why) are in test_read_store.cpp.
#include "core/error.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

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

  // Resume in bulk: a paused task's limit counts afresh, a sleeper is due.
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
