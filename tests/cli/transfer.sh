# taskq export / import (doc/reference/commands.md#export-and-import): JSON
# Lines of whole tasks with their history; export -> import into an empty
# database -> export gives the same bytes.

# db_digest: the whole database as SQL text, hashed.
db_digest() { db_dump | sha256sum; }

section "a database with a task in every state and every kind of history"
fresh_db source
src=$TASKQ_DB
set_now 2026-11-21T08:00:00Z
done_t=$(add_task q --payload '{"n":123456789012345678901234567890.000,"s":"\u00e9\t\"q\""}' \
  --label 'team=a "b" é' --label k=v)
tok=$(tq lease q --worker w1 -o json | jq -r .lease.token)
tq heartbeat "$done_t" --lease "$tok" --checkpoint '{"step":2}' >/dev/null
tq done "$done_t" --lease "$tok" --result '[1, 2.50]' >/dev/null
failing=$(add_task f --max-errors 1)
tok=$(tq lease f --worker w2 -o json | jq -r .lease.token)
expect_exit 0 "$TASKQ" fail "$failing" --lease "$tok" --error $'boom\nline two'
expect_eq "$(state "$failing")" failed "a failed task with an error"
killed=$(add_task q --priority 3)
tq kill "$killed" >/dev/null
paused=$(add_task q --after "$killed")
expect_eq "$(state "$paused")" paused "paused by its dependency"
waiter=$(add_task w --after "$done_t,$paused")
sleeper=$(add_task q --at 2026-11-22T00:00:00Z)
tq sleep "$sleeper" --for 1h >/dev/null
leased=$(add_task l --unique only --to w3 --root 'r=1' --label r=1 --trigger key \
  --max-attempts 4)
tq lease l --worker w3 >/dev/null
bc=$(add_task b --broadcast --ttl 1d)
tq lease b --worker w4 >/dev/null
tq schedule add every sq --every minute >/dev/null
set_now 2026-11-21T08:01:05Z
emitted=$(tq lease sq --worker w5)
tq done "$(jq -r .id <<<"$emitted")" --lease "$(jq -r .lease.token <<<"$emitted")" \
  --sync cursor=42 >/dev/null
retried=$(tq retry "$failing")
expect_exit 0 "$TASKQ" db check
n=$(count_tasks)
expect_exit 0 "$TASKQ" export
printf '%s\n' "$out" >first.jsonl
expect_eq "$(wc -l <first.jsonl)" "$n" "one line per task"
expect_eq "$(jq -s 'map(.id) == (map(.id) | sort)' first.jsonl)" true "in id order"
expect_contains "$(sed -n 1p first.jsonl)" \
  '"payload":{"n":123456789012345678901234567890.000,"s":"\u00e9\t\"q\""}' \
  "the payload as stored, every digit and escape"
expect_eq "$(jq -r "select(.id == $failing) | .errors[0].message" first.jsonl)" \
  $'boom\nline two' "the error history"
expect_eq "$(jq -r "select(.id == $done_t) | [.events[].message] | join(\" \")" first.jsonl)" \
  "lease checkpoint complete" "the event log"
expect_eq "$(jq -r "select(.id == $waiter) | [.deps[].dep_id] | join(\",\")" first.jsonl)" \
  "$paused" "the dependency links (the unfinished dependency)"
expect_eq "$(jq -r "select(.id == $bc) | .deliveries[0].worker" first.jsonl)" w4 \
  "a broadcast's deliveries"

section "export -> import into an empty database -> export: identical"
fresh_db copy
copy=$TASKQ_DB
expect_exit 0 "$TASKQ" import "$scratch/first.jsonl"
expect_out "imported $n tasks"
"$TASKQ" export >second.jsonl
check "the second export is byte-identical" cmp -s first.jsonl second.jsonl
expect_exit 0 "$TASKQ" db check
for id in "$done_t" "$failing" "$paused" "$waiter" "$leased" "$bc" "$retried"; do
  expect_eq "$(snapshot "$id")" "$(TASKQ_DB=$src snapshot "$id")" "show $id matches"
