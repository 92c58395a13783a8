#pragma once

#include "core/schedule.hpp"
#include "core/task.hpp"
#include "storage/flow_types.hpp"
#include "storage/log_types.hpp"
#include "storage/queue_types.hpp"
#include "storage/schedule_types.hpp"
#include "storage/seam/change_feed.hpp"
#include "storage/task_types.hpp"
#include "storage/web_types.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskq::storage {

class Db;

// Whether `path` names a PostgreSQL server: a libpq connection URI
// (postgresql://... or postgres://..., the scheme in any case) rather than
// a file.
bool is_postgres_url(std::string_view path);

// Throws a usage error (exit 2) for a database name that starts like a URL
// but is no PostgreSQL URL (postgresql:tq, postgres:/x, postgresql//h,
// pgsql://h, any other scheme://), rather than let it name a file. The
// message quotes the scheme only.
void check_db_name(std::string_view path);

// `url` with every password libpq could read in it (the user information's,
// a password or sslpassword parameter, however percent-encoded) replaced by
// `***`: how a URL is shown in messages and by `db path`. Other strings are
// returned as they are.
std::string redact_url(std::string_view url);

// How to open the database.
// A missing SQLite file, or a PostgreSQL database without taskq's schema,
// is ErrorKind::unavailable ("no database at PATH (the first add creates
// it)", "no taskq schema NAME in database URL ...") for every mode but
// `write`, and nothing is created (no file, folder, -wal or -shm; no schema
// or table).
enum class OpenMode {
  read,   // reads only
  update, // writes to a database that exists (lease, run, pause, ...)
  write,  // creates the file (0600) and its folder, or the schema, when
          // missing (add, ...)
  // PostgreSQL only: for the server's clock, before a command has checked
  // its input. The schema is left as it is until open_for() names what
  // the command does, so that a refused command creates no tables.
  clock,
};

struct CheckReport {
  bool ok = false;
  std::vector<std::string> problems; // empty when ok
  int schema_version = 0;
  int64_t tasks = 0;
};

// The one API the commands call. Every method is one transaction: writes
// run under BEGIN IMMEDIATE and either commit whole or change nothing.
// Errors are taskq::Error (not_found, conflict, usage, unavailable).
// Reads decide with the `now` passed in. A write decides with the store's
// clock, read once it holds the write lock (so that waiting for another
// writer never makes a lease born expired); a store without a clock (unit
// tests) uses the `now` passed in instead.
class TaskStore {
public:
  // The time now: the system clock, or a frozen time (TASKQ_NOW).
  using Clock = std::function<core::Time()>;

  // Each section below is implemented in the file it names (checked by
  // tests/storage/interface_sections).

  // --- seam/open_store.cpp: the database, its schema, the connection ---
  // Opens (and migrates) the database at `path`. Throws unavailable for a
  // path that is not a regular file, a file that is not a database, a
  // database of another program (it has tables but no taskq schema), or
  // one whose schema is newer than this binary; such files are left as
  // they were. Only a missing or empty file is initialised.
  TaskStore(const std::string& path, OpenMode mode, Clock clock = {});
  ~TaskStore();
  TaskStore(const TaskStore&) = delete;
  TaskStore& operator=(const TaskStore&) = delete;

  int schema_version();
  int migrate(); // applies pending migrations; returns the version

  // A store opened with OpenMode::clock is made ready for `mode`: its
  // schema brought up to date. Does nothing otherwise.
  void open_for(OpenMode mode);

  // Copies the database to a temporary file beside `dest_path`, flushed to
  // disk, then renamed to it: `dest_path` is absent or a whole backup.
  void backup(const std::string& dest_path);
  void vacuum(); // rebuilds the file, giving free pages back

  // The database server's clock (PostgreSQL), so that hosts whose clocks
  // disagree agree on leases and ticks; std::nullopt on SQLite.
  std::optional<core::Time> server_now();

  // A feed of the database's changes, to wait on between looks.
  ChangeFeed changes() const;

