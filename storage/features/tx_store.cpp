// TaskStore::apply_tx: MassTasker's atomic Update (`taskq tx`). Predicates,
// deletes, updates, completes and creates of one document in one write
// transaction, checked in the order
// doc/reference/commands.md#tx-atomic-multi-task-updates gives before anything
// changes.
#include "storage/features/tx_store.hpp"

#include "core/error.hpp"
#include "core/reconnect.hpp"
#include "storage/features/add_store.hpp"
#include "storage/features/worker_store.hpp"
#include "storage/model/locks.hpp"
#include "storage/model/rows.hpp"
#include "storage/model/state_writer.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <map>
#include <string>

namespace taskq::storage {

using namespace detail;

namespace detail {

// Deletes a task with its errors, events, dependency links, deliveries
// and output; an unfinished one first ends as killed, so what waits for
// it is paused rather than left waiting. Its row is locked first, so
// output written in another transaction (write_output) is either seen
// and deleted here or written after, finding no task.
void delete_task(Db& db, const Task& t, Time now) {
  lock_task(db, t.id);
  if (!core::is_terminal(t.state)) {
    if (t.lease && !t.leased(now)) {
      bump_queue_counter(db, t.queue, QueueCounter::leases_expired);
    }
    move_task(db, {t.id, t.state, core::SystemMove::deleted, k_system_actor},
              now);
  }
  for (const char* sql :
       {"DELETE FROM task_errors WHERE task_id = ?1",
        "DELETE FROM events WHERE task_id = ?1",
        "DELETE FROM task_deps WHERE task_id = ?1 OR dep_id = ?1",
        "DELETE FROM deliveries WHERE task_id = ?1",
        "DELETE FROM task_output WHERE task_id = ?1",
        "DELETE FROM tasks WHERE id = ?1"}) {
    Statement(db, sql).bind(1, t.id).run();
  }
}

} // namespace detail

namespace {

// How errors name an operation: `update[1]: ...`.
std::string op_name(const char* list, size_t index) {
  return std::string(list) + "[" + std::to_string(index) + "]";
}

// Runs `body`, prefixing the message of any Error it throws with `op`.
template <typename Body> auto as_op(const std::string& op, Body body) {
  try {
    return body();
  } catch (const TxConflict&) {
    throw; // the whole document runs again (retrying())
  } catch (const ConnectionLost&) {
    throw; // a waiting command connects again
  } catch (const Error& e) {
    throw Error(e.kind(), op + ": " + e.what());
  }
}

// Refuses a task named by more than one of delete, update and complete, or
// twice by one: which change would win is not clear.
void check_distinct(const TxRequest& req) {
  std::map<int64_t, std::string> seen;
  const auto claim = [&](int64_t id, const std::string& op) {
    const auto [it, fresh] = seen.emplace(id, op);
    if (!fresh) {
      throw Error(ErrorKind::usage, op + ": " + task_ref(id)
                                        + " is already changed by "
                                        + it->second);
    }
  };
  for (size_t i = 0; i < req.remove.size(); ++i) {
    claim(req.remove[i].id, op_name("delete", i));
  }
  for (size_t i = 0; i < req.update.size(); ++i) {
    claim(req.update[i].id, op_name("update", i));
  }
  for (size_t i = 0; i < req.complete.size(); ++i) {
    claim(req.complete[i].id, op_name("complete", i));
  }
}

Task must_exist(Db& db, int64_t id, const std::string& op) {
  auto t = load_task(db, id);
  if (!t) {
    throw Error(ErrorKind::not_found, op + ": no " + task_ref(id));
  }
  return std::move(*t);
}

// The fields an update names, for its event's detail.
std::string changed_fields(const TxUpdate& u) {
  std::string out;
  const auto add = [&](bool set, const char* name) {
    if (set) {
      out += out.empty() ? "" : ", ";
      out += name;
    }
  };
  add(u.payload.has_value(), "payload");
  add(u.labels.has_value(), "labels");
  add(u.queue.has_value(), "queue");
  add(u.run_at.has_value(), "run_at");
  add(u.priority.has_value(), "priority");
  return out.empty() ? "nothing" : out;
}

void update_task(Db& db, const Task& t, const TxUpdate& u, Time now,
                 const std::string& actor) {
  Statement st(db, "UPDATE tasks SET payload = coalesce(?2, payload), "
                   "labels = CASE WHEN ?3 = 1 THEN ?4 ELSE labels END, "
                   "queue = coalesce(?5, queue), "
                   "run_at = coalesce(?6, run_at), "
                   "priority = coalesce(?7, priority), "
                   "rev = rev + 1, updated_at = ?8 WHERE id = ?1");
  st.bind(1, t.id).bind(2, u.payload).bind(3, u.labels ? 1 : 0);
  if (u.labels && !u.labels->empty()) {
    st.bind(4, labels_to_json(*u.labels));
  } else {
    st.bind_null(4);
  }
  st.bind(5, u.queue)
      .bind(6, u.run_at ? std::optional(to_unix_ms(*u.run_at)) : std::nullopt)
      .bind(7, u.priority)
      .bind(8, to_unix_ms(now));
  st.run();
  if (u.labels) {
    // The label index holds the labels of unfinished tasks (roots).
    Statement(db, "DELETE FROM task_labels WHERE task_id = ?1")
        .bind(1, t.id)
        .run();
    Statement add(db, "INSERT INTO task_labels (key, value, task_id) "
                      "VALUES (?1, ?2, ?3)");
    for (const auto& [key, value] : *u.labels) {
      add.bind(1, key).bind(2, value).bind(3, t.id);
      add.run();
      add.reset();
    }
  }
  log_event(db, t.id, now, "update", t.state, t.state, actor,
            changed_fields(u));
}

} // namespace

TxResult TaskStore::apply_tx(const TxRequest& req, Time now,
                             const std::string& actor) {
  check_distinct(req);
  return retrying([&]() -> TxResult {
    Transaction tx(*m_db);
    now = locked_now(now);
    // 0. The tasks the document names are locked, in id order (so that two
    // documents naming the same tasks never wait for each other in a
    // circle), and stay as checked until the commit (PostgreSQL).
    {
      std::vector<int64_t> named;
      for (const auto& r : req.require) {
        named.push_back(r.id);
      }
      for (const auto& r : req.remove) {
        named.push_back(r.id);
      }
      for (const auto& u : req.update) {
        named.push_back(u.id);
      }
      for (const auto& c : req.complete) {
        named.push_back(c.id);
      }
      for (const auto& c : req.create) {
        named.insert(named.end(), c.after.begin(), c.after.end());
      }
      std::sort(named.begin(), named.end());
      named.erase(std::unique(named.begin(), named.end()), named.end());
      for (const int64_t id : named) {
        lock_task(*m_db, id);
      }
    }
    // 1. Predicates.
    for (size_t i = 0; i < req.require.size(); ++i) {
      const auto& r = req.require[i];
      const auto t = load_task(*m_db, r.id);
      if (!t) {
        throw Error(ErrorKind::conflict, op_name("require", i) + ": "
                                             + task_ref(r.id)
                                             + " does not exist");
      }
      if (t->rev != r.rev) {
        throw Error(ErrorKind::conflict, op_name("require", i) + ": "
                                             + task_ref(r.id) + " is at rev "
                                             + std::to_string(t->rev) + ", not "
                                             + std::to_string(r.rev));
      }
    }
    // 2. Existence.
    std::vector<Task> deleting;
    std::vector<Task> updating;
    for (size_t i = 0; i < req.remove.size(); ++i) {
      deleting.push_back(
          must_exist(*m_db, req.remove[i].id, op_name("delete", i)));
    }
    for (size_t i = 0; i < req.update.size(); ++i) {
      updating.push_back(
          must_exist(*m_db, req.update[i].id, op_name("update", i)));
    }
    for (size_t i = 0; i < req.complete.size(); ++i) {
      must_exist(*m_db, req.complete[i].id, op_name("complete", i));
    }
    for (size_t i = 0; i < req.create.size(); ++i) {
      for (const int64_t dep : req.create[i].after) {
        must_exist(*m_db, dep, op_name("create", i));
      }
    }
    // 3. Revisions and leases.
    for (size_t i = 0; i < req.update.size(); ++i) {
      const Task& t = updating[i];
      const std::string op = op_name("update", i);
      if (t.rev != req.update[i].rev) {
        throw Error(ErrorKind::conflict,
                    op + ": " + task_ref(t.id) + " is at rev "
                        + std::to_string(t.rev) + ", not "
                        + std::to_string(req.update[i].rev));
      }
      if (core::is_terminal(t.state)) {
        throw Error(ErrorKind::conflict,
                    op + ": cannot update " + task_ref(t.id) + ": it is "
                        + std::string(core::to_string(t.state)));
      }
    }
    for (size_t i = 0; i < req.remove.size(); ++i) {
      const Task& t = deleting[i];
      const std::string op = op_name("delete", i);
      if (req.remove[i].lease) {
        as_op(op, [&] {
          return require_lease(*m_db, t.id, *req.remove[i].lease, now);
        });
      } else if (t.leased(now)) {
        throw Error(ErrorKind::conflict,
                    op + ": " + task_ref(t.id) + " is leased by "
                        + t.lease->worker
                        + "; give its lease token to delete "
                          "it");
      }
    }
    // (A complete's lease is checked as it completes, below: its token may
    // also be a broadcast delivery's.)
    // 4. The changes.
    for (const Task& t : deleting) {
      delete_task(*m_db, t, now);
    }
    TxResult out;
    for (size_t i = 0; i < req.update.size(); ++i) {
      update_task(*m_db, updating[i], req.update[i], now, actor);
    }
    for (size_t i = 0; i < req.complete.size(); ++i) {
      const auto& c = req.complete[i];
      as_op(op_name("complete", i), [&] {
        return complete_leased(*m_db, c.id, c.lease, c.result, now, {});
      });
    }
    for (size_t i = 0; i < req.create.size(); ++i) {
      out.created.push_back(as_op(op_name("create", i), [&] {
        return insert_task(*m_db, req.create[i], now, actor);
      }));
    }
    for (const Task& t : updating) {
      // Read back: a delete in this document may have changed it again.
      out.updated.emplace_back(t.id, load_task(*m_db, t.id)->rev);
    }
    tx.commit();
    return out;
  });
}

} // namespace taskq::storage
