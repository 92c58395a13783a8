-- bench/web/fill.sql: the web view's benchmark database, written by SQL
-- (not by `taskq add`), the same text on SQLite and PostgreSQL. bench/web/run
-- replaces @NOW@ (Unix ms), @N@ (tasks) and @U@ (unfinished) and puts
-- first a `nums(i)` table of 1..@N@ (a recursive CTE on SQLite,
-- generate_series on PostgreSQL). Ids are given in order: task i has id i.
--
-- Tasks 1..N-U are finished, one every 190 ms up to now (N=1M: the last
-- 47.5 hours): 1 in 100 failed, 1 in 100 killed, the rest completed. The
-- last U were added one every 10 ms up to now: of every 50, 1 running
-- (leased for 5 more minutes), 5 sleeping (an error, retried in an hour), 5
-- paused, 5 delayed by a day, the rest ready. Four queues (i / 10 % 4), labels
-- env (prod, staging, dev) and tenant (t0..t99) on every task, a command on
-- every third, payloads naming one of 5,000 addresses. The last 300,000
-- finished tasks (the last ~16 hours), the failed and killed ones and the
-- unfinished ones have their events (lease, then complete, error or kill);
-- failed tasks have 3 errors, sleeping ones 1, from six messages.

CREATE TEMP TABLE bench_k AS
SELECT i,
  CASE WHEN i > @N@ - @U@ THEN
    CASE WHEN (i - (@N@ - @U@)) % 50 = 0 THEN 'running'
         WHEN (i - (@N@ - @U@)) % 10 = 1 THEN 'sleeping'
         WHEN (i - (@N@ - @U@)) % 10 = 2 THEN 'paused'
         WHEN (i - (@N@ - @U@)) % 10 = 3 THEN 'delayed'
         ELSE 'ready' END
  ELSE
    CASE WHEN i % 100 = 7 THEN 'failed'
         WHEN i % 100 = 13 THEN 'killed'
         ELSE 'completed' END
  END AS kind,
  CASE WHEN i > @N@ - @U@ THEN @NOW@ - (@N@ - i) * 10
       ELSE @NOW@ - 5000 - (@N@ - @U@ - i) * 190 END AS t,
  CASE (i / 10) % 4 WHEN 0 THEN 'mail' WHEN 1 THEN 'billing' WHEN 2 THEN 'reports'
       ELSE 'media' END AS queue,
  CASE i % 3 WHEN 0 THEN 'prod' WHEN 1 THEN 'staging' ELSE 'dev' END AS env,
  'host' || (i % 8) AS worker,
  CASE (i / 7) % 6 WHEN 0 THEN 'connection refused (smtp.example.com:25)'
       WHEN 1 THEN 'timeout after 30s' WHEN 2 THEN 'HTTP 503 from upstream'
       WHEN 3 THEN 'KeyError: user_id' WHEN 4 THEN 'disk full'
       ELSE 'exit status 2' END AS msg
FROM nums;

INSERT INTO queues (name) VALUES ('mail'), ('billing'), ('reports'), ('media');

INSERT INTO tasks (queue, state, payload, labels, priority, attempts, run_at,
  created_at, updated_at, lease_token, lease_worker, lease_expires,
  lease_for_ms, result, command)
SELECT queue,
  CASE WHEN kind IN ('running', 'ready', 'delayed') THEN 'runnable'
       ELSE kind END,
  '{"n":' || i || ',"to":"user' || (i % 5000) || '@example.com"}',
  '{"env":"' || env || '","tenant":"t' || (i % 100) || '"}',
  CASE WHEN i % 20 = 0 THEN 5 ELSE 0 END,
  CASE kind WHEN 'failed' THEN 3 WHEN 'ready' THEN 0 WHEN 'delayed' THEN 0
       WHEN 'paused' THEN 0 ELSE 1 END,
  CASE kind WHEN 'delayed' THEN @NOW@ + 86400000
       WHEN 'sleeping' THEN @NOW@ + 3600000 ELSE t - 60000 END,
  t - 60000, t,
  CASE WHEN kind = 'running' THEN 'bench-' || i END,
  CASE WHEN kind = 'running' THEN worker END,
  CASE WHEN kind = 'running' THEN @NOW@ + 300000 END,
  CASE WHEN kind = 'running' THEN 300000 END,
  CASE WHEN kind = 'completed' THEN '{"ok":true}' END,
  CASE WHEN i % 3 = 0 THEN '["/bin/sh","-c","render --id ' || i || '"]' END
FROM bench_k ORDER BY i;

INSERT INTO task_labels (key, value, task_id)
SELECT 'env', env, i FROM bench_k WHERE i > @N@ - @U@
UNION ALL
SELECT 'tenant', 't' || (i % 100), i FROM bench_k WHERE i > @N@ - @U@;

INSERT INTO task_errors (task_id, time, message)
SELECT i, t - 50000, msg FROM bench_k WHERE kind = 'failed'
UNION ALL SELECT i, t - 30000, msg FROM bench_k WHERE kind = 'failed'
UNION ALL SELECT i, t - 10000, msg FROM bench_k WHERE kind = 'failed'
UNION ALL SELECT i, t, msg FROM bench_k WHERE kind = 'sleeping';

-- The event log in time order (ids grow with time, as taskq writes them).
INSERT INTO events (task_id, time, message, from_state, to_state, actor, detail)
SELECT task_id, time, message, from_state, to_state, actor, detail FROM (
  SELECT i AS task_id, t - 1000 - (i % 13) * 700 AS time, 'lease' AS message,
    'runnable' AS from_state, 'runnable' AS to_state, worker AS actor,
    NULL AS detail, 0 AS o
  FROM bench_k
  WHERE kind <> 'paused' AND kind <> 'delayed' AND kind <> 'ready'
    AND (i > @N@ - @U@ - 300000 OR kind IN ('failed', 'killed'))
  UNION ALL
  SELECT i, t, CASE kind WHEN 'completed' THEN 'complete'
      WHEN 'killed' THEN 'kill' ELSE 'error' END,
    'runnable', CASE kind WHEN 'sleeping' THEN 'sleeping' ELSE kind END,
    CASE kind WHEN 'killed' THEN 'cli:ops@admin' ELSE worker END,
    CASE WHEN kind IN ('failed', 'sleeping') THEN msg END, 1
  FROM bench_k
  WHERE kind IN ('completed', 'failed', 'killed', 'sleeping')
    AND (i > @N@ - @U@ - 300000 OR kind IN ('failed', 'killed'))
) e ORDER BY time, task_id, o;

-- Rows written by SQL are counted here (taskq counts the tasks it adds).
DELETE FROM queue_counts;
INSERT INTO queue_counts (queue, state, slot, n)
SELECT queue, state, 0, count(*) FROM tasks GROUP BY queue, state;

DROP TABLE bench_k;
