// The selection of tasks by a selector (storage/features/select.hpp),
// which reads (list, the web view's pages, top) and operators' messages,
// retries and purges share.
#include "storage/features/select.hpp"

#include "core/error.hpp"
#include "core/suggestion.hpp"
#include "storage/features/web_store.hpp"
#include "storage/model/rows.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage::detail {

namespace {

// The unleased, unblocked, non-broadcast tasks in tasks_ready; the index's
// own terms, spelled as in its WHERE (SQLite uses a partial index only
// for a query that repeats them).
constexpr const char* k_in_ready_index =
    " FROM tasks INDEXED BY tasks_ready WHERE lease_token IS NULL AND state "
    "IN ('runnable', 'sleeping') AND blockers = 0 AND broadcast_until IS NULL";
constexpr const char* k_in_leased_index =
    " FROM tasks INDEXED BY tasks_leased WHERE lease_token IS NOT NULL";

} // namespace

// The SQL of one state of a selector (`state` empty: every state), in id
// order, with `?4` its limit when `limited`: one query, or for `ready`
// and `runnable` several, one per partial index holding such tasks (an OR
// would cost the planner its indexes, and a scan reads every finished
// task), whose rows the caller merges. Conditions are added only when
// given, so the planner sees plain equalities it can look up in an index.
std::vector<SelectPart> select_sqls(const Selector& sel,
                                    const std::string& state, bool limited) {
  const std::string columns = join("SELECT ", k_task_columns);
  const std::string queue = sel.queue ? " AND queue = ?1" : " AND ?1 IS NULL";
  const std::string limit = limited ? " LIMIT ?4" : "";
  const std::string desc = sel.newest ? " DESC" : "";
  std::vector<SelectPart> out;
  // A part read from a partial index is sorted by `id + 0`: the same
  // order, but one the primary key cannot give, so that PostgreSQL's
  // planner reads the partial index and sorts its rows rather than walk
  // the primary key through every finished task hoping to meet `?4`
  // unfinished ones early (2.2x at 100,000 tasks). SQLite's INDEXED BY
  // already says which index.
  const auto part = [&](const std::string& from_where, bool binds_state) {
    const bool partial = from_where.find("INDEXED BY") != std::string::npos;
    out.push_back({columns + from_where + queue
                       + (partial ? " ORDER BY id + 0" : " ORDER BY id") + desc
                       + limit,
                   binds_state});
  };
  constexpr const char* due_unblocked =
      " AND state IN ('runnable', 'sleeping') AND blockers = 0 AND "
      "broadcast_until IS NULL AND run_at <= ?2";
  if (state == "running") {
    // Running tasks are read from the index of leases, never a scan of
    // every task, with or without a queue.
    part(std::string(k_in_leased_index)
             + " AND state = 'runnable' AND lease_expires > ?2",
         false);
  } else if (state == "ready") {
    part(std::string(k_in_ready_index) + " AND run_at <= ?2", false);
    part(std::string(k_in_leased_index) + " AND lease_expires <= ?2"
             + due_unblocked,
         false);
  } else if (state == "runnable") {
    // Unleased ones are in tasks_ready, tasks_broadcast or tasks_waiting
    // by kind; leased ones in tasks_leased (a task in two is merged).
    constexpr const char* runnable =
        " AND state = 'runnable' AND ?2 IS NOT NULL";
    part(std::string(k_in_ready_index) + runnable, false);
    part(std::string(k_in_leased_index) + runnable, false);
    part(std::string(" FROM tasks INDEXED BY tasks_broadcast WHERE "
                     "broadcast_until IS NOT NULL")
             + runnable,
         false);
    part(std::string(" FROM tasks INDEXED BY tasks_waiting WHERE blockers > 0")
             + runnable,
         false);
  } else if (state == "erred") {
    // Tasks whose latest error is no older than their latest lease: their
    // last attempt failed, whatever their state (a sleeping one the error
    // policy will retry, a failed one, one killed since); not one that
    // completed or is running again. Read from the tasks with errors.
    part(" FROM tasks WHERE id IN (SELECT task_id FROM task_errors) AND "
         "state <> 'completed' AND (lease_token IS NULL OR lease_expires <= "
         "?2) AND NOT EXISTS (SELECT 1 FROM events v WHERE v.task_id = "
         "tasks.id AND v.message = 'lease' AND v.time > (SELECT MAX(e.time) "
         "FROM task_errors e WHERE e.task_id = tasks.id))",
         false);
  } else if (!state.empty()) {
    // The literal term lets the planner use the partial tasks_settled.
    part(" FROM tasks WHERE state = ?3 AND state <> 'runnable' AND ?2 IS NOT "
         "NULL",
         true);
  } else {
    part(" FROM tasks WHERE ?2 IS NOT NULL", false);
  }
  return out;
}

