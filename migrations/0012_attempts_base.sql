-- taskq schema 12: `attempts` numbers every run of a task, and no longer
-- goes back to 0 when a paused task is resumed or a task is moved to
-- another queue (fail --move-to, queue redrive): each run's output is kept
-- under its own attempt number. What those moves reset is the attempt
-- limit's count instead: attempts_base is the value of `attempts` at the
-- latest of them, plus the leases given back since (a worker's release
-- whose run left output keeps its number), and the limit counts
-- attempts - attempts_base (doc/reference/task.md#attempt-limit).
ALTER TABLE tasks ADD COLUMN attempts_base INTEGER NOT NULL DEFAULT 0;
