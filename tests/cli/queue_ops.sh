# Operating queues as a whole (doc/reference/commands.md#queue): queue
# pause/resume, queue redrive from a dead-letter queue, purge, db vacuum.

set_now 2026-11-21T08:00:00Z

section "queue pause stops leasing at once; resume restores it"
fresh_db
a=$(add_task pq)
b=$(add_task pq)
expect_exit 0 "$TASKQ" lease pq --worker w1 -o id
expect_out "$a"
expect_exit 0 "$TASKQ" queue pause pq
expect_out_empty
expect_exit 75 "$TASKQ" lease pq --worker w2
expect_exit 0 "$TASKQ" why "$b"
expect_contains "$out" "queue pq is paused" "why names the paused queue"
tok=$(tq list --queue pq --state running -o json | jq -r .lease.token)
expect_exit 0 "$TASKQ" done "$a" --lease "$tok"
expect_eq "$(state "$a")" completed "a leased task of a paused queue finishes"
expect_exit 0 "$TASKQ" queue resume pq
expect_exit 0 "$TASKQ" lease pq --worker w2 -o id
expect_out "$b"
expect_exit 2 "$TASKQ" queue pause 'bad name'
expect_exit 2 "$TASKQ" queue pause

section "queue pause wakes no waiting worker; resume does"
fresh_db
expect_exit 0 "$TASKQ" queue pause wq
add_task wq >/dev/null
"$TASKQ" lease wq --wait 20s -o id >"$scratch/waited" 2>&1 &
waiter=$!
expect_exit 0 "$TASKQ" queue resume wq
wait_until 10 gone "$waiter"
check "the waiting lease returned after resume" gone "$waiter"
wait "$waiter"
expect_eq "$?" 0 "exit of lease --wait"

section "queue redrive moves dead letters back with their errors"
fresh_db
t=$(add_task work)
tok=$(tq lease work -o json | jq -r .lease.token)
expect_exit 0 "$TASKQ" fail "$t" --lease "$tok" --error "bad input" \
  --move-to work.dead
expect_eq "$(field "$t" .queue)" work.dead "moved to the dead-letter queue"
held=$(add_task work.dead --priority 5)
expect_eq "$(tq lease work.dead --worker w9 -o id)" "$held" "the held task"
other=$(add_task elsewhere)
expect_exit 0 "$TASKQ" queue redrive work.dead work
expect_out 1
expect_eq "$(field "$t" .queue)" work "the dead letter is back in work"
expect_eq "$(field "$held" .queue)" work.dead "a leased task stays"
expect_eq "$(field "$t" .attempts)" 1 "its attempts kept (the limit counts afresh)"
expect_eq "$(state "$t")" runnable "it is runnable"
expect_eq "$(field "$t" '.events[-1].message')" redrive "the event logged"
expect_eq "$(field "$other" .queue)" elsewhere "other queues are untouched"
expect_eq "$(field "$t" '.errors[0].error')" "bad input" "errors kept"
expect_exit 2 "$TASKQ" queue redrive work work
expect_exit 3 "$TASKQ" queue redrive nothing.here work
expect_err_contains "no queue 'nothing.here'"
expect_exit 0 "$TASKQ" queue redrive work.dead work
expect_out 0

section "purge deletes finished tasks only, unless --force"
fresh_db
done_id=$(add_task pg)
tok=$(tq lease pg -o json | jq -r .lease.token)
tq done "$done_id" --lease "$tok" >/dev/null
killed_id=$(add_task pg)
tq kill "$killed_id" >/dev/null
open_id=$(add_task pg)
paused_id=$(add_task pg)
tq pause "$paused_id" >/dev/null
other_done=$(add_task keep)
tok=$(tq lease keep -o json | jq -r .lease.token)
tq done "$other_done" --lease "$tok" >/dev/null
before=$(tq list -o json | sha256sum)

expect_exit 0 "$TASKQ" purge --dry-run
expect_out 3
expect_eq "$(tq list -o json | sha256sum)" "$before" "--dry-run changes nothing"
expect_exit 2 "$TASKQ" purge --state runnable
expect_err_contains "--force"
expect_exit 2 "$TASKQ" purge --state nosuch
expect_exit 2 "$TASKQ" purge --older-than soon
expect_eq "$(tq list -o json | sha256sum)" "$before" "refused purges change nothing"

