#pragma once

#include "core/schedule.hpp"
#include "core/task.hpp"
#include "storage/change_feed.hpp"

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
// (postgresql://... or postgres://...) rather than a file.
bool is_postgres_url(std::string_view path);

// `url` with its password, if any, replaced by `***`: how a URL is shown in
// messages and by `db path`.
std::string redact_url(std::string_view url);

// How to open the database file.
// A missing SQLite file is ErrorKind::unavailable ("no database at PATH
// (the first add creates it)") for every mode but `write`, and nothing is
// created (no file, folder, -wal or -shm).
enum class OpenMode {
  read,   // reads only
  update, // writes to a database that exists (lease, run, pause, ...)
  write,  // creates the file (0600) and its folder when missing (add, ...)
  // PostgreSQL only: for the server's clock, before a command has checked
  // its input. The schema is left as it is until open_for() names what
  // the command does, so that a refused command creates no tables.
  clock,
};

// What `add` creates. payload/labels etc. are validated by the caller.
struct NewTask {
  std::string queue;
  std::string payload = "null"; // JSON text
  core::Labels labels;
  int64_t priority = 0;
  std::optional<core::Time> run_at; // default: now
  std::optional<int64_t> max_attempts;
  core::PolicyOverrides policy;
  std::optional<int64_t> retry_of;
  // While an unfinished task of the same queue has this key, adding creates
  // nothing (`add --unique KEY`).
  std::optional<std::string> unique_key;
  // Waits until each of these tasks is completed; when one ends failed or
  // killed, it is paused with that reason instead. Each must exist.
  std::vector<int64_t> after;
  // While an unfinished task with all these labels exists, this task is
  // obsolete: not added, or killed instead of leased (rescue Root).
  core::Labels root;
  std::optional<std::string> to_worker; // only this worker leases it
  // Delivered once to every worker that leases from the queue, without a
  // lease to complete, until now + this; then it ends `completed`.
  std::optional<core::Millis> broadcast_ttl;
  std::optional<std::string> trigger; // a gate key it covers on completion
  std::optional<std::string> flow;    // an atom's task: see core::Task::flow
  // The argv it runs (core::Task::command): empty, or valid UTF-8 strings
  // (checked by the caller), the first not empty.
  std::vector<std::string> command;
};

// What add_unique did: a new task, the unfinished one with the same key
// (existed), or nothing because a live task made it obsolete (id 0,
// obsoleted_by that task).
struct Added {
  int64_t id = 0;
  bool existed = false;
  std::optional<int64_t> obsoleted_by;
};

// A recurring schedule (`schedule add`), and the task it emits.
struct ScheduleSpec {
  std::string name;
  std::string queue;
  core::Schedule when;
  std::string payload = "null"; // JSON text
  core::Labels labels;
  int64_t priority = 0;
};

struct ScheduleInfo {
  ScheduleSpec spec;
  bool paused = false;
  core::Labels sync; // carried to the next emitted task
  std::optional<int64_t> last_task;
  core::Time due_at; // the stored tick the next emission waits for
  core::Time created_at;
};

// A recurring barrier (`gate add`): once a completed task with
// `--trigger K` has covered each key, it emits its task and re-arms.
struct GateSpec {
  std::string name;
  std::string queue;
  std::vector<std::string> keys; // sorted, unique, not empty
  std::string payload = "null";  // JSON text
  core::Labels labels;
  int64_t priority = 0;
};

struct GateInfo {
  GateSpec spec;
  std::vector<std::string> covered; // keys covered since it last emitted
  int64_t emitted = 0;
  std::optional<int64_t> last_task;
  core::Time created_at;
};

struct LeaseRequest {
  std::vector<std::string> queues;
  std::vector<core::LabelPattern> match;
  core::Millis lease_for = std::chrono::minutes(5);
  int count = 1;
  std::string worker;
  // Tasks not to lease even when eligible: `run` names those whose
  // handlers it is still stopping, so that a task an operator released
  // never runs twice at once in one worker.
  std::vector<int64_t> skip;
};

