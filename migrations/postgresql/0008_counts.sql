-- PostgreSQL's triggers keeping queue_counts (SQLite's are in
-- migrations/0008_counts.sql, which translate_schema leaves out here).
-- As there, inserts are counted by the code that inserts tasks; deletes
-- once per statement, from its transition table (a purge deletes many rows
-- a statement); updates per row, and only those that move a task to
-- another queue or state.
-- Writers take one advisory lock (PgDb::begin), so the rows of
-- queue_counts are never contended beyond that lock.
CREATE FUNCTION taskq_count_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE queue_counts c SET n = c.n - d.n
    FROM (SELECT queue, state, count(*) AS n FROM taskq_old
          GROUP BY queue, state) d
    WHERE c.queue = d.queue AND c.state = d.state;
  RETURN NULL;
END $$;

CREATE FUNCTION taskq_count_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE queue_counts SET n = n - 1
    WHERE queue = OLD.queue AND state = OLD.state;
  INSERT INTO queue_counts (queue, state, n) VALUES (NEW.queue, NEW.state, 1)
    ON CONFLICT (queue, state) DO UPDATE SET n = queue_counts.n + 1;
  RETURN NULL;
END $$;

CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks
  REFERENCING OLD TABLE AS taskq_old
  FOR EACH STATEMENT EXECUTE FUNCTION taskq_count_deleted();

CREATE TRIGGER tasks_count_update AFTER UPDATE OF queue, state ON tasks
  FOR EACH ROW
  WHEN (OLD.queue IS DISTINCT FROM NEW.queue
        OR OLD.state IS DISTINCT FROM NEW.state)
  EXECUTE FUNCTION taskq_count_moved();
