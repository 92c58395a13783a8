// TaskStore: the snapshot `taskq top` draws (queues, unfinished tasks,
// recent failures), read in one transaction so that its panes agree.
#include "storage/features/queue_store.hpp"
#include "storage/features/select.hpp"
#include "storage/model/rows.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;

namespace {

// The task columns, then when its latest lease began and its latest
// error.
std::string top_task_select(std::string_view where_order) {
  return join(
      join(join("SELECT ", k_task_columns),
           ", (SELECT max(e.time) FROM events e WHERE e.task_id = tasks.id "
           "AND e.message = 'lease'), "
           "(SELECT r.message FROM task_errors r WHERE r.task_id = tasks.id "
           "ORDER BY r.time DESC LIMIT 1) FROM tasks "),
      where_order);
}

// The running ones (`running`) get their lease's start and freezes as
// list and show load them (load_lease_starts), so that a frozen command's
// time stops in top too.
std::vector<TopTask> read_top_tasks(Db& db, Statement& st, bool running) {
  std::vector<TopTask> out;
  while (st.step()) {
    TopTask t;
    t.task = read_task(st);
    const auto at = st.get_opt_int(k_task_column_count);
    if (!running && at && core::is_terminal(t.task.state)) {
      t.task.lease_started = core::from_unix_ms(*at); // its last attempt's
    }
    t.last_error = st.get_opt_text(k_task_column_count + 1);
    out.push_back(std::move(t));
  }
  if (running) {
    std::vector<core::Task> tasks;
    tasks.reserve(out.size());
    for (TopTask& t : out) {
      tasks.push_back(std::move(t.task));
    }
    load_lease_starts(db, tasks);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].task = std::move(tasks[i]);
      out[i].leased_at = out[i].task.lease_started;
    }
  }
  return out;
}

} // namespace

TopView TaskStore::top_view(Time now, int64_t limit) {
  Transaction tx(*m_db, Transaction::Kind::read);
  TopView view;

  // Queues: those with tasks (their counts), and those with only settings
  // (a queue paused before its first task is still worth seeing).
  std::map<std::string, TopQueue> queues;
  for (QueueStats& s : read_stats(*m_db, std::nullopt, now)) {
    std::string name = s.queue;
    queues[name].stats = std::move(s);
  }
  {
    Statement st(*m_db, "SELECT name, paused FROM queues");
    while (st.step()) {
      TopQueue& q = queues[st.get_text(0)];
      q.stats.queue = st.get_text(0);
      q.paused = st.get_int(1) != 0;
    }
  }
  for (auto& [name, q] : queues) {
    view.queues.push_back(std::move(q));
  }

  const int64_t now_ms = to_unix_ms(now);
  {
    Statement st(
        *m_db,
        top_task_select("WHERE state = 'runnable' AND lease_token IS NOT "
                        "NULL AND lease_expires > ?1 ORDER BY id LIMIT ?2"));
    st.bind(1, now_ms).bind(2, limit);
    view.tasks = read_top_tasks(*m_db, st, true);
  }
  {
    Statement st(*m_db,
                 top_task_select("WHERE state IN ('runnable', 'sleeping', "
                                 "'paused') AND (lease_token IS NULL OR "
                                 "lease_expires <= ?1) ORDER BY id DESC "
                                 "LIMIT ?2"));
    st.bind(1, now_ms).bind(2, limit);
    for (TopTask& t : read_top_tasks(*m_db, st, false)) {
      view.tasks.push_back(std::move(t));
    }
  }
  {
    // Sorting by the time they failed reads every failed task (there is no
    // index on updated_at): purged as they should be, they are few.
    Statement st(*m_db, top_task_select("WHERE state = 'failed' ORDER BY "
                                        "updated_at DESC, id DESC LIMIT ?1"));
    st.bind(1, limit);
    view.failures = read_top_tasks(*m_db, st, false);
    // Their error histories: the error that failed each, not the policy's
    // own last word.
    for (TopTask& t : view.failures) {
      t.task.errors = load_errors(*m_db, t.task.id);
    }
  }
  return view;
}

} // namespace taskq::storage