// Which tasks a bulk operator command applies to. Either ids, or filters.
struct Selector {
  std::vector<int64_t> ids;
  std::optional<std::string> queue;
  // Any of these: state names, `running` or `ready` (none: every state).
  std::vector<std::string> states;
  std::vector<core::LabelPattern> match;
  std::optional<int64_t> limit;
  bool newest = false; // by id, newest first (else oldest first)
  bool has_filters() const {
    return queue || !states.empty() || !match.empty();
  }
};

// What `retry` does with a task that already has a live retry (a task whose
// retry_of is it, not finished).
enum class LiveRetry {
  refuse, // conflict, naming the live retry (ids), or skip it (filters)
  again,  // retry it anyway (`--again`)
};

// One retried task: the old id, the new id; or, in a bulk retry, a task
// skipped (retry 0) and why.
struct Retried {
  int64_t task = 0;
  int64_t retry = 0;
  std::string skipped; // why it was skipped, when retry is 0
};

enum class FailMode { policy, no_retry, move_to };

struct FailRequest {
  std::string error;
  FailMode mode = FailMode::policy;
  std::string move_to;                  // with FailMode::move_to
  std::optional<core::Millis> retry_in; // with FailMode::policy
};

struct HeartbeatResult {
  core::Time expires_at;
  bool checkpoint_requested = false;
};

// Per-queue settings (`queue set`); unset fields keep their value.
struct QueueSettings {
  std::optional<int64_t> max_running;
  std::optional<int64_t> max_attempts;
  core::PolicyOverrides policy;
};

struct QueueStats {
  std::string queue;
  int64_t runnable = 0, sleeping = 0, paused = 0, completed = 0, failed = 0,
          killed = 0;
  int64_t running = 0; // runnable with a live lease
  int64_t ready = 0;   // runnable or due sleeping, due, not leased
  int64_t delayed = 0; // runnable, not yet due
  std::optional<core::Millis> oldest_ready_age;
  int64_t completed_last_minute = 0, completed_last_hour = 0;
};

// What `metrics` reports of a queue: its stats, and its counters.
struct QueueMetrics {
  QueueStats stats;
  int64_t errors_total = 0;         // errors workers reported (fail)
  int64_t leases_expired_total = 0; // leases that ran out on their worker
};

// A queue's settings (`queue set`, `queue pause`) and its counts.
struct QueueInfo {
  std::string name;
  bool paused = false;
  std::optional<int64_t> max_running;
  std::optional<int64_t> max_attempts;
  core::PolicyOverrides policy;
  QueueStats stats; // zero counts when it has no tasks
};

// A worker seen recently (`taskq workers`), derived from its live leases
// and the events it logged (lease, complete, error): no worker row is
// kept, so a worker that only waits on an empty queue is not seen.
struct WorkerTask {
  int64_t id = 0;
  std::string queue;
  std::optional<core::Time> started_at; // its lease event
  core::Time expires_at;
};
struct WorkerInfo {
  std::string name;
  std::vector<WorkerTask> running; // live leases, by id
  core::Time last_seen;            // its latest event or heartbeat
  // The latest lease or heartbeat of its live leases (none: idle).
  std::optional<core::Time> last_heartbeat;
};

// What `taskq top` shows at one moment (TaskStore::top_view).
struct TopQueue {
  QueueStats stats;
  bool paused = false; // `queue pause`: it leases nothing
};
struct TopTask {
  core::Task task; // without its error history
  // When its live lease began (its latest `lease` event); running only.
  std::optional<core::Time> leased_at;
  std::optional<std::string> last_error; // its latest error, if any
};
struct TopView {
  // Every queue with tasks or a row of settings, by name.
  std::vector<TopQueue> queues;
  // Unfinished tasks: the running ones by id, then the others newest first.
  std::vector<TopTask> tasks;
  std::vector<TopTask> failures; // failed tasks, the latest to fail first
};

// Which finished tasks `purge` deletes.
struct PurgeRequest {
  std::optional<std::string> queue;
  std::vector<core::TaskState> states;    // empty: every terminal state
  std::optional<core::Millis> older_than; // finished at least this long ago
  bool force = false;   // also unfinished tasks (only those in `states`)
  bool dry_run = false; // count, delete nothing
};

