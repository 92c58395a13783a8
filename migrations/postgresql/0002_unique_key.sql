-- taskq schema 2 on PostgreSQL: `add --unique KEY` (see migrations/0002).
ALTER TABLE tasks ADD COLUMN unique_key TEXT;

CREATE INDEX tasks_unique ON tasks (queue, unique_key)
  WHERE unique_key IS NOT NULL
    AND state NOT IN ('completed', 'failed', 'killed');
