# The error policy (doc/reference/task.md#error-policy, Metafora's
# DefaultErrHandler): fail records the error, then the task sleeps for the
# retry delay or, once the errors inside the window reach the maximum, fails
# for good.

T0=2026-11-21T08:00:00Z
set_now $T0

# fail_once QUEUE ID MESSAGE [OPTION...]: leases ID from QUEUE at the current
# TASKQ_NOW and reports MESSAGE; the fail is a check.
# (-o env rather than JSON: this runs often, and jq is slow to start.)
fail_once() {
  local q=$1 id=$2 msg=$3 env
  local TASKQ_ID TASKQ_LEASE TASKQ_QUEUE TASKQ_ATTEMPT TASKQ_PAYLOAD
  shift 3
  env=$(tq lease "$q" -o env) || return 1
  eval "$env"
  expect_eq "$TASKQ_ID" "$id" "task leased to fail"
  expect_exit 0 "$TASKQ" fail "$id" --lease "$TASKQ_LEASE" --error "$msg" "$@"
}

section "fail puts the task to sleep for the default 10 minutes"
id=$(add_task retry)
fail_once retry "$id" "exit status 1: file not found"
expect_out_empty
task=$(snapshot "$id")
expect_json "$task" .state sleeping
expect_json "$task" .lease null
expect_json "$task" '.errors | length' 1
expect_json "$task" '.errors[0].error' "exit status 1: file not found"
expect_time "$(jq -r '.errors[0].time' <<<"$task")" $T0 "error time"
expect_time "$(jq -r .run_at <<<"$task")" 2026-11-21T08:10:00Z "wake time"
set_now 2026-11-21T08:09:59Z
expect_exit 75 "$TASKQ" lease retry
set_now 2026-11-21T08:10:00Z
expect_exit 0 "$TASKQ" lease retry
expect_json "$out" .id "$id"
expect_json "$out" .attempts 2

section "8 errors inside 4 hours fail the task with 'exceeded error rate'"
set_now $T0
id=$(add_task rate)
for i in 1 2 3 4 5 6 7; do
  fail_once rate "$id" "error $i"
  expect_eq "$(state "$id")" sleeping "state after error $i"
  advance 660 # past the 10-minute retry delay
done
expect_json "$(snapshot "$id")" '.errors | length' 7 "errors after 7 failures"
fail_once rate "$id" "error 8"
task=$(snapshot "$id")
expect_json "$task" .state failed "state after error 8"
expect_json "$task" .lease null
expect_json "$task" '.errors[-1].error' "exceeded error rate" "last error"
expect_json "$task" '.errors[-2].error' "error 8"
expect_json "$task" '[.errors[].error] | index("error 1")' 0 "oldest error first"
expect_exit 75 "$TASKQ" lease rate

section "7 errors leave the task sleeping"
set_now $T0
id=$(add_task seven)
for i in 1 2 3 4 5 6 7; do
  fail_once seven "$id" "error $i"
  advance 600
done
expect_eq "$(state "$id")" sleeping "state after 7 errors"
expect_exit 0 "$TASKQ" lease seven
expect_json "$out" .id "$id" "still leasable after 7 errors"

section "errors at or before now - 4h do not count"
# Error 1 at T0; errors 2-8 from T0+3h, every 10 minutes, so error 8 is at
# exactly T0+4h: error 1 is then at now - window, which is not strictly
# after it, so 7 errors count and the task sleeps again. Error 9 makes 8.
set_now $T0
id=$(add_task window)
fail_once window "$id" "error 1"
set_now 2026-11-21T11:00:00Z
for i in 2 3 4 5 6 7 8; do
  fail_once window "$id" "error $i"
  expect_eq "$(state "$id")" sleeping "state after error $i"
  advance 600
done
expect_eq "$TASKQ_NOW" 2026-11-21T12:10:00Z "clock before error 9"
fail_once window "$id" "error 9"
expect_eq "$(state "$id")" failed "state after error 9"
expect_json "$(snapshot "$id")" '.errors[-1].error' "exceeded error rate"

section "errors spread over more than 4 hours never fail the task"
set_now $T0
id=$(add_task spread)
for i in $(seq 1 12); do
  fail_once spread "$id" "error $i"
  advance 2400 # 40 minutes: at most 6 errors fit in any 4 hours
done
expect_eq "$(state "$id")" sleeping "state after 12 spread errors"
expect_json "$(snapshot "$id")" '.errors | length' 12

section "fail --no-retry fails at once"
set_now $T0
id=$(add_task noretry)
fail_once noretry "$id" "bad input" --no-retry
task=$(snapshot "$id")
expect_json "$task" .state failed
expect_json "$task" .lease null
expect_json "$task" '[.errors[].error] | index("bad input") != null' true \
  "error recorded"
expect_exit 75 "$TASKQ" lease noretry

section "fail --retry-in sleeps for that long"
id=$(add_task retryin)
fail_once retryin "$id" "busy" --retry-in 30s
task=$(snapshot "$id")
expect_json "$task" .state sleeping
expect_time "$(jq -r .run_at <<<"$task")" 2026-11-21T08:00:30Z "wake time"
set_now 2026-11-21T08:00:30Z
expect_exit 0 "$TASKQ" lease retryin
expect_json "$out" .id "$id"
set_now $T0

