-- taskq schema 10: queue_counts spread over slots. Each (queue, state)
-- count is the sum of its rows, one per slot, so that writers updating
-- the counts of one queue at once update different rows and do not wait
-- for each other's commits. PostgreSQL writes slot = the transaction's id
-- modulo 64 (migrations/postgresql/0010_count_slots.sql);
-- SQLite, with one writer at a time, keeps one slot (0). A slot's n may
-- be negative (its writers deleted or moved more than they added); only
-- the sum over slots means anything. The counts kept so far become slot 0.
--
-- The table is rebuilt (a primary key cannot change in place). Its first
-- step fails on a schema where this migration already ran, so that a
-- half-made schema is refused rather than migrated again.
ALTER TABLE queue_counts ADD COLUMN slot INTEGER NOT NULL DEFAULT 0;

CREATE TABLE queue_counts_v8 (
  queue TEXT    NOT NULL,
  state TEXT    NOT NULL,
  n     INTEGER NOT NULL,
  PRIMARY KEY (queue, state)
) STRICT, WITHOUT ROWID;

INSERT INTO queue_counts_v8 (queue, state, n)
  SELECT queue, state, n FROM queue_counts;

DROP TABLE queue_counts;

CREATE TABLE queue_counts (
  queue TEXT    NOT NULL,
  state TEXT    NOT NULL,
  slot  INTEGER NOT NULL,
  n     INTEGER NOT NULL,
  PRIMARY KEY (queue, state, slot)
) STRICT, WITHOUT ROWID;

INSERT INTO queue_counts (queue, state, slot, n)
  SELECT queue, state, 0, n FROM queue_counts_v8;

DROP TABLE queue_counts_v8;

-- SQLite's triggers again, writing slot 0 (PostgreSQL's are replaced in
-- migrations/postgresql/0010_count_slots.sql; both DROP TRIGGER and
-- CREATE TRIGGER are SQLite's only).
DROP TRIGGER tasks_count_update;
DROP TRIGGER tasks_count_delete;

CREATE TRIGGER tasks_count_update AFTER UPDATE OF queue, state ON tasks
  WHEN OLD.queue IS NOT NEW.queue OR OLD.state IS NOT NEW.state BEGIN
  INSERT INTO queue_counts (queue, state, slot, n)
    VALUES (OLD.queue, OLD.state, 0, -1)
    ON CONFLICT (queue, state, slot) DO UPDATE SET n = n - 1;
  INSERT INTO queue_counts (queue, state, slot, n)
    VALUES (NEW.queue, NEW.state, 0, 1)
    ON CONFLICT (queue, state, slot) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks BEGIN
  INSERT INTO queue_counts (queue, state, slot, n)
    VALUES (OLD.queue, OLD.state, 0, -1)
    ON CONFLICT (queue, state, slot) DO UPDATE SET n = n - 1;
END;

-- The per-queue counters `metrics` reports (schema 4's errors_total and
-- leases_expired_total on `queues`) move to slotted rows too, so that
-- fails and reclaimed leases of one queue neither wait for each other
-- nor for a lease holding the queue's row (`--max-running`). The columns
-- on `queues` stay, at 0, written no more.
CREATE TABLE queue_counters (
  queue   TEXT    NOT NULL,
  counter TEXT    NOT NULL,
  slot    INTEGER NOT NULL,
  n       INTEGER NOT NULL,
  PRIMARY KEY (queue, counter, slot)
) STRICT, WITHOUT ROWID;

INSERT INTO queue_counters (queue, counter, slot, n)
  SELECT name, 'errors', 0, errors_total FROM queues WHERE errors_total <> 0;
INSERT INTO queue_counters (queue, counter, slot, n)
  SELECT name, 'leases_expired', 0, leases_expired_total FROM queues
  WHERE leases_expired_total <> 0;
UPDATE queues SET errors_total = 0, leases_expired_total = 0
  WHERE errors_total <> 0 OR leases_expired_total <> 0;
