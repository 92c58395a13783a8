// Flows in export/import and db check (issue 13, "Storage"): a flow
// travels as its rows, byte for byte; import refuses what flow_store could
// not have written and what db check flags; db check finds every broken
// flow invariant (each broken here with raw SQL).
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

using Images = std::vector<storage::TaskImage>;

// Two task atoms in a row under a `times: 2` controller: `a` provides x,
// `b` requires it.
const std::string k_doc =
    R"({"name": "f", "pattern": "linear", "retry": {"times": 2},
  "atoms": [{"name": "a", "execute": {"queue": "q"}, "provides": "x"},
            {"name": "b", "execute": {"queue": "q"}, "requires": "x"}]})";
const std::string k_one = R"({"name": "one", "atoms": [
  {"name": "only", "execute": {"queue": "r", "payload": {"p": [1, 2.50]}},
   "revert": {"queue": "r"}}]})";

// Leases the one task of `queue` and completes it with `result`.
void finish(TaskStore& store, const std::string& queue,
            const std::optional<std::string>& result, Time now) {
  const auto t = lease_one(store, queue, now);
  REQUIRE(t);
  store.complete(t->id, *token_of(*t), result, now);
}

// Flow 1: `a` done without a result, `b` failed for good, so the controller
// retried (both reverted, history kept) and `a` runs again. Flow 2: SUCCESS
// with a result. A plain task beside them.
void scene(TaskStore& store) {
  Time now = t0;
  REQUIRE(store.submit_flow(k_doc, now, k_operator) == 1);
  finish(store, "q", std::nullopt, now += 1s);
  const auto b = lease_one(store, "q", now += 1s);
  REQUIRE(b);
  store.fail(b->id, *token_of(*b),
             fail_request("disk full", storage::FailMode::no_retry), now);
  REQUIRE(store.submit_flow(k_one, now += 1s, k_operator) == 2);
  finish(store, "r", R"({"k": "v"})", now += 1s);
  add_task(store, "other", now);
  REQUIRE(store.find_flow(1)->state == "RUNNING");
  REQUIRE(store.find_flow(2)->state == "SUCCESS");
}

Images export_all(TaskStore& store,
                  const std::optional<std::string>& queue = std::nullopt) {
  Images out;
  store.export_tasks(queue,
                     [&](const storage::TaskImage& im) { out.push_back(im); });
  return out;
}

// Imports `images`, numbering them as lines 1, 2, ...; the error message,
// empty when it succeeded.
std::string import_all(TaskStore& store, Images images,
                       ErrorKind expected = ErrorKind::usage) {
  try {
    size_t next = 0;
    store.import_tasks([&](storage::TaskImage& out) {
      if (next == images.size()) {
        return false;
      }
      out = images[next++];
      out.line = static_cast<int64_t>(next);
      return true;
    });
  } catch (const Error& e) {
    CHECK(e.kind() == expected);
    return e.what();
  }
  return {};
}

bool same(const Images& a, const Images& b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const bool flow = a[i].flow.has_value();
    if (flow != b[i].flow.has_value()) {
      return false;
    }
    if (flow ? (a[i].flow->flow != b[i].flow->flow
                || a[i].flow->atoms != b[i].flow->atoms
                || a[i].flow->events != b[i].flow->events)
             : (a[i].task != b[i].task || a[i].errors != b[i].errors
                || a[i].events != b[i].events || a[i].deps != b[i].deps
                || a[i].deliveries != b[i].deliveries)) {
      return false;
    }
  }
  return true;
}

// Sets column `column` of `row` to `value` (JSON text), adding it if absent.
void set(storage::ImageRow& row, const std::string& column,
         const std::string& value) {
  for (auto& [name, v] : row) {
    if (name == column) {
      v = value;
      return;
    }
  }
  row.emplace_back(column, value);
}

const std::string* get(const storage::ImageRow& row, const std::string& col) {
  for (const auto& [name, v] : row) {
    if (name == col) {
      return &v;
    }
  }
  return nullptr;
}

