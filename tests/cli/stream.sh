# `taskq run --stream` (doc/workers.md, "Persistent handlers"): the line protocol
# (results, failures, releases, heartbeats, checkpoints), handlers that die,
# answer garbage or never answer (--timeout), an operator's kill reaching a
# streamed task, SIGTERM releasing every prefetched task, --prefetch
# batches, and the option checks.
#
# The handler is tests/cli/stream_handler.pl: each task's payload says what
# it does. Background runs go through perl so that SIGINT is not ignored.
# Every wait for another process is a bounded poll, never a bare sleep.

H=${_suite%/*}/stream_handler.pl
export STREAM_LOG=$scratch/stream.log
mkdir -p h

file_has() { [[ -s $1 ]]; }
pid_of() {
  wait_until 10 file_has "$1" || {
    _ko "handler started" "no pid in $1 after 10 s"
    return 1
  }
  cat "$1"
}
log_has() { grep -q -- "$1" "$STREAM_LOG"; }
starts() { grep -c '^start ' "$STREAM_LOG"; }

section "results, failures, releases through the protocol"
a=$(add_task proto --payload '{"do":"done","result":{"n":[1,"two"]}}')
b=$(add_task proto --payload '{"do":"done"}')
c=$(add_task proto --payload '{"do":"fail","error":"boom"}' --max-attempts 3)
d=$(add_task proto --payload '{"do":"fail","error":"final","noretry":true}')
e=$(add_task proto --payload '{"do":"release","delay":"1h"}')
expect_exit 6 "$TASKQ" run proto --stream --until-empty -- "$H"
expect_match "$out" "^leased 5: 2 completed, 1 failed for good \\(task $d\\), 1 will retry at [^,]+ \\(task $c\\), 1 released, 0 revoked\$"
expect_eq "$(field "$a" .result)" '{"n":[1,"two"]}' "the result"
expect_eq "$(state "$a")" completed
expect_eq "$(field "$b" .result)" null "done:null stores no result"
expect_eq "$(state "$b")" completed
expect_eq "$(state "$c")" sleeping "a failure goes to the retry policy"
expect_eq "$(field "$c" .last_error)" boom
expect_eq "$(state "$d")" failed "retry:false fails for good"
expect_eq "$(field "$d" .last_error)" final
expect_eq "$(state "$e")" runnable "a released task is given back"
expect_eq "$(field "$e" .lease)" null
run_at=$(field "$e" .run_at)
check "released with its delay (run_at $run_at)" test "$(epoch "$run_at")" -gt $(($(date +%s) + 3000))
expect_eq "$(starts)" 1 "one handler served every task"
check "the handler got EOF at the end" log_has '^eof '

section "the task line carries the task as lease -o json shows it"
: >"$STREAM_LOG"
cat >line.sh <<'SH'
#!/bin/sh
IFS= read -r line || exit 0 # a second one started at the end
printf '%s\n' "$line" >line.json
id=$(printf '%s' "$line" | jq -r .task.id)
printf '{"id":%s,"done":true}\n' "$id"
SH
chmod +x line.sh
id=$(add_task line --payload '{"k":[1,2]}' --label color=red)
expect_exit 0 "$TASKQ" run line --stream --until-empty -- ./line.sh
line=$(<line.json)
expect_eq "$(jq -c .task.payload <<<"$line")" '{"k":[1,2]}' "payload"
expect_eq "$(jq -r .task.id <<<"$line")" "$id" "id"
expect_eq "$(jq -r .task.queue <<<"$line")" line "queue"
expect_eq "$(jq -r .task.attempts <<<"$line")" 1 "attempts"
expect_eq "$(jq -c .task.labels <<<"$line")" '{"color":"red"}' "labels"
expect_eq "$(jq -r '.task.lease.token | length > 0' <<<"$line")" true "lease token"
expect_match "$(jq -r .task.lease.expires_at <<<"$line")" '^[0-9]{4}-' "lease expiry"
expect_eq "$(field "$id" .result)" true

section "heartbeats and checkpoints through the protocol"
id=$(add_task beat --payload '{"do":"beat"}')
expect_exit 0 "$TASKQ" run beat --stream --until-empty -- "$H"
expect_eq "$(field "$id" .checkpoint)" '{"step":1}' "the checkpoint is stored"
expect_eq "$(state "$id")" completed
expect_eq "$err" "" "heartbeat and checkpoint lines are accepted quietly"

section "a handler killed mid-task: the task comes back at once and completes once"
: >"$STREAM_LOG"
id=$(add_task die --payload '{"do":"die"}')
bg_run die run die --stream -- "$H"
runpid=$bg
pid=$(pid_of "h/$id.pid")
check "the handler holds it" wait_until 10 test -e "h/$id.died"
kill -KILL "$pid"
check "the task completes" wait_until 10 eval '[[ $(state "$id") == completed ]]'
expect_eq "$(field "$id" .result)" second
expect_eq "$(starts)" 2 "the handler was started again"
kill -TERM "$runpid"
bg_finish "$runpid" die
expect_eq "$rc" 0 "exit status of run"
expect_match "$out" '^leased 2: 1 completed, 0 failed for good, 0 will retry, 1 released, 0 revoked$'
expect_contains "$err" "taskq: handler 1 was killed by SIGKILL while working on task $id; the task is released"
expect_exit 0 "$TASKQ" events --queue die -o json
expect_eq "$(jq -r "select(.message == \"complete\" and .task == $id) | .task" <<<"$out" | grep -c .)" 1 "one completion"

section "malformed lines: a clear error, the task failed with it, nothing lost"
: >"$STREAM_LOG"
g=$(add_task garb --payload '{"do":"garbage"}')
n=$(add_task garb --payload '{"do":"noverb"}')
t=$(add_task garb --payload '{"do":"twoverbs"}')
ok=$(add_task garb --payload '{"do":"done","result":1}')
expect_exit 6 "$TASKQ" run garb --stream --until-empty -- "$H"
expect_match "$out" '^leased 4: 1 completed, 0 failed for good, 3 will retry'
expect_contains "$err" "taskq: handler 1: malformed line (not a JSON object): this is not JSON"
expect_contains "$err" "taskq: handler 1: malformed line: {\"id\":$n}"
expect_eq "$(state "$g")" sleeping
expect_contains "$(field "$g" .last_error)" "handler sent garbage (not a JSON object): this is not JSON"
expect_eq "$(state "$n")" sleeping
expect_contains "$(field "$n" .last_error)" "malformed handler output"
expect_eq "$(state "$t")" sleeping
expect_contains "$(field "$t" .last_error)" "more than one of done, fail"
expect_eq "$(state "$ok")" completed
expect_eq "$(starts)" 2 "the handler that sent garbage was replaced"

section "a handler that never answers: --timeout fails the task, the handler is replaced"
# --timeout 3s, not 1s: it also runs for the next task from when it is
# written to the new handler, still starting, which a loaded machine slows.
: >"$STREAM_LOG"
id=$(add_task slow --payload '{"do":"hold"}')
next=$(add_task slow --payload '{"do":"done","result":2}')
start=$(now_ms)
expect_exit 6 "$TASKQ" run slow --stream --until-empty --timeout 3s --grace 500ms -- "$H"
took=$(($(now_ms) - start))
expect_match "$out" '^leased 2: 1 completed, 0 failed for good, 1 will retry'
expect_eq "$(state "$id")" sleeping
expect_eq "$(field "$id" .last_error)" "timed out after 3s"
expect_eq "$(state "$next")" completed
check "the handler got the cancel line" log_has "^cancel $id timed out after 3s"
expect_contains "$err" "did not answer the cancel of task $id within 500ms; stopping it"
expect_eq "$(starts)" 2 "a new handler took the next task"
check "it took the timeout and grace (${took} ms)" test "$took" -ge 3400

section "a handler that answers the cancel is kept"
: >"$STREAM_LOG"
id=$(add_task obey --payload '{"do":"hold"}')
next=$(add_task obey --payload '{"do":"done"}')
STREAM_OBEY=1 expect_exit 6 "$TASKQ" run obey --stream --until-empty --timeout 500ms -- "$H"
expect_eq "$(state "$id")" sleeping
expect_eq "$(field "$id" .last_error)" "timed out after 500ms"
expect_eq "$(state "$next")" completed
expect_eq "$(starts)" 1 "the same handler went on"

section "an operator's kill reaches a streamed task as a cancel line"
: >"$STREAM_LOG"
id=$(add_task opkill --payload '{"do":"hold"}')
bg_run opkill run opkill --stream --grace 1s -- "$H"
runpid=$bg
pid=$(pid_of "h/$id.pid")
expect_exit 0 "$TASKQ" kill "$id"
check "the handler got a cancel line" wait_until 10 log_has "^cancel $id kill"
check "the handler ignoring it is stopped after --grace" wait_until 10 gone "$pid"
check "and started again" wait_until 10 eval '(( $(starts) == 2 ))'
after=$(add_task opkill --payload '{"do":"done","result":3}')
check "the new handler works on" wait_until 10 eval '[[ $(state "$after") == completed ]]'
kill -TERM "$runpid"
bg_finish "$runpid" opkill
expect_eq "$rc" 0 "exit status of run"
expect_eq "$(state "$id")" killed
expect_match "$out" '^leased 2: 1 completed, 0 failed for good, 0 will retry, 0 released, 1 revoked$'

section "SIGTERM releases every prefetched task that was not finished"
: >"$STREAM_LOG"
ids=()
for i in 1 2 3 4 5 6; do
  ids+=("$(add_task term --payload '{"do":"hold"}')")
done
bg_run term run term --stream --prefetch 6 --grace 500ms -- "$H"
runpid=$bg
pid=$(pid_of "h/${ids[0]}.pid")
running() { [[ $("$TASKQ" list --queue term --state running -o id | grep -c .) == 6 ]]; }
check "all six are leased" wait_until 10 running
kill -TERM "$runpid"
bg_finish "$runpid" term
expect_eq "$rc" 0 "exit status of run"
expect_match "$out" '^leased 6: 0 completed, 0 failed for good, 0 will retry, 6 released, 0 revoked$'
for id in "${ids[@]}"; do
  expect_eq "$(state "$id"):$(field "$id" .lease)" runnable:null "task $id is back"
done
check "the handler is gone" wait_until 5 gone "$pid"
expect_exit 0 "$TASKQ" list --queue term --state ready -o id
expect_eq "$(grep -c . <<<"$out")" 6 "all six are ready at once"

section "--prefetch writes tasks behind the one in hand; answers in any order"
: >"$STREAM_LOG"
a=$(add_task ahead --payload '{"do":"hold"}')
b=$(add_task ahead --payload '{"do":"done","result":"b"}')
c=$(add_task ahead --payload '{"do":"done","result":"c"}')
bg_run ahead run ahead --stream --prefetch 3 --grace 500ms -- "$H"
runpid=$bg
pid=$(pid_of "h/$a.pid")
check "the tasks behind an unanswered one reach the handler" \
  wait_until 10 log_has "^task $c "
both_done() { [[ $(state "$b"):$(state "$c") == completed:completed ]]; }
check "and are completed before it" wait_until 10 both_done
expect_eq "$(state "$a"):$(field "$a" '.lease != null')" runnable:true "the one in hand is still leased"
expect_exit 0 "$TASKQ" kill "$a"
check "its kill reaches the handler" wait_until 10 log_has "^cancel $a kill"
check "which, not answering, is stopped" wait_until 10 gone "$pid"
kill -TERM "$runpid"
bg_finish "$runpid" ahead
expect_eq "$rc" 0 "exit status of run"
expect_match "$out" '^leased 3: 2 completed, 0 failed for good, 0 will retry, 0 released, 1 revoked$'
expect_eq "$(state "$a")" killed

section "--prefetch: many tasks in batches, each completed once"
fresh_db
seq 1 300 | jq -c '{payload:{do:"done",result:.}}' >many.jsonl
tq add many --jsonl many.jsonl >/dev/null
expect_exit 0 "$TASKQ" run many --stream --prefetch 32 --concurrency 2 --until-empty -- "$H"
expect_eq "$out" "leased 300: 300 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked"
expect_exit 0 "$TASKQ" list --queue many --state completed -o id
expect_eq "$(grep -c . <<<"$out")" 300 "all completed"
expect_exit 0 "$TASKQ" events -o json
expect_eq "$(jq -r 'select(.message == "complete") | .task' <<<"$out" | sort | uniq -d | wc -l)" 0 "no task completed twice"

# Lease-ahead (TASKQ_LEASE_AHEAD_MS, as per-task run's; worker.sh): behind
# a handler that answers within the hold, the next task is leased in the
# transaction that records an answer, and written the moment the next
# answer comes. The hold here is 10 s, not the default 250 ms (its value is
# tests/worker/test_worker_policy.cpp's): the first answer counts from when
# the task was written to a handler still starting, which on a loaded
# machine took longer than 250 ms, and then nothing is leased ahead.
event_ids() { # ID MESSAGE: the ids of task ID's events named MESSAGE
  "$TASKQ" events -o json | jq -r --argjson id "$1" --arg m "$2" \
    'select(.task == $id and .message == $m) | .id'
}
messages() { # ID: task ID's events, in order
  "$TASKQ" events -o json | jq -r --argjson id "$1" 'select(.task == $id) | .message' |
    tr '\n' ' '
}
section "behind a quick handler the next task is leased ahead; TASKQ_LEASE_AHEAD_MS=0 leases none"
for hold in 10000 0; do
  fresh_db
  : >"$STREAM_LOG"
  a=$(add_task la --payload '{"do":"done"}')
  b=$(add_task la --payload '{"do":"done"}')
  c=$(add_task la --payload '{"do":"done"}')
  TASKQ_LEASE_AHEAD_MS=$hold expect_exit 0 "$TASKQ" run la --stream --until-empty -- "$H"
  expect_eq "$out" "leased 3: 3 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked"
  expect_eq "$(messages "$c")" "add lease complete " "events of the third task ($hold)"
  lease_c=$(event_ids "$c" lease)
  complete_b=$(event_ids "$b" complete)
  if [[ $hold != 0 ]]; then
    check "the third task is leased before the second completes (events $lease_c, $complete_b)" \
      test "$lease_c" -lt "$complete_b"
  else
    check "the third task is leased after the second completes (events $lease_c, $complete_b)" \
      test "$lease_c" -gt "$complete_b"
  fi
  expect_eq "$(grep -c "^task " "$STREAM_LOG")" 3 "tasks the handler got ($hold)"
done
for bad in -1 abc ""; do
  TASKQ_LEASE_AHEAD_MS=$bad expect_exit 2 "$TASKQ" run la --stream --until-empty -- "$H"
  expect_match "$err" "^taskq: TASKQ_LEASE_AHEAD_MS: expected whole milliseconds" \
    "message for TASKQ_LEASE_AHEAD_MS=$bad"
done

section "a task leased ahead and held past TASKQ_LEASE_AHEAD_MS is given back, attempt and all"
# 1 is quick, so 2 is leased with 3 ahead; 2 answers only once 3 is given
# back. 3 is then leased again, and runs once, on its first attempt. The
# hold is 5 s, so that 1's answer from a handler still starting is quick on
# a loaded machine too (see above).
fresh_db
: >"$STREAM_LOG"
a=$(add_task back --payload '{"do":"done"}')
b=$(add_task back --payload '{"do":"after","result":"b"}')
c=$(add_task back --payload '{"do":"done"}')
rm -f "h/$b.go"
mkfifo "h/$b.go"
TASKQ_LEASE_AHEAD_MS=5000 bg_run back run back --stream --until-empty -- "$H"
runner=$bg
given_back() { [[ $(messages "$c") == "add lease release "* ]]; }
check "the task leased ahead is given back" wait_until 20 given_back
check "the handler reads the go" timeout 10 bash -c 'echo go >"$1"' _ "h/$b.go"
bg_finish "$runner" back
expect_eq "$rc" 0 "run's exit status"
expect_eq "$out" "leased 3: 3 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked" \
  "the summary counts what reached a handler"
expect_eq "$(messages "$c")" "add lease release lease complete " "events of the task leased ahead"
expect_eq "$(field "$c" .attempts)" 1 "its attempts"
expect_eq "$(grep -c "^task $c " "$STREAM_LOG")" 1 "times the handler got it"

section "an operator's kill of the task leased ahead: it never reaches the handler; SIGTERM gives back the rest"
fresh_db
: >"$STREAM_LOG"
a=$(add_task opahead --payload '{"do":"done"}')
b=$(add_task opahead --payload '{"do":"after","result":"b"}')
c=$(add_task opahead --payload '{"do":"done"}')
d=$(add_task opahead --payload '{"do":"hold"}')
e=$(add_task opahead --payload '{"do":"done"}')
rm -f "h/$b.go"
mkfifo "h/$b.go"
# Held up to 60 s: however slow the machine, 3 stays leased ahead.
TASKQ_LEASE_AHEAD_MS=60000 bg_run opahead run opahead --stream --grace 500ms -- "$H"
runner=$bg
leased_ahead() { [[ $(field "$1" .lease) != null ]]; }
check "the third task is leased ahead" wait_until 20 leased_ahead "$c"
expect_exit 0 "$TASKQ" kill "$c"
check "the handler reads the go" timeout 10 bash -c 'echo go >"$1"' _ "h/$b.go"
check "the fourth task, leased ahead of it, reaches the handler" \
  wait_until 20 log_has "^task $d "
check "the fifth is leased ahead behind it" wait_until 20 leased_ahead "$e"
kill -TERM "$runner"
bg_finish "$runner" opahead
expect_eq "$rc" 0 "run's exit status"
expect_eq "$(grep -c "^task $c " "$STREAM_LOG")" 0 "times the handler got the killed task"
expect_eq "$(state "$c")" killed "state of the killed task"
expect_eq "$(state "$d"):$(field "$d" .lease):$(field "$d" .attempts)" runnable:null:0 \
  "the task in hand at SIGTERM is back, its attempt given back"
expect_eq "$(state "$e"):$(field "$e" .lease):$(field "$e" .attempts)" runnable:null:0 \
  "the task leased ahead at SIGTERM is back, its attempt given back"
expect_match "$out" '^leased 4: 2 completed, 0 failed for good, 0 will retry, 1 released, 1 revoked$' \
  "the summary: what reached a handler, and the killed task leased ahead"

section "a handler that keeps dying ends the run"
fresh_db
add_task dead >/dev/null
expect_exit 1 "$TASKQ" run dead --stream -- false
expect_contains "$err" "handler keeps dying"
expect_eq "$("$TASKQ" list --queue dead --state ready -o id | grep -c .)" 1 "its task is ready again"

# The lock is taken with the sqlite3 shell, and a commit is held in its WAL
# sync: SQLite only.
if sqlite_only; then
  section "an outcome written again after the database was locked keeps its result"
  g=$(add_task locked --payload '{"do":"after","result":{"kept":[1,"two"]}}')
  mkfifo "h/$g.go" lock.fifo
  export TASKQ_BUSY_TIMEOUT_MS=200
  bg_run locked run locked --stream --until-empty -- "$H"
  unset TASKQ_BUSY_TIMEOUT_MS
  runner=$bg
  # Its lease committed (the handler has its line by then; ids repeat
  # across this file's databases, so the handler's log cannot tell).
  leased() { [[ $(field "$g" .lease) != null ]]; }
  check "the task is leased" wait_until 10 leased
  sqlite3 "$TASKQ_DB" <lock.fifo >/dev/null 2>&1 &
  locker=$!
  exec 4>lock.fifo
  echo 'BEGIN IMMEDIATE; CREATE TEMP TABLE hold (x);' >&4
  check "another writer holds the lock" wait_until 10 write_locked "$TASKQ_DB"
  check "the handler reads the go" \
    timeout 10 bash -c 'echo go >"$1"' _ "h/$g.go"
  check "run finds the database locked and will try again" \
    wait_until 10 grep -q "trying again" locked.err
  echo 'ROLLBACK;' >&4
  exec 4>&-
  wait "$locker"
  bg_finish "$runner" locked
  expect_eq "$rc" 0 "run's exit status"
  expect_eq "$(state "$g")" completed
  expect_eq "$(field "$g" .result)" '{"kept":[1,"two"]}' "the result"

  # The WAL sync is held by an LD_PRELOAD shim.
  section "a run killed while its lease syncs: the handler never gets the task"
  # The task goes to the handler once its lease is on disk; written
  # before its commit (as it was for a while), a run killed meanwhile left
  # its handler working on a task the next worker leased and ran too.
  # With group commit the commit returns before its sync, which a thread
  # of run's makes: the lease is there for all to see, and the task waits
  # for the sync all the same.
  check "the shim builds" \
    cc -shared -fPIC -o stall_sync.so "${_suite%/*}/stall_sync.c" -ldl
  k=$(add_task stall --payload '{"do":"done"}')
  : >"$STREAM_LOG"
  : >gate
  STALL_GATE=$PWD/gate LD_PRELOAD=$PWD/stall_sync.so \
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    bg_run stall run stall --stream --worker stalled -- "$H"
  runner=$bg
  check "the lease's sync is held" wait_until 10 test -e gate.held
  check "the handler is up" wait_until 10 log_has '^start '
  check "the lease is committed before its sync ends" \
    wait_until 10 sh -c "[ \"\$(\"$TASKQ\" show $k -o json | jq -r '.lease.worker')\" = stalled ]"
  handler=$(awk '$1 == "start" { print $2; exit }' "$STREAM_LOG")
  kill -KILL "$runner"
  wait "$runner" 2>/dev/null
  rm -f gate
  check "the handler sees its stdin close and ends" wait_until 10 gone "$handler"
  expect_eq "$(grep -c '^task ' "$STREAM_LOG")" 0 "tasks the handler got"
  # A kill of run loses no commit: the lease runs out as any dead
  # worker's, and the task is still to run.
  expect_eq "$(state "$k")" runnable "the task is still to run"
  expect_eq "$("$TASKQ" show "$k" -o json | jq -r '.lease.worker')" stalled "its lease"

  section "a WAL sync that fails: run stops (exit 5), its task given back"
  k=$(add_task syncfail --payload '{"do":"done"}')
  : >"$STREAM_LOG"
  expect_exit 5 env STALL_FAIL=1 LD_PRELOAD="$PWD/stall_sync.so" \
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
    "$TASKQ" run syncfail --stream --until-empty -- "$H"
  expect_err_contains "cannot sync"
  expect_eq "$(grep -c '^task ' "$STREAM_LOG")" 0 "tasks the handler got"
  expect_eq "$(state "$k")" runnable "the task is still to run"
  expect_eq "$("$TASKQ" show "$k" -o json | jq -c '.lease')" null "its lease, given back"

  # With --prefetch too: its batches' commits are grouped the same way,
  # and three tasks leased in one commit all wait for its sync (the first
  # for the handler, the others to be written behind it).
  for prefetch in 1 4; do
    section "a held sync holds the task back; once it ends the task runs (--prefetch $prefetch)"
    k=$(add_task "stall$prefetch" --payload '{"do":"done"}')
    n=1
    if ((prefetch > 1)); then
      add_task "stall$prefetch" --payload '{"do":"done"}' >/dev/null
      add_task "stall$prefetch" --payload '{"do":"done"}' >/dev/null
      n=3
    fi
    : >"$STREAM_LOG"
    rm -f gate.held
    : >gate
    STALL_GATE=$PWD/gate LD_PRELOAD=$PWD/stall_sync.so \
      ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
      bg_run "stall$prefetch" run "stall$prefetch" --stream --prefetch "$prefetch" \
      --until-empty -- "$H"
    runner=$bg
    check "the lease's sync is held" wait_until 10 test -e gate.held
    check "the lease is committed" \
      wait_until 10 sh -c "\"$TASKQ\" show $k -o json | jq -e '.lease != null' >/dev/null"
    expect_eq "$(grep -c '^task ' "$STREAM_LOG")" 0 "tasks the handler got while the sync is held"
    rm -f gate
    bg_finish "$runner" "stall$prefetch"
    expect_eq "$rc" 0 "run's exit status"
    expect_eq "$(grep -c '^task ' "$STREAM_LOG")" "$n" "tasks the handler got"
    expect_eq "$("$TASKQ" list --queue "stall$prefetch" --state completed -o id | grep -c .)" "$n" \
      "tasks completed"
  done
fi

section "option checks"
expect_exit 2 "$TASKQ" run q --stream
expect_err_contains "--stream needs the handler"
expect_exit 2 "$TASKQ" run q --stream --tag -- "$H"
expect_err_contains "--tag cannot go with --stream"
expect_exit 2 "$TASKQ" run q --stream --result-stdout -- "$H"
expect_exit 2 "$TASKQ" run q --stream --keep-output 0 -- "$H"
expect_exit 2 "$TASKQ" run q --prefetch 4 -- "$H"
expect_err_contains "--prefetch needs --stream"
expect_exit 2 "$TASKQ" run q --stream --prefetch 0 -- "$H"
expect_exit 2 "$TASKQ" run q --stream --prefetch 4 --for 500ms -- "$H"
expect_err_contains "--for must be at least 1s"
