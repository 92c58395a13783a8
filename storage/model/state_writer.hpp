#pragma once

// Internal to storage/: the state writer, the one place that writes the
// `state` column of tasks once a task is added (its INSERT names the state
// it starts in). Every move, whether an operator's message, a worker's
// outcome, a follower of another task's end or one of taskq's own
// decisions, is checked here against core's tables (core/state.hpp for
// messages, core/system_moves.hpp for the rest), written with one UPDATE
// that carries the caller's further columns, followed, when the task ends,
// by what depends on its end, and logged as one event. Each runs in the
// caller's transaction.

#include "core/state.hpp"
#include "core/system_moves.hpp"
#include "core/task.hpp"
#include "core/time.hpp"
#include "storage/seam/db.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace taskq::storage::detail {

// What moves a task: a message (an operator's, or its lease holder's) or
// one of taskq's own moves.
using Cause = std::variant<core::Message, core::SystemMove>;

// The state `cause` moves a task in `from` to, or std::nullopt where the
// tables refuse it.
std::optional<core::TaskState> next_state(core::TaskState from,
                                          const Cause& cause);
// The message of the event that logs `cause` ("pause", "run", ...).
std::string_view event_message(const Cause& cause);

// The further columns the UPDATE that moves a task sets, in the same
// statement. Parameters ?1 to ?3 are the task's id, its new state and now
// (in unix milliseconds), which an assignment written out may use.
class Assignments {
public:
  // `column = ?N`, bound to `value` (NULL when std::nullopt).
  Assignments& set(std::string_view column, std::optional<std::string> value);
  Assignments& set(std::string_view column, std::optional<int64_t> value);
  Assignments& set_null(std::string_view column);
  // An assignment written out, e.g. "attempts = attempts + 1".
  Assignments& add(std::string_view assignment);
  // The lease ends (as clear_lease): with `revoked_by` and a lease, its
  // token is kept as revoked with that reason, so its worker can be told.
  Assignments& end_lease(const core::Task& task,
                         const std::optional<std::string>& revoked_by);
  // The lease ends, its token not kept.
  Assignments& end_lease();

  // ", a = ?4, b = ?5...", parameters from ?4.
  const std::string& sql() const { return m_sql; }
  // Binds this statement's parameters from ?4.
  void bind(Statement& st) const;
  // How many parameters they bind (?4 to ?(3 + count())).
  int count() const { return static_cast<int>(m_values.size()); }

private:
  using Value = std::variant<std::monostate, int64_t, std::string>;
  std::string m_sql;
  std::vector<Value> m_values;
};

// One task's move.
struct StateChange {
  StateChange(int64_t task, core::TaskState leaves, Cause by,
              std::string_view who, std::string why = {})
      : id(task), from(leaves), cause(by), actor(who), detail(std::move(why)) {}

  int64_t id = 0;
  // The state the move leaves, as its event names it (a worker's error
  // passes through fault, which is never stored: see record_move).
  core::TaskState from = core::TaskState::runnable;
  Cause cause = core::Message::run;
  std::string_view actor;
  std::string detail;
  // What else the UPDATE sets.
  Assignments also;
  // The task as the caller read it, for the followers of its end (its
  // labels, trigger and flow; and, with `waited_for` false, that nothing
  // depends on it); null: they are read.
  const core::Task* known = nullptr;
  bool waited_for = true;
};

// Moves a task: refuses a move the tables do not allow (conflict, "cannot
// <message> task N: it is <state>"), writes the row (state, rev, updated_at
// and `also`) in one UPDATE, settles what follows its end when it ends
// (dependents, gates, the label index, its flow), then logs the event
// (none for a move whose table gives no event message). Returns the new
// state.
core::TaskState move_task(Db& db, const StateChange& change, core::Time now);

