# Waiting (doc/reference/commands.md#wait, doc/workers.md): `taskq wait
# ID...`, `lease --wait`, and `taskq progress` with stdout not on a terminal.
# Each must wake on another process's commit at once, without polling, and give
# up on time.
#
# Waits for other processes are bounded polls, never a bare sleep; the
# times asserted are generous for a loaded machine but far below the
# limits a polling or stuck implementation would show.

# now_ms, wait_until, alive, gone and bg_finish come from tests/cli/run.

# bg NAME ARGS...: starts `taskq ARGS...` in the background, stdout in
# NAME.out, stderr in NAME.err; sets $bg.
bg_pids=()
bg() {
  local name=$1
  shift
  "$TASKQ" "$@" >"$name.out" 2>"$name.err" 3>&- &
  bg=$!
  bg_pids+=("$bg")
}

# blocked PID: PID is waiting in the kernel (poll/inotify), not spinning.
blocked() {
  local s
  s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $s == S* ]]
}

expect_err_empty() { expect_eq "$err" "" "stderr of $cmd"; }

# finish ID [RESULT]: leases task ID (it must be the next in its queue) and
# completes it, as another process would.
finish() {
  local q tok
  q=$(field "$1" .queue)
  tok=$(tq lease "$q" | jq -r "select(.id == $1) | .lease.token")
  if [[ -z $tok ]]; then
    _ko "lease task $1 to finish it" "task $1 was not the next in $q"
    return 1
  fi
  tq done "$1" --lease "$tok" ${2:+--result "$2"} >/dev/null
}

nl=$'\n'

# --- wait ------------------------------------------------------------------------

section "wait refuses bad arguments"
id=$(add_task w)
expect_exit 2 "$TASKQ" wait
expect_err_format
expect_exit 2 "$TASKQ" wait abc
expect_err_format
expect_err_contains abc
expect_out_empty
expect_exit 2 "$TASKQ" wait 0
expect_exit 2 "$TASKQ" wait -- -3
expect_exit 2 "$TASKQ" wait "$id" --timeout bogus
expect_err_contains bogus
expect_exit 2 "$TASKQ" wait "$id" --timeout 5x
expect_exit 3 "$TASKQ" wait 999999
expect_err_format
expect_err_contains 999999
expect_out_empty
# One unknown id among known ones: not found, at once.
expect_exit 3 "$TASKQ" wait "$id" 999999 --timeout 10s
expect_out_empty
tq kill "$id" >/dev/null

section "wait on completed tasks exits 0 and prints each state and result"
a=$(add_task done --payload 1)
b=$(add_task done --payload 2)
finish "$a" '{"pages":3}'
finish "$b"
expect_exit 0 "$TASKQ" wait "$a" "$b"
expect_err_empty
expect_match "$out" "(^|$nl)$a +completed +\\{\"pages\":3\\}" "wait's row for $a"
expect_match "$out" "(^|$nl)$b +completed" "wait's row for $b"
expect_exit 0 "$TASKQ" wait "$a" "$b" -o json
expect_eq "$(jq -c '[.id, .state, .result]' <<<"$out" | tr '\n' ' ')" \
  "[$a,\"completed\",{\"pages\":3}] [$b,\"completed\",null] " "wait -o json"
expect_exit 0 "$TASKQ" wait "$b" -o id
expect_out "$b"

section "wait exits 6 when a task failed or was killed, and says so"
f=$(add_task bad)
tok=$(tq lease bad | jq -r .lease.token)
tq fail "$f" --lease "$tok" --error 'disk "full"' --no-retry >/dev/null
k=$(add_task bad)
tq kill "$k" >/dev/null
expect_exit 6 "$TASKQ" wait "$f"
expect_match "$out" "$f +failed" "wait's row for the failed task"
expect_contains "$out" 'disk "full"' "wait's row for the failed task"
expect_exit 6 "$TASKQ" wait "$k"
expect_match "$out" "$k +killed" "wait's row for the killed task"
expect_exit 6 "$TASKQ" wait "$a" "$k" -o json
expect_eq "$(jq -r .state <<<"$out" | tr '\n' ' ')" "completed killed " \
  "states printed"

