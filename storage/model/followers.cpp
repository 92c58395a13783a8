// What follows a task's end (the state writer's move into a terminal
// state): its dependents, the gates its trigger covers, the label index.
#include "storage/model/followers.hpp"

#include "core/new_task.hpp"
#include "storage/features/add_store.hpp"
#include "storage/features/flow_store.hpp"
#include "storage/model/locks.hpp"
#include "storage/model/rows.hpp"
#include "storage/model/state_writer.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;

namespace detail {

Deps check_deps(Db& db, const std::vector<int64_t>& after) {
  Deps deps;
  if (after.empty()) {
    return deps; // nothing to read: no statement prepared
  }
  // Each dependency's row is held (shared) until this add commits, in
  // id order: a done, fail or kill of it waits for the commit, and then
  // finds the new task among its dependents to wake or pause; one that
  // came first is seen ended here. Unheld, a dependency ending while the
  // add is in flight would leave the new task blocked for ever.
  share_tasks(db, after);
  Statement st(db, "SELECT state FROM tasks WHERE id = ?1");
  for (const int64_t dep : after) {
    st.bind(1, dep);
    if (!st.step()) {
      throw Error(ErrorKind::not_found, "no " + task_ref(dep) + " (--after)");
    }
    const TaskState state =
        core::parse_state(st.get_text(0)).value_or(TaskState::runnable);
    st.reset();
    if (state == TaskState::completed) {
      continue;
    }
    if (core::is_terminal(state)) {
      if (!deps.broken) {
        deps.broken.emplace(dep, state);
      }
    } else if (std::find(deps.unfinished.begin(), deps.unfinished.end(), dep)
               == deps.unfinished.end()) {
      deps.unfinished.push_back(dep);
    }
  }
  return deps;
}

// A completed task with `--trigger k1,k2` covers each of its keys on every
// gate that has it; a gate with all its keys covered emits its task (once,
// however many of its keys this task covered) and re-arms.
void cover_gates(Db& db, const std::string& trigger, Time now) {
  const std::string normal = core::normal_trigger(trigger);
  const std::vector<std::string> mine = core::trigger_keys(normal);
  std::vector<std::tuple<std::string, std::vector<std::string>,
                         std::vector<std::string>>>
      touched;
  {
    // In byte order on both backends, so that the gates a trigger fills
    // emit their tasks (and take their ids) in the same order.
    // Locked (PostgreSQL), so that two triggers completing at once cover
    // a gate one after the other, each seeing the other's keys.
    Statement st(db, join(join("SELECT name, keys, covered FROM gates ORDER "
                               "BY name",
                               db.dialect().bytewise()),
                          row_lock(db, " FOR UPDATE")));
    while (st.step()) {
      auto keys = strings_from_json(st.get_text(1));
      const bool has = std::any_of(mine.begin(), mine.end(), [&](auto& key) {
        return std::binary_search(keys.begin(), keys.end(), key);
      });
      if (has) {
        touched.emplace_back(st.get_text(0), std::move(keys),
                             strings_from_json(st.get_text(2)));
      }
    }
  }
  for (auto& [name, keys, covered] : touched) {
    for (const auto& key : mine) {
      if (std::binary_search(keys.begin(), keys.end(), key)
          && !std::binary_search(covered.begin(), covered.end(), key)) {
        covered.insert(std::upper_bound(covered.begin(), covered.end(), key),
                       key);
      }
    }
    if (covered != keys) {
      Statement(db, "UPDATE gates SET covered = ?2 WHERE name = ?1")
          .bind(1, name)
          .bind(2, nlohmann::json(covered).dump())
          .run();
      continue;
    }
    NewTask emit;
    {
      Statement st(db, "SELECT queue, payload, labels, priority FROM gates "
                       "WHERE name = ?1");
      st.bind(1, name);
      st.step();
      emit.queue = st.get_text(0);
      emit.payload = st.get_text(1);
      emit.labels = labels_from_json(st.get_opt_text(2));
      emit.priority = st.get_int(3);
    }
    const int64_t id = insert_task(db, emit, now, "gate:" + name);
    Statement(db, "UPDATE tasks SET gate = ?2 WHERE id = ?1")
        .bind(1, id)
        .bind(2, name)
        .run();
    Statement(db, "UPDATE gates SET covered = '[]', emitted = emitted + 1, "
                  "last_task = ?2 WHERE name = ?1")
        .bind(1, name)
        .bind(2, id)
        .run();
  }
}

void settle_finished(Db& db, int64_t id, TaskState state, Time now) {
  core::Labels labels;
  std::optional<std::string> trigger;
  std::optional<std::string> flow;
  {
    Statement st(db,
                 "SELECT labels, trigger_key, flow FROM tasks WHERE id = ?1");
    st.bind(1, id);
    st.step();
    labels = labels_from_json(st.get_opt_text(0));
    trigger = st.get_opt_text(1);
    flow = st.get_opt_text(2);
  }
  settle_finished(db, id, labels, trigger, std::move(flow), state, now);
}

void settle_finished(Db& db, int64_t id, const core::Labels& labels,
                     const std::optional<std::string>& trigger,
                     std::optional<std::string> flow, TaskState state, Time now,
                     bool waited_for) {
  if (flow) {
    // Its flow steps once the task's end is written whole (its reason,
    // its last error), just before the transaction commits.
    db.defer([&db, id, flow = std::move(*flow), state, now] {
      lock_flow(db, flow);
      flow_task_ended(db, id, flow, state, now);
    });
  }
  if (!labels.empty()) {
    Statement drop(db, "DELETE FROM task_labels WHERE key = ?1 AND value = ?2 "
                       "AND task_id = ?3");
    for (const auto& [key, value] : labels) {
      drop.bind(1, key).bind(2, value).bind(3, id);
      drop.run();
      drop.reset();
    }
  }
  // Dependents still waiting: one fewer to wait for, or, when this one did
  // not complete, paused for an operator to decide.
  std::vector<std::pair<int64_t, TaskState>> waiting;
  if (waited_for) {
    Statement st(db, "SELECT t.id, t.state FROM task_deps d JOIN tasks t "
                     "ON t.id = d.task_id WHERE d.dep_id = ?1 "
                     "AND t.blockers > 0 ORDER BY t.id"
                         + std::string(row_lock(db, " FOR UPDATE OF t")));
    st.bind(1, id);
    while (st.step()) {
      waiting.emplace_back(
          st.get_int(0),
          core::parse_state(st.get_text(1)).value_or(TaskState::runnable));
    }
  }
  for (const auto& [dependent, dep_state] : waiting) {
    if (state == TaskState::completed) {
      db.wake_soon(); // the dependent may be ready now
      Statement(db, "UPDATE tasks SET blockers = blockers - 1, "
                    "rev = rev + 1, updated_at = ?2 WHERE id = ?1")
          .bind(1, dependent)
          .bind(2, to_unix_ms(now))
          .run();
      continue;
    }
    StateChange pause(dependent, dep_state, core::SystemMove::dependency_broken,
                      k_system_actor, broken_dep_reason(id, state));
    pause.also.add("blockers = 0").set("reason", pause.detail);
    move_task(db, pause, now);
  }
  if (state == TaskState::completed && trigger) {
    cover_gates(db, *trigger, now);
  }
}

} // namespace detail

} // namespace taskq::storage