// The index of flow `id`'s image.
size_t flow_at(const Images& images, int64_t id) {
  for (size_t i = 0; i < images.size(); ++i) {
    if (images[i].flow
        && *get(images[i].flow->flow, "id") == std::to_string(id)) {
      return i;
    }
  }
  FAIL("no flow " << id);
  return 0;
}

// The index of the task whose `flow` link names atom `atom` and is
// unfinished.
size_t atom_task_at(const Images& images, const std::string& atom) {
  for (size_t i = 0; i < images.size(); ++i) {
    const std::string* link =
        images[i].flow ? nullptr : get(images[i].task, "flow");
    if (link != nullptr && contains(*link, "\"atom\":\"" + atom + "\"")
        && *get(images[i].task, "state") == "\"runnable\"") {
      return i;
    }
  }
  FAIL("no unfinished task of atom " << atom);
  return 0;
}

} // namespace

TEST_CASE("export carries flows after the tasks, and an import of it into an "
          "empty database exports the same rows") {
  TempDb src;
  TaskStore store(src.path(), OpenMode::write);
  scene(store);
  CHECK(store.check().ok);
  const Images images = export_all(store);
  REQUIRE(images.size() == 7); // 5 tasks (a, b, a again, only, other), 2 flows
  CHECK_FALSE(images[4].flow);
  REQUIRE(images[5].flow);
  REQUIRE(images[6].flow);
  const auto& f1 = *images[5].flow;
  // The flow's row, then its document's, without their ids or version.
  REQUIRE(!f1.flow.empty());
  CHECK(f1.flow.front().first == "id");
  CHECK(f1.flow.back().first == "document");
  CHECK(get(f1.flow, "version") == nullptr);
  CHECK(get(f1.flow, "flow_id") == nullptr);
  CHECK(f1.atoms.size() == 3); // f_retry, a, b
  // flow_id is implied; an atom's task_id is its own column.
  CHECK(get(f1.atoms[0], "flow_id") == nullptr);
  CHECK(get(f1.atoms[0], "task_id") != nullptr);
  // `a` completed without a result (JSON null) before it was reverted
  // (nothing): the REVERTED event's result is JSON null, the RUNNING
  // event's nothing, left out.
  bool null_result = false;
  bool no_result = false;
  for (const auto& e : f1.events) {
    const std::string* r = get(e, "result");
    null_result = null_result || (r != nullptr && *r == "null");
    no_result = no_result || r == nullptr;
  }
  CHECK(null_result);
  CHECK(no_result);
  // A queue's export holds no flows.
  for (const auto& im : export_all(store, "q")) {
    CHECK_FALSE(im.flow);
  }

  TempDb dst;
  TaskStore copy(dst.path(), OpenMode::write);
  CHECK(import_all(copy, images).empty());
  CHECK(same(export_all(copy), images));
  CHECK(copy.check().ok);
  // The copy works on: ids continue after the imported ones, and the
  // imported flow steps when its atom's task ends.
  CHECK(copy.submit_flow(k_one, t0 + 1h, k_operator) == 3);
  finish(copy, "q", R"("x1")", t0 + 1h);
  finish(copy, "q", std::nullopt, t0 + 1h);
  CHECK(copy.find_flow(1)->state == "SUCCESS");
  CHECK(copy.check().ok);
}

TEST_CASE("import refuses a flow whose id is taken, as it does a task") {
  TempDb db;
  TaskStore store(db.path(), OpenMode::write);
  scene(store);
  Images flows;
  for (const auto& im : export_all(store)) {
    if (im.flow) {
      flows.push_back(im);
    }
  }
  CHECK(import_all(store, {flows[0]}, ErrorKind::conflict)
        == "line 1: flow 1 already exists");
}

