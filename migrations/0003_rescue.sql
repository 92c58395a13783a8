-- taskq schema 3: rescue's producing features. Dependencies (`--after`),
-- root tasks (`--root`), addressing (`--to`, `--broadcast`), gates
-- (`--trigger`, `gate add`) and recurring schedules (`schedule add`).

ALTER TABLE tasks ADD COLUMN after_ids TEXT;      -- JSON array, NULL: none
ALTER TABLE tasks ADD COLUMN blockers INTEGER NOT NULL DEFAULT 0;
                                                  -- `after` tasks unfinished
ALTER TABLE tasks ADD COLUMN root TEXT;           -- JSON object, NULL: none
ALTER TABLE tasks ADD COLUMN to_worker TEXT;
ALTER TABLE tasks ADD COLUMN broadcast_until INTEGER;
ALTER TABLE tasks ADD COLUMN trigger_key TEXT;
ALTER TABLE tasks ADD COLUMN schedule TEXT;       -- the emitting schedule
ALTER TABLE tasks ADD COLUMN gate TEXT;           -- the emitting gate
ALTER TABLE tasks ADD COLUMN sync TEXT;           -- JSON object, NULL: none

-- The lease index now leaves out tasks waiting for their dependencies and
-- broadcasts (which are handed out by tasks_broadcast), so neither kind
-- costs a lease anything, however many there are.
DROP INDEX tasks_ready;
CREATE INDEX tasks_ready ON tasks (queue, priority DESC, run_at, id)
  WHERE lease_token IS NULL AND state IN ('runnable', 'sleeping')
    AND blockers = 0 AND broadcast_until IS NULL;

CREATE INDEX tasks_broadcast ON tasks (queue, id)
  WHERE broadcast_until IS NOT NULL AND state = 'runnable';

-- Who waits for whom: one row per (task, dependency), found from the
-- dependency when it finishes.
CREATE TABLE task_deps (
  dep_id  INTEGER NOT NULL,
  task_id INTEGER NOT NULL,
  PRIMARY KEY (dep_id, task_id)
) STRICT, WITHOUT ROWID;

-- The labels of unfinished tasks, so a root's "is there a live task with
-- these labels" is an index lookup. Rows go when their task finishes.
CREATE TABLE task_labels (
  key     TEXT    NOT NULL,
  value   TEXT    NOT NULL,
  task_id INTEGER NOT NULL,
  PRIMARY KEY (key, value, task_id)
) STRICT, WITHOUT ROWID;
INSERT INTO task_labels (key, value, task_id)
  SELECT j.key, j.value, t.id FROM tasks t, json_each(t.labels) j
  WHERE t.labels IS NOT NULL
    AND t.state NOT IN ('completed', 'failed', 'killed');

-- Which worker has had which broadcast, with the token it was given.
CREATE TABLE deliveries (
  task_id INTEGER NOT NULL,
  worker  TEXT    NOT NULL,
  token   TEXT    NOT NULL,
  time    INTEGER NOT NULL,
  PRIMARY KEY (task_id, worker)
) STRICT, WITHOUT ROWID;

CREATE TABLE schedules (
  name       TEXT PRIMARY KEY,
  queue      TEXT    NOT NULL,
  every      TEXT,             -- exactly one of every and cron
  cron       TEXT,
  payload    TEXT    NOT NULL,
  labels     TEXT,
  priority   INTEGER NOT NULL DEFAULT 0,
  paused     INTEGER NOT NULL DEFAULT 0,
  due_at     INTEGER NOT NULL, -- the tick the next emission waits for
  sync       TEXT,
  last_task  INTEGER,
  created_at INTEGER NOT NULL,
  created_by TEXT
) STRICT;
CREATE INDEX schedules_due ON schedules (queue, due_at) WHERE paused = 0;

CREATE TABLE gates (
  name       TEXT PRIMARY KEY,
  queue      TEXT    NOT NULL,
  keys       TEXT    NOT NULL, -- JSON array, sorted
  covered    TEXT    NOT NULL DEFAULT '[]',
  payload    TEXT    NOT NULL,
  labels     TEXT,
  priority   INTEGER NOT NULL DEFAULT 0,
  emitted    INTEGER NOT NULL DEFAULT 0,
  last_task  INTEGER,
  created_at INTEGER NOT NULL,
  created_by TEXT
) STRICT;
