-- taskq schema 5: flows (TaskFlow). A flow is its document (compiled
-- again when needed), its state and store; each atom (task atom or retry
-- controller) a row with TaskFlow's state and intention; every state
-- change a row of its event history. An atom's task says which flow,
-- atom and action it works for in `tasks.flow`.

ALTER TABLE tasks ADD COLUMN flow TEXT; -- JSON {"id","atom","action","args"}

CREATE TABLE flows (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  name       TEXT    NOT NULL,
  state      TEXT    NOT NULL,
  store      TEXT    NOT NULL, -- JSON object
  failed     INTEGER NOT NULL DEFAULT 0, -- a revert failed in this run
  -- A random number each step writes: a process that wrote the step
  -- knows its atoms' rows without reading them again.
  version    INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX flows_state ON flows (state, id);

-- A flow's document as submitted, apart from the row every step updates:
-- a row is written whole, and a document can be megabytes.
CREATE TABLE flow_documents (
  flow_id  INTEGER PRIMARY KEY,
  document TEXT    NOT NULL
) STRICT;

CREATE TABLE flow_atoms (
  flow_id   INTEGER NOT NULL,
  node      INTEGER NOT NULL, -- its place in the compiled document
  name      TEXT    NOT NULL,
  kind      TEXT    NOT NULL, -- task, retry
  state     TEXT    NOT NULL,
  intention TEXT    NOT NULL,
  task_id   INTEGER,          -- the task working for it now
  result    TEXT,             -- JSON
  failure   TEXT,
  history   TEXT,             -- JSON array: a retry controller's history
  PRIMARY KEY (flow_id, node)
) STRICT, WITHOUT ROWID;

CREATE TABLE flow_events (
  id      INTEGER PRIMARY KEY AUTOINCREMENT,
  flow_id INTEGER NOT NULL,
  time    INTEGER NOT NULL,
  name    TEXT    NOT NULL,
  kind    TEXT    NOT NULL, -- flow, task, retry
  state   TEXT    NOT NULL,
  result  TEXT              -- JSON
) STRICT;
CREATE INDEX flow_events_flow ON flow_events (flow_id, id);
