-- taskq schema 3 on PostgreSQL: dependencies, roots, addressing, gates and
-- schedules (see migrations/0003).

ALTER TABLE tasks ADD COLUMN after_ids TEXT;
ALTER TABLE tasks ADD COLUMN blockers BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN root TEXT;
ALTER TABLE tasks ADD COLUMN to_worker TEXT;
ALTER TABLE tasks ADD COLUMN broadcast_until BIGINT;
ALTER TABLE tasks ADD COLUMN trigger_key TEXT;
ALTER TABLE tasks ADD COLUMN schedule TEXT;
ALTER TABLE tasks ADD COLUMN gate TEXT;
ALTER TABLE tasks ADD COLUMN sync TEXT;

DROP INDEX tasks_ready;
CREATE INDEX tasks_ready ON tasks (queue, priority DESC, run_at, id)
  WHERE lease_token IS NULL AND state IN ('runnable', 'sleeping')
    AND blockers = 0 AND broadcast_until IS NULL;

CREATE INDEX tasks_broadcast ON tasks (queue, id)
  WHERE broadcast_until IS NOT NULL AND state = 'runnable';

CREATE TABLE task_deps (
  dep_id  BIGINT NOT NULL,
  task_id BIGINT NOT NULL,
  PRIMARY KEY (dep_id, task_id)
);

CREATE TABLE task_labels (
  key     TEXT   NOT NULL,
  value   TEXT   NOT NULL,
  task_id BIGINT NOT NULL,
  PRIMARY KEY (key, value, task_id)
);

CREATE TABLE deliveries (
  task_id BIGINT NOT NULL,
  worker  TEXT   NOT NULL,
  token   TEXT   NOT NULL,
  time    BIGINT NOT NULL,
  PRIMARY KEY (task_id, worker)
);

CREATE TABLE schedules (
  name       TEXT PRIMARY KEY,
  queue      TEXT   NOT NULL,
  every      TEXT,
  cron       TEXT,
  payload    TEXT   NOT NULL,
  labels     TEXT,
  priority   BIGINT NOT NULL DEFAULT 0,
  paused     BIGINT NOT NULL DEFAULT 0,
  due_at     BIGINT NOT NULL,
  sync       TEXT,
  last_task  BIGINT,
  created_at BIGINT NOT NULL,
  created_by TEXT
);
CREATE INDEX schedules_due ON schedules (queue, due_at) WHERE paused = 0;

CREATE TABLE gates (
  name       TEXT PRIMARY KEY,
  queue      TEXT   NOT NULL,
  keys       TEXT   NOT NULL,
  covered    TEXT   NOT NULL DEFAULT '[]',
  payload    TEXT   NOT NULL,
  labels     TEXT,
  priority   BIGINT NOT NULL DEFAULT 0,
  emitted    BIGINT NOT NULL DEFAULT 0,
  last_task  BIGINT,
  created_at BIGINT NOT NULL,
  created_by TEXT
);
