// The state writer (state_writer.hpp): every write of a task's state after
// its INSERT.
#include "storage/model/state_writer.hpp"

#include "core/error.hpp"
#include "storage/model/followers.hpp"
#include "storage/model/rows.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace taskq::storage::detail {

namespace {

// "cannot <message> task N: it is <state>", as refusal() says it.
[[noreturn]] void refuse(int64_t id, core::TaskState from, const Cause& cause) {
  throw Error(ErrorKind::conflict, "cannot " + std::string(event_message(cause))
                                       + " " + task_ref(id) + ": it is "
                                       + std::string(core::to_string(from)));
}

std::string quoted(core::TaskState s) {
  return "'" + std::string(core::to_string(s)) + "'";
}

} // namespace

std::optional<TaskState> next_state(TaskState from, const Cause& cause) {
  if (const auto* msg = std::get_if<Message>(&cause)) {
    return core::transition(from, *msg);
  }
  return core::system_move(from, std::get<core::SystemMove>(cause));
}

std::string_view event_message(const Cause& cause) {
  if (const auto* msg = std::get_if<Message>(&cause)) {
    return core::to_string(*msg);
  }
  return core::event_message(std::get<core::SystemMove>(cause));
}

// ---------------------------------------------------------------------------
// Assignments
// ---------------------------------------------------------------------------

Assignments& Assignments::set(std::string_view column,
                              std::optional<std::string> value) {
  if (value) {
    m_values.emplace_back(std::move(*value));
  } else {
    m_values.emplace_back();
  }
  m_sql +=
      ", " + std::string(column) + " = ?" + std::to_string(m_values.size() + 3);
  return *this;
}

Assignments& Assignments::set(std::string_view column,
                              std::optional<int64_t> value) {
  if (value) { // not a ?: of two Values: GCC 12 warns of an uninitialised
               // string (-Wmaybe-uninitialized) at -O2
    m_values.emplace_back(*value);
  } else {
    m_values.emplace_back();
  }
  m_sql +=
      ", " + std::string(column) + " = ?" + std::to_string(m_values.size() + 3);
  return *this;
}

Assignments& Assignments::set_null(std::string_view column) {
  return add(std::string(column) + " = NULL");
}

Assignments& Assignments::add(std::string_view assignment) {
  m_sql += ", ";
  m_sql += assignment;
  return *this;
}

Assignments& Assignments::end_lease() {
  return add("lease_token = NULL, lease_worker = NULL, lease_expires = NULL");
}

Assignments&
Assignments::end_lease(const core::Task& task,
                       const std::optional<std::string>& revoked_by) {
  end_lease();
  if (revoked_by && task.lease) {
    set("revoked_token", task.lease->token);
    set("revoked_reason", *revoked_by);
  }
  return *this;
}

void Assignments::bind(Statement& st) const {
  int index = 4;
  for (const Value& v : m_values) {
    if (const auto* i = std::get_if<int64_t>(&v)) {
      st.bind(index, *i);
    } else if (const auto* s = std::get_if<std::string>(&v)) {
      st.bind(index, *s);
    } else {
      st.bind_null(index);
    }
    ++index;
  }
}

// ---------------------------------------------------------------------------
// Guard
// ---------------------------------------------------------------------------

Guard& Guard::equals(std::string_view column, std::string value) {
  m_conditions.push_back({std::string(column), "=", std::move(value)});
  return *this;
}

Guard& Guard::greater(std::string_view column, int64_t value) {
  m_conditions.push_back({std::string(column), ">", value});
  return *this;
}

Guard& Guard::is_null(std::string_view column) {
  m_conditions.push_back({std::string(column), "IS NULL", std::monostate{}});
  return *this;
}

std::string Guard::sql(int first) const {
  std::string out;
  for (const Condition& c : m_conditions) {
    out += " AND " + c.column + " " + std::string(c.op);
    if (!std::holds_alternative<std::monostate>(c.value)) {
      out += " ?" + std::to_string(first++);
    }
  }
  return out;
}

void Guard::bind(Statement& st, int first) const {
  for (const Condition& c : m_conditions) {
    if (const auto* i = std::get_if<int64_t>(&c.value)) {
      st.bind(first++, *i);
    } else if (const auto* s = std::get_if<std::string>(&c.value)) {
      st.bind(first++, *s);
    }
  }
}

// ---------------------------------------------------------------------------
// One task
// ---------------------------------------------------------------------------

namespace {

// The state `change` moves its task to; refused (conflict) where the
// tables do not allow it.
TaskState allowed_next(const StateChange& change) {
  const auto to = next_state(change.from, change.cause);
  if (!to) {
    refuse(change.id, change.from, change.cause);
  }
  return *to;
}

// What follows a move's UPDATE: the followers of its end when it ends
// (from `known`, the task's labels, trigger and flow, when the caller has
// it; else they are read), then its event (none for a move whose table
// gives no event message).
void followed_and_logged(Db& db, const StateChange& change, TaskState to,
                         const core::Task* known, bool waited_for, Time now) {
  if (core::is_terminal(to)) {
    if (known != nullptr) {
      settle_finished(db, change.id, known->labels, known->trigger, known->flow,
                      to, now, waited_for);
    } else {
      settle_finished(db, change.id, to, now);
    }
  }
  const std::string_view message = event_message(change.cause);
  if (!message.empty()) {
    log_event(db, change.id, now, message, change.from, to, change.actor,
              change.detail);
  }
}

// A task moved to runnable or sleeping may be work for a waiting worker
// now or at its run_at: the commit wakes the workers soon
// (Db::wake_soon).
void wake_if_ready(Db& db, TaskState to) {
  if (to == TaskState::runnable || to == TaskState::sleeping) {
    db.wake_soon();
  }
}

} // namespace

