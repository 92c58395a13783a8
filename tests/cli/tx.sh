# taskq tx (doc/reference/commands.md#tx-atomic-multi-task-updates): require,
# delete, update, create and complete in one transaction; predicates first (4),
# then existence (3), then revs and leases (4); all or nothing.

# db_digest: the whole database as SQL text, hashed, to prove a refused
# document changed nothing at all.
db_digest() { db_dump | sha256sum; }

# tx_doc JSON: runs taskq tx with JSON on stdin (for expect_exit).
tx_doc() { "$TASKQ" tx <<<"$1"; }

section "a document applied whole"
fresh_db
set_now 2026-11-21T08:00:00Z
join=$(add_task join --payload '{"done":[]}')
work=$(add_task work --text w)
tok=$(tq lease work --worker w1 -o json | jq -r .lease.token)
# Written as text, not by jq, which would round the big number.
doc="{\"require\":[{\"id\":$join,\"rev\":1}],
  \"update\":[{\"id\":$join,\"rev\":1,
    \"payload\":{\"done\":[\"w1\", 123456789012345678901234567890.50]},
    \"labels\":{\"stage\":\"two\"}}],
  \"complete\":[{\"id\":$work,\"lease\":\"$tok\",\"result\":{\"ok\":1}}],
  \"create\":[{\"queue\":\"next\",\"labels\":{\"k\":\"v\"},\"priority\":5},
    {\"queue\":\"next\"}]}"
expect_exit 0 tx_doc "$doc"
expect_json "$out" '.created | length' 2 "two ids created"
expect_json "$out" '.updated' "[{\"id\":$join,\"rev\":2}]" "the new rev"
c1=$(jout '.created[0]')
c2=$(jout '.created[1]')
expect_eq "$c2" $((c1 + 1)) "created in request order"
expect_contains "$(snapshot "$join")" \
  '"payload":{"done":["w1",123456789012345678901234567890.50]}' \
  "the payload keeps every digit"
expect_eq "$(field "$join" .labels.stage)" two "labels replaced"
expect_eq "$(field "$join" .rev)" 2 "rev went up by one"
expect_eq "$(field "$join" '.events[-1].message + " " + .events[-1].detail')" \
  "update payload, labels" "the update is logged with its fields"
expect_eq "$(state "$work")" completed "complete finished the leased task"
expect_eq "$(field "$work" .result.ok)" 1 "with its result"
expect_eq "$(field "$c1" '.queue + " " + (.priority|tostring) + " " + .labels.k')" \
  "next 5 v" "the created task"
expect_exit 0 tx_doc '{}'
expect_out '{"created":[],"updated":[]}'

section "update: queue, run_at, priority"
t=$(add_task upd)
expect_exit 0 tx_doc "{\"update\":[{\"id\":$t,\"rev\":1,\"queue\":\"moved\",\"run_at\":\"2026-11-22T00:00:00Z\",\"priority\":-3}]}"
expect_eq "$(field "$t" '.queue + " " + .run_at + " " + (.priority|tostring)')" \
  "moved 2026-11-22T00:00:00Z -3" "queue, run_at and priority replaced"
expect_exit 0 tx_doc "{\"update\":[{\"id\":$t,\"rev\":2,\"labels\":{}}]}"
expect_eq "$(field "$t" .labels)" "{}" "labels: {} clears them"
expect_eq "$(field "$t" .payload)" null "a field not given is kept"
expect_exit 75 "$TASKQ" lease upd --worker w9
expect_eq "$(field "$t" .queue)" moved "not leased from its old queue"

section "predicates first, then existence, then revs and leases"
fresh_db
a=$(add_task q)
b=$(add_task q)
leased=$(add_task lq)
ltok=$(tq lease lq --worker holder -o json | jq -r .lease.token)
before=$(db_digest)
expect_exit 4 tx_doc "{\"require\":[{\"id\":$a,\"rev\":7}],\"update\":[{\"id\":999,\"rev\":1}]}"
expect_err_contains "require[0]: task $a is at rev 1, not 7"
expect_exit 4 tx_doc "{\"require\":[{\"id\":998,\"rev\":1}],\"delete\":[{\"id\":999}]}"
expect_err_contains "require[0]: task 998 does not exist"
expect_exit 3 tx_doc "{\"update\":[{\"id\":$a,\"rev\":5},{\"id\":999,\"rev\":1}]}"
expect_err_contains "update[1]: no task 999"
expect_exit 3 tx_doc "{\"delete\":[{\"id\":$leased},{\"id\":999}]}"
expect_err_contains "delete[1]: no task 999"
expect_exit 3 tx_doc "{\"complete\":[{\"id\":999,\"lease\":\"x\"}],\"update\":[{\"id\":$a,\"rev\":9}]}"
expect_err_contains "complete[0]: no task 999"
expect_exit 3 tx_doc "{\"create\":[{\"queue\":\"q\",\"after\":[999]}],\"update\":[{\"id\":$a,\"rev\":9}]}"
expect_err_contains "create[0]: no task 999"
expect_exit 4 tx_doc "{\"update\":[{\"id\":$a,\"rev\":9}]}"
expect_err_contains "update[0]: task $a is at rev 1, not 9"
expect_exit 4 tx_doc "{\"delete\":[{\"id\":$leased}]}"
expect_err_contains "delete[0]: task $leased is leased by holder"
expect_exit 4 tx_doc "{\"delete\":[{\"id\":$leased,\"lease\":\"stale\"}]}"
expect_err_contains "lease lost"
expect_exit 4 tx_doc "{\"complete\":[{\"id\":$a,\"lease\":\"nope\"}]}"
expect_err_contains "complete[0]: lease lost"
expect_eq "$(db_digest)" "$before" "every refused document changed nothing"

section "all or nothing: a late error undoes the earlier operations"
before=$(db_digest)
ok_base="\"require\":[{\"id\":$a,\"rev\":1}],\"update\":[{\"id\":$a,\"rev\":1,\"payload\":1}],\"delete\":[{\"id\":$b}]"
ok_ops="$ok_base,\"create\":[{\"queue\":\"q\"}]"
expect_exit 4 tx_doc "{$ok_ops,\"complete\":[{\"id\":$leased,\"lease\":\"stale\"}]}"
expect_exit 3 tx_doc "{$ok_ops,\"complete\":[{\"id\":4242,\"lease\":\"x\"}]}"
c=$(add_task q)
before=$(db_digest)
expect_exit 4 tx_doc "{\"update\":[{\"id\":$a,\"rev\":1,\"payload\":1}],\"delete\":[{\"id\":$b}],\"complete\":[{\"id\":$c,\"lease\":\"x\"}]}"
expect_err_contains "complete[0]: lease lost"
expect_exit 2 tx_doc "{$ok_ops,\"complete\":[{\"id\":$leased}]}"
expect_err_contains "complete[0]: 'lease' is required"
expect_exit 2 tx_doc "{$ok_base,\"create\":[{\"queue\":\"q\"},{\"queue\":\"bad name\"}]}"
expect_err_contains "create[1]"
expect_eq "$(db_digest)" "$before" "nothing changed on any error kind"
expect_exit 0 tx_doc "{$ok_ops}"
expect_eq "$(field "$a" .payload)" 1 "the same operations apply without the bad one"
expect_exit 3 "$TASKQ" show "$b"

section "validation names the operation by its index"
before=$(db_digest)
# One case per line: the document, a tab, what stderr must contain.
while IFS=$'\t' read -r bad want; do
  expect_exit 2 tx_doc "$bad"
  expect_err_contains "$want"
done <<'CASES'
[]	expected a JSON object
{"require":{}}	'require' must be an array
{"update":[{"id":1,"rev":1},{"id":"2","rev":1}]}	update[1]: 'id' must be an integer
{"update":[{"id":1}]}	update[0]: 'rev' is required
{"update":[{"id":1,"rev":1,"colour":1}]}	update[0]: unknown field 'colour'
{"update":[{"id":1,"rev":1,"run_at":"soon"}]}	update[0]: 'run_at' must be an RFC 3339 time
{"update":[{"id":1,"rev":1,"labels":{"a b":"c"}}]}	update[0]: 'labels' has an invalid label
{"create":[{"queue":"q"},{"payload":1}]}	create[1]: 'queue' is required
{"create":[{"queue":"q","max_attempts":0}]}	create[0]: 'max_attempts' must be at least 1
{"create":[{"queue":"q","after":[0]}]}	create[0]: 'after' must be an array of task ids
{"delete":[{"id":1,"lease":5}]}	delete[0]: 'lease' must be a string
{"delete":[{"id":1}],"update":[{"id":1,"rev":1}]}	update[0]: task 1 is already changed by delete[0]
{"complete":[{"id":1,"lease":"a"},{"id":1,"lease":"a"}]}	complete[1]: task 1 is already changed by complete[0]
{"update":[{"id":99999999999999999999,"rev":1}]}	update[0]: 'id' must be an integer
{"require":[],"require":[]}	'require' is given twice
{"remove":[]}	unknown field 'remove'
{"create":[{"queue":"q"}]	not valid JSON
CASES
expect_eq "$(db_digest)" "$before" "no refused document changed anything"
printf '{"create":[{"queue":"fromfile"}]}' >doc.json
expect_exit 0 "$TASKQ" tx doc.json
expect_json "$out" '.created | length' 1 "a document from a file"
expect_exit 2 "$TASKQ" tx missing.json
expect_err_contains "cannot read missing.json"

section "delete"
fresh_db
dep=$(add_task d)
waiter=$(add_task d2 --after "$dep")
expect_exit 0 tx_doc "{\"delete\":[{\"id\":$dep}]}"
expect_exit 3 "$TASKQ" show "$dep"
expect_eq "$(state "$waiter")" paused "a task waiting for a deleted one is paused"
expect_eq "$(field "$waiter" .reason)" "dependency $dep was killed" "with the reason"
held=$(add_task h)
htok=$(tq lease h --worker w1 -o json | jq -r .lease.token)
expect_exit 0 tx_doc "{\"delete\":[{\"id\":$held,\"lease\":\"$htok\"}]}"
expect_exit 3 "$TASKQ" show "$held"
expect_exit 3 "$TASKQ" heartbeat "$held" --lease "$htok"

section "the barrier: 8 workers append to one join task, retrying on 4"
fresh_db
unset TASKQ_NOW
join=$(add_task join --payload '{"done":[]}')
for i in 1 2 3 4 5 6 7 8; do add_task work --text "part$i" >/dev/null; done
# worker NAME: leases one task, then appends its name to the join task
# and completes its own task in one tx, re-reading the join on a conflict.
worker() {
  local name=$1 lease id tok j rev payload doc rc tries=0
  lease=$("$TASKQ" lease work --worker "$name" -o json) || return 10
  id=$(jq -r .id <<<"$lease")
  tok=$(jq -r .lease.token <<<"$lease")
  while ((tries < 200)); do
    tries=$((tries + 1))
    j=$("$TASKQ" show "$join" -o json) || return 11
    rev=$(jq -r .rev <<<"$j")
    payload=$(jq -c --arg n "$name" '.payload | .done += [$n]' <<<"$j")
    doc="{\"require\":[{\"id\":$join,\"rev\":$rev}],\"update\":[{\"id\":$join,\"rev\":$rev,\"payload\":$payload}],\"complete\":[{\"id\":$id,\"lease\":\"$tok\"}]}"
    "$TASKQ" tx <<<"$doc" >/dev/null 2>&1
    rc=$?
    if ((rc == 0)); then
      echo "$tries" >"tries.$name"
      return 0
    fi
    ((rc == 4)) || return "$rc"
  done
  return 12
}
pids=()
for i in 1 2 3 4 5 6 7 8; do
  worker "w$i" &
  pids+=($!)
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
expect_eq "$failed" 0 "every worker got its update in"
expect_eq "$(field "$join" '.payload.done | length')" 8 "all 8 results, no lost update"
expect_eq "$(field "$join" '.payload.done | unique | length')" 8 "each once"
expect_eq "$(field "$join" .rev)" 9 "one rev per successful update"
expect_eq "$("$TASKQ" list --queue work --state completed -o id | wc -l)" 8 \
  "every worker's own task completed in the same tx"
echo "barrier: $(cat tries.* | paste -sd+ | bc) attempts for 8 updates" >&3
