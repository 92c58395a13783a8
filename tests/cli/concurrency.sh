# Concurrency acceptance (doc/reference/guarantees.md#acceptance-checks,
# Concurrency): "8 processes lease and complete 2,000 tasks on one database;
# every task is completed exactly once, none is lost, and no `database is
# locked` error reaches the user."
#
# The workers are plain shell loops (`lease -o env` → `done`) run as
# background processes; the only synchronisation is `wait` on their pids.
# Each worker writes what it did to its own files, and the checks run in
# this shell afterwards (the harness helpers are not used from the
# background processes, which would race on the harness's output files).

conc_workers=8
# The 2,000 of doc/reference/guarantees.md#acceptance-checks on SQLite. On
# PostgreSQL, where each invocation opens a server connection (~50 ms here),
# 500: multihost drains 20,000 tasks there from three hosts under SIGKILLs, and
# this run took a tenth of CI's time.
if sqlite_only; then
  conc_tasks=2000
else
  conc_tasks=500
fi
# A hung invocation must not hang the suite; generous so a loaded machine
# (or a sanitizer build) never trips it.
conc_cmd_timeout=120

# conc_worker N: leases from queue q and completes until lease exits 75.
# Files: conc.N.done (completed ids, one a line), conc.N.err (the stderr of
# every call but the final lease), conc.N.err75 (the stderr of the lease that
# exited 75), conc.N.fail (every unexpected exit status).
conc_worker() {
  local n=$1 env rc failures=0
  export TASKQ_WORKER=worker-$n
  : >"conc.$n.done"
  : >"conc.$n.err"
  : >"conc.$n.err75"
  : >"conc.$n.fail"
  # Bounded: each task is leased at most once per worker in a correct run,
  # and a worker that keeps failing stops after 20 failures.
  while ((failures < 20)); do
    # --for 1h: no lease can expire during the test, so a second lease of a
    # task could only come from a bug, never from a slow machine.
    env=$(timeout -k 5 "$conc_cmd_timeout" "$TASKQ" lease q -o env --for 1h \
      2>"conc.$n.lease-err")
    rc=$?
    if ((rc == 75)); then
      cat "conc.$n.lease-err" >>"conc.$n.err75"
      break
    fi
    cat "conc.$n.lease-err" >>"conc.$n.err"
    if ((rc != 0)); then
      echo "lease: exit $rc" >>"conc.$n.fail"
      failures=$((failures + 1))
      continue
    fi
    unset TASKQ_ID TASKQ_LEASE
    eval "$env"
    if [[ -z ${TASKQ_ID:-} || -z ${TASKQ_LEASE:-} ]]; then
      echo "lease -o env set no TASKQ_ID/TASKQ_LEASE: $env" >>"conc.$n.fail"
      failures=$((failures + 1))
      continue
    fi
    timeout -k 5 "$conc_cmd_timeout" "$TASKQ" "done" 2>>"conc.$n.err"
    rc=$?
    if ((rc == 0)); then
      echo "$TASKQ_ID" >>"conc.$n.done"
    else
      echo "done $TASKQ_ID: exit $rc" >>"conc.$n.fail"
      failures=$((failures + 1))
    fi
  done
}

section "bulk add of $conc_tasks tasks with add --jsonl"
awk -v n="$conc_tasks" 'BEGIN { for (i = 1; i <= n; i++) printf "{\"n\":%d}\n", i }' \
  >conc.jsonl
expect_exit 0 "$TASKQ" add q --jsonl conc.jsonl -o id
printf '%s\n' "$out" >conc.ids
expect_eq "$(grep -c '^[0-9][0-9]*$' conc.ids)" "$conc_tasks" "ids printed by add"
expect_eq "$(sort -u conc.ids | wc -l)" "$conc_tasks" "distinct ids printed by add"
expect_exit 0 "$TASKQ" list --queue q --state ready -o id
expect_eq "$(grep -c . <<<"$out")" "$conc_tasks" "ready tasks before the workers"

section "8 worker processes lease and complete every task exactly once"
conc_pids=()
for ((w = 1; w <= conc_workers; w++)); do
  conc_worker "$w" 3>&- &
  conc_pids+=($!)
done
conc_status=0
for pid in "${conc_pids[@]}"; do
  wait "$pid" || conc_status=$?
done
expect_eq "$conc_status" 0 "exit status of the worker loops"

cat conc.*.err conc.*.err75 >conc-all.err
cat conc.*.fail >conc-all.fail
cat conc.*.done >conc-all.done
expect_eq "$(grep -iE 'locked|busy' conc-all.err | head -5)" "" \
  "worker stderr mentioning locked/busy"
expect_eq "$(head -20 conc-all.fail)" "" "unexpected exit statuses of lease/done"
# A lease that got a task and a done that succeeded have nothing to say.
expect_eq "$(cat conc.*.err | head -5)" "" \
  "stderr of the successful lease and done calls"

# The sum of completions the workers saw, and that they are the added ids.
expect_eq "$(wc -l <conc-all.done)" "$conc_tasks" "completions reported by workers"
expect_eq "$(sort -n conc-all.done | uniq -d | head -5)" "" \
  "ids completed by two workers"