// One entry of the event stream (`events`): a row of the event log, or a
// task's creation as an `add` event (event.id 0), with the task's queue.
struct StreamEvent {
  core::Event event;
  std::string queue;
  // A flow's state change instead (event.task_id 0, event.to its state,
  // event.detail its name): the flow's id.
  int64_t flow = 0;
};

// Where a reader of the event stream is: the last event row and the last
// created task it has seen.
struct EventCursor {
  int64_t event_id = 0;
  int64_t task_id = 0;
  int64_t flow_event_id = 0;
};

// One `taskq tx` document (MassTasker's Update), applied by apply_tx in one
// transaction. Each operation is named in errors by its list and index,
// e.g. `update[1]`.
struct TxRequire { // a predicate: task `id` exists at `rev`
  int64_t id = 0;
  int64_t rev = 0;
};
struct TxDelete { // with the live lease token when the task is leased
  int64_t id = 0;
  std::optional<std::string> lease;
};
struct TxUpdate { // the given fields replace the task's, at `rev`
  int64_t id = 0;
  int64_t rev = 0;
  std::optional<std::string> payload; // JSON text
  std::optional<core::Labels> labels;
  std::optional<std::string> queue;
  std::optional<core::Time> run_at;
  std::optional<int64_t> priority;
};
struct TxComplete { // `done` by the lease holder
  int64_t id = 0;
  std::string lease;
  std::optional<std::string> result; // JSON text
};
struct TxRequest {
  std::vector<TxRequire> require;
  std::vector<TxDelete> remove;
  std::vector<TxUpdate> update;
  std::vector<NewTask> create;
  std::vector<TxComplete> complete;
};
struct TxResult {
  std::vector<int64_t> created;                     // in request order
  std::vector<std::pair<int64_t, int64_t>> updated; // (id, new rev)
};

// A task exactly as stored, for `export` and `import`: its row and the
// rows beside it, each a list of (column, value as JSON text) in the
// table's column order. Columns that hold JSON (payload, labels, ...) are
// embedded as stored, so the text round-trips byte for byte.
using ImageRow = std::vector<std::pair<std::string, std::string>>;
struct TaskImage {
  int64_t line = 0; // where it was read, named in errors (0: not named)
  ImageRow task;
  std::vector<ImageRow> errors;     // oldest first
  std::vector<ImageRow> events;     // oldest first, without their ids
  std::vector<ImageRow> deps;       // the dependencies it has waited for
  std::vector<ImageRow> deliveries; // a broadcast's deliveries
  // Its job output's chunks in the order written, without their ids;
  // `data` is the bytes in base64.
  std::vector<ImageRow> output;
  // Set when the image is a flow rather than a task (the lists above are
  // then empty): its `flows` row (without its version) followed by its
  // document's columns, its atoms' rows in node order (without their
  // flow_id) and its event history, oldest first, without ids.
  struct Flow {
    ImageRow flow;
    std::vector<ImageRow> atoms;
    std::vector<ImageRow> events;
  };
  std::optional<Flow> flow;
};

// Flows (doc/flows.md). Times as stored; JSON values as their text.
struct FlowSummary {
  int64_t id = 0;
  std::string name;
  std::string state; // PENDING, RUNNING, ...
  core::Time created_at;
  core::Time updated_at;
};
struct FlowAtomInfo {
  std::string name;
  std::string kind; // task, retry
  std::string flow; // the (nested) flow that holds it
  std::string state;
  std::string intention;
  std::optional<int64_t> task;       // the task working for it now
  std::optional<std::string> result; // JSON text
  std::optional<std::string> failure;
  std::optional<std::string> history; // JSON text: a retry's history
};
struct FlowEventInfo {
  core::Time time;
  std::string name;
  std::string kind; // flow, task, retry
  std::string state;
  std::optional<std::string> result; // JSON text
};
struct FlowDetail {
  FlowSummary flow;
  std::string store; // JSON text
  std::vector<FlowAtomInfo> atoms;
  std::vector<FlowEventInfo> events; // oldest first
};
enum class FlowRequest { suspend, resume, rerun, rerun_reset };
// What became of a request: done, or ignored (changed nothing; `note`
// says why). A refused request throws conflict instead.
struct FlowReply {
  bool ignored = false;
  std::string note;
  std::string state; // the flow's state after it
};

