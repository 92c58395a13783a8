-- taskq schema 13: the errors of a time range (the web view's errors
-- grouped by message, TaskStore::error_groups) are a range of this index,
-- so they cost the errors read, never the other events of the range. A
-- partial index: only an error's event (a worker's, or taskq's give-up)
-- pays for it when it is written. (IF NOT EXISTS: an upgrade test that
-- rewinds the recorded version re-runs it over the index.)
CREATE INDEX IF NOT EXISTS events_errors ON events (time) WHERE message = 'error';
