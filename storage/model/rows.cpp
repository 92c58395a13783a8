// The row helpers the TaskStore's source files share (storage/model/rows.hpp):
// reading and writing a task's row, its errors, its events and its queue's
// settings. Each assumes a transaction is open.
#include "storage/model/rows.hpp"

#include "core/error.hpp"
#include "core/suggestion.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage {

using namespace detail;

namespace detail {

std::string join(std::string_view a, std::string_view b) {
  std::string out(a);
  out += b;
  return out;
}

std::string labels_to_json(const core::Labels& labels) {
  return nlohmann::json(labels).dump();
}

core::Labels labels_from_json(const std::optional<std::string>& text) {
  if (!text || text->empty()) {
    return {};
  }
  return nlohmann::json::parse(*text).get<core::Labels>();
}

std::optional<Millis> opt_millis(const std::optional<int64_t>& ms) {
  if (!ms) {
    return std::nullopt;
  }
  return Millis(*ms);
}

std::optional<int64_t> opt_ms(const std::optional<Millis>& d) {
  if (!d) {
    return std::nullopt;
  }
  return d->count();
}

std::optional<int> opt_int(const std::optional<int64_t>& v) {
  if (!v) {
    return std::nullopt;
  }
  return static_cast<int>(*v);
}

std::optional<int64_t> opt_int64(const std::optional<int>& v) {
  if (!v) {
    return std::nullopt;
  }
  return *v;
}

std::optional<std::string> opt_backoff(const std::optional<core::Backoff>& b) {
  if (!b) {
    return std::nullopt;
  }
  return std::string(core::to_string(*b));
}

// Reads a row selected with k_task_columns (errors are loaded separately).
Task read_task(const Statement& st) {
  Task t;
  t.id = st.get_int(0);
  t.rev = st.get_int(1);
  t.queue = st.get_text(2);
  t.state = core::parse_state(st.get_text(3)).value_or(TaskState::fault);
  t.payload = st.get_text(4);
  t.labels = labels_from_json(st.get_opt_text(5));
  t.priority = st.get_int(6);
  t.attempts = st.get_int(7);
  t.max_attempts = st.get_opt_int(8);
  t.run_at = core::from_unix_ms(st.get_int(9));
  t.created_at = core::from_unix_ms(st.get_int(10));
  t.updated_at = core::from_unix_ms(st.get_int(11));
  if (!st.is_null(12)) {
    t.lease = core::Lease{st.get_text(12), st.get_text(13),
                          core::from_unix_ms(st.get_int(14))};
  }
  t.checkpoint = st.get_opt_text(15);
  t.checkpoint_requested = st.get_int(16) != 0;
  t.result = st.get_opt_text(17);
  t.reason = st.get_opt_text(18).value_or("");
  t.policy.max_errors = opt_int(st.get_opt_int(19));
  t.policy.window = opt_millis(st.get_opt_int(20));
  t.policy.retry_delay = opt_millis(st.get_opt_int(21));
  if (auto b = st.get_opt_text(22)) {
    t.policy.backoff = core::parse_backoff(*b);
  }
  t.policy.max_delay = opt_millis(st.get_opt_int(23));
  t.retry_of = st.get_opt_int(24);
  t.unique_key = st.get_opt_text(25);
  if (auto after = st.get_opt_text(26)) {
    t.after = nlohmann::json::parse(*after).get<std::vector<int64_t>>();
  }
  t.waiting = st.get_int(27) > 0;
  t.root = labels_from_json(st.get_opt_text(28));
  t.to_worker = st.get_opt_text(29);
  if (auto until = st.get_opt_int(30)) {
    t.broadcast_until = core::from_unix_ms(*until);
  }
  t.trigger = st.get_opt_text(31);
  t.schedule = st.get_opt_text(32);
  t.gate = st.get_opt_text(33);
  t.sync = labels_from_json(st.get_opt_text(34));
  t.flow = st.get_opt_text(35);
  if (auto command = st.get_opt_text(36)) {
    t.command = strings_from_json(*command);
  }
  t.attempts_base = st.get_int(37);
  return t;
}

bool frozen_now(Db& db, int64_t task_id) {
  Statement st(db, std::string(k_frozen_sql));
  st.bind(1, task_id);
  return st.step() && st.get_int(0) != 0;
}

std::string random_token() {
  // A token tells leases apart; it is not a secret. A generator seeded
  // once from the system's entropy (256 bits) gives 128-bit tokens without
  // a system call or RDRAND per lease.
  thread_local std::mt19937_64 generator = [] {
    std::random_device device;
    std::array<uint32_t, 8> seed{};
    for (auto& w : seed) {
      w = device();
    }
    std::seed_seq seq(seed.begin(), seed.end());
    return std::mt19937_64(seq);
  }();
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string out(32, '0');
  size_t at = 0;
  for (int word = 0; word < 2; ++word) {
    const uint64_t w = generator();
    for (int shift = 60; shift >= 0; shift -= 4) {
      out[at++] = k_hex[(w >> shift) & 0xf];
    }
  }
  return out;
}

std::string task_ref(int64_t id) {
  return "task " + std::to_string(id);
}

std::optional<Task> load_task(Db& db, int64_t id) {
  Statement st(
      db, join(join("SELECT ", k_task_columns), " FROM tasks WHERE id = ?1"));
  st.bind(1, id);
  if (!st.step()) {
    return std::nullopt;
  }
  return read_task(st);
}

std::vector<core::ErrorEntry> load_errors(Db& db, int64_t id) {
  Statement st(db, "SELECT time, message FROM task_errors WHERE task_id = ?1 "
                   "ORDER BY time, rowid");
  st.bind(1, id);
  std::vector<core::ErrorEntry> out;
  while (st.step()) {
    out.push_back({core::from_unix_ms(st.get_int(0)), st.get_text(1)});
  }
  return out;
}

Task load_full(Db& db, int64_t id, bool* waited_for) {
  // Whether it has errors comes along with the task, after read_task's
  // columns: most have none, and their history then costs no second query
  // (a round trip on PostgreSQL). So does whether any task waits (or
  // waited) for it, for a caller about to settle its end.
  Statement st(db, join(join(join("SELECT ", k_task_columns), k_task_flags),
                        " FROM tasks WHERE id = ?1"));
  st.bind(1, id);
  if (!st.step()) {
    throw Error(ErrorKind::not_found, "no " + task_ref(id));
  }
  Task task = read_task(st);
  if (st.get_int(k_task_column_count) != 0) {
    task.errors = load_errors(db, id);
  }
  if (waited_for != nullptr) {
    *waited_for = st.get_int(k_task_column_count + 1) != 0;
  }
  return task;
}

QueueRow load_queue(Db& db, const std::string& name) {
  Statement st(db, "SELECT paused, max_running, max_attempts, max_errors, "
                   "error_window_ms, retry_delay_ms, backoff, max_delay_ms "
                   "FROM queues WHERE name = ?1");
  st.bind(1, name);
  return st.step() ? read_queue_row(st, 0) : QueueRow{};
}

QueueRow read_queue_row(const Statement& st, int first) {
  QueueRow q;
  q.paused = st.get_int(first) != 0;
  q.max_running = st.get_opt_int(first + 1);
  q.max_attempts = st.get_opt_int(first + 2);
  q.policy.max_errors = opt_int(st.get_opt_int(first + 3));
  q.policy.window = opt_millis(st.get_opt_int(first + 4));
  q.policy.retry_delay = opt_millis(st.get_opt_int(first + 5));
  if (auto b = st.get_opt_text(first + 6)) {
    q.policy.backoff = core::parse_backoff(*b);
  }
  q.policy.max_delay = opt_millis(st.get_opt_int(first + 7));
  return q;
}

void bump_queue_counter(Db& db, const std::string& queue, QueueCounter c,
                        int64_t by) {
  // The queue has a row, as before the counters had their own table; an
  // existing row is left alone, unlocked.
  Statement(db, "INSERT INTO queues (name) VALUES (?1) ON CONFLICT (name) "
                "DO NOTHING")
      .bind(1, queue)
      .run();
  // Counted in the slot of this transaction, as queue_counts.
  Statement(db, join(join("INSERT INTO queue_counters (queue, counter, slot, "
                          "n) VALUES (?1, ?2, ",
                          count_slot_sql(db)),
                     ", ?3) ON CONFLICT (queue, counter, slot) DO UPDATE "
                     "SET n = queue_counters.n + ?3"))
      .bind(1, queue)
      .bind(2, c == QueueCounter::errors ? "errors" : "leases_expired")
      .bind(3, by)
      .run();
}

std::string_view count_slot_sql(const Db& db) {
  return db.dialect().count_slot();
}

std::string count_added_sql(const Db& db) {
  return join(join("INSERT INTO queue_counts (queue, state, slot, n) VALUES "
                   "(?1, ?2, ",
                   count_slot_sql(db)),
              ", ?3) ON CONFLICT (queue, state, slot) DO UPDATE SET n = "
              "queue_counts.n + ?3");
}

void count_added(Db& db, const std::string& queue, TaskState state, int64_t n) {
  Statement(db, count_added_sql(db))
      .bind(1, queue)
      .bind(2, core::to_string(state))
      .bind(3, n)
      .run();
}

void count_added_task(Db& db, int64_t id) {
  Statement(db, join(join("INSERT INTO queue_counts (queue, state, slot, n) "
                          "SELECT queue, state, ",
                          count_slot_sql(db)),
                     ", 1 FROM tasks WHERE id = ?1 ON CONFLICT (queue, "
                     "state, slot) DO UPDATE SET n = queue_counts.n + 1"))
      .bind(1, id)
      .run();
}

void log_event(Db& db, int64_t task_id, Time now, std::string_view message,
               std::optional<TaskState> from, std::optional<TaskState> to,
               std::string_view actor, std::string_view detail) {
  Db::EventRow row;
  row.task_id = task_id;
  row.time = to_unix_ms(now);
  row.message = message;
  if (from) {
    row.from = std::string(core::to_string(*from));
  }
  if (to) {
    row.to = std::string(core::to_string(*to));
  }
  row.actor = actor;
  if (!detail.empty()) {
    row.detail = std::string(detail);
  }
  if (db.defer_event(row)) {
    return;
  }
  Statement(db, "INSERT INTO events (task_id, time, message, from_state, "
                "to_state, actor, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
      .bind(1, row.task_id)
      .bind(2, row.time)
      .bind(3, row.message)
      .bind(4, row.from)
      .bind(5, row.to)
      .bind(6, row.actor)
      .bind(7, row.detail)
      .run();
}

void append_error(Db& db, int64_t task_id, Time now, std::string_view message,
                  int64_t keep) {
  Statement(db, "INSERT INTO task_errors (task_id, time, message) "
                "VALUES (?1, ?2, ?3)")
      .bind(1, task_id)
      .bind(2, to_unix_ms(now))
      .bind(3, message)
      .run();
  Statement(db, "DELETE FROM task_errors WHERE task_id = ?1 AND rowid NOT IN "
                "(SELECT rowid FROM task_errors WHERE task_id = ?1 "
                "ORDER BY time DESC, rowid DESC LIMIT ?2)")
      .bind(1, task_id)
      .bind(2, keep)
      .run();
}

// Clears the task's lease; when `revoked_by` is set, remembers the token and
// why it was revoked so the worker can be told.
void clear_lease(Db& db, const Task& task,
                 const std::optional<std::string>& revoked_by) {
  Statement st(db, "UPDATE tasks SET lease_token = NULL, lease_worker = NULL, "
                   "lease_expires = NULL, revoked_token = coalesce(?2, "
                   "revoked_token), revoked_reason = coalesce(?3, "
                   "revoked_reason) WHERE id = ?1");
  st.bind(1, task.id);
  if (revoked_by && task.lease) {
    st.bind(2, task.lease->token).bind(3, *revoked_by);
  } else {
    st.bind_null(2).bind_null(3);
  }
  st.run();
}

void set_reason(Db& db, int64_t id, std::string_view reason) {
  Statement(db, "UPDATE tasks SET reason = ?2 WHERE id = ?1")
      .bind(1, id)
      .bind(2, reason)
      .run();
}

// "<message> by <actor>" when an operator revoked `token` on task `id`.
std::optional<std::string> find_revoked(Db& db, int64_t id,
                                        const std::string& token) {
  Statement st(db, "SELECT revoked_reason FROM tasks WHERE id = ?1 AND "
                   "revoked_token = ?2");
  st.bind(1, id).bind(2, token);
  if (!st.step()) {
    return std::nullopt;
  }
  return st.get_text(0);
}

std::string refusal(const Task& task, Message msg) {
  std::string why = "cannot " + std::string(core::to_string(msg)) + " "
                    + task_ref(task.id) + ": it is "
                    + std::string(core::to_string(task.state));
  // `resume` of a task that ended: what runs it again.
  if (msg == Message::run && core::is_terminal(task.state)) {
    why += "; " + core::suggest({"retry", std::to_string(task.id)})
           + " runs it again as a new task";
  }
  return why;
}

// Loads a task for a worker write: it must exist (not_found) and `token`
// must be its live lease (conflict, naming who revoked it when known).
Task require_lease(Db& db, int64_t id, const std::string& token, Time now) {
  return require_lease(db, load_full(db, id), token, now);
}

Task require_lease(Db& db, Task task, const std::string& token, Time now) {
  const int64_t id = task.id;
  if (task.lease && task.lease->token == token) {
    if (task.lease->live(now)) {
      return task;
    }
    throw Error(ErrorKind::conflict,
                "lease lost: the lease on " + task_ref(id) + " expired at "
                    + core::format_time(task.lease->expires_at));
  }
  if (const auto revoked = find_revoked(db, id, token)) {
    throw Error(ErrorKind::conflict, "lease lost: " + task_ref(id)
                                         + " was revoked (" + *revoked + ")");
  }
  if (task.leased(now)) {
    throw Error(ErrorKind::conflict, "lease lost: " + task_ref(id)
                                         + " is leased by another worker ("
                                         + task.lease->worker + ")");
  }
  throw Error(ErrorKind::conflict,
              "lease lost: " + task_ref(id) + " is not leased with this token");
}

std::vector<std::string> strings_from_json(const std::string& text) {
  return nlohmann::json::parse(text).get<std::vector<std::string>>();
}

core::Event creation_event(int64_t task_id, Time created_at, std::string actor,
                           std::optional<int64_t> retry_of) {
  core::Event e;
  e.task_id = task_id;
  e.time = created_at;
  e.message = "add";
  e.to = core::to_string(TaskState::runnable);
  e.actor = std::move(actor);
  if (retry_of) {
    e.detail = "retry of " + task_ref(*retry_of);
  }
  return e;
}

core::Event read_event(const Statement& st) {
  core::Event e;
  e.id = st.get_int(0);
  e.task_id = st.get_int(1);
  e.time = core::from_unix_ms(st.get_int(2));
  e.message = st.get_text(3);
  e.from = st.get_opt_text(4).value_or("");
  e.to = st.get_opt_text(5).value_or("");
  e.actor = st.get_opt_text(6).value_or("");
  e.detail = st.get_opt_text(7).value_or("");
  return e;
}

} // namespace detail

} // namespace taskq::storage