  // A number that changes when another process (another connection)
  // commits, never for this store's own commits: a wake-up of the feed
  // that finds it unchanged was this store's doing. std::nullopt where
  // the backend does not tell (PostgreSQL).
  std::optional<int64_t> others_version();

  // Group commit for a long-lived writer (Db::defer_sync): from now on a
  // commit of this store returns before the disk has it, and a thread of
  // the store's syncs it, one sync for every commit that waited. Callers
  // must not act on a commit before wait_durable(the commit_seq() read
  // after it) returns; it says whether it had to wait. false where commits
  // are durable when they return (PostgreSQL, an SQLite file not in WAL
  // mode): then nothing waits. durable(n): whether wait_durable(n) would
  // return at once; durable_fd(): a descriptor readable after each sync,
  // to poll on (read it to clear it), or -1.
  // The wake-up of the waiting processes this store's commits owe
  // (Db::wake_due): a long-lived writer polls no longer than wake_due()
  // and calls wake_owed() after.
  std::optional<std::chrono::steady_clock::time_point> wake_due() const;
  void wake_owed();
  // The losses of the connection to the server so far, and the last
  // one's message (Db::connection_losses): a worker says each loss once,
  // on whatever path it came.
  uint64_t connection_losses() const;
  std::string last_connection_loss() const;

  bool defer_sync();
  uint64_t commit_seq() const;
  bool wait_durable(uint64_t seq);
  bool durable(uint64_t seq) const;
  int durable_fd() const;

  // --- features/add_store.cpp: adding tasks, and retrying finished ones ---
  // Adds one task; returns its id. `actor` is logged as its creator. With
  // task.unique_key, returns the unfinished task with that key and queue
  // instead when there is one (see add_unique).
  int64_t add(const NewTask& task, core::Time now, const std::string& actor);

  // The same, saying whether the task already existed. The check and the
  // insert are one write transaction, so concurrent adds of one key create
  // exactly one task.
  Added add_unique(const NewTask& task, core::Time now,
                   const std::string& actor);

  // Adds one task per payload that `next` yields (it fills its argument
  // and returns true, or returns false at the end; it may throw to abort),
  // all in one transaction: all or nothing. `on_id` sees each id after the
  // commit, in order (consecutive on SQLite only). Returns the count.
  int64_t add_many(const NewTask& proto,
                   const std::function<bool(std::string&)>& next,
                   const std::function<void(int64_t)>& on_id, core::Time now,
                   const std::string& actor);

  // A new task with the spec of failed/killed task `id`; returns its id.
  // Conflict when it already has a live retry (see retry_many).
  int64_t retry(int64_t id, const std::string& actor, core::Time now);

  // Retries the selected tasks in one transaction. With ids: all or
  // nothing; a task not failed or killed, an atom's task, or (unless
  // `live` is again) one with a live retry is a conflict naming it. With
  // filters (states only failed and/or killed, usage error otherwise):
  // such tasks are skipped and reported with `skipped`. Ids in the order
  // given; filters: by id.
  std::vector<Retried> retry_many(const Selector& sel, LiveRetry live,
                                  const std::string& actor, core::Time now);

  // --- features/lease_store.cpp: leasing, and when to look again ---
  // Leases up to req.count eligible tasks (in the order of
  // doc/reference/task.md#leases), each until now + lease_for with a fresh
  // token, incrementing attempts. A task that would pass its max_attempts is
  // paused instead, and an obsolete one (root) killed. First emits the due
  // schedules of req.queues, and hands out the broadcasts req.worker has not
  // had: a broadcast comes with a token of its own that
  // heartbeat/done/fail/release accept without changing the task. Empty when
  // none.
  std::vector<core::Task> lease(const LeaseRequest& req, core::Time now);

  // The earliest time after `now` at which a task of `queues` can become
  // eligible with no write to the database: a delayed task coming due, a
  // sleeper waking, a lease expiring, a schedule's tick. std::nullopt when
  // none will. Costs
  // O(log n) per queue and distinct priority.
  std::optional<core::Time> next_due(const std::vector<std::string>& queues,
                                     core::Time now);

