# Operating many at once and seeing queues
# (doc/reference/commands.md#messages-to-tasks): retry of several ids (all or
# nothing) and in bulk (--queue/--state/--match), a live retry refused (exit 4,
# naming it, the database unchanged) or skipped in bulk unless --again; list
# --state a,b, --newest, --limit, the last error of failed tasks and the
# worker, start and elapsed time of running ones; relative times on a terminal,
# RFC 3339 when piped and in -o json; `taskq workers`; `queue list` and `queue
# show` with their settings.

set_now 2026-11-21T08:00:00Z

db_digest() { db_dump | sha256sum; }

# unchanged WHAT EXIT CMD...: CMD exits EXIT and the database is the same
# afterwards.
unchanged() {
  local what=$1 want=$2 before after
  shift 2
  before=$(db_digest)
  expect_exit "$want" "$@"
  after=$(db_digest)
  expect_eq "$after" "$before" "database after $what"
}

# failed QUEUE MESSAGE [ADD OPTION...]: adds a task to QUEUE, leases it and
# fails it for good with MESSAGE; prints its id.
failed() {
  local queue=$1 message=$2 id tok
  shift 2
  id=$(add_task "$queue" "$@") || return 1
  tok=$(tq lease "$queue" --worker w0 | jq -r .lease.token)
  tq fail "$id" --lease "$tok" --error "$message" --no-retry >/dev/null
  printf '%s\n' "$id"
}

section "retry of several ids: one new id per line, each linked to its task"
a=$(failed q "boom a")
b=$(failed q "boom b")
c=$(failed q "boom c" --label kind=img)
k=$(add_task q)
tq kill "$k" >/dev/null
r=$(add_task q) # runnable
expect_exit 0 "$TASKQ" retry "$a" "$b"
expect_match "$out" '^[0-9]+'$'\n''[0-9]+$' "two ids"
ra=$(sed -n 1p <<<"$out")
rb=$(sed -n 2p <<<"$out")
expect_eq "$(field "$ra" .retry_of)" "$a" "retry_of of the first"
expect_eq "$(field "$rb" .retry_of)" "$b" "retry_of of the second"
expect_eq "$(field "$ra" .state)" runnable "state of a retry"

section "a live retry is refused, naming it, and nothing changes"
unchanged "retry of a task with a live retry" 4 "$TASKQ" retry "$a"
expect_out_empty
expect_err_format
expect_err_contains "task $a already has a live retry: task $ra (use --again)"
# All or nothing: c could be retried, but a cannot.
unchanged "retry of c and a" 4 "$TASKQ" retry "$c" "$a"
expect_err_contains "task $ra"
expect_eq "$("$TASKQ" list --state runnable -o id | grep -c .)" 3 \
  "runnable tasks after the refusals (r, ra, rb)"
unchanged "retry of a runnable task" 4 "$TASKQ" retry "$c" "$r"
expect_err_contains "only failed, killed or completed"
unchanged "retry of an unknown task" 3 "$TASKQ" retry "$c" 999999

section "--again retries all the same; -o json gives {task, retry}"
expect_exit 0 "$TASKQ" retry "$a" --again -o json
expect_json "$out" .task "$a"
ra2=$(jout .retry)
expect_eq "$(field "$ra2" .retry_of)" "$a" "retry_of after --again"
# Once its retries are finished, a task is retried without --again.
tq kill "$ra" "$ra2" >/dev/null
expect_exit 0 "$TASKQ" retry "$a"
ra3=$out
expect_eq "$(field "$ra3" .retry_of)" "$a" "retry_of once the retries ended"

section "bulk retry: skips tasks with a live retry, with a note each"
# Live retries now: a (ra3) and b (rb). c has none; k is killed.
expect_exit 0 "$TASKQ" retry --queue q --state failed -o json
expect_eq "$(grep -c . <<<"$out")" 1 "lines printed"
expect_json "$out" .task "$c"
rc_id=$(jout .retry)
expect_eq "$(field "$rc_id" .retry_of)" "$c" "retry_of of c's retry"
expect_eq "$(field "$rc_id" .labels.kind)" img "labels carried"
expect_contains "$err" "skipped: task $a already has a live retry: task $ra3" \
  "stderr of bulk retry"
expect_contains "$err" "skipped: task $b already has a live retry: task $rb" \
  "stderr of bulk retry"
# Run again, it creates nothing at all.
unchanged "a second bulk retry" 0 "$TASKQ" retry --queue q --state failed
expect_out_empty
expect_contains "$err" "task $c already has a live retry: task $rc_id" \
  "stderr of the second bulk retry"