// One walk back through the task's lease, freeze and continue events in
// events_task per leased task.
void load_lease_starts(Db& db, std::vector<Task>& tasks) {
  std::optional<Statement> st;
  for (Task& t : tasks) {
    if (!t.lease) {
      continue;
    }
    if (!st) {
      st.emplace(db, "SELECT message, time FROM events WHERE task_id = ?1 "
                     "AND message IN ('lease', 'freeze', 'continue') ORDER "
                     "BY id DESC");
    }
    st->bind(1, t.id);
    // The continue after the freeze read next, if any (0: none).
    int64_t continued = 0;
    for (bool latest = true; st->step(); latest = false) {
      const std::string message = st->get_text(0);
      const int64_t time = st->get_int(1);
      if (message == "lease") {
        t.lease_started = core::from_unix_ms(time);
        break;
      }
      if (message == "continue") {
        continued = time;
      } else if (latest) {
        t.frozen = true; // as k_frozen_sql says
        t.frozen_since = core::from_unix_ms(time);
      } else if (continued != 0) {
        t.frozen_for += core::Millis(continued - time);
        continued = 0;
      }
    }
    st->reset();
  }
}

void check_states(const std::vector<std::string>& states, bool erred_ok) {
  for (const auto& state : states) {
    if (state == "erred" && !erred_ok) {
      throw Error(ErrorKind::usage,
                  "--state erred is for list only: name the tasks' states "
                  "(" + core::suggest({"list", "--state", "erred"})
                      + " shows which they are)");
    }
    if (!core::parse_state(state) && state != "running" && state != "ready"
        && state != "erred") {
      throw Error(ErrorKind::usage,
                  "unknown state '" + state
                      + "': expected runnable, sleeping, paused, completed, "
                        "failed, killed, running, ready"
                      + (erred_ok ? ", erred" : ""));
    }
  }
}

std::vector<Task> select_tasks(Db& db, const Selector& sel, Time now,
                               bool erred_ok) {
  check_page_only(sel); // a page's fields: TaskStore::task_page
  std::vector<Task> out;
  if (!sel.ids.empty()) {
    std::vector<int64_t> seen;
    for (int64_t id : sel.ids) {
      if (std::find(seen.begin(), seen.end(), id) == seen.end()) {
        seen.push_back(id);
        out.push_back(load_full(db, id));
      }
    }
    return out;
  }
  check_states(sel.states, erred_ok);
  // One query per state, each in id order through its own index and cut at
  // the limit, then merged: an OR of states would cost the planner its
  // indexes.
  std::vector<std::string> states = sel.states;
  std::sort(states.begin(), states.end());
  states.erase(std::unique(states.begin(), states.end()), states.end());
  if (states.empty()) {
    states.emplace_back();
  }
  const bool limit_in_sql = sel.match.empty() && sel.limit;
  size_t parts = 0;
  for (const auto& state : states) {
    for (const SelectPart& part : select_sqls(sel, state, limit_in_sql)) {
      ++parts;
      Statement st(db, part.sql);
      st.bind(1, sel.queue).bind(2, to_unix_ms(now));
      if (part.binds_state) {
        st.bind(3, state);
      }
      if (limit_in_sql) {
        st.bind(4, *sel.limit);
      }
      int64_t taken = 0;
      while (st.step()) {
        Task t = read_task(st);
        if (!core::matches(t.labels, sel.match)) {
          continue;
        }
        out.push_back(std::move(t));
        if (sel.limit && ++taken >= *sel.limit) {
          break;
        }
      }
    }
  }
  if (parts > 1) {
    std::sort(out.begin(), out.end(), [&sel](const Task& a, const Task& b) {
      return sel.newest ? a.id > b.id : a.id < b.id;
    });
    // `running` and `runnable` (or `ready` and a state, or two indexes
    // of one state) can both hold a task.
    out.erase(
        std::unique(out.begin(), out.end(),
                    [](const Task& a, const Task& b) { return a.id == b.id; }),
        out.end());
    if (sel.limit && static_cast<int64_t>(out.size()) > *sel.limit) {
      out.resize(static_cast<size_t>(*sel.limit));
    }
  }
  for (Task& t : out) {
    t.errors = load_errors(db, t.id);
  }
  load_lease_starts(db, out);
  return out;
}

} // namespace taskq::storage::detail
