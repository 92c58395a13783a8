// Job output (storage/features/output_store.cpp): chunks appended per attempt
// and stream, trimmed to their last `keep` bytes, read back in the order
// written, deleted with their task. On either backend; on PostgreSQL also
// against a delete in another session's transaction.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

storage::OutputChunk chunk(int64_t task, const std::string& stream,
                           int64_t offset, std::string data,
                           int64_t attempt = 1) {
  storage::OutputChunk c;
  c.task = task;
  c.attempt = attempt;
  c.stream = stream;
  c.offset = offset;
  c.data = std::move(data);
  return c;
}

// The kept bytes of one stream, joined.
std::string kept(TaskStore& store, int64_t task, const std::string& stream,
                 int64_t attempt = 1) {
  std::string out;
  for (const auto& c : store.output(task, attempt, stream)) {
    out += c.data;
  }
  return out;
}

} // namespace

TEST_CASE("output keeps every byte, NULs and invalid UTF-8 included") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  std::string all;
  for (int i = 0; i < 256; ++i) {
    all += static_cast<char>(i);
  }
  store.append_output({chunk(id, "stdout", 0, all)}, 1 << 20);
  CHECK(kept(store, id, "stdout") == all);
}

TEST_CASE("output is trimmed to its last keep bytes, a chunk cut inside") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  store.append_output({chunk(id, "stdout", 0, "0123456789")}, 8);
  store.append_output({chunk(id, "stdout", 10, "abcdef")}, 8);
  CHECK(kept(store, id, "stdout") == "89abcdef");
  const auto chunks = store.output(id, 1, "stdout");
  REQUIRE(chunks.size() == 2);
  CHECK(chunks[0].offset == 8);
  CHECK(chunks[1].offset == 10);
  store.append_output({chunk(id, "stdout", 16, "XYZ")}, 8);
  CHECK(kept(store, id, "stdout") == "bcdefXYZ");
  const auto sizes = store.output_sizes(id);
  REQUIRE(sizes.size() == 1);
  CHECK(sizes[0].kept == 8);
  CHECK(sizes[0].total == 19);
}

TEST_CASE("chunks written again (a retry after a lost commit) are not "
          "doubled") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const std::vector<storage::OutputChunk> batch{chunk(id, "stdout", 0, "ab"),
                                                chunk(id, "stdout", 2, "cd"),
                                                chunk(id, "stderr", 0, "E")};
  store.append_output(batch, 1 << 20);
  store.append_output(batch, 1 << 20); // the same, sent again
  CHECK(kept(store, id, "stdout") == "abcd");
  CHECK(kept(store, id, "stderr") == "E");
  // Trimmed since, then sent again: still not doubled.
  store.append_output({chunk(id, "stdout", 4, "efgh")}, 3);
  store.append_output({chunk(id, "stdout", 4, "efgh")}, 3);
  CHECK(kept(store, id, "stdout") == "fgh");
  store.append_output({chunk(id, "stdout", 8, "i")}, 3);
  CHECK(kept(store, id, "stdout") == "ghi");
}

TEST_CASE("streams and attempts are bounded apart, read in written order") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  store.append_output(
      {chunk(id, "stdout", 0, "out1"), chunk(id, "stderr", 0, "err1")}, 4);
  store.append_output({chunk(id, "stdout", 4, "out2")}, 4);
  store.append_output({chunk(id, "stdout", 0, "second", 2)}, 4);
  CHECK(kept(store, id, "stdout") == "out2");
  CHECK(kept(store, id, "stderr") == "err1");
  CHECK(kept(store, id, "stdout", 2) == "cond");
  const auto both = store.output(id, 1, std::nullopt);
  REQUIRE(both.size() == 2);
  CHECK(both[0].stream == "stderr");
  CHECK(both[1].stream == "stdout");
  // A follower goes on after the last chunk it saw.
  CHECK(store.output(id, 1, std::nullopt, both[0].id).size() == 1);
  CHECK(store.output_sizes(id).size() == 3);
}

TEST_CASE("output of a task that is gone is dropped, and purge deletes it") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  store.append_output({chunk(999, "stdout", 0, "lost")}, 100);
  CHECK(store.output_sizes(999).empty());
  const int64_t id = add_task(store, "q");
  store.append_output({chunk(id, "stdout", 0, "kept")}, 100);
  storage::Selector sel = by_ids({id});
  store.send(sel, core::Message::kill, std::nullopt, k_operator, t0);
  storage::PurgeRequest req;
  CHECK(store.purge(req, t0) == 1);
  CHECK(store.output_sizes(id).empty());
  CHECK(store.check().ok);
}

