// A bulk add or an import that PostgreSQL ends in a deadlock runs again
// whole: the other writer and the store both succeed, the input is read
// once (a try again reads it back from where the first kept it), and a
// bulk add reports each id once, those of the try that committed. What
// keeps the input (storage/seam/replay.hpp) is tested on its own too.
#include "core/error.hpp"
#include "storage/pg/db.hpp"
#include "storage/seam/db.hpp"
#include "storage/seam/replay.hpp"
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;
using storage::connect_postgres;
using storage::Db;
using storage::NewTask;
using storage::Statement;
using storage::TaskImage;
using storage::Transaction;
using storage::TxConflict;
using storage::detail::Replay;
using storage::detail::retrying_with;

namespace {

// More payloads than one batch of a bulk add holds, so that both the full
// batches and the last, shorter one are run again.
constexpr int k_payloads = 600;

// Connections to `db`'s database opened from now on find a deadlock after
// 100 ms; the other writers here set 10 s for their own transactions, so
// that the store's transaction is the one PostgreSQL ends.
void quick_deadlocks(Db& db) {
  db.exec("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET "
          "deadlock_timeout = ''100ms''', current_database()); END $$",
          "cannot set the database's deadlock timeout");
}

int64_t backend_pid(Db& db) {
  Statement st(db, "SELECT pg_backend_pid()");
  REQUIRE(st.step());
  return st.get_int(0);
}

// Returns once the server process `pid` waits for a lock (within 10 s).
void await_waiting(Db& watch, int64_t pid) {
  Statement st(watch,
               "SELECT count(*) FROM pg_locks WHERE pid = ?1 AND NOT granted");
  st.bind(1, pid);
  const auto until = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    REQUIRE(st.step());
    if (st.get_int(0) > 0) {
      return;
    }
    st.reset();
    REQUIRE(std::chrono::steady_clock::now() < until);
    std::this_thread::sleep_for(1ms);
  }
}

// The other writer of a deadlock with the store, on connections of its
// own to `path`'s database (made before the store's: quick_deadlocks).
// writer() starts a thread that, once start() is called (from inside the
// store's transaction), takes `locks` and runs `then` in a transaction
// that finds deadlocks only after 10 s, then commits; start() returns once
// that transaction waits for a lock (the store's).
class Opponent {
public:
  explicit Opponent(const std::string& path)
      : m_other(connect_postgres(path)), m_watch(connect_postgres(path)) {
    quick_deadlocks(*m_other);
    m_pid = backend_pid(*m_other);
  }
  template <typename F>
  std::future<int64_t> writer(const std::string& locks, F then) {
    return std::async(std::launch::async, [this, locks, then] {
      m_go.get_future().wait();
      Transaction tx(*m_other);
      m_other->exec(("SET LOCAL deadlock_timeout = '10s'; " + locks).c_str(),
                    "cannot take the locks");
      const int64_t out = then(*m_other);
      tx.commit();
      return out;
    });
  }
  void start() {
    m_go.set_value();
    await_waiting(*m_watch, m_pid);
  }
  Db& watch() { return *m_watch; }

private:
  std::unique_ptr<Db> m_other, m_watch;
  int64_t m_pid = 0;
  std::promise<void> m_go;
};

} // namespace

TEST_CASE("a bulk add ended by a deadlock runs again, reading its input once "
          "and reporting each id once"
          * doctest::skip(!on_postgresql())) {
  TempDb temp;
  Opponent opponent(temp.path());
  std::atomic<int> clock_reads{0};
  TaskStore store(temp.path(), OpenMode::write, [&] {
    ++clock_reads;
    return t0;
  });
  const int64_t dep_id = add_task(store, "first");
  NewTask proto = new_task("bulk");
  proto.after = {dep_id};

  // A bulk add that meets no one, for how often one try reads the clock.
  int calm_reads = clock_reads;
  store.add_many(
      proto, [](std::string&) { return false; }, {}, t0, k_operator);
  calm_reads = clock_reads - calm_reads;
  REQUIRE(calm_reads > 0);

  // The other writer, once the add holds the dependency's row (shared,
  // until it commits): it takes the tasks table in SHARE mode, which the
  // add's inserts wait for, then waits for the dependency's row itself.
  auto other_writer =
      opponent.writer("LOCK TABLE tasks IN SHARE MODE", [dep_id](Db& other) {
        Statement(other, "SELECT 1 FROM tasks WHERE id = ?1 FOR UPDATE")
            .bind(1, dep_id)
            .run();
        return int64_t{0};
      });

  int reads = 0;
  std::vector<int64_t> ids;
  const int reads_before = clock_reads;
  const int64_t count = store.add_many(
      proto,
      [&](std::string& payload) {
        if (reads == 0) {
          opponent.start();
        }
        if (reads == k_payloads) {
          ++reads;
          return false;
        }
        payload = std::to_string(reads++);
        return true;
      },
      [&](int64_t id) { ids.push_back(id); }, t0, k_operator);
  other_writer.get(); // it committed: no error

  // Two tries, the input read once, each committed id reported once.
  CHECK(clock_reads - reads_before == 2 * calm_reads);
  CHECK(reads == k_payloads + 1);
  CHECK(count == k_payloads);
  REQUIRE(ids.size() == static_cast<size_t>(k_payloads));
  CHECK(std::set<int64_t>(ids.begin(), ids.end()).size() == ids.size());
  CHECK(std::is_sorted(ids.begin(), ids.end()));
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto task = store.find(ids[i]);
    REQUIRE(task);
    CHECK(task->payload == std::to_string(i));
    CHECK(task->queue == "bulk");
  }
  Statement tasks(opponent.watch(),
                  "SELECT count(*), min(id) FROM tasks WHERE queue = 'bulk'");
  REQUIRE(tasks.step());
  CHECK(tasks.get_int(0) == k_payloads); // none left by the first try
  CHECK(tasks.get_int(1) == ids.front());
  // Each waits for the dependency, whose row the other writer locked.
  Statement deps(opponent.watch(),
                 "SELECT count(*) FROM task_deps WHERE dep_id = ?1");
  deps.bind(1, dep_id);
  REQUIRE(deps.step());
  CHECK(deps.get_int(0) == k_payloads);
}