  // Whether a task of `queues` is due now, has an expired lease, is a
  // broadcast `worker` has not had, or a schedule of theirs is due: a
  // read-only look before taking the write lock to lease. It ignores labels,
  // addressing and limits, so true means "try", never "there is one".
  // Costs O(log n) per queue and distinct priority, however many tasks wait
  // for a later time.
  bool anything_due(const std::vector<std::string>& queues, core::Time now,
                    const std::string& worker);

  // --- features/worker_store.cpp: a lease holder's writes ---
  // Worker writes: each needs the current live lease token, else conflict
  // ("lease lost", naming the operator's message when one revoked it).
  HeartbeatResult heartbeat(int64_t id, const std::string& token,
                            std::optional<core::Millis> extend,
                            const std::optional<std::string>& checkpoint,
                            core::Time now);

  // `sync` (done --sync) is merged into the sync state of the schedule that
  // emitted the task; conflict when the task came from no schedule.
  // `output`: the handler's last output, stored in the same transaction
  // (as append_output would), so that `run` writes once per task.
  core::Task complete(int64_t id, const std::string& token,
                      const std::optional<std::string>& result, core::Time now,
                      const core::Labels& sync = {},
                      const OutputWrite& output = {});

  // complete() for a caller with no use for the task written (`done`): one
  // read of it less.
  void complete_only(int64_t id, const std::string& token,
                     const std::optional<std::string>& result, core::Time now,
                     const core::Labels& sync = {});
  core::Task fail(int64_t id, const std::string& token, const FailRequest& req,
                  core::Time now, const OutputWrite& output = {});
  core::Task release(int64_t id, const std::string& token,
                     std::optional<core::Millis> delay, core::Time now,
                     const OutputWrite& output = {});

  // Applies each outcome (checking its lease token first, so that a lost
  // lease skips that outcome only, writing nothing for it: its result says
  // why), then, when `next` is set, leases as lease() would: all in one
  // transaction (one commit). Another error (not a lost lease) changes
  // nothing and throws.
  BatchResult apply_outcomes(const std::vector<Outcome>& outcomes,
                             const std::optional<LeaseRequest>& next,
                             core::Time now);
  core::Task worker_sleep(int64_t id, const std::string& token,
                          core::Time until, core::Time now);

  // The operator message that revoked `token` (`pause`, `sleep`, `kill` or
  // `release`), if one did.
  std::optional<std::string> revoked_reason(int64_t id,
                                            const std::string& token);

  // Whether `token` is still the live lease of task `id` at `now` (or the
  // token of its broadcast delivery). Reads
  // only, so a worker can check its leases on every change without waking
  // the others.
  bool lease_held(int64_t id, const std::string& token, core::Time now);

  // lease_held, and when held, whether an operator has frozen the task's
  // command under this lease (`freeze`, not yet `continue`d): std::nullopt
  // when not held. What `run` checks on every change.
  std::optional<bool> lease_frozen(int64_t id, const std::string& token,
                                   core::Time now);
  // lease_frozen of each of `leases` (task id, token), in their order, in
  // one statement (one snapshot): what `run` checks on a change for its
  // running tasks and those it leased ahead, one round trip for all.
  std::vector<std::optional<bool>>
  leases_frozen(const std::vector<std::pair<int64_t, std::string>>& leases,
                core::Time now);

  // --- features/message_store.cpp: an operator's changes to selected tasks
  // --- Operator message to the selected tasks. With ids: all or nothing, and a
  // refused transition on any id is a conflict. With filters: applies to the
  // tasks whose state accepts the message. Revokes live leases (pause,
  // sleep, kill, release). Returns the changed tasks.
  std::vector<core::Task> send(const Selector& sel, core::Message msg,
                               std::optional<core::Time> until,
                               const std::string& actor, core::Time now);

