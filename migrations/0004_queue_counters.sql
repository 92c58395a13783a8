-- taskq schema 4: per-queue counters for `taskq metrics`. They live on the
-- queue, not in the task history, so that purging tasks never makes them
-- go backwards (Prometheus reads a decrease as a counter reset).
ALTER TABLE queues ADD COLUMN errors_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN leases_expired_total INTEGER NOT NULL DEFAULT 0;
