// Flows in export and import (storage/features/transfer_store.cpp): a flow
// travels as its rows, byte for byte; import refuses what flow_store
// could not have written and what db check flags.
#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "flow_scene.hpp"
#include "store_helpers.hpp"
#include "temp_db.hpp"

using namespace taskq;
using namespace taskq::test;

namespace {

using Images = std::vector<storage::TaskImage>;

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
