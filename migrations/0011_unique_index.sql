-- taskq schema 11: `add --unique KEY` holds by the index itself. While
-- writers took turns, a lookup before the insert was enough; writers that
-- run side by side (PostgreSQL) could both find no holder and both insert.
-- tasks_unique gives way to tasks_unique_key, a UNIQUE index over the same
-- rows (the unfinished tasks that have a key), and add inserts with ON
-- CONFLICT DO NOTHING. (A new name: a migration applied a second time over
-- its own result fails, as every earlier one does, rather than pass.)
--
-- A database cannot hold two unfinished tasks of one queue and key (the
-- writers' lock kept them out); should one all the same, the upgrade
-- neither fails nor drops a task: the oldest keeps its key (the task that
-- add --unique answered with), the later ones lose it and run as plain
-- tasks.
UPDATE tasks SET unique_key = NULL
  WHERE unique_key IS NOT NULL
    AND state NOT IN ('completed', 'failed', 'killed')
    AND EXISTS (SELECT 1 FROM tasks AS older
                WHERE older.queue = tasks.queue
                  AND older.unique_key = tasks.unique_key
                  AND older.state NOT IN ('completed', 'failed', 'killed')
                  AND older.id < tasks.id);

DROP INDEX tasks_unique;

CREATE UNIQUE INDEX tasks_unique_key ON tasks (queue, unique_key)
  WHERE unique_key IS NOT NULL
    AND state NOT IN ('completed', 'failed', 'killed');
