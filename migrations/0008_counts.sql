-- taskq schema 8: what `stats` and `metrics` show without reading the
-- history. Per queue and state, how many tasks there are, kept by
-- triggers on `tasks` in the transaction of every write that adds, moves
-- or deletes a task (bulk ones and imports included), so that counting
-- costs one row per queue and state however many tasks have finished.
-- Rows at 0 stay (a queue whose tasks are all purged shows none).
-- PostgreSQL keeps the table with plpgsql triggers of its own
-- (migrations/postgresql/0008_counts.sql); the CREATE TRIGGERs below are
-- SQLite's only.
CREATE TABLE queue_counts (
  queue TEXT    NOT NULL,
  state TEXT    NOT NULL,
  n     INTEGER NOT NULL,
  PRIMARY KEY (queue, state)
) STRICT, WITHOUT ROWID;

INSERT INTO queue_counts (queue, state, n)
  SELECT queue, state, count(*) FROM tasks WHERE true GROUP BY queue, state;

CREATE TRIGGER tasks_count_update AFTER UPDATE OF queue, state ON tasks
  WHEN OLD.queue IS NOT NEW.queue OR OLD.state IS NOT NEW.state BEGIN
  UPDATE queue_counts SET n = n - 1
    WHERE queue = OLD.queue AND state = OLD.state;
  INSERT INTO queue_counts (queue, state, n) VALUES (NEW.queue, NEW.state, 1)
    ON CONFLICT (queue, state) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks BEGIN
  UPDATE queue_counts SET n = n - 1
    WHERE queue = OLD.queue AND state = OLD.state;
END;

-- Completions of the last hour (stats' completed_last_minute/_hour): a
-- range of this index, so they cost what the last hour completed, never
-- what completed before.
CREATE INDEX tasks_completed ON tasks (queue, updated_at)
  WHERE state = 'completed';

-- Runnable tasks waiting for their dependencies, the one kind of
-- runnable task no other partial index holds: with tasks_ready,
-- tasks_leased and tasks_broadcast, stats' time-dependent counts (delayed)
-- read unfinished tasks only.
CREATE INDEX tasks_waiting ON tasks (queue, id)
  WHERE blockers > 0 AND state = 'runnable';
