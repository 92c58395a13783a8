# Crash acceptance (doc/reference/guarantees.md#one-transaction-per-command,
# "every command is one transaction ... also when the process is killed at any
# instant"): "a bulk `add --jsonl` of 1,000,000 lines killed with SIGKILL
# part-way leaves the database with either none or all of them, and `taskq db
# check` reports it healthy."
#
# The add is killed once it is provably part-way: it is still running and
# has either read a quarter of its input (its file offset, from
# /proc/PID/fdinfo) or spilled more than 8 MB into the -wal file. No fixed
# sleeps: a short bounded loop polls for that condition.

# The 1,000,000 of doc/reference/guarantees.md#acceptance-checks on SQLite;
# 200,000 on PostgreSQL, where the add is one server transaction whatever its
# size and the million took a tenth of CI's time.
if sqlite_only; then
  crash_lines=1000000
else
  crash_lines=200000
fi
# A single command may take long here (a million inserts, a sanitizer build).
crash_cmd_timeout=600

# Every line differs, with some padding so the transaction spans many pages.
awk -v n="$crash_lines" 'BEGIN {
  for (i = 1; i <= n; i++) printf "{\"n\":%d,\"pad\":\"%s\"}\n", i, "0123456789abcdef0123456789abcdef"
}' >big.jsonl
crash_size=$(stat -c %s big.jsonl)

# crash_input_pos PID FILE: the read offset of FILE in process PID, or -1
# when PID does not have FILE open.
crash_input_pos() {
  local fd target
  for fd in /proc/"$1"/fd/*; do
    target=$(readlink "$fd" 2>/dev/null) || continue
    if [[ $target == "$2" ]]; then
      awk '/^pos:/ { print $2; exit }' "/proc/$1/fdinfo/${fd##*/}" 2>/dev/null &&
        return
    fi
  done
  echo -1
}

# crash_count QUEUE: how many tasks QUEUE holds, or a message saying why not.
crash_count() {
  local ids
  # stdout only: a queue with no tasks yet gets a note on stderr.
  ids=$(timeout -k 5 "$crash_cmd_timeout" "$TASKQ" list --queue "$1" -o id \
    2>crash-list.err 3>&-) || {
    echo "<list failed: $(<crash-list.err)>"
    return
  }
  grep -c . <<<"$ids"
}

# crash_run CMD...: like expect_exit 0 but without the harness's 30 s limit
# (a million inserts take a while in a sanitizer build). Sets out, err, rc.
crash_run() {
  cmd="$*"
  timeout -k 5 "$crash_cmd_timeout" "$@" >crash.run.out 2>crash.run.err 3>&-
  rc=$?
  out=$(<crash.run.out)
  err=$(<crash.run.err)
  expect_eq "$rc" 0 "exit status of ${cmd//$TASKQ/taskq} (stderr: $err)"
}

# crash_state PID: the process state letter (R, S, D, T, Z...), empty when
# it is gone.
crash_state() {
  awk '{ sub(/^.*\) /, ""); print substr($0, 1, 1) }' "/proc/$1/stat" \
    2>/dev/null
}

# crash_killed_add QUEUE: starts `add QUEUE --jsonl big.jsonl`, waits until
# it is part-way, stops it (SIGSTOP: it cannot move on while we look, so no
# check below races with it), checks that a reader sees none of its tasks,
# records how far it had read, kills it with SIGKILL and reaps it. Sets
# crash_rc (its exit status: 137 when the kill hit it) and crash_pos (the
# input offset at the kill; -1 when unknown).
crash_killed_add() {
  local queue=$1 pid i wal_size reached="" input
  input=$(realpath big.jsonl)
  "$TASKQ" add "$queue" --jsonl big.jsonl >crash.out 2>crash.err 3>&- &
  pid=$!
  crash_pos=-1
  for ((i = 0; i < 6000; i++)); do # at most about a minute
    if ! kill -0 "$pid" 2>/dev/null || [[ $(crash_state "$pid") == Z ]]; then
      break
    fi
    crash_pos=$(crash_input_pos "$pid" "$input")
    wal_size=$(stat -c %s "$TASKQ_DB-wal" 2>/dev/null || echo 0)
    if ((crash_pos * 4 >= crash_size || wal_size > 8 * 1024 * 1024)); then
      reached=yes
      break
    fi
    sleep 0.01
  done
  if [[ -n $reached ]]; then
    kill -STOP "$pid" 2>/dev/null
    for ((i = 0; i < 1000; i++)); do
      case $(crash_state "$pid") in
      T | t | Z | "") break ;;
      esac
      sleep 0.01
    done
    # Stopped mid-transaction: a reader is not blocked by the writer and
    # sees only what was committed before the add began.
    expect_eq "$(crash_count "$queue")" "$crash_expected_before" \
      "tasks a reader sees while the add is in flight"
    crash_pos=$(crash_input_pos "$pid" "$input")
  fi
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null # no "Killed" job notice on the suite's stderr
  crash_rc=$?
  check "the add was still running when it was part-way" test -n "$reached"
  expect_eq "$crash_rc" 137 "exit status of the killed add (SIGKILL)"
  expect_eq "$(grep -iE 'locked|busy' crash.err)" "" \
    "stderr of the killed add mentioning locked/busy"
}

section "a killed bulk add into a new database leaves none or all"
fresh_db crash-new
crash_expected_before=0
crash_killed_add q
crash_n=$(crash_count q)
check "tasks after the killed add ($crash_n) are none or all" \
  test "$crash_n" = 0 -o "$crash_n" = "$crash_lines"
# Stopped while it was still reading its input, it cannot have committed.
if ((crash_pos >= 0 && crash_pos < crash_size)); then
  expect_eq "$crash_n" 0 \
    "tasks after an add killed at input offset $crash_pos of $crash_size"
fi
expect_exit 0 "$TASKQ" db check
expect_exit 0 "$TASKQ" stats

section "the same add, run to completion, adds exactly $crash_lines"
crash_before=$crash_n
crash_run "$TASKQ" add q --jsonl big.jsonl
expect_eq "$out" "$crash_lines" "count printed by the complete add"
expect_eq "$(crash_count q)" "$((crash_before + crash_lines))" \
  "tasks after the complete add"
crash_run "$TASKQ" db check

section "a killed bulk add leaves pre-existing tasks exactly as they were"
fresh_db crash-existing
crash_ids=()
for i in 1 2 3 4 5; do
  crash_ids+=("$(add_task q --payload "{\"before\":$i}")")
done
crash_pre=$("$TASKQ" list --queue q -o json 3>&-)
crash_expected_before=5
crash_killed_add q
expect_eq "$(crash_count q)" 5 "tasks after the killed add"
expect_exit 0 "$TASKQ" list --queue q -o json
expect_eq "$out" "$crash_pre" "the 5 tasks, unchanged"
expect_exit 0 "$TASKQ" db check
# The database takes writes again.
crash_after=$(add_task q --payload '{"after":true}')
expect_eq "$(crash_count q)" 6 "tasks after one more add"
expect_exit 0 "$TASKQ" db check
expect_exit 0 "$TASKQ" show "${crash_ids[0]}" -o json
expect_json "$out" '.payload.before' 1 "payload of the first pre-existing task"
expect_exit 0 "$TASKQ" show "$crash_after" -o json
expect_json "$out" '.state' runnable "state of the task added after the crash"
