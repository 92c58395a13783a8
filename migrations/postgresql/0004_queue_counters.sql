-- taskq schema 4 on PostgreSQL: per-queue counters for `taskq metrics`.
ALTER TABLE queues ADD COLUMN errors_total BIGINT NOT NULL DEFAULT 0;
ALTER TABLE queues ADD COLUMN leases_expired_total BIGINT NOT NULL DEFAULT 0;