// Job output (schema 7): what a handler printed on stdout or stderr during
// one attempt, kept in chunks (`run`, `done`/`fail --output-file`).
struct OutputChunk {
  int64_t id = 0; // orders the chunks of an attempt's streams as written
  int64_t task = 0;
  int64_t attempt = 0;
  std::string stream; // "stdout" or "stderr"
  int64_t offset = 0; // of its first byte among all the stream printed
  std::string data;   // bytes, any
};

// Output to store along with a worker's outcome (complete, fail, release),
// in its transaction: see append_output.
struct OutputWrite {
  std::vector<OutputChunk> chunks;
  int64_t keep = 0;
};

// How much of one stream of one attempt is kept.
struct OutputSize {
  int64_t attempt = 0;
  std::string stream;
  int64_t kept = 0;  // bytes stored
  int64_t total = 0; // bytes printed; the first total - kept were dropped
};

// One worker outcome for apply_outcomes (run, run --stream).
struct Outcome {
  enum class Kind { complete, fail, release } kind = Kind::complete;
  int64_t id = 0;
  std::string token;
  std::optional<std::string> result; // complete: JSON text
  FailRequest fail;                  // fail
  std::optional<core::Millis> delay; // release
  OutputWrite output;
};
struct OutcomeResult {
  int64_t id = 0;
  // The task after it (none: lease lost). After a complete, the task as
  // checked with its new state, lease and result, not read again.
  std::optional<core::Task> task;
  // Why, when the lease was lost (the conflict message, as complete()
  // would say).
  std::string lost;
};
struct BatchResult {
  std::vector<OutcomeResult> outcomes; // in request order
  std::vector<core::Task> leased;      // by `next`, empty when none
};

struct TaskDetail {
  core::Task task;
  std::vector<core::Event> events; // oldest first
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

  // Opens (and migrates) the database at `path`. Throws unavailable for a
  // path that is not a regular file, a file that is not a database, a
  // database of another program (it has tables but no taskq schema), or
  // one whose schema is newer than this binary; such files are left as
  // they were. Only a missing or empty file is initialised.
  TaskStore(const std::string& path, OpenMode mode, Clock clock = {});
  ~TaskStore();
  TaskStore(const TaskStore&) = delete;
  TaskStore& operator=(const TaskStore&) = delete;

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
  // all in one transaction: all or nothing. `on_id` sees each new id, in
  // order; the ids are consecutive. Returns the count.
  int64_t add_many(const NewTask& proto,
                   const std::function<bool(std::string&)>& next,
                   const std::function<void(int64_t)>& on_id, core::Time now,
                   const std::string& actor);

  // Leases up to req.count eligible tasks (in the order of
  // doc/reference/task.md#leases), each until now + lease_for with a fresh
  // token, incrementing attempts. A task that would pass its max_attempts is
  // paused instead, and an obsolete one (root) killed. First emits the due
  // schedules of req.queues, and hands out the broadcasts req.worker has not
  // had: a broadcast comes with a token of its own that
  // heartbeat/done/fail/release accept without changing the task. Empty when
  // none.
  std::vector<core::Task> lease(const LeaseRequest& req, core::Time now);

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
  bool defer_sync();
  uint64_t commit_seq() const;
  bool wait_durable(uint64_t seq);
  bool durable(uint64_t seq) const;
  int durable_fd() const;

  // Operator message to the selected tasks. With ids: all or nothing, and a
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

  // Makes every delayed or sleeping task of `queue` that is not leased and
  // not yet due, due at `now`, keeping its state (MassTasker's bulk
  // not_before reset), and logs a `requeue` event for each. Returns them.
  std::vector<core::Task> requeue(const std::string& queue,
                                  const std::string& actor, core::Time now);

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

  std::optional<core::Task> find(int64_t id);
  TaskDetail show(int64_t id); // not_found when missing
  std::vector<core::Task> list(const Selector& sel, core::Time now);
  // Shell completion: the ids of the tasks in one of `states` (any state
  // when empty; with `leased`, only those holding a lease), newest first,
  // at most `limit` (complete_store.cpp).
  std::vector<int64_t> recent_ids(const std::vector<core::TaskState>& states,
                                  bool leased, int64_t limit);
  std::vector<QueueStats> stats(const std::optional<std::string>& queue,
                                core::Time now);
  // One line per reason task `id` is not running now (empty: it is
  // eligible). `worker` is the asking worker, for addressing.
  std::vector<std::string> why(int64_t id, core::Time now,
                               const std::string& worker);