  // send's bulk form (filters) in bounded memory: the selected tasks are
  // read and changed a batch at a time, all in one transaction, and only
  // their number is kept (and their ids, in `ids` when given).
  int64_t send_bulk(const Selector& sel, core::Message msg,
                    std::optional<core::Time> until, const std::string& actor,
                    core::Time now, std::vector<int64_t>* ids = nullptr);

  // `freeze` (`frozen` true) or `continue` (false) of the running commands
  // of tasks `ids`, all or nothing: each must hold a live lease of its own
  // (a broadcast's deliveries are refused), not frozen yet to freeze,
  // frozen to continue. Logs a `freeze` or `continue` event, which the
  // worker holding the lease acts on (SIGSTOP, SIGCONT); the state and the
  // lease are untouched. Returns the tasks.
  // `expect_rev` (with exactly one id, else usage): refused as
  // Selector::expect_rev says when the task is at another revision.
  std::vector<core::Task>
  freeze(const std::vector<int64_t>& ids, bool frozen, const std::string& actor,
         core::Time now, std::optional<int64_t> expect_rev = std::nullopt);

  // Deletes the selected tasks with their errors and events: finished ones
  // only, unless req.force (then a deleted unfinished task counts as
  // killed for the tasks waiting for it). Returns how many it deleted, or
  // with req.dry_run how many it would.
  int64_t purge(const PurgeRequest& req, core::Time now);

  // --- features/queue_store.cpp: queues as a whole, and their workers ---
  void set_queue(const std::string& queue, const QueueSettings& settings);

  // A paused queue leases nothing; its leased tasks run on and finish.
  void set_queue_paused(const std::string& queue, bool paused);

  // Every queue that has tasks, settings or counters, by name, with its
  // settings and stats.
  std::vector<QueueInfo> queues(core::Time now);

  // One queue; not_found when it has no tasks, settings or counters.
  QueueInfo queue(const std::string& name, core::Time now);

  // The name of every queue that has or had tasks, or has settings or
  // counters, sorted. Reads only the per-queue counters and settings rows:
  // cheap however many tasks there are.
  std::vector<std::string> queue_names();

  std::vector<QueueStats> stats(const std::optional<std::string>& queue,
                                core::Time now);

  // Per queue (every queue with tasks or counters, by name): the stats and
  // the counters. A lease that has expired but not been reclaimed yet
  // counts as expired.
  std::vector<QueueMetrics> metrics(core::Time now);

  // Makes every delayed or sleeping task of `queue` that is not leased and
  // not yet due, due at `now`, keeping its state (MassTasker's bulk
  // not_before reset), and logs a `requeue` event for each. Returns them.
  std::vector<core::Task> requeue(const std::string& queue,
                                  const std::string& actor, core::Time now);

  // The way back from a dead-letter queue: every runnable or sleeping task
  // of `from` that is not leased moves to `to`, runnable and due now, its
  // attempts reset and its error history kept. Returns how many moved.
  int64_t redrive(const std::string& from, const std::string& to,
                  const std::string& actor, core::Time now);

  // The workers holding a live lease at `now` or that logged a lease,
  // complete or error at or after `since`, by name.
  std::vector<WorkerInfo> workers(core::Time since, core::Time now);

  // --- features/read_store.cpp: reading tasks, and the event stream ---
  std::optional<core::Task> find(int64_t id);
  // The last event of task `id` whose actor is `actor` (a worker's name):
  // how a worker tells an outcome it wrote twice, the first time with the
  // answer lost with its connection, from one it never wrote
  // (worker::recorded_before).
  std::optional<core::Event> last_event_by(int64_t id,
                                           const std::string& actor);
  TaskDetail show(int64_t id); // not_found when missing
  std::vector<core::Task> list(const Selector& sel, core::Time now);

  // One line per reason task `id` is not running now (empty: it is
  // eligible). `worker` is the asking worker, for addressing.
  std::vector<std::string> why(int64_t id, core::Time now,
                               const std::string& worker);

  // The events after `cursor`, oldest first, at most `limit`, of `queue`
  // (all when null) at or after `since`; advances `cursor` past them.
  std::vector<StreamEvent> events(const std::optional<std::string>& queue,
                                  std::optional<core::Time> since,
                                  EventCursor& cursor, int64_t limit);

