-- PostgreSQL's triggers keeping queue_counts, now per slot (schema 10;
-- the table is rebuilt by migrations/0010_count_slots.sql). A transaction
-- adds its deltas to the rows of its own slot, its transaction id modulo
-- 64 (count_added() in storage/rows.cpp writes the same slot). Transactions
-- running at once were given nearby ids, so they update different rows
-- unless 64 or more apart; a slot per server process instead (its pid
-- modulo 16) made two of 16 workers share one most of the time, and each
-- such pair then waited for each other's commits on every task. Rows are
-- written in (queue, state) order, so two transactions sharing a slot
-- take its rows in one order.
CREATE OR REPLACE FUNCTION taskq_count_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_counts (queue, state, slot, n)
    SELECT queue, state, txid_current() % 64, -count(*) FROM taskq_old
    GROUP BY queue, state ORDER BY queue, state
    ON CONFLICT (queue, state, slot) DO UPDATE
      SET n = queue_counts.n + EXCLUDED.n;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION taskq_count_moved() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO queue_counts (queue, state, slot, n)
    SELECT queue, state, txid_current() % 64, sum(n) FROM (
      SELECT queue, state, -1 AS n FROM taskq_old
      UNION ALL SELECT queue, state, 1 FROM taskq_new) moved
    GROUP BY queue, state HAVING sum(n) <> 0 ORDER BY queue, state
    ON CONFLICT (queue, state, slot) DO UPDATE
      SET n = queue_counts.n + EXCLUDED.n;
  RETURN NULL;
END $$;