expect_eq "$(sort -n conc-all.done | md5sum)" "$(sort -n conc.ids | md5sum)" \
  "completed ids = added ids"

section "the database agrees: all completed, once, at the first attempt"
expect_exit 0 "$TASKQ" list --queue q --state completed -o id
expect_eq "$(grep -c . <<<"$out")" "$conc_tasks" "completed tasks"
expect_exit 0 "$TASKQ" list --queue q -o id
expect_eq "$(grep -c . <<<"$out")" "$conc_tasks" "tasks in the queue (none lost, none extra)"
expect_exit 0 "$TASKQ" list --queue q -o json
expect_eq "$(jq -s 'length' <<<"$out")" "$conc_tasks" "tasks listed as JSON"
expect_eq "$(jq -s '[.[] | select(.attempts != 1)] | length' <<<"$out")" 0 \
  "tasks leased more than once (attempts != 1)"
expect_eq "$(jq -s '[.[] | select(.state != "completed")] | length' <<<"$out")" 0 \
  "tasks not completed"
expect_eq "$(jq -s '[.[] | select(.lease != null)] | length' <<<"$out")" 0 \
  "tasks still holding a lease"

# Every task's event log shows exactly one complete, by a worker. Four
# `show` processes at a time; each prints one JSON line.
xargs -P 4 -I{} timeout -k 5 "$conc_cmd_timeout" "$TASKQ" show {} -o json \
  <conc.ids >conc-shows 2>conc-shows.err 3>&-
expect_eq "$(cat conc-shows.err)" "" "stderr of show for every task"
expect_eq "$(jq -s 'length' <conc-shows)" "$conc_tasks" "tasks shown"
expect_eq "$(jq -c 'select(([.events[] | select(.message == "complete")] | length) != 1) | .id' \
  <conc-shows | head -5)" "" "tasks whose events lack exactly one complete"
expect_eq "$(jq -c 'select(([.events[] | select(.message == "lease")] | length) > 1) | .id' \
  <conc-shows | head -5)" "" "tasks with more than one lease event"
expect_eq "$(jq -r '.events[] | select(.message == "complete") | .actor' \
  <conc-shows | grep -cv '^worker-[0-9]*$')" 0 \
  "complete events whose actor is not a worker"

expect_exit 0 "$TASKQ" db check
expect_exit 75 "$TASKQ" lease q

section "8 processes that start together on a missing database all succeed"
# The first add creates the file and runs the migrations; processes that
# open it meanwhile must wait for that, not fail or migrate twice (a lease
# that looks before the file exists says so: exit 5, no database). Ten
# rounds, each on a new database: four adds and four leases at once.
for round in 1 2 3 4 5 6 7 8 9 10; do
  fresh_db "conc-new-$round"
  conc_pids=()
  for ((w = 1; w <= conc_workers; w++)); do
    if ((w % 2)); then
      timeout -k 5 "$conc_cmd_timeout" "$TASKQ" add q --payload "$w" \
        >"conc-new.$round.$w.out" 2>"conc-new.$round.$w.err" 3>&- &
    else
      timeout -k 5 "$conc_cmd_timeout" "$TASKQ" lease q -o id \
        >"conc-new.$round.$w.out" 2>"conc-new.$round.$w.err" 3>&- &
    fi
    conc_pids+=($!)
  done
  conc_bad=""
  for ((w = 1; w <= conc_workers; w++)); do
    wait "${conc_pids[w - 1]}"
    rc=$?
    # add: 0; lease: 0 (got one of the tasks), 75 (none added yet) or 5
    # when it looked before the first add created the file (on
    # PostgreSQL, taskq's schema).
    ok=0
    if ((rc == 0 || (w % 2 == 0 && rc == 75))); then
      ok=1
    elif ((w % 2 == 0 && rc == 5)) &&
      grep -qE "no database at|no taskq schema" "conc-new.$round.$w.err"; then
      ok=1
    fi
    if ((!ok)); then
      conc_bad+="process $w exit $rc: $(cat "conc-new.$round.$w.err"); "
    fi
  done
  expect_eq "$conc_bad" "" "round $round: unexpected exit statuses"
  expect_eq "$(cat conc-new."$round".*.err | grep -v 'no taskq schema taskq in database .* (the first add creates it)$' |
    grep -iE 'locked|busy|migrat|schema' | head -3)" "" \
    "round $round: stderr mentioning locked/busy/schema"
  expect_eq "$(count_tasks)" 4 "round $round: tasks after 4 concurrent adds"
  expect_exit 0 "$TASKQ" db check
  expect_exit 0 "$TASKQ" db migrate
done

section "workers and an operator pausing and resuming the queue at once"
# doc/reference/guarantees.md#completed-at-most-once: "a task is completed at
# most once, by the holder of its current lease", also while operators revoke
# leases. Four workers drain queue r while an operator pauses and resumes the
# whole queue ten times. A done whose lease was revoked must fail with exit 4
# and change nothing; the task is leased again after the resume. When the
# operator has finished, a second round of workers drains what is left.
conc_op_tasks=400
fresh_db conc-op
awk -v n="$conc_op_tasks" 'BEGIN { for (i = 1; i <= n; i++) printf "{\"r\":%d}\n", i }' \
  >conc-op.jsonl