  // Flows. submit_flow: usage for a document compile_flow refuses; the new
  // flow starts at once (its first atoms' tasks are created). Its id.
  int64_t submit_flow(const std::string& document, core::Time now,
                      const std::string& actor);
  FlowReply flow_request(int64_t id, FlowRequest req, core::Time now);
  std::vector<FlowSummary> flows(const std::optional<std::string>& state);
  FlowDetail flow(int64_t id); // not_found when missing
  std::optional<FlowSummary> find_flow(int64_t id);
  // How many flows are in each state, every state named (PENDING first,
  // in TaskFlow's order).
  std::vector<std::pair<std::string, int64_t>> flow_counts();

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

  // Every queue that has tasks, settings or counters, by name, with its
  // settings and stats.
  std::vector<QueueInfo> queues(core::Time now);
  // One queue; not_found when it has no tasks, settings or counters.
  QueueInfo queue(const std::string& name, core::Time now);
  // The workers holding a live lease at `now` or that logged a lease,
  // complete or error at or after `since`, by name.
  std::vector<WorkerInfo> workers(core::Time since, core::Time now);

  void set_queue(const std::string& queue, const QueueSettings& settings);
  // A paused queue leases nothing; its leased tasks run on and finish.
  void set_queue_paused(const std::string& queue, bool paused);
  // The way back from a dead-letter queue: every runnable or sleeping task
  // of `from` that is not leased moves to `to`, runnable and due now, its
  // attempts reset and its error history kept. Returns how many moved.
  int64_t redrive(const std::string& from, const std::string& to,
                  const std::string& actor, core::Time now);
  // Deletes the selected tasks with their errors and events: finished ones
  // only, unless req.force (then a deleted unfinished task counts as
  // killed for the tasks waiting for it). Returns how many it deleted, or
  // with req.dry_run how many it would.
  int64_t purge(const PurgeRequest& req, core::Time now);

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

  // Database administration. check: SQLite's integrity check, the schema
  // (tables, columns, indexes, triggers) against what the migrations make,
  // then taskq's invariants.
  CheckReport check();
  int schema_version();
  int migrate(); // applies pending migrations; returns the version
  // A store opened with OpenMode::clock is made ready for `mode`: its
  // schema brought up to date. Does nothing otherwise.
  void open_for(OpenMode mode);
  // Copies the database to a temporary file beside `dest_path`, flushed to
  // disk, then renamed to it: `dest_path` is absent or a whole backup.
  void backup(const std::string& dest_path);
  void vacuum(); // rebuilds the file, giving free pages back

  // Per queue (every queue with tasks or counters, by name): the stats and
  // the counters. A lease that has expired but not been reclaimed yet
  // counts as expired.
  std::vector<QueueMetrics> metrics(core::Time now);

  // What `top` shows, read from one snapshot: every queue, at most `limit`
  // running tasks and `limit` other unfinished ones, and the `limit` latest
  // failed tasks. Costs O(queues' tasks) for the counts, as stats does.
  TopView top_view(core::Time now, int64_t limit);

  // The events after `cursor`, oldest first, at most `limit`, of `queue`
  // (all when null) at or after `since`; advances `cursor` past them.
  std::vector<StreamEvent> events(const std::optional<std::string>& queue,
                                  std::optional<core::Time> since,
                                  EventCursor& cursor, int64_t limit);
  // The cursor after everything logged so far.
  EventCursor events_end();

private:
  void purge_unfinished(core::Time now); // purge --force's unfinished tasks

  // The time a write decides with: the clock's, read now (call it once the
  // write lock is held), or `given` when the store has no clock.
  core::Time locked_now(core::Time given) const {
    return m_clock ? m_clock() : given;
  }

  std::unique_ptr<Db> m_db;
  Clock m_clock;
  bool m_schema_pending = false; // see OpenMode::clock
};

// The latest schema version this binary knows.
int latest_schema_version();

} // namespace taskq::storage
