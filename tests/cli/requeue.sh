# taskq requeue QUEUE (doc/reference/commands.md#requeue, MassTasker's bulk
# not_before reset): every delayed or sleeping task of the queue is due now;
# nothing else changes.

set_now 2026-11-21T08:00:00Z

section "delayed and sleeping tasks become due now, keeping their state"
fresh_db
delayed=$(add_task rq --delay 1h)
later_one=$(add_task rq --at 2026-11-22T00:00:00Z)
ready=$(add_task rq)
other=$(add_task other --delay 1h)
paused=$(add_task rq --delay 1h)
tq pause "$paused" >/dev/null
# The sleeper: leased first (priority 9) and failed, so the error policy
# puts it to sleep for 10 minutes.
sleeper=$(add_task rq --priority 9)
tok=$(tq lease rq --worker w1 | jq -r .lease.token)
tq fail "$sleeper" --lease "$tok" --error "disk full" >/dev/null
expect_eq "$(state "$sleeper")" sleeping "the failed task sleeps"
# The running one: leased next (priority 5), and still leased.
running=$(add_task rq --priority 5)
expect_eq "$(tq lease rq --worker w2 | jq -r .id)" "$running" "leased task"
before_ready=$(snapshot "$ready")
before_running=$(snapshot "$running")
before_paused=$(snapshot "$paused")
before_other=$(snapshot "$other")

expect_exit 0 "$TASKQ" list --queue rq --state ready -o id
expect_not_contains "$out" "$delayed" "a delayed task is not ready before requeue"

advance 60
expect_exit 0 "$TASKQ" requeue rq
expect_out 3
for id in "$delayed" "$later_one" "$sleeper"; do
  expect_eq "$(field "$id" .run_at)" 2026-11-21T08:01:00Z "run_at of task $id"
done
expect_eq "$(state "$delayed")" runnable "a delayed task stays runnable"
expect_eq "$(state "$sleeper")" sleeping "a sleeper stays sleeping, now due"
expect_eq "$(field "$delayed" '.events[-1].message')" requeue "the event logged"
expect_eq "$(field "$later_one" '.events[-1].detail')" \
  "due now (was 2026-11-22T00:00:00Z)" "the event says when it was due"
expect_eq "$(snapshot "$ready")" "$before_ready" "an already due task is untouched"
expect_eq "$(snapshot "$running")" "$before_running" "a leased task is untouched"
expect_eq "$(snapshot "$paused")" "$before_paused" "a paused task is untouched"
expect_eq "$(snapshot "$other")" "$before_other" "another queue is untouched"

expect_exit 0 "$TASKQ" list --queue rq --state ready -o id
for id in "$delayed" "$later_one" "$sleeper" "$ready"; do
  expect_word "$out" "$id" "ready after requeue"
done

section "a second requeue finds nothing; -o id and -o json list the tasks"
expect_exit 0 "$TASKQ" requeue rq
expect_out 0
d2=$(add_task rq --delay 5m)
expect_exit 0 "$TASKQ" requeue rq -o id
expect_out "$d2"
d3=$(add_task rq --delay 5m)
expect_exit 0 "$TASKQ" requeue rq -o json
expect_json "$out" .id "$d3"
expect_json "$out" .run_at 2026-11-21T08:01:00Z

section "bad input changes nothing"
d4=$(add_task rq --delay 5m)
before=$(snapshot "$d4")
expect_exit 2 "$TASKQ" requeue
expect_exit 2 "$TASKQ" requeue 'no spaces'
expect_err_format
expect_exit 2 "$TASKQ" requeue rq -o env
expect_eq "$(snapshot "$d4")" "$before" "task after refused requeues"
expect_exit 3 "$TASKQ" requeue nosuch
expect_err_contains "no queue 'nosuch'"