TEST_CASE("import refuses a flow row that flow_store could not have written") {
  TempDb src;
  TaskStore store(src.path(), OpenMode::write);
  scene(store);
  const Images images = export_all(store);
  const size_t f = flow_at(images, 1);
  const std::string line = "line " + std::to_string(f + 1) + ": ";
  struct Case {
    const char* what;
    std::function<void(storage::TaskImage::Flow&)> change;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"an unknown column of the flow",
       [](auto& fl) { set(fl.flow, "colour", "1"); },
       "flow: unknown column 'colour'"},
      {"an unknown column of an atom",
       [](auto& fl) { set(fl.atoms[1], "colour", "1"); },
       "atoms: unknown column 'colour'"},
      {"a version, the mark of the step that wrote it",
       [](auto& fl) { set(fl.flow, "version", "7"); },
       "flow: unknown column 'version'"},
      {"no document",
       [](auto& fl) {
         std::erase_if(fl.flow,
                       [](const auto& c) { return c.first == "document"; });
       },
       "flow: 'document' is required"},
      {"an atom naming its flow",
       [](auto& fl) { set(fl.atoms[1], "flow_id", "1"); },
       "atoms: unknown column 'flow_id'"},
      {"an event with an id", [](auto& fl) { set(fl.events[0], "id", "1"); },
       "events: unknown column 'id'"},
      {"an unknown flow state",
       [](auto& fl) { set(fl.flow, "state", "\"Running\""); },
       "flow: 'state' must be a flow state (PENDING, RUNNING, ...)"},
      {"an unknown atom state",
       [](auto& fl) { set(fl.atoms[1], "state", "\"DONE\""); },
       "atoms: 'state' must be an atom state (PENDING, RUNNING, ...)"},
      {"an unknown intention",
       [](auto& fl) { set(fl.atoms[1], "intention", "\"LATER\""); },
       "atoms: 'intention' must be an intention (EXECUTE, IGNORE, REVERT or "
       "RETRY)"},
      {"an unknown event kind",
       [](auto& fl) { set(fl.events[0], "kind", "\"atom\""); },
       "events: 'kind' must be flow, task or retry"},
      {"a store that is not an object",
       [](auto& fl) { set(fl.flow, "store", "[1]"); },
       "flow: 'store' must be a JSON object"},
      {"a 'failed' that is not a flag",
       [](auto& fl) { set(fl.flow, "failed", "2"); },
       "flow: 'failed' must be 0 or 1"},
      {"a time out of range",
       [](auto& fl) { set(fl.events[0], "time", "253402300800000"); },
       "events: 'time' must be a time within years 0000-9999"},
      {"a history of the wrong shape",
       [](auto& fl) { set(fl.atoms[0], "history", "[1]"); },
       "atoms: 'history' must be an array of {\"value\": ..., \"failures\": "
       "{ATOM: ERROR}}"},
      {"a document that does not compile",
       [](auto& fl) {
         set(fl.flow, "document", R"("{\"name\": \"f\", \"atoms\": 3}")");
       },
       "flow: its 'document' does not compile: "},
      {"a name other than its document's",
       [](auto& fl) { set(fl.flow, "name", "\"g\""); },
       "flow: 'name' must be its document's name 'f'"},
      {"an atom missing", [](auto& fl) { fl.atoms.pop_back(); },
       "atoms: its document has 3 atoms (retry controllers included), one "
       "row each; there are 2"},
      {"atoms out of order",
       [](auto& fl) { std::swap(fl.atoms[1], fl.atoms[2]); },
       "atoms: row 2 must be node 1 of its document: task atom 'a', with no "
       "history"},
      {"a task atom with a history",
       [](auto& fl) { set(fl.atoms[1], "history", "[]"); },
       "atoms: row 2 must be node 1 of its document: task atom 'a', with no "
       "history"},
      {"a task atom RETRYING",
       [](auto& fl) { set(fl.atoms[1], "state", "\"RETRYING\""); },
       "flow 1: an atom's kind, state or intention is not one of TaskFlow's"},
      {"an event state that is not its kind's",
       [](auto& fl) { set(fl.events[0], "state", "\"REVERT_FAILURE\""); },
       "flow 1: an event's kind or state is not one of TaskFlow's"},
      {"a finished flow whose atom waits for a task",
       [](auto& fl) { set(fl.flow, "state", "\"SUSPENDED\""); },
       "flow 1: it is finished or SUSPENDED, yet an atom waits for a task"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    Images changed = images;
    c.change(*changed[f].flow);
    TempDb dst;
    TaskStore copy(dst.path(), OpenMode::write);
    const std::string error = import_all(copy, changed);
    CHECK(contains(error, c.error));
    CHECK(contains(error, "line "));
    CHECK(copy.find_flow(1) == std::nullopt);
    CHECK(export_all(copy).empty());
  }
  // The row checks name the flow's line.
  Images changed = images;
  set(changed[f].flow->flow, "colour", "1");
  TempDb dst;
  TaskStore copy(dst.path(), OpenMode::write);
  CHECK(import_all(copy, changed) == line + "flow: unknown column 'colour'");
}

TEST_CASE("import refuses an atom and a task that do not name each other") {
  TempDb src;
  TaskStore store(src.path(), OpenMode::write);
  scene(store);
  const Images images = export_all(store);
  const size_t f = flow_at(images, 1);
  const size_t t = atom_task_at(images, "a");
  const std::string flow_line = "line " + std::to_string(f + 1) + ": flow 1: ";
  const std::string task_line = "line " + std::to_string(t + 1) + ": task "
                                + *get(images[t].task, "id") + ": ";
  const std::string waits_for_other =
      "an atom waits for a task that is missing, finished, or whose 'flow' "
      "names another flow or atom";
  const std::string unanswered =
      "its 'flow' names an atom, but no atom waits for it";
  const auto import_changed = [](Images changed) {
    TempDb dst;
    TaskStore copy(dst.path(), OpenMode::write);
    const std::string error = import_all(copy, std::move(changed));
    CHECK(export_all(copy).empty());
    return error;
  };
  {
    INFO("the task's link names another atom");
    Images changed = images;
    set(changed[t].task, "flow",
        R"({"id":1,"atom":"b","action":"execute","args":{}})");
    CHECK(import_changed(changed) == flow_line + waits_for_other);
  }
  {
    INFO("the task's link names another flow");
    Images changed = images;
    set(changed[t].task, "flow",
        R"({"id":2,"atom":"a","action":"execute","args":{}})");
    CHECK(import_changed(changed) == flow_line + waits_for_other);
  }
  {
    INFO("the atom's task is finished");
    Images changed = images;
    set(changed[t].task, "state", "\"killed\"");
    CHECK(import_changed(changed) == flow_line + waits_for_other);
  }
  {
    INFO("the flows without their tasks");
    Images changed;
    for (const auto& im : images) {
      if (im.flow) {
        changed.push_back(im);
      }
    }
    CHECK(import_changed(changed) == "line 1: flow 1: " + waits_for_other);
  }
  {
    INFO("the atom waits for nothing");
    Images changed = images;
    for (auto& atom : changed[f].flow->atoms) {
      set(atom, "task_id", "null");
    }
    CHECK(import_changed(changed) == task_line + unanswered);
  }
  {
    INFO("a queue's export: the tasks without their flows");
    TempDb dst;
    TaskStore copy(dst.path(), OpenMode::write);
    const std::string error = import_all(copy, export_all(store, "q"));
    CHECK(contains(error, unanswered));
  }
  {
    INFO("a malformed link");
    for (const char* link :
         {R"({"id":1,"atom":"a"})", R"("x")",
          R"({"id":0,"atom":"a","action":"execute","args":{}})",
          R"({"id":1,"atom":"a","action":"undo","args":{}})",
          R"({"id":1,"atom":"a","action":"execute","args":[]})"}) {
      CAPTURE(link);
      Images changed = images;
      set(changed[t].task, "flow", link);
      CHECK(contains(import_changed(changed), "'flow' must be an object"));
    }
  }
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