done
expect_exit 0 "$TASKQ" why "$leased" --worker w9
expect_contains "$out" "leased by w3" "the lease came along"
expect_exit 0 "$TASKQ" schedule list -o json
expect_out_empty
next=$(add_task q)
expect_eq "$next" $((retried + 1)) "new ids continue after the imported ones"
expect_exit 0 "$TASKQ" add q2 --root r=1
expect_out_empty
expect_contains "$err" "task $leased" "the label index was rebuilt: the leased task still makes --root r=1 obsolete"

section "through stdin, and --queue"
expect_exit 0 "$TASKQ" export --queue q -o json
printf '%s\n' "$out" >q.jsonl
fresh_db
expect_eq "$(jq -r .queue q.jsonl | sort -u)" q "only queue q"
expect_exit 0 bash -c '"$TASKQ" import - <q.jsonl' 
expect_eq "$(TASKQ_DB=$copy "$TASKQ" export --queue q | grep -c .)" \
  "$(wc -l <q.jsonl)" "every task of q"
"$TASKQ" export >x.jsonl
check "the queue's tasks round-trip too" cmp -s q.jsonl x.jsonl
expect_exit 0 "$TASKQ" export --queue nothing-here
expect_out_empty

section "refused imports change nothing"
before=$(db_digest)
expect_exit 4 "$TASKQ" import "$scratch/first.jsonl"
expect_err_contains "already exists; nothing was imported"
good='{"id":900,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1}'
while IFS=$'\t' read -r bad want; do
  printf '%s\n%s\n' "$good" "$bad" >bad.jsonl
  expect_exit 2 "$TASKQ" import bad.jsonl
  expect_err_contains "$want"
done <<'CASES'
{"id":901,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1,"colour":1}	line 2: unknown column 'colour'
{"id":901,"queue":"n","state":"asleep","payload":1,"run_at":1,"created_at":1,"updated_at":1}	line 2: 'state' must be a task state
{"id":901,"queue":7,"state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1}	line 2: 'queue' must be a string
{"id":901,"queue":"n","state":"runnable","payload":1,"run_at":"x","created_at":1,"updated_at":1}	line 2: 'run_at' must be an integer
{"id":901,"queue":"n","state":"runnable","payload":1,"created_at":1,"updated_at":1}	line 2: 'run_at' is required
{"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1}	line 2: 'id' must be a task id
{"id":901,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1,"labels":["x"]}	line 2: 'labels' must be an object of strings
{"id":901,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1,"errors":[{"time":1}]}	line 2: errors: 'message' is required
{"id":901,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1,"after_ids":["1"]}	line 2: 'after_ids' must be an array of task ids
{"id":901,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1,"events":{}}	line 2: 'events' must be an array
{"id":901,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1,"events":[{"id":1}]}	line 2: events: unknown column 'id'
{"id":901,"id":902}	line 2: 'id' is given twice
{"id":901,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1,"deliveries":[{"worker":"w","token":"t","time":1},{"worker":"w","token":"u","time":2}]}	UNIQUE constraint failed: deliveries.task_id, deliveries.worker
{"id":901,	invalid JSON on line 2 of bad.jsonl: the text ends inside an object; nothing was imported
CASES
# A task given twice is the file's fault (exit 2), not a conflict with the
# database (fuzz_import found the exit 4 this gave).
printf '%s\n%s\n' "$good" "$good" >bad.jsonl
expect_exit 2 "$TASKQ" import bad.jsonl
expect_err_contains "line 2: task 900 is given twice (first on line 1); nothing was imported"
expect_eq "$(db_digest)" "$before" "nothing imported from any refused file"
expect_exit 2 "$TASKQ" import missing.jsonl
expect_err_contains "cannot read missing.jsonl"
expect_exit 2 "$TASKQ" import
expect_exit 2 "$TASKQ" export --queue 'a b'