section "wait --timeout exits 75 when a task is not finished"
p=$(add_task pending)
start=$(now_ms)
expect_exit 75 "$TASKQ" wait "$a" "$p" --timeout 1s
took=$(($(now_ms) - start))
expect_out_empty
expect_err_format
expect_err_contains "$p"
# The upper bound tells a wait that gave up from one that did not (the
# task never finishes); it is wide for a loaded machine: CI at d3e8aa0,
# beside multihost at -j5 on two cores, once took 5,020 ms on PostgreSQL.
check "it gave up after about 1 s (took ${took} ms)" \
  test "$took" -ge 950 -a "$took" -lt 10000
expect_eq "$(state "$p")" runnable "the waited-for task, untouched"

# A waiter woken by the commit returns in milliseconds (bench/wakeup); one
# that was not would sleep out its --timeout or --wait (30 s here). The
# bound between leaves a loaded machine its slack: one stretched such a
# wake-up to 2.7 s in CI. That the wake-up itself arrives is checked in
# tests/storage/test_change_feed.cpp.
soon_ms=10000

section "a wait started before the task finishes returns as soon as it does"
bg w1 wait "$p" --timeout 30s
waiter=$bg
check "wait blocks" wait_until 10 blocked "$waiter"
check "wait is still waiting" alive "$waiter"
finish "$p" '"ok"'
done_at=$(now_ms)
bg_finish "$waiter" w1
expect_eq "$rc" 0 "exit status of the waiting wait"
expect_match "$out" "$p +completed +\"ok\"" "its output"
check "it returned soon after the done (took $((ended - done_at)) ms)" \
  test $((ended - done_at)) -lt "$soon_ms"

section "a wait on several tasks returns when the last finishes"
x=$(add_task multi)
y=$(add_task multi)
bg w2 wait "$x" "$y" --timeout 30s
waiter=$bg
check "wait blocks" wait_until 10 blocked "$waiter"
finish "$x"
# The wait must still be there once it has seen the first done: give it a
# moment to look (an early exit would show here; a late one below).
check "wait sees the first done and keeps waiting" wait_until 10 blocked "$waiter"
sleep 0.2
check "wait is still waiting after one of two finished" alive "$waiter"
tq kill "$y" >/dev/null
done_at=$(now_ms)
bg_finish "$waiter" w2
expect_eq "$rc" 6 "exit status when the last was killed"
expect_match "$out" "$x +completed" "wait's row for $x"
expect_match "$out" "$y +killed" "wait's row for $y"
check "it returned soon after the kill (took $((ended - done_at)) ms)" \
  test $((ended - done_at)) -lt "$soon_ms"

# --- lease --wait ------------------------------------------------------------------

section "lease --wait refuses a malformed duration"
expect_exit 2 "$TASKQ" lease lw --wait=bogus
expect_err_format
expect_err_contains bogus
expect_out_empty
expect_exit 2 "$TASKQ" lease lw --wait bogus
expect_exit 2 "$TASKQ" lease lw --wait=-1s

section "lease --wait on an empty queue exits 75 when the wait runs out"
start=$(now_ms)
expect_exit 75 "$TASKQ" lease lw --wait 1s
took=$(($(now_ms) - start))
expect_out_empty
expect_err_format
# Wide above, as for wait --timeout: CI once took 5,020 ms there.
check "it waited about 1 s (took ${took} ms)" \
  test "$took" -ge 950 -a "$took" -lt 10000
expect_exit 75 "$TASKQ" lease lw --wait=1s -o env
expect_out "(exit 75)"

