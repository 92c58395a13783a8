-- taskq schema 2: `add --unique KEY`. While a task of the same queue with
-- the same key is not finished, add creates nothing; this index makes that
-- check one lookup, and holds only the tasks that have a key.
ALTER TABLE tasks ADD COLUMN unique_key TEXT;

CREATE INDEX tasks_unique ON tasks (queue, unique_key)
  WHERE unique_key IS NOT NULL
    AND state NOT IN ('completed', 'failed', 'killed');
