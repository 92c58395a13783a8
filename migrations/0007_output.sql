-- taskq schema 7: job output. `run` keeps what each attempt's handler
-- printed, per stream, bounded to its last part (`run --keep-output`), and
-- `done`/`fail --output-file` attach a file; `taskq logs` reads it, live.
-- A stream's bytes are rows of chunks: `pos` is the offset of the chunk's
-- first byte among all the bytes the stream printed, so the kept part is
-- the chunks' data in order, and the bytes dropped before it are the
-- first chunk's pos. `id` orders the chunks of both streams as they were
-- written (and is where `logs --follow` goes on from).

CREATE TABLE task_output (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  stream TEXT NOT NULL CHECK (stream IN ('stdout', 'stderr')),
  pos INTEGER NOT NULL,
  data BLOB NOT NULL
);

CREATE INDEX task_output_by_attempt
  ON task_output (task_id, attempt, stream, pos);