  // The cursor after everything logged so far.
  EventCursor events_end();

  // --- features/web_store.cpp: the web view's pages and counts ---
  // One page of the tasks `sel` selects (its ids, or its filters and page
  // fields; at most sel.limit rows, k_page_rows when unset, never more than
  // k_page_rows_max), oldest first, or newest first with sel.newest; see
  // TaskPage for what a row holds. Costs the rows it shows: a keyset range
  // of the index of the selector's states (running, ready and runnable
  // read the partial indexes of unfinished tasks whole, as list does), at
  // most k_page_scan rows for labels and the created range, at most
  // `text_candidates` for a text search (k_text_candidates but in tests).
  TaskPage task_page(const Selector& sel, core::Time now,
                     int64_t text_candidates = k_text_candidates);

  // How many tasks `sel` selects: what task_page lists across every page
  // (after_id, before_id and limit are not read), and what send_bulk acts
  // on before each task's state is asked. Ids: how many distinct, each
  // must exist (not_found). A text search is a usage error: it is
  // bounded. Costs O(queues) for states alone (the counts the triggers
  // keep), else the tasks of the selector's indexes.
  int64_t count(const Selector& sel, core::Time now);

  // --- features/history_store.cpp: the web view's history and errors, from the
  // event log ---
  // The history of `queue` (all when null) up to `now`, from the event log:
  // see History. Reads at most k_history_events events and computes its
  // percentiles from at most k_history_samples samples per window.
  History history(const std::optional<std::string>& queue, core::Time now);

  // The errors workers reported at or after `since` (taskq's own give-up
  // is not one), grouped by message: the `limit` biggest groups, the
  // latest first among equals. Reads at most k_error_rows errors, the
  // latest; `bounded`, when given, is set to whether it met that bound.
  std::vector<ErrorGroup> error_groups(core::Time since, int64_t limit,
                                       bool* bounded = nullptr);

  // --- features/complete_store.cpp: shell completion ---
  // Shell completion: the ids of the tasks in one of `states` (any state
  // when empty; with `leased`, only those holding a lease), newest first,
  // at most `limit`.
  std::vector<int64_t> recent_ids(const std::vector<core::TaskState>& states,
                                  bool leased, int64_t limit);

  // --- features/tx_store.cpp: tx documents ---
  // Applies a tx document all or nothing. Checks, in this order: every
  // `require` (a missing task or another rev: conflict); that every task
  // to delete, update or complete exists, and every `after` of a create
  // (not_found); then each update's rev, each delete's lease (a leased
  // task needs its live token) and each complete's lease (conflict). Then
  // deletes, updates, completes and creates. A task in more than one of
  // delete, update and complete is a usage error. A deleted unfinished
  // task counts as killed for the tasks waiting for it.
  TxResult apply_tx(const TxRequest& req, core::Time now,
                    const std::string& actor);

  // --- features/output_store.cpp: a handler's output ---
  // Stores chunks of output in one transaction (each chunk's offset is
  // where it lies in its stream), then drops the oldest bytes of each
  // stream they extend so that at most `keep` of them remain (the last
  // ones). Chunks of a task that no longer exists are dropped.
  void append_output(const std::vector<OutputChunk>& chunks, int64_t keep);

  // The kept output of `task`'s attempt, chunks after id `after` in the
  // order written, of `stream` only when given.
  std::vector<OutputChunk> output(int64_t task, int64_t attempt,
                                  const std::optional<std::string>& stream,
                                  int64_t after = 0);

  // What each attempt's streams keep, by attempt then stream.
  std::vector<OutputSize> output_sizes(int64_t task);

  // --- features/flow_store.cpp: flows ---
  // Flows. submit_flow: usage for a document compile_flow refuses; the new
  // flow starts at once (its first atoms' tasks are created). Its id.
  int64_t submit_flow(const std::string& document, core::Time now,
                      const std::string& actor);
  FlowReply flow_request(int64_t id, FlowRequest req, core::Time now);

