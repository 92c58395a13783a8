# The attempt limit (rescue's circuit breaker,
# doc/reference/task.md#attempt-limit): attempts count leases; the lease that
# would exceed max_attempts pauses the task instead, with the reason recorded;
# resume resets the count.

T0=2026-11-21T08:00:00Z
set_now $T0

section "attempts count leases, expired or not"
id=$(add_task cb --max-attempts 2)
expect_eq "$(field "$id" .attempts)" 0 "attempts after add"
expect_exit 0 "$TASKQ" lease cb --for 1m
expect_json "$out" .attempts 1
expect_json "$out" .max_attempts 2
set_now 2026-11-21T08:02:00Z # the first lease has expired
expect_exit 0 "$TASKQ" lease cb --for 1m
expect_json "$out" .id "$id"
expect_json "$out" .attempts 2

section "the lease that would be attempt 3 of 2 pauses the task instead"
set_now 2026-11-21T08:04:00Z
expect_exit 75 "$TASKQ" lease cb
expect_out_empty
task=$(snapshot "$id")
expect_json "$task" .state paused
expect_json "$task" .lease null
expect_json "$task" .attempts 2
expect_contains "$task" "reached max attempts (2)" "show -o json"
expect_json "$task" '.events[-1].to' paused "last event"
expect_json "$task" '.events[-1].actor' taskq "who paused it"
expect_exit 0 "$TASKQ" why "$id"
expect_word "$out" paused "why"
expect_contains "$out" "max attempts" "why"
expect_exit 75 "$TASKQ" lease cb

section "resume resets the attempts and makes the task leasable"
expect_exit 0 "$TASKQ" resume "$id"
expect_jq "$(snapshot "$id")" '.state == "runnable" and .attempts == 0'
expect_exit 0 "$TASKQ" lease cb
expect_json "$out" .id "$id"
expect_json "$out" .attempts 1
tok=$(jout .lease.token)
expect_exit 0 "$TASKQ" done "$id" --lease "$tok"
expect_eq "$(state "$id")" completed

section "a paused task does not block the next task of its queue"
set_now $T0
first=$(add_task cb2 --max-attempts 1)
second=$(add_task cb2)
tq lease cb2 --for 1m >/dev/null
set_now 2026-11-21T08:02:00Z
expect_exit 0 "$TASKQ" lease cb2
expect_json "$out" .id "$second" "task leased after the first hit its limit"
expect_eq "$(state "$first")" paused "first task"

section "a worker's release gives its attempt back"
set_now $T0
id=$(add_task giveback --max-attempts 1)
for i in 1 2 3; do
  tok=$(tq lease giveback | jq -r .lease.token)
  expect_exit 0 "$TASKQ" release "$id" --lease "$tok"
  expect_eq "$(field "$id" .attempts)" 0 "attempts after release $i"
done
expect_exit 0 "$TASKQ" lease giveback
expect_json "$out" .attempts 1

section "fail does not give the attempt back"
set_now $T0
id=$(add_task failcount --max-attempts 1)
tok=$(tq lease failcount | jq -r .lease.token)
tq fail "$id" --lease "$tok" --error boom >/dev/null
set_now 2026-11-21T08:10:00Z
expect_exit 75 "$TASKQ" lease failcount
expect_eq "$(state "$id")" paused "state when the sleeping task comes due"

section "queue set --max-attempts applies to the queue's tasks"
set_now $T0
expect_exit 0 "$TASKQ" queue set capped --max-attempts 1
id=$(add_task capped)
tq lease capped --for 1m >/dev/null
set_now 2026-11-21T08:02:00Z
expect_exit 75 "$TASKQ" lease capped
expect_eq "$(state "$id")" paused "state after the queue's limit"
expect_contains "$(snapshot "$id")" "reached max attempts (1)" "show -o json"

section "without a limit a task can be leased again and again"
set_now $T0
id=$(add_task unlimited)
for i in 1 2 3 4 5 6 7 8 9 10; do
  tq lease unlimited --for 1m >/dev/null
  advance 120
done
expect_eq "$(field "$id" .attempts)" 10 "attempts after 10 expired leases"
expect_eq "$(state "$id")" runnable
