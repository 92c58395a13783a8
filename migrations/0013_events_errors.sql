-- taskq schema 13: the errors of a time range (the web view's errors
-- grouped by message, TaskStore::error_groups) are a range of this index,
-- so they cost the errors read, never the other events of the range. A
-- partial index: only an error's event (a worker's, or taskq's give-up)
-- pays for it when it is written. No IF NOT EXISTS: an index in the way
-- that the record does not account for is a half-made schema, refused.
CREATE INDEX events_errors ON events (time) WHERE message = 'error';