expect_exit 0 "$TASKQ" retry --queue q --state killed --match kind=none
expect_out_empty
# Killed: k, and a's first two retries.
expect_exit 0 "$TASKQ" retry --queue q --state killed -o json
expect_eq "$(jq -r .task <<<"$out" | paste -sd, -)" "$k,$ra,$ra2" \
  "killed tasks retried"
rk=$(jq -r "select(.task == $k) | .retry" <<<"$out")
expect_eq "$(field "$rk" .retry_of)" "$k" "retry_of of k's retry"
unchanged "a bulk retry with every task retried" 0 \
  "$TASKQ" retry --queue q --state failed,killed
expect_out_empty
# Bulk --again: every failed task, live retry or not.
expect_exit 0 "$TASKQ" retry --queue q --state failed --again
expect_eq "$(grep -c . <<<"$out")" 3 "tasks retried with --again"

section "a completed task is retried too (by id, and in bulk with --state completed)"
d1=$(add_task dq --payload '{"n":1}')
d2=$(add_task dq --payload '{"n":2}')
for id in "$d1" "$d2"; do
  tok=$(tq lease dq --worker w0 | jq -r .lease.token)
  expect_exit 0 "$TASKQ" done "$id" --lease "$tok"
done
expect_exit 4 "$TASKQ" resume "$d1"
expect_err_contains "it is completed; taskq retry $d1 runs it again as a new task"
expect_exit 0 "$TASKQ" retry "$d1"
rd1=$out
expect_eq "$(field "$rd1" .retry_of)/$(state "$rd1")/$(field "$rd1" .payload.n)" \
  "$d1/runnable/1" "the completed task's retry: linked, runnable, same payload"
expect_eq "$(state "$d1")" completed "the completed task stays completed"
expect_exit 0 "$TASKQ" retry --queue dq --state completed
expect_eq "$(grep -c . <<<"$out")/$(field "$out" .retry_of)" "1/$d2" \
  "bulk: only d2 retried (d1 has a live retry)"
expect_err_contains "skipped: task $d1 already has a live retry"

section "retry's usage errors change nothing"
for args in "retry" "retry --queue q" "retry --queue q --state runnable" \
  "retry --queue q --state failed,running" "retry 1 --queue q" \
  "retry --state failed,"; do
  # shellcheck disable=SC2086
  unchanged "$args" 2 "$TASKQ" $args
  expect_err_format
done

section "list --state a,b, --newest, --limit"
fresh_db
set_now 2026-11-21T09:00:00Z
f1=$(failed lq "disk full")
k1=$(add_task lq)
tq kill "$k1" >/dev/null
f2=$(failed lq $'first line\nsecond line')
p1=$(add_task lq)
expect_exit 0 "$TASKQ" list --state failed,killed -o id
expect_out "$f1"$'\n'"$k1"$'\n'"$f2"
expect_exit 0 "$TASKQ" list --state failed,killed --newest -o id
expect_out "$f2"$'\n'"$k1"$'\n'"$f1"
expect_exit 0 "$TASKQ" list --state failed,killed --newest --limit 2 -o id
expect_out "$f2"$'\n'"$k1"
expect_exit 0 "$TASKQ" list --newest --limit 1 -o id
expect_out "$p1"
expect_exit 0 "$TASKQ" list --state killed,failed,killed --limit 2 -o id
expect_out "$f1"$'\n'"$k1"
for bad in "" "failed," ",failed" "failed,,killed" "failed,bogus" "Failed"; do
  expect_exit 2 "$TASKQ" list --state "$bad"
  expect_err_format
done

section "failed tasks show their last error: a column, and last_error in json"
expect_exit 0 "$TASKQ" list --state failed
expect_contains "$(head -1 <<<"$out")" LAST_ERROR "header"
expect_match "$(grep "^$f1 " <<<"$out")" 'disk full \(not retried\)$' "row of $f1"
expect_match "$(grep "^$f2 " <<<"$out")" 'first line second line \(not retried\)$' "row of $f2"
expect_exit 0 "$TASKQ" list --state failed -o json
expect_eq "$(jq -r .last_error <<<"$out" | head -1)" "disk full" "last_error"
expect_exit 0 "$TASKQ" list --state runnable -o json
expect_json "$out" .last_error null "last_error of a task without errors"
expect_exit 0 "$TASKQ" list --state runnable
expect_not_contains "$out" LAST_ERROR "list of runnable tasks"