expect_exit 0 "$TASKQ" add r --jsonl conc-op.jsonl -o id
printf '%s\n' "$out" >conc-op.ids

# conc_op_worker TAG: like conc_worker on queue r, but a done refused with
# exit 4 (lease revoked) is expected. Files: op.TAG.done (completed ids),
# op.TAG.lost (ids whose done got exit 4), op.TAG.err, op.TAG.fail.
conc_op_worker() {
  local tag=$1 env rc failures=0
  export TASKQ_WORKER=worker-$tag
  : >"op.$tag.done"
  : >"op.$tag.lost"
  : >"op.$tag.err"
  : >"op.$tag.fail"
  while ((failures < 20)); do
    env=$(timeout -k 5 "$conc_cmd_timeout" "$TASKQ" lease r -o env --for 1h \
      2>"op.$tag.lease-err")
    rc=$?
    if ((rc == 75)); then
      break
    fi
    cat "op.$tag.lease-err" >>"op.$tag.err"
    if ((rc != 0)); then
      echo "lease: exit $rc" >>"op.$tag.fail"
      failures=$((failures + 1))
      continue
    fi
    unset TASKQ_ID TASKQ_LEASE
    eval "$env"
    timeout -k 5 "$conc_cmd_timeout" "$TASKQ" "done" 2>"op.$tag.done-err"
    rc=$?
    if ((rc == 0)); then
      echo "$TASKQ_ID" >>"op.$tag.done"
    elif ((rc == 4)) && grep -q 'lease lost' "op.$tag.done-err"; then
      echo "$TASKQ_ID" >>"op.$tag.lost"
    else
      echo "done $TASKQ_ID: exit $rc: $(cat "op.$tag.done-err")" >>"op.$tag.fail"
      failures=$((failures + 1))
    fi
  done
}

# conc_operator: pauses and resumes queue r ten times, recording failures.
conc_operator() {
  local c rc
  export TASKQ_WORKER=operator
  : >op.operator.fail
  : >op.operator.err
  for ((c = 1; c <= 10; c++)); do
    for verb in pause resume; do
      timeout -k 5 "$conc_cmd_timeout" "$TASKQ" "$verb" --queue r \
        >/dev/null 2>>op.operator.err
      rc=$?
      if ((rc != 0)); then
        echo "$verb --queue r: exit $rc" >>op.operator.fail
      fi
    done
  done
}

conc_pids=()
for w in 1 2 3 4; do
  conc_op_worker "a$w" 3>&- &
  conc_pids+=($!)
done
conc_operator 3>&- &
conc_pids+=($!)
for pid in "${conc_pids[@]}"; do
  wait "$pid"
done
# Nothing is left paused, then a second round drains the rest.
expect_exit 0 "$TASKQ" resume --queue r
conc_pids=()
for w in 1 2 3 4; do
  conc_op_worker "b$w" 3>&- &
  conc_pids+=($!)
done
for pid in "${conc_pids[@]}"; do
  wait "$pid"
done

expect_eq "$(cat op.*.err | grep -iE 'locked|busy' | head -5)" "" \
  "stderr mentioning locked/busy (workers and operator)"
expect_eq "$(cat op.*.fail | head -10)" "" "unexpected exit statuses"
expect_eq "$(cat op.*.done | wc -l)" "$conc_op_tasks" "successful dones"
expect_eq "$(cat op.*.done | sort -n | uniq -d | head -5)" "" \
  "ids completed by two dones"
expect_eq "$(cat op.*.done | sort -n | md5sum)" "$(sort -n conc-op.ids | md5sum)" \
  "completed ids = added ids"
expect_exit 0 "$TASKQ" list --queue r --state completed -o id
expect_eq "$(grep -c . <<<"$out")" "$conc_op_tasks" "completed tasks in r"
xargs -P 4 -I{} timeout -k 5 "$conc_cmd_timeout" "$TASKQ" show {} -o json \
  <conc-op.ids >conc-op-shows 2>conc-op-shows.err 3>&-
expect_eq "$(cat conc-op-shows.err)" "" "stderr of show for every task of r"
expect_eq "$(jq -c 'select(([.events[] | select(.message == "complete")] | length) != 1) | .id' \
  <conc-op-shows | head -5)" "" "tasks of r whose events lack exactly one complete"
# Each lost done was a real revocation: its task shows a pause by the operator.
conc_lost=$(cat op.*.lost | sort -nu)
expect_eq "$(for id in $conc_lost; do
  jq -c --argjson id "$id" 'select(.id == $id and
    ([.events[] | select(.message == "pause" and .actor == "operator")] | length) == 0) | .id' \
    conc-op-shows
done | head -5)" "" "tasks whose done was refused without an operator pause"
echo "operator revoked $(wc -w <<<"$conc_lost") leases" >conc-op.summary
expect_exit 0 "$TASKQ" db check
