// TaskStore: recurring schedules and gates (rescue's Cron and Gate). The
// emission itself runs inside lease and tick (emit_schedules) and when a
// trigger task completes (set_state).
#include "storage/features/schedule_store.hpp"

#include "core/error.hpp"
#include "storage/features/add_store.hpp"
#include "storage/model/locks.hpp"
#include "storage/model/rows.hpp"
#include "storage/task_store.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <variant>

namespace taskq::storage {

using namespace detail;

namespace detail {

core::Schedule stored_schedule(const std::optional<std::string>& every,
                               const std::optional<std::string>& cron) {
  auto parsed =
      every ? core::parse_every(*every) : core::parse_cron(cron.value_or(""));
  if (!parsed) {
    throw Error(ErrorKind::internal, "a stored schedule does not parse: "
                                         + every.value_or(cron.value_or("")));
  }
  return *parsed;
}

} // namespace detail

namespace {

constexpr std::string_view k_schedule_columns =
    "name, queue, every, cron, payload, labels, priority, paused, due_at, "
    "sync, last_task, created_at, trigger_key";

ScheduleInfo read_schedule(const Statement& st) {
  ScheduleInfo s;
  s.spec.name = st.get_text(0);
  s.spec.queue = st.get_text(1);
  s.spec.when = stored_schedule(st.get_opt_text(2), st.get_opt_text(3));
  s.spec.payload = st.get_text(4);
  s.spec.labels = labels_from_json(st.get_opt_text(5));
  s.spec.priority = st.get_int(6);
  s.paused = st.get_int(7) != 0;
  s.due_at = core::from_unix_ms(st.get_int(8));
  s.sync = labels_from_json(st.get_opt_text(9));
  s.last_task = st.get_opt_int(10);
  s.created_at = core::from_unix_ms(st.get_int(11));
  s.spec.trigger = st.get_opt_text(12);
  return s;
}

constexpr std::string_view k_gate_columns =
    "name, queue, keys, covered, payload, labels, priority, emitted, "
    "last_task, created_at";

GateInfo read_gate(const Statement& st) {
  GateInfo g;
  g.spec.name = st.get_text(0);
  g.spec.queue = st.get_text(1);
  g.spec.keys = strings_from_json(st.get_text(2));
  g.covered = strings_from_json(st.get_text(3));
  g.spec.payload = st.get_text(4);
  g.spec.labels = labels_from_json(st.get_opt_text(5));
  g.spec.priority = st.get_int(6);
  g.emitted = st.get_int(7);
  g.last_task = st.get_opt_int(8);
  g.created_at = core::from_unix_ms(st.get_int(9));
  return g;
}

// Throws not_found unless `table` has a row named `name`.
void require_named(Db& db, std::string_view table, std::string_view what,
                   const std::string& name) {
  Statement st(db, "SELECT 1 FROM " + std::string(table) + " WHERE name = ?1");
  st.bind(1, name);
  if (!st.step()) {
    throw Error(ErrorKind::not_found, "no " + std::string(what) + " " + name);
  }
}

void refuse_taken(Db& db, std::string_view table, std::string_view what,
                  const std::string& name) {
  Statement st(db, "SELECT 1 FROM " + std::string(table) + " WHERE name = ?1");
  st.bind(1, name);
  if (st.step()) {
    throw Error(ErrorKind::conflict,
                "there is already a " + std::string(what) + " named " + name);
  }
}

} // namespace

namespace detail {

// Emits the due schedules of `queue` (of every queue when null): a task
// for each whose last task has finished, and moves each one's next tick
// past `now`, so missed ticks are not back-filled. Returns the new ids.
std::vector<int64_t> emit_schedules(Db& db, const std::string* queue,
                                    Time now) {
  std::vector<ScheduleInfo> due;
  {
    Statement st(
        db, join(join("SELECT ", k_schedule_columns),
                 std::string(" FROM schedules WHERE paused = 0 AND "
                             "due_at <= ?1")
                     + (queue ? " AND queue = ?2" : "") + " ORDER BY name"
                     + std::string(row_lock(db, " FOR UPDATE SKIP LOCKED"))));
    st.bind(1, to_unix_ms(now));
    if (queue) {
      st.bind(2, *queue);
    }
    while (st.step()) {
      due.push_back(read_schedule(st));
    }
  }
  std::vector<int64_t> emitted;
  for (const ScheduleInfo& d : due) {
    std::optional<int64_t> id;
    const auto last = d.last_task ? load_task(db, *d.last_task) : std::nullopt;
    // The tick that is due is the latest one at or before now. It emits
    // only if the last task had finished by then: a tick that passed while
    // the task ran is skipped, whether or not anyone looked at that time.
    // (The stored due time counts too: where a grid restarts, a "next"
    // tick is one period after the last, off the grid.)
    const Time tick = std::max(
        core::ticks(d.spec.when, now + core::Millis(1)).prev, d.due_at);
    if (!last || (core::is_terminal(last->state) && last->updated_at <= tick)) {
      NewTask emit;
      emit.queue = d.spec.queue;
      emit.payload = d.spec.payload;
      emit.labels = d.spec.labels;
      emit.priority = d.spec.priority;
      emit.trigger = d.spec.trigger;
      id = insert_task(db, emit, now, "schedule:" + d.spec.name);
      Statement(db, "UPDATE tasks SET schedule = ?2, sync = ?3 WHERE id = ?1")
          .bind(1, *id)
          .bind(2, d.spec.name)
          .bind(3, d.sync.empty() ? std::nullopt
                                  : std::optional(labels_to_json(d.sync)))
          .run();
      emitted.push_back(*id);
    }
    Statement(db, "UPDATE schedules SET due_at = ?2, "
                  "last_task = coalesce(?3, last_task) WHERE name = ?1")
        .bind(1, d.spec.name)
        .bind(2, to_unix_ms(core::ticks(d.spec.when, now).next))
        .bind(3, id)
        .run();
  }
  return emitted;
}

} // namespace detail

void TaskStore::add_schedule(const ScheduleSpec& spec, Time now,
                             const std::string& actor) {
  retrying([&] {
    Transaction tx(*m_db);
    now = locked_now(now);
    refuse_taken(*m_db, "schedules", "schedule", spec.name);
    const bool every = std::holds_alternative<core::Every>(spec.when);
    const std::string text = core::to_string(spec.when);
    Statement(*m_db,
              "INSERT INTO schedules (name, queue, every, cron, payload, "
              "labels, priority, due_at, created_at, created_by, "
              "trigger_key) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)")
        .bind(1, spec.name)
        .bind(2, spec.queue)
        .bind(3, every ? std::optional(text) : std::nullopt)
        .bind(4, every ? std::nullopt : std::optional(text))
        .bind(5, spec.payload)
        .bind(6, spec.labels.empty()
                     ? std::nullopt
                     : std::optional(labels_to_json(spec.labels)))
        .bind(7, spec.priority)
        .bind(8, to_unix_ms(core::ticks(spec.when, now).next))
        .bind(9, to_unix_ms(now))
        .bind(10, actor)
        .bind(11, spec.trigger)
        .run();
    tx.commit();
  });
}

std::vector<ScheduleInfo> TaskStore::schedules() {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, join(join("SELECT ", k_schedule_columns),
                           " FROM schedules ORDER BY name"));
  std::vector<ScheduleInfo> out;
  while (st.step()) {
    out.push_back(read_schedule(st));
  }
  return out;
}