section "lease --wait gets a task that another process adds, at once"
bg lw1 lease lw --wait 30s --worker waiter
waiter=$bg
check "lease --wait blocks" wait_until 10 blocked "$waiter"
id=$(add_task lw --payload '{"k":"v"}')
added_at=$(now_ms)
bg_finish "$waiter" lw1
expect_eq "$rc" 0 "exit status of lease --wait"
expect_json "$out" .id "$id"
expect_json "$out" .payload '{"k":"v"}'
expect_json "$out" .lease.worker waiter
check "it got the task soon after the add (took $((ended - added_at)) ms)" \
  test $((ended - added_at)) -lt "$soon_ms"
expect_jq "$(snapshot "$id")" '.attempts == 1 and .lease.worker == "waiter"' \
  "task leased by the waiter"

section "lease --wait ignores other queues and gets its own"
bg lw2 lease lw --wait 10s -o id
waiter=$bg
check "lease --wait blocks" wait_until 10 blocked "$waiter"
other=$(add_task elsewhere)
check "a task in another queue does not end the wait" wait_until 10 blocked "$waiter"
sleep 0.2
check "still waiting" alive "$waiter"
id=$(add_task lw)
bg_finish "$waiter" lw2
expect_eq "$rc" 0 "exit status of lease --wait"
expect_out "$id"
expect_eq "$(state "$other")" runnable "the other queue's task"
expect_eq "$(field "$other" .attempts)" 0 "the other queue's task attempts"

section "lease --wait wakes when a delayed task comes due"
id=$(add_task lwd --delay 2s)
start=$(now_ms)
expect_exit 0 "$TASKQ" lease lwd --wait 25s -o id
took=$(($(now_ms) - start))
expect_out "$id"
check "it waited until the task was due (took ${took} ms)" \
  test "$took" -ge 900 -a "$took" -lt 12000

section "lease --wait gets a task that an operator releases"
id=$(add_task lwr)
tok=$(tq lease lwr --for 1h | jq -r .lease.token)
bg lw3 lease lwr --wait 30s -o id
waiter=$bg
check "lease --wait blocks" wait_until 10 blocked "$waiter"
tq release "$id" >/dev/null
done_at=$(now_ms)
bg_finish "$waiter" lw3
expect_eq "$rc" 0 "exit status of lease --wait"
expect_out "$id"
check "soon after (took $((ended - done_at)) ms)" \
  test $((ended - done_at)) -lt "$soon_ms"

# --- progress ----------------------------------------------------------------------

section "progress on a queue with nothing left prints a plain line and exits 0"
expect_exit 0 "$TASKQ" progress done
expect_match "$out" '^done [^'$'\r\033'']*$' "a plain line"
expect_eq "$(grep -c . <<<"$out")" 1 "lines"
expect_exit 2 "$TASKQ" progress done --interval bogus
expect_exit 2 "$TASKQ" progress done --interval 0

section "progress follows a queue until it drains, one plain line per interval"
ids=()
for i in 1 2 3; do ids+=("$(add_task prog)"); done
bg pr progress prog --interval 1s
watcher=$bg
check "progress prints its first line" wait_until 10 test -s pr.out
for i in "${ids[@]}"; do
  finish "$i"
done
done_at=$(now_ms)
bg_finish "$watcher" pr
expect_eq "$rc" 0 "exit status of progress"
expect_eq "$err" "" "stderr of progress"
check "it ended within 1.5 s of the last done (took $((ended - done_at)) ms)" \
  test $((ended - done_at)) -lt 1500
check "no carriage return or escape codes when piped" \
  eval '! grep -q "['$'\r\033'']" pr.out'
expect_match "$(head -n 1 <<<"$out")" '^prog 0/3( |$)' "first line"
expect_match "$(tail -n 1 <<<"$out")" '^prog 3/3( |$)' "last line"
check "every line names the queue" eval '! grep -v "^prog " pr.out'

for p in "${bg_pids[@]}"; do
  kill -KILL "$p" 2>/dev/null
done
true