// What a guarded move (move_task_if) requires of the row besides the
// state it leaves, checked in its UPDATE's WHERE; each condition's
// parameter is numbered after the UPDATE's own.
class Guard {
public:
  // `column = ?N`, bound to `value`.
  Guard& equals(std::string_view column, std::string value);
  // `column > ?N`, bound to `value`.
  Guard& greater(std::string_view column, int64_t value);
  // `column IS NULL`.
  Guard& is_null(std::string_view column);

  // " AND a = ?N AND b > ?N+1...", parameters from ?`first`.
  std::string sql(int first) const;
  // Binds its parameters from ?`first`.
  void bind(Statement& st, int first) const;

private:
  struct Condition {
    std::string column;
    std::string_view op; // "=", ">", "IS NULL"
    std::variant<std::monostate, int64_t, std::string> value;
  };
  std::vector<Condition> m_conditions;
};

// The row a guarded move wrote, as its UPDATE's RETURNING read it: the task
// after the move (as load_full reads it: its errors loaded), and whether a
// task_deps row names it as a dependency.
struct Moved {
  core::Task task;
  bool waited_for = true;
};

// move_task in one statement where the caller would read the row, check it
// and then write it: moves task change.id from change.from only if its row
// is in that state and passes `guard`, both checked by the UPDATE's WHERE.
// When they do not hold, nothing is written or logged: std::nullopt (the
// caller reads the row to tell why). Else the followers of its end and its
// event are as move_task's, from the row the UPDATE's RETURNING gives (its
// new values: change.known and change.waited_for are not used, and
// change.actor must not be a column the UPDATE changes; the caller guards
// on what it passes). A move the tables do not allow from change.from is
// refused (conflict) before anything is written.
//
// Whether the task has dependents is read by the UPDATE's own statement.
// On PostgreSQL (READ COMMITTED) that is right only when an earlier
// statement of the transaction locked the row: an `add --after` of this
// task holds its row shared while it inserts its task_deps row, so an
// UPDATE that itself waited for the row would re-check the row but read
// task_deps in the snapshot it took before waiting, missing the new
// dependent (left blocked for ever); a statement after the lock was taken
// starts after that add committed, and sees it. Callers lock first
// (Transaction's ids, lock_task); SQLite's one writer needs nothing.
std::optional<Moved> move_task_if(Db& db, const StateChange& change,
                                  const Guard& guard, core::Time now);

// A move whose row another statement writes: checked and logged only.
// A worker's error passes through fault, which is never stored (the move
// that follows writes sleeping or failed); a task added after a dependency
// that already broke starts paused (its INSERT writes the state). Returns
// the state it moves to.
core::TaskState record_move(Db& db, const StateChange& change, core::Time now);

// A set-based move of many tasks (a bulk send, redrive): for each batch of
// ids, one INSERT ... SELECT logs the events while the rows still hold the
// state they leave, then one UPDATE moves them all.
class BulkMove {
public:
  // `from`: the states the tasks of the batches are in, each of which
  // `cause` must move (refused at once otherwise). `also`: the UPDATE's
  // further assignments, ", a = ?3...": ?1 is the batch, ?2 now.
  BulkMove(Db& db, const std::vector<core::TaskState>& from, Cause cause,
           std::string_view also);

  // Whether the move ends tasks (their followers must be settled).
  bool ends() const { return core::is_terminal(m_ends_in); }

  // Moves the tasks of `batch` (a JSON array of ids): their events with
  // `actor` and `detail` (NULL when empty), then the UPDATE, its further
  // parameters bound by `bind_also` (from ?3); then the followers of the
  // ends of `settle`, some of the batch.
  void run(const std::string& batch, core::Time now, std::string_view actor,
           std::string_view detail,
           const std::function<void(Statement&)>& bind_also,
           const std::vector<int64_t>& settle);

private:
  Db& m_db;
  std::string m_message;
  core::TaskState m_ends_in;
  Statement m_log;
  Statement m_update;
};

} // namespace taskq::storage::detail
