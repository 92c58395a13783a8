-- taskq schema 9: schedules that drive gates. `schedule add --trigger
-- K1,K2` gives every task the schedule emits those trigger keys, so that
-- each one, once completed, covers them on every gate that has them.

ALTER TABLE schedules ADD COLUMN trigger_key TEXT; -- keys sorted, each once,
                                                   -- comma-joined; NULL: none