expect_exit 0 "$TASKQ" purge --queue pg --older-than 1h
expect_out 0
advance 7200
expect_exit 0 "$TASKQ" purge --queue pg --state completed --older-than 1h
expect_out 1
expect_exit 3 "$TASKQ" show "$done_id"
expect_exit 0 "$TASKQ" show "$killed_id"
expect_exit 0 "$TASKQ" purge --queue pg
expect_out 1
expect_exit 3 "$TASKQ" show "$killed_id"
expect_eq "$(state "$open_id")/$(state "$paused_id")/$(state "$other_done")" \
  runnable/paused/completed "unfinished tasks and other queues stay"

section "purge --force deletes unfinished tasks; what waits for them pauses"
waiter=$(add_task pg --after "$open_id")
expect_exit 0 "$TASKQ" purge --queue pg --state runnable --force
expect_out 2
expect_exit 3 "$TASKQ" show "$open_id"
expect_exit 3 "$TASKQ" show "$waiter"
fresh_db
dep=$(add_task pg)
waiter=$(add_task pg2 --after "$dep")
expect_exit 0 "$TASKQ" purge --queue pg --force
expect_out 1
expect_eq "$(state "$waiter")" paused "a task waiting for a purged task pauses"
expect_contains "$(field "$waiter" .reason)" "dependency $dep" "with the reason"

section "db vacuum"
expect_exit 0 "$TASKQ" db vacuum
expect_exit 0 "$TASKQ" db check
expect_exit 5 "$TASKQ" --db "$scratch/missing.db" db vacuum
check "vacuum of a missing database creates nothing" test ! -e "$scratch/missing.db"

section "--max-running 2 holds across 6 concurrent workers (from the event log)"
unset TASKQ_NOW # workers run on the real clock
fresh_db
expect_exit 0 "$TASKQ" queue set mr --max-running 2
for i in $(seq 12); do add_task mr >/dev/null; done
pids=()
for w in 1 2 3 4 5 6; do
  "$TASKQ" run mr --worker "w$w" --max-tasks 2 -- sh -c 'sleep 0.1' \
    >"$scratch/mr$w.out" 2>&1 &
  pids+=($!)
done
all_gone() { local p; for p in "${pids[@]}"; do alive "$p" && return 1; done; return 0; }
check "the six workers finish their two tasks each" wait_until 60 all_gone
completed_in() { tq list --queue "$1" --state completed -o id | grep -c .; }
expect_eq "$(completed_in mr)" 12 "every task completed"
expect_exit 0 "$TASKQ" events --queue mr -o json
# Running tasks, event by event: +1 at each lease, -1 when it ends.
most=$(jq -rs '
  reduce (.[] | .message) as $m ({n: 0, most: 0};
    if $m == "lease" then .n += 1
    elif ($m == "complete" or $m == "error" or $m == "release"
          or $m == "expire") then .n -= 1
    else . end
    | .most = ([.most, .n] | max)) | .most' <<<"$out")
echo "  (at most $most running at once)"
check "never more than 2 running at once (saw $most)" test "$most" -le 2
check "the limit was reached (saw $most)" test "$most" -ge 1
expect_eq "$(jout 'select(.message == "lease") | .task' | sort -u | wc -l)" 12 \
  "each task leased once"

# db backup copies SQLite files; on PostgreSQL it points to pg_dump.
if sqlite_only; then
  section "db backup during a 4-worker run opens and passes db check"
  fresh_db
  for i in $(seq 40); do add_task bk >/dev/null; done
  pids=()
  for w in 1 2 3 4; do
    "$TASKQ" run bk --worker "b$w" --until-empty -- sh -c 'sleep 0.2' \
      >"$scratch/bk$w.out" 2>&1 &
    pids+=($!)
  done
  some_done() { [[ $(completed_in bk) -ge 4 ]]; }
  check "the workers complete tasks" wait_until 30 some_done
  expect_exit 0 "$TASKQ" db backup "$scratch/backup.db"
  check "the workers were still running during the backup" alive "${pids[0]}"
  check "the workers finish" wait_until 60 all_gone
  expect_exit 0 "$TASKQ" --db "$scratch/backup.db" db check
  total=$(tq --db "$scratch/backup.db" list --queue bk -o id | wc -l)
  expect_eq "$total" 40 "the backup holds every task"
  expect_eq "$(completed_in bk)" 40 "the run completed every task"
else
  section "db backup on PostgreSQL points to pg_dump"
  expect_exit 2 "$TASKQ" db backup "$scratch/backup.db"
  expect_err_contains pg_dump
  check "db backup writes no file" test ! -e "$scratch/backup.db"
fi
