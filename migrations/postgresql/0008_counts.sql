-- PostgreSQL's triggers keeping queue_counts (SQLite's are in
-- migrations/0008_counts.sql, which translate_schema leaves out here).
-- As there, inserts are counted by the code that inserts tasks; deletes
-- and updates once per statement, from its transition tables.
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

-- Every UPDATE statement, once, from its transition tables: a row leaves
-- its old (queue, state) and enters its new one, and rows that stay
-- cancel out. (Per row, a bulk message updating one counts row a million
-- times in one transaction would leave a million versions of it for each
-- later update to walk: minutes. Per statement this costs an UPDATE that
-- moves nothing about 8 microseconds.)
CREATE FUNCTION taskq_count_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_counts (queue, state, n)
    SELECT queue, state, sum(n) FROM (
      SELECT queue, state, -1 AS n FROM taskq_old
      UNION ALL SELECT queue, state, 1 FROM taskq_new) moved
    GROUP BY queue, state HAVING sum(n) <> 0
    ON CONFLICT (queue, state) DO UPDATE SET n = queue_counts.n + EXCLUDED.n;
  RETURN NULL;
END $$;

CREATE TRIGGER tasks_count_delete AFTER DELETE ON tasks
  REFERENCING OLD TABLE AS taskq_old
  FOR EACH STATEMENT EXECUTE FUNCTION taskq_count_deleted();

CREATE TRIGGER tasks_count_update AFTER UPDATE ON tasks
  REFERENCING OLD TABLE AS taskq_old NEW TABLE AS taskq_new
  FOR EACH STATEMENT EXECUTE FUNCTION taskq_count_moved();