section "fail --move-to is the dead-letter move"
id=$(add_task work --payload '{"n":1}' --label k=v)
fail_once work "$id" "poison" --move-to dead
task=$(snapshot "$id")
expect_json "$task" .queue dead
expect_json "$task" .state runnable
expect_json "$task" .attempts 1 "attempts: its runs keep their numbers"
expect_json "$task" .lease null
expect_json "$task" .payload '{"n":1}'
expect_json "$task" '[.errors[].error] | index("poison") != null' true \
  "error kept"
expect_exit 75 "$TASKQ" lease work
expect_exit 0 "$TASKQ" lease dead
expect_json "$out" .id "$id"
expect_json "$out" .attempts 2 "its run in dead is attempt 2"

section "fail --move-to: the attempt limit counts afresh in the other queue"
id=$(add_task capwork --max-attempts 1)
fail_once capwork "$id" "poison" --move-to capdead
expect_exit 0 "$TASKQ" lease capdead
expect_json "$out" .id "$id" "leased, though it has had its 1 attempt"
expect_json "$out" .attempts 2

section "fail needs the lease: a stale token changes nothing"
id=$(add_task failstale)
tok=$(tq lease failstale --for 1m | jq -r .lease.token)
set_now 2026-11-21T08:02:00Z
tq lease failstale >/dev/null
before=$(snapshot "$id")
for opt in --no-retry "--move-to dead" "--retry-in 1s"; do
  # shellcheck disable=SC2086 # the option and its value are two words
  expect_exit 4 "$TASKQ" fail "$id" --lease "$tok" --error late $opt
  expect_eq "$(snapshot "$id")" "$before" "task after stale fail $opt"
done
set_now $T0

section "per-task --max-errors, --retry-delay and --error-window"
id=$(add_task pertask --max-errors 2 --retry-delay 1m --error-window 1h)
fail_once pertask "$id" "first"
expect_eq "$(state "$id")" sleeping
expect_time "$(field "$id" .run_at)" 2026-11-21T08:01:00Z "wake after 1m"
set_now 2026-11-21T08:01:00Z
fail_once pertask "$id" "second"
expect_eq "$(state "$id")" failed "state after 2 of max 2"
expect_json "$(snapshot "$id")" '.errors[-1].error' "exceeded error rate"
# With a 1h window, two errors 61 minutes apart never fail it.
set_now $T0
id=$(add_task pertaskwin --max-errors 2 --retry-delay 1m --error-window 1h)
fail_once pertaskwin "$id" "first"
set_now 2026-11-21T09:01:00Z
fail_once pertaskwin "$id" "second"
expect_eq "$(state "$id")" sleeping "state with the first error out of window"
set_now $T0

section "queue set changes the policy of the queue's tasks"
expect_exit 0 "$TASKQ" queue set strict --max-errors 2 --retry-delay 2m
id=$(add_task strict)
fail_once strict "$id" "first"
expect_eq "$(state "$id")" sleeping
expect_time "$(field "$id" .run_at)" 2026-11-21T08:02:00Z "queue retry delay"
set_now 2026-11-21T08:02:00Z
fail_once strict "$id" "second"
expect_eq "$(state "$id")" failed "state after the queue's 2nd error"
expect_json "$(snapshot "$id")" '.errors[-1].error' "exceeded error rate"
expect_exit 0 "$TASKQ" queue list
expect_contains "$out" strict "queue list"

section "task settings win over queue settings"
set_now $T0
id=$(add_task strict --max-errors 3)
fail_once strict "$id" "first"
set_now 2026-11-21T08:02:00Z
fail_once strict "$id" "second"
expect_eq "$(state "$id")" sleeping "2 errors of the task's max 3"
set_now 2026-11-21T08:04:00Z
fail_once strict "$id" "third"
expect_eq "$(state "$id")" failed "3 errors of the task's max 3"

section "exponential backoff doubles the delay up to --max-delay"
set_now $T0
id=$(add_task backoff --retry-delay 1m --backoff exponential --max-delay 3m)
expected_delays=(60 120 180 180)
for i in 0 1 2 3; do
  fail_once backoff "$id" "error $i"
  expect_time "$(field "$id" .run_at)" "$(later "${expected_delays[$i]}")" \
    "wake after error $((i + 1))"
  set_now "$(iso "$(epoch "$(field "$id" .run_at)")")"
done

section "the error history keeps the last 100 errors, oldest first"
# A 1-second window never holds two errors, so the task never fails.
set_now $T0
id=$(add_task history --error-window 1s --retry-delay 1s)
for i in $(seq 1 105); do
  # Plain calls, not checks: 105 of them would swamp the report.
  tok=$(eval "$("$TASKQ" lease history -o env)" && printf '%s' "$TASKQ_LEASE")
  "$TASKQ" fail "$id" --lease "$tok" --error "error $i" || _ko "fail $i" "exit $?"
  advance 2
done
task=$(snapshot "$id")
expect_json "$task" .state sleeping
expect_json "$task" '.errors | length >= 100' true "at least 100 errors kept"
expect_json "$task" '[.errors[-100:][].error] == [range(6; 106) | "error \(.)"]' \
  true "the last 100 errors, in order"