section "running tasks: worker, start and elapsed time (list, show, json)"
set_now 2026-11-21T10:00:00Z
run1=$(add_task lq2)
tq lease lq2 --worker host-a:1 --for 1h >/dev/null
set_now 2026-11-21T10:01:30Z
export TASKQ_TIMES=absolute
expect_exit 0 "$TASKQ" list --state running
expect_match "$(head -1 <<<"$out")" 'WORKER +STARTED +ELAPSED' "header"
expect_match "$(grep "^$run1 " <<<"$out")" \
  'running .* host-a:1 +2026-11-21T10:00:00Z +1m30s ' "row of $run1"
expect_exit 0 "$TASKQ" list --state running -o json
expect_json "$out" .lease.worker host-a:1
expect_json "$out" .lease.started_at 2026-11-21T10:00:00Z
expect_exit 0 "$TASKQ" show "$run1"
expect_match "$out" $'worker: +host-a:1\n' "show's worker"
expect_match "$out" $'started: +2026-11-21T10:00:00Z\n' "show's start"
expect_match "$out" $'elapsed: +1m30s\n' "show's elapsed"
expect_exit 0 "$TASKQ" show "$run1" -o json
expect_json "$out" .lease.started_at 2026-11-21T10:00:00Z
run2=$(add_task lq2)
tq lease lq2 --worker host-b:2 >/dev/null
# A running task is runnable too: listed once.
expect_exit 0 "$TASKQ" list --queue lq2 --state runnable,running -o id
expect_out "$run1"$'\n'"$run2"
expect_exit 0 "$TASKQ" list --queue lq2 --state running,runnable --limit 1 \
  --newest -o id
expect_out "$run2"

section "relative times on a terminal, RFC 3339 when piped and in json"
export TASKQ_TIMES=relative
expect_exit 0 "$TASKQ" list --state running
expect_match "$(grep "^$run1 " <<<"$out")" ' 1m ago +1m30s ' "relative row"
expect_exit 0 "$TASKQ" show "$run1"
expect_match "$out" $'lease: +held by host-a:1 until in 58m\n' "relative lease"
expect_exit 0 "$TASKQ" list --state running --limit 1 -o json
expect_json "$out" .lease.started_at 2026-11-21T10:00:00Z "json stays absolute"
unset TASKQ_TIMES
expect_exit 0 "$TASKQ" list --state running
expect_contains "$out" 2026-11-21T10:00:00Z "piped list"
# On a real terminal (a pty from script(1)), without TASKQ_TIMES.
if command -v script >/dev/null; then
  tty_out=$(script -qec "$(printf '%q ' "$TASKQ" list --state running)" \
    /dev/null </dev/null | tr -d '\r')
  cmd="list on a pty"
  expect_match "$(grep "^$run1 " <<<"$tty_out")" ' 1m ago +1m30s ' \
    "list on a terminal"
  expect_not_contains "$tty_out" 2026-11-21T10:00:00Z "list on a terminal"
fi

section "workers: who holds leases, what, and when last seen"
fresh_db
set_now 2026-11-21T11:00:00Z
w1a=$(add_task wq)
w1b=$(add_task wr)
w2a=$(add_task wq)
tq lease wq --worker w1 --for 10h >/dev/null
tq lease wr --worker w1 --for 10h >/dev/null
set_now 2026-11-21T11:05:00Z
tok=$(tq lease wq --worker w2 | jq -r .lease.token)
tq done "$w2a" --lease "$tok" >/dev/null
set_now 2026-11-21T11:10:00Z
expect_exit 0 "$TASKQ" workers -o json
expect_eq "$(jq -r .worker <<<"$out" | paste -sd, -)" "w1,w2" "workers seen"
expect_eq "$(jq -c 'select(.worker == "w1") | [.running[].id]' <<<"$out")" \
  "[$w1a,$w1b]" "w1's tasks"
expect_eq "$(jq -r 'select(.worker == "w1") | .running[1].queue' <<<"$out")" \
  wr "queue of w1's second task"
expect_eq "$(jq -r 'select(.worker == "w1") | .running[0].started_at' \
  <<<"$out")" 2026-11-21T11:00:00Z "start of w1's first task"
expect_eq "$(jq -r 'select(.worker == "w1") | .last_heartbeat' <<<"$out")" \
  2026-11-21T11:00:00Z "w1's last heartbeat"
