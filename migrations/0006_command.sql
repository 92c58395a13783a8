-- taskq schema 6: commands as tasks. `taskq add QUEUE -- CMD [ARG...]`
-- stores the argv a task is to run, and `taskq run QUEUE` given no
-- `-- CMD` executes it (never through a shell).

ALTER TABLE tasks ADD COLUMN command TEXT; -- JSON array of strings, NULL when none
