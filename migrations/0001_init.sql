-- taskq schema 1: tasks, their error history, their event log, and queues.
-- Times are integer milliseconds since the Unix epoch (UTC).
-- JSON values are stored as their JSON text.

CREATE TABLE queues (
  name            TEXT PRIMARY KEY,
  paused          INTEGER NOT NULL DEFAULT 0,
  max_running     INTEGER,
  max_attempts    INTEGER,
  max_errors      INTEGER,
  error_window_ms INTEGER,
  retry_delay_ms  INTEGER,
  backoff         TEXT,
  max_delay_ms    INTEGER
) STRICT;

CREATE TABLE tasks (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  rev             INTEGER NOT NULL DEFAULT 1,
  queue           TEXT    NOT NULL,
  state           TEXT    NOT NULL,
  payload         TEXT    NOT NULL,
  labels          TEXT,             -- JSON object, NULL when none
  priority        INTEGER NOT NULL DEFAULT 0,
  attempts        INTEGER NOT NULL DEFAULT 0,
  max_attempts    INTEGER,
  run_at          INTEGER NOT NULL, -- due time; wake time while sleeping
  created_at      INTEGER NOT NULL,
  created_by      TEXT,             -- who added it: the log's first event
  updated_at      INTEGER NOT NULL,
  lease_token     TEXT,             -- NULL: not leased
  lease_worker    TEXT,
  lease_expires   INTEGER,
  lease_for_ms    INTEGER,
  revoked_token   TEXT,             -- the last token an operator revoked
  revoked_reason  TEXT,             -- and the message that revoked it
  checkpoint      TEXT,
  checkpoint_req  INTEGER NOT NULL DEFAULT 0,
  result          TEXT,
  reason          TEXT,
  max_errors      INTEGER,
  error_window_ms INTEGER,
  retry_delay_ms  INTEGER,
  backoff         TEXT,
  max_delay_ms    INTEGER,
  retry_of        INTEGER
) STRICT;

-- Leasing: the next candidate of a queue is the first row of this index
-- (priority, then run_at, then id), so a lease costs O(log n) however many
-- tasks are queued. Leased, paused and terminal tasks are not in it.
CREATE INDEX tasks_ready ON tasks (queue, priority DESC, run_at, id)
  WHERE lease_token IS NULL AND state IN ('runnable', 'sleeping');

-- Leases, by expiry, so expired ones are reclaimed without a scan.
CREATE INDEX tasks_leased ON tasks (queue, lease_expires)
  WHERE lease_token IS NOT NULL;

-- list and stats by queue and state, for tasks past `runnable` (sleeping,
-- paused, finished). New tasks are runnable, so an add maintains only
-- tasks_ready; runnable ones are listed through tasks_ready or a scan.
CREATE INDEX tasks_settled ON tasks (state, queue, id)
  WHERE state <> 'runnable';

CREATE TABLE task_errors (
  task_id INTEGER NOT NULL,
  time    INTEGER NOT NULL,
  message TEXT    NOT NULL
) STRICT;
CREATE INDEX task_errors_task ON task_errors (task_id, time);

CREATE TABLE events (
  id      INTEGER PRIMARY KEY,
  task_id INTEGER NOT NULL,
  time    INTEGER NOT NULL,
  message TEXT    NOT NULL,
  from_state TEXT,
  to_state   TEXT,
  actor   TEXT,
  detail  TEXT
) STRICT;
CREATE INDEX events_task ON events (task_id, id);
CREATE INDEX events_time ON events (time);