TEST_CASE("a run paused and resumed keeps its output: the next run is the "
          "next attempt") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  const auto first = lease_one(store, "q", t0);
  REQUIRE(first);
  REQUIRE(first->attempts == 1);
  store.append_output({chunk(id, "stdout", 0, "first run\n", 1)}, 1 << 20);
  send_one(store, id, Message::pause, t0 + 1s);
  send_one(store, id, Message::run, t0 + 2s);
  const auto second = lease_one(store, "q", t0 + 3s);
  REQUIRE(second);
  CHECK(second->attempts == 2);
  store.append_output({chunk(id, "stdout", 0, "second\n", second->attempts)},
                      1 << 20);
  CHECK(kept(store, id, "stdout", 1) == "first run\n");
  CHECK(kept(store, id, "stdout", 2) == "second\n");
  CHECK(store.show(id).task.errors.empty()); // a pause is no error
}

namespace {

// PostgreSQL: whether a session of `db`'s waits for a lock.
bool lock_waited(const TempDb& db) {
  return db.value("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                  "current_database() AND wait_event_type = 'Lock'")
         != "0";
}

// Output rows of task `id`, read directly.
std::string output_rows(const TempDb& db, int64_t id) {
  return db.value("SELECT count(*) FROM task_output WHERE task_id = "
                  + std::to_string(id));
}

} // namespace

TEST_CASE("output written while another session deletes its task is not "
          "kept without the task"
          * doctest::skip(!on_postgresql())) {
  // The deleter, as storage's delete_task does it: the task's row locked,
  // its output deleted, then the row. Output written in between must wait
  // for the row and find it gone (it used to be inserted at once, and kept
  // after the row went: `taskq check`'s "deleted task(s) whose output is
  // still kept", seen by the flows crash test).
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  const int64_t id = add_task(store, "q");
  PsqlSession deleter(db);
  deleter.run("BEGIN;");
  deleter.run("SELECT 1 FROM tasks WHERE id = " + std::to_string(id)
              + " FOR UPDATE;");
  deleter.run("DELETE FROM task_output WHERE task_id = " + std::to_string(id)
              + ";");
  std::atomic<bool> written{false};
  std::thread writer([&] {
    store.append_output({chunk(id, "stdout", 0, "late")}, 100);
    written = true;
  });
  CHECK(PsqlSession::await([&] { return written || lock_waited(db); }));
  CHECK_FALSE(written); // it waits for the deleter's row lock
  deleter.run("DELETE FROM events WHERE task_id = " + std::to_string(id) + ";");
  deleter.run("DELETE FROM tasks WHERE id = " + std::to_string(id) + ";");
  deleter.run("COMMIT;");
  writer.join();
  CHECK(output_rows(db, id) == "0");
  CHECK(store.check().ok);
}

TEST_CASE("a task deleted while another session writes its output takes "
          "the output with it"
          * doctest::skip(!on_postgresql())) {
  // The writer, as storage's write_output does it: the task's row shared,
  // then the chunk. A delete (taskq tx, a flow's cancel) or a purge in
  // between must wait for the row before it deletes the output, and then
  // see the chunk (it used to delete the output at once and the row after
  // the writer committed, leaving the chunk behind).
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  for (const bool purge : {true, false}) {
    CAPTURE(purge);
    // Finished, as purge wants it (an unfinished task's delete moves it
    // first, which waits for the row anyway).
    const int64_t id = add_task(store, "q");
    store.send(by_ids({id}), core::Message::kill, std::nullopt, k_operator, t0);
    PsqlSession writer(db);
    writer.run("BEGIN;");
    writer.run("SELECT 1 FROM tasks WHERE id = " + std::to_string(id)
               + " FOR SHARE;");
    std::atomic<bool> deleted{false};
    std::thread deleter([&] {
      if (purge) {
        CHECK(store.purge(storage::PurgeRequest{}, t0) == 1);
      } else {
        storage::TxRequest req;
        req.remove = {{id, std::nullopt}};
        store.apply_tx(req, t0, "op");
      }
      deleted = true;
    });
    CHECK(PsqlSession::await([&] { return deleted || lock_waited(db); }));
    writer.run("INSERT INTO task_output (task_id, attempt, stream, pos, data) "
               "VALUES ("
               + std::to_string(id) + ", 1, 'stdout', 0, 'x');");
    writer.run("COMMIT;");
    deleter.join();
    CHECK(deleted);
    CHECK_FALSE(store.find(id));
    CHECK(output_rows(db, id) == "0");
    CHECK(store.check().ok);
  }
}