expect_eq "$(jq -c 'select(.worker == "w2") | [.running, .last_heartbeat,
  .last_seen]' <<<"$out")" '[[],null,"2026-11-21T11:05:00Z"]' "w2, idle"
# A heartbeat moves w1's last heartbeat.
tok1=$("$TASKQ" show "$w1a" -o json | jq -r .lease.token)
tq heartbeat "$w1a" --lease "$tok1" >/dev/null
expect_exit 0 "$TASKQ" workers -o json
expect_eq "$(jq -r 'select(.worker == "w1") | .last_heartbeat' <<<"$out")" \
  2026-11-21T11:10:00Z "w1's last heartbeat after one"
expect_exit 0 "$TASKQ" workers
expect_match "$(head -1 <<<"$out")" '^WORKER +RUNNING +TASKS +QUEUES +HEARTBEAT +SEEN' \
  "header"
expect_match "$(grep '^w1 ' <<<"$out")" "^w1 +2 +$w1a,$w1b +wq,wr " "w1's row"
expect_exit 0 "$TASKQ" workers -o id
expect_out $'w1\nw2'
# Two hours on, w2 (idle) is no longer recent; w1 holds its leases still.
set_now 2026-11-21T13:00:00Z
expect_exit 0 "$TASKQ" workers -o id
expect_out w1
expect_exit 0 "$TASKQ" workers --since 3h -o id
expect_out $'w1\nw2'
expect_exit 2 "$TASKQ" workers --since bogus

section "queue list: paused queues, limits and error policy, -o json"
fresh_db
set_now 2026-11-21T12:00:00Z
failed ql nope >/dev/null
add_task ql >/dev/null
add_task ql >/dev/null
add_task other >/dev/null
tq queue set ql --max-running 2 --max-errors 3 --retry-delay 1m \
  --backoff exponential >/dev/null
tq queue pause ql >/dev/null
tq queue set settings-only --max-attempts 4 >/dev/null
expect_exit 0 "$TASKQ" queue list
expect_match "$(head -1 <<<"$out")" '^QUEUE +PAUSED +READY +RUNNING +OPEN +FINISHED +MAX_RUNNING +MAX_ATT +ERRORS +RETRY$' \
  "header"
expect_match "$(grep '^ql ' <<<"$out")" '^ql +paused +2 +0 +2 +1 +2 +- +3/4h +1m exp<=1d$' \
  "row of ql"
expect_match "$(grep '^other ' <<<"$out")" '^other +- +1 +0 +1 +0 +- +- +8/4h +10m$' \
  "row of other"
expect_match "$(grep '^settings-only ' <<<"$out")" '^settings-only +- +0 +0 +0 +0 +- +4 ' \
  "row of a queue with settings and no tasks"
expect_exit 0 "$TASKQ" queue list -o id
expect_out $'other\nql\nsettings-only'
expect_exit 0 "$TASKQ" queue list -o json
expect_eq "$(grep -c . <<<"$out")" 3 "json lines"
expect_eq "$(jq -c 'select(.queue == "ql") | [.paused, .max_running,
  .max_attempts, .max_errors, .error_window_seconds, .retry_delay_seconds,
  .backoff, .max_delay_seconds, .counts.runnable, .counts.failed,
  .counts.ready]' <<<"$out")" \
  '[true,2,null,3,14400,60,"exponential",86400,2,1,2]' "ql as json"
expect_eq "$(jq -r 'select(.paused) | .queue' <<<"$out")" ql \
  "the README's jq example"

section "queue show: every setting, its counts; unknown queue exit 3"
expect_exit 0 "$TASKQ" queue show ql
for line in 'queue: +ql' 'paused: +yes' 'max-running: +2' \
  'max-attempts: +unlimited' 'max-errors: +3' 'error-window: +4h \(default\)' \
  'retry-delay: +1m' 'backoff: +exponential' 'max-delay: +1d \(default\)' \
  'runnable +2' 'failed +1' '\(ready\) +2'; do
  expect_match "$out" "(^|"$'\n'")$line"$'(\n|$)' "queue show ql: $line"
done
expect_exit 0 "$TASKQ" queue show settings-only -o json
expect_json "$out" '[.queue, .paused, .max_attempts, .counts.runnable]' \
  '["settings-only",false,4,0]'
expect_exit 3 "$TASKQ" queue show nosuch
expect_err_contains "no queue nosuch"
expect_exit 2 "$TASKQ" queue show 'bad name'
expect_exit 2 "$TASKQ" queue show ql -o id