TEST_CASE("an import ended by a deadlock runs again, reading its input once"
          * doctest::skip(!on_postgresql())) {
  // Two tasks to import: one alone, then one with an error and events.
  TempDb src_db;
  TaskStore src(src_db.path(), OpenMode::write);
  add_task(src, "q");
  add_task(src, "r");
  const auto leased = lease_one(src, "r", t0);
  REQUIRE(leased);
  src.fail(leased->id, leased->lease->token, fail_request("boom"), t0 + 1s);
  std::vector<TaskImage> images;
  src.export_tasks(std::nullopt,
                   [&](const TaskImage& image) { images.push_back(image); });
  REQUIRE(images.size() == 2);
  REQUIRE(images[0].events.empty());
  REQUIRE(!images[1].events.empty());

  TempDb temp;
  Opponent opponent(temp.path());
  TaskStore store(temp.path(), OpenMode::write);
  // The other writer, once the import has written the first task (and so
  // holds the tasks table, ROW EXCLUSIVE): it takes the events table,
  // which the second task's events wait for, then waits for the tasks
  // table. Once it has it, the import's first try has ended: the task it
  // wrote is not there.
  auto other_writer = opponent.writer(
      "LOCK TABLE events IN SHARE MODE; LOCK TABLE tasks IN SHARE MODE",
      [](Db& other) {
        Statement count(other, "SELECT count(*) FROM tasks");
        REQUIRE(count.step());
        return count.get_int(0);
      });

  size_t reads = 0;
  const int64_t imported = store.import_tasks([&](TaskImage& image) {
    if (reads == 1) {
      opponent.start();
    }
    if (reads == images.size()) {
      ++reads;
      return false;
    }
    image = images[reads++];
    return true;
  });
  CHECK(other_writer.get() == 0); // the first try rolled back
  CHECK(imported == 2);
  CHECK(reads == images.size() + 1);
  std::vector<TaskImage> back;
  store.export_tasks(std::nullopt,
                     [&](const TaskImage& image) { back.push_back(image); });
  REQUIRE(back.size() == 2);
  for (size_t i = 0; i < back.size(); ++i) {
    CHECK(back[i].task == images[i].task);
    CHECK(back[i].errors == images[i].errors);
    CHECK(back[i].events == images[i].events);
  }
}

TEST_CASE("a kept input is given again to each try, then read on") {
  std::vector<TaskImage> source(3);
  for (size_t i = 0; i < source.size(); ++i) {
    source[i].line = static_cast<int64_t>(i + 1);
    source[i].task = {{"id", std::to_string(i + 1)}, {"payload", "{}"}};
    source[i].output = {{{"data", std::string("a\0b", 3)}}, {}};
  }
  source[1].flow.emplace();
  source[1].flow->flow = {{"name", "f"}};
  source[1].flow->atoms = {{{"node", "0"}}};
  size_t read = 0;
  Replay<TaskImage> input(
      [&](TaskImage& image) {
        if (read == source.size()) {
          return false;
        }
        image = source[read++];
        return true;
      },
      true);
  int tries = 0;
  const auto seen = retrying_with(input, [&]() -> std::vector<TaskImage> {
    ++tries;
    std::vector<TaskImage> out;
    TaskImage image;
    while (input.next(image)) {
      out.push_back(image);
      if (tries == 1 && out.size() == 2) {
        throw TxConflict(ErrorKind::unavailable, "deadlock detected");
      }
    }
    return out;
  });
  CHECK(tries == 2);
  CHECK(read == source.size());
  REQUIRE(seen.size() == source.size());
  for (size_t i = 0; i < seen.size(); ++i) {
    CHECK(seen[i].line == source[i].line);
    CHECK(seen[i].task == source[i].task);
    CHECK(seen[i].output == source[i].output);
    CHECK(seen[i].flow.has_value() == source[i].flow.has_value());
  }
  REQUIRE(seen[1].flow);
  CHECK(seen[1].flow->flow == source[1].flow->flow);
  CHECK(seen[1].flow->atoms == source[1].flow->atoms);
}

TEST_CASE("an input not kept ends a conflict as any other error") {
  Replay<std::string> input(
      [](std::string& s) {
        s = "x";
        return true;
      },
      false);
  int tries = 0;
  bool plain = false;
  try {
    retrying_with(input, [&]() -> int {
      ++tries;
      std::string s;
      input.next(s);
      throw TxConflict(ErrorKind::unavailable, "deadlock detected");
    });
  } catch (const TxConflict&) {
  } catch (const taskq::Error& e) {
    plain = e.kind() == ErrorKind::unavailable
            && std::string(e.what()) == "deadlock detected";
  }
  CHECK(tries == 1);
  CHECK(plain);
}