ScheduleInfo TaskStore::schedule(const std::string& name) {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, join(join("SELECT ", k_schedule_columns),
                           " FROM schedules WHERE name = ?1"));
  st.bind(1, name);
  if (!st.step()) {
    throw Error(ErrorKind::not_found, "no schedule " + name);
  }
  return read_schedule(st);
}

void TaskStore::set_schedule_paused(const std::string& name, bool paused,
                                    Time now) {
  retrying([&] {
    Transaction tx(*m_db);
    now = locked_now(now);
    require_named(*m_db, "schedules", "schedule", name);
    const ScheduleInfo info = [&] {
      Statement st(*m_db, join(join("SELECT ", k_schedule_columns),
                               " FROM schedules WHERE name = ?1"));
      st.bind(1, name);
      st.step();
      return read_schedule(st);
    }();
    if (info.paused != paused) {
      // Resuming starts from the next tick: what was missed stays missed.
      Statement(*m_db, "UPDATE schedules SET paused = ?2, "
                       "due_at = CASE WHEN ?2 = 1 THEN due_at ELSE ?3 END "
                       "WHERE name = ?1")
          .bind(1, name)
          .bind(2, paused ? 1 : 0)
          .bind(3, to_unix_ms(core::ticks(info.spec.when, now).next))
          .run();
    }
    tx.commit();
  });
}

void TaskStore::remove_schedule(const std::string& name) {
  retrying([&] {
    Transaction tx(*m_db);
    require_named(*m_db, "schedules", "schedule", name);
    Statement(*m_db, "DELETE FROM schedules WHERE name = ?1")
        .bind(1, name)
        .run();
    tx.commit();
  });
}

std::vector<int64_t> TaskStore::tick(const std::optional<std::string>& queue,
                                     Time now, const std::string& actor) {
  (void)actor; // emitted tasks are created by their schedule
  return retrying([&]() -> std::vector<int64_t> {
    Transaction tx(*m_db);
    now = locked_now(now);
    auto ids = emit_schedules(*m_db, queue ? &*queue : nullptr, now);
    tx.commit();
    return ids;
  });
}

void TaskStore::add_gate(const GateSpec& spec, Time now,
                         const std::string& actor) {
  if (spec.keys.empty()) {
    throw Error(ErrorKind::usage, "a gate needs at least one key");
  }
  std::vector<std::string> keys = spec.keys;
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  retrying([&] {
    Transaction tx(*m_db);
    now = locked_now(now);
    refuse_taken(*m_db, "gates", "gate", spec.name);
    Statement(*m_db, "INSERT INTO gates (name, queue, keys, payload, labels, "
                     "priority, created_at, created_by) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
        .bind(1, spec.name)
        .bind(2, spec.queue)
        .bind(3, nlohmann::json(keys).dump())
        .bind(4, spec.payload)
        .bind(5, spec.labels.empty()
                     ? std::nullopt
                     : std::optional(labels_to_json(spec.labels)))
        .bind(6, spec.priority)
        .bind(7, to_unix_ms(now))
        .bind(8, actor)
        .run();
    tx.commit();
  });
}

std::vector<GateInfo> TaskStore::gates() {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, join(join("SELECT ", k_gate_columns),
                           " FROM gates ORDER BY name"));
  std::vector<GateInfo> out;
  while (st.step()) {
    out.push_back(read_gate(st));
  }
  return out;
}

GateInfo TaskStore::gate(const std::string& name) {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, join(join("SELECT ", k_gate_columns),
                           " FROM gates WHERE name = ?1"));
  st.bind(1, name);
  if (!st.step()) {
    throw Error(ErrorKind::not_found, "no gate " + name);
  }
  return read_gate(st);
}

void TaskStore::remove_gate(const std::string& name) {
  retrying([&] {
    Transaction tx(*m_db);
    require_named(*m_db, "gates", "gate", name);
    Statement(*m_db, "DELETE FROM gates WHERE name = ?1").bind(1, name).run();
    tx.commit();
  });
}

} // namespace taskq::storage