TaskState move_task(Db& db, const StateChange& change, Time now) {
  const auto to = allowed_next(change);
  wake_if_ready(db, to);
  Statement st(db, "UPDATE tasks SET state = ?2, rev = rev + 1, updated_at = "
                   "?3" + change.also.sql()
                       + " WHERE id = ?1");
  st.bind(1, change.id).bind(2, core::to_string(to)).bind(3, to_unix_ms(now));
  change.also.bind(st);
  st.run();
  followed_and_logged(db, change, to, change.known, change.waited_for, now);
  return to;
}

std::optional<Moved> move_task_if(Db& db, const StateChange& change,
                                  const Guard& guard, Time now) {
  const auto to = allowed_next(change);
  // The state it leaves is in the WHERE: RETURNING gives the row's new
  // values only (PostgreSQL before 18 has no OLD there), so the event's
  // `from` is the one state the guard let through.
  const int first = 4 + change.also.count();
  Moved out;
  bool has_errors = false;
  {
    Statement st(db,
                 "UPDATE tasks SET state = ?2, rev = rev + 1, "
                 "updated_at = ?3"
                     + change.also.sql() + " WHERE id = ?1 AND state = "
                     + quoted(change.from) + guard.sql(first)
                     + join(join(" RETURNING ", k_task_columns), k_task_flags));
    st.bind(1, change.id).bind(2, core::to_string(to)).bind(3, to_unix_ms(now));
    change.also.bind(st);
    guard.bind(st, first);
    if (!st.step()) {
      return std::nullopt;
    }
    out.task = read_task(st);
    has_errors = st.get_int(k_task_column_count) != 0;
    out.waited_for = st.get_int(k_task_column_count + 1) != 0;
  }
  if (has_errors) {
    out.task.errors = load_errors(db, change.id);
  }
  wake_if_ready(db, to);
  followed_and_logged(db, change, to, &out.task, out.waited_for, now);
  return out;
}

TaskState record_move(Db& db, const StateChange& change, Time now) {
  const auto to = allowed_next(change);
  wake_if_ready(db, to);
  log_event(db, change.id, now, event_message(change.cause), change.from, to,
            change.actor, change.detail);
  return to;
}

// ---------------------------------------------------------------------------
// Many tasks
// ---------------------------------------------------------------------------

namespace {

// `CASE state WHEN 'runnable' THEN ... END`: the state `cause` moves each
// of `from` to.
std::string next_state_sql(const std::vector<TaskState>& from,
                           const Cause& cause) {
  std::string out = "CASE state";
  for (const TaskState s : from) {
    const auto to = next_state(s, cause);
    if (!to) {
      refuse(0, s, cause);
    }
    out += " WHEN " + quoted(s) + " THEN " + quoted(*to);
  }
  return out + " END";
}

std::string ids_in(Db& db) {
  return " WHERE id IN (SELECT CAST(value AS BIGINT) FROM "
         + db.dialect().json_array_rows("?1") + ")";
}

} // namespace

BulkMove::BulkMove(Db& db, const std::vector<TaskState>& from, Cause cause,
                   std::string_view also)
    : m_db(db), m_message(event_message(cause)),
      m_ends_in(
          from.empty()
              ? TaskState::runnable
              : next_state(from.front(), cause).value_or(TaskState::runnable)),
      m_log(db, "INSERT INTO events (task_id, time, message, from_state, "
                "to_state, actor, detail) SELECT id, ?2, ?3, state, "
                    + next_state_sql(from, cause) + ", ?4, ?5 FROM tasks"
                    + ids_in(db) + " ORDER BY id"),
      m_update(db, "UPDATE tasks SET state = " + next_state_sql(from, cause)
                       + ", rev = rev + 1, updated_at = ?2" + std::string(also)
                       + ids_in(db)) {}

void BulkMove::run(const std::string& batch, Time now, std::string_view actor,
                   std::string_view detail,
                   const std::function<void(Statement&)>& bind_also,
                   const std::vector<int64_t>& settle) {
  const int64_t now_ms = to_unix_ms(now);
  m_log.bind(1, batch).bind(2, now_ms).bind(3, m_message).bind(4, actor);
  if (detail.empty()) {
    m_log.bind_null(5);
  } else {
    m_log.bind(5, detail);
  }
  m_log.run();
  m_log.reset();
  m_update.bind(1, batch).bind(2, now_ms);
  if (bind_also) {
    bind_also(m_update);
  }
  m_update.run();
  m_update.reset();
  for (const int64_t id : settle) {
    settle_finished(m_db, id, m_ends_in, now);
  }
}

} // namespace taskq::storage::detail