  // --- features/flow_read_store.cpp: flows read ---
  std::vector<FlowSummary> flows(const std::optional<std::string>& state);
  FlowDetail flow(int64_t id); // not_found when missing
  std::optional<FlowSummary> find_flow(int64_t id);

  // How many flows are in each state, every state named (PENDING first,
  // in TaskFlow's order).
  std::vector<std::pair<std::string, int64_t>> flow_counts();

  // --- features/schedule_store.cpp: schedules and gates ---
  // Schedules. add_schedule: conflict when the name is taken; the first
  // emission waits for the first tick after `now`. Pausing stops emission;
  // resuming starts again from the first tick after `now` (ticks missed
  // while paused are not back-filled). not_found for an unknown name.
  void add_schedule(const ScheduleSpec& spec, core::Time now,
                    const std::string& actor);
  std::vector<ScheduleInfo> schedules();
  ScheduleInfo schedule(const std::string& name);
  void set_schedule_paused(const std::string& name, bool paused,
                           core::Time now);
  void remove_schedule(const std::string& name);

  // Emits every due schedule (of all queues, or of `queue`): one task per
  // schedule at most, none while its last task is unfinished; each
  // schedule's next tick moves past `now` either way. Returns the new ids.
  std::vector<int64_t> tick(const std::optional<std::string>& queue,
                            core::Time now, const std::string& actor);

  // Gates. add_gate: conflict when the name is taken. not_found for an
  // unknown name.
  void add_gate(const GateSpec& spec, core::Time now, const std::string& actor);
  std::vector<GateInfo> gates();
  GateInfo gate(const std::string& name);
  void remove_gate(const std::string& name);

  // --- features/transfer_store.cpp: export and import ---
  // Calls `each` with every task (of `queue`, when given) in id order,
  // then, without `queue`, with every flow in id order (TaskImage::flow),
  // from one snapshot. A flow's tasks may lie in several queues, so a
  // queue's export holds no flows.
  void export_tasks(const std::optional<std::string>& queue,
                    const std::function<void(const TaskImage&)>& each);

  // Adds each task `next` yields (it fills its argument and returns true,
  // or returns false at the end) exactly as exported, keeping its id, all
  // in one transaction. Conflict when an id is taken; usage when a row
  // names an unknown column, holds a value add or tx would not write (a
  // time outside years 0000-9999, an invalid queue name or label, ...) or
  // breaks a rule db check verifies (a finished task holding a lease, a
  // wrong count of unfinished dependencies). Flows (TaskImage::flow) come
  // back the same way: their document must compile and their atoms'
  // rows match its nodes; an atom's task and the task's `flow` link must
  // name each other, as db check verifies. Errors start with `line N: `
  // (TaskImage::line) when it is set. Returns how many tasks.
  int64_t import_tasks(const std::function<bool(TaskImage&)>& next);

  // --- features/check_store.cpp: db check ---
  // SQLite's integrity check, the schema (tables, columns, indexes,
  // triggers) against what the migrations make, then taskq's invariants.
  CheckReport check();

  // --- features/top_store.cpp: top's snapshot ---
  // What `top` shows, read from one snapshot: every queue, at most `limit`
  // running tasks and `limit` other unfinished ones, and the `limit` latest
  // failed tasks. Costs O(queues' tasks) for the counts, as stats does.
  TopView top_view(core::Time now, int64_t limit);

private:
  // The time a write decides with: the clock's, read now (call it once the
  // write lock is held), or `given` when the store has no clock.
  core::Time locked_now(core::Time given) const {
    return m_clock ? m_clock() : given;
  }

  // --- features/message_store.cpp ---
  void purge_unfinished(core::Time now); // purge --force's unfinished tasks

  std::unique_ptr<Db> m_db;
  Clock m_clock;
  bool m_schema_pending = false; // see OpenMode::clock
};

// The latest schema version this binary knows.
int latest_schema_version();

} // namespace taskq::storage
