# Several gate keys per trigger task (doc/reference/schedules.md#gates): a
# task added with `--trigger K1,K2` (or `--trigger` repeated) covers each of
# its keys on every gate that has it when it completes; the keys are stored
# sorted and once, and the task's JSON `trigger` is them comma-joined. A
# schedule added with `--trigger` emits such tasks, so it can drive a gate.
# Also: `tx` creates and `import` rows with several keys; bad keys refused
# with nothing changed.

set_now 2026-11-21T08:00:00Z

# complete ID QUEUE: leases QUEUE's next task (which must be ID) and
# completes it.
complete() {
  local leased
  leased=$(tq lease "$2") || return 1
  expect_json "$leased" .id "$1" "the leased task"
  tq done "$1" --lease "$(jq -r .lease.token <<<"$leased")" >/dev/null
}

# gate_tasks: the ids of the tasks in the gates' queue gq.
gate_tasks() { "$TASKQ" list --queue gq -o id 2>&1 3>&-; }

# db_digest: the whole database as text, hashed.
db_digest() { db_dump | sha256sum; }

section "a task with two keys fills a two-key gate alone"
fresh_db
tq gate add ab gq --keys a,b >/dev/null
t=$(add_task work --trigger b,a)
expect_json "$(snapshot "$t")" .trigger a,b "keys stored sorted"
complete "$t" work
expect_eq "$(gate_tasks | grep -c .)" 1 "one gate task"
expect_exit 0 "$TASKQ" gate show ab -o json
expect_json "$out" '[.covered, .waiting, .emitted, .last_task]' \
  "[[],[\"a\",\"b\"],1,$(gate_tasks)]" "the gate emitted once and re-armed"

section "a three-key gate with a two-key task waits for the third"
tq gate add abc gq --keys a,b,c >/dev/null
t=$(add_task work --trigger a --trigger c)
expect_json "$(snapshot "$t")" .trigger a,c "repeated --trigger: the union"
complete "$t" work
expect_exit 0 "$TASKQ" gate show abc -o json
expect_json "$out" '[.covered, .waiting, .emitted]' '[["a","c"],["b"],0]' \
  "a and c covered"
expect_exit 0 "$TASKQ" gate show ab -o json
expect_json "$out" '[.covered, .emitted]' '[["a"],1]' \
  "the same task covered key a of gate ab"
expect_eq "$(gate_tasks | grep -c .)" 1 "no new gate task"
t=$(add_task work --trigger b)
expect_json "$(snapshot "$t")" .trigger b "one key: as before"
complete "$t" work
# Gates fill in name order: ab's task first, then abc's.
expect_eq "$(gate_tasks | grep -c .)" 3 "key b fills both gates"
expect_exit 0 "$TASKQ" show "$(gate_tasks | sed -n 2p)" -o json
expect_json "$out" .gate ab "the first one emitted is ab's"
expect_exit 0 "$TASKQ" show "$(gate_tasks | sed -n 3p)" -o json
expect_json "$out" .gate abc "then abc's"

section "duplicates count once"
fresh_db
tq gate add ab gq --keys a,b >/dev/null
t=$(add_task work --trigger a,a --trigger a)
expect_json "$(snapshot "$t")" .trigger a "a key given three times is one key"
complete "$t" work
expect_exit 0 "$TASKQ" gate show ab -o json
expect_json "$out" '[.covered, .emitted]' '[["a"],0]' "only a covered"
t=$(add_task work --trigger b,b,a,b)
expect_json "$(snapshot "$t")" .trigger a,b
complete "$t" work
expect_eq "$(gate_tasks | grep -c .)" 1 "one gate task, not two"
expect_exit 0 "$TASKQ" gate show ab -o json
expect_json "$out" '[.covered, .emitted]' '[[],1]'

section "with --jsonl every task carries the keys"
printf '1\n2\n' >two.jsonl
expect_exit 0 "$TASKQ" add bulk --jsonl two.jsonl --trigger y,x -o id
for id in $out; do
  expect_json "$(snapshot "$id")" .trigger x,y "task $id of --jsonl"
done

section "bad keys: exit 2, one line naming the key, nothing changed"
before=$(db_digest)
n0=$(count_tasks)
while IFS=$'\t' read -r arg key; do
  expect_exit 2 "$TASKQ" add work --trigger="$arg"
  expect_err_contains "taskq: invalid key '$key' in --trigger"
  expect_eq "$(grep -c . <<<"$err")" 1 "one line: $err"
done <<'CASES'
a,b c	b c
a,,b	
,a	
a,	
a,k=v	k=v
k*,a	k*
CASES
expect_exit 2 "$TASKQ" add work --trigger a --trigger 'b c'
expect_err_contains "taskq: invalid key 'b c' in --trigger"
expect_exit 2 "$TASKQ" add work --trigger a --trigger ''
expect_err_contains "taskq: --trigger: an empty value is not allowed"
expect_exit 2 "$TASKQ" add work --trigger "a,$(printf 'k%.0s' {1..129})"
expect_err_contains "in --trigger: expected K1,K2,..."
expect_exit 2 "$TASKQ" schedule add s sq --every minute --trigger 'a,b c'
expect_err_contains "taskq: invalid key 'b c' in --trigger"
expect_exit 2 bash -c 'printf %s "$1" | "$TASKQ" tx' _ \
  '{"create":[{"queue":"work","trigger":"a,b=c"}]}'
expect_err_contains "create[0]"
expect_err_contains "'b=c' is not"
expect_eq "$(count_tasks)" "$n0" "tasks after the refused commands"
expect_eq "$(db_digest)" "$before" "the database after the refused commands"

section "tx create takes \"trigger\": the keys comma-joined"
fresh_db
tq gate add ab gq --keys a,b >/dev/null
expect_exit 0 bash -c 'printf %s "$1" | "$TASKQ" tx' _ \
  '{"create":[{"queue":"work","trigger":"b,a,b"},{"queue":"plain"}]}'
t=$(jout '.created[0]')
expect_json "$(snapshot "$t")" .trigger a,b "a tx create's keys, sorted, once"
expect_json "$(snapshot "$(jout '.created[1]')")" .trigger null "none given"
complete "$t" work
expect_eq "$(gate_tasks | grep -c .)" 1 "the tx-created task fills the gate"

section "export and import keep the keys; import takes only the stored form"
expect_exit 0 "$TASKQ" export
printf '%s\n' "$out" >all.jsonl
expect_eq "$(jq -r "select(.id == $t) | .trigger_key" all.jsonl)" a,b \
  "exported as stored"
fresh_db
tq gate add ab gq --keys a,b >/dev/null
base='"queue":"work","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1'
printf '%s\n' "{\"id\":50,$base,\"trigger_key\":\"a,b\"}" >keys.jsonl
expect_exit 0 "$TASKQ" import keys.jsonl
expect_json "$(snapshot 50)" .trigger a,b "the imported task's keys"
expect_exit 0 "$TASKQ" db check
complete 50 work
expect_eq "$(gate_tasks | grep -c .)" 1 "the imported task fills the gate"
before=$(db_digest)
while IFS=$'\t' read -r keys want; do
  printf '%s\n' "{\"id\":60,$base,\"trigger_key\":\"$keys\"}" >bad.jsonl
  expect_exit 2 "$TASKQ" import bad.jsonl
  expect_err_contains "taskq: line 1: 'trigger_key' must be $want"
  expect_eq "$(grep -c . <<<"$err")" 1 "one line: $err"
done <<'CASES'
b,a	its keys sorted, each once ('a,b', not 'b,a')
a,a	its keys sorted, each once ('a', not 'a,a')
a,b c	a gate key of letters, digits and . _ / -, or several, comma-separated: 'b c' is not
a,	a gate key of letters, digits and . _ / -, or several, comma-separated: '' is not
CASES
expect_eq "$(db_digest)" "$before" "nothing imported"

section "schedule add --trigger: shown, and carried by every task it emits"
fresh_db
set_now 2026-11-21T08:00:30Z
tq gate add deploy gq --keys build,docs --text go >/dev/null
expect_exit 0 "$TASKQ" schedule add builds sq --every minute \
  --trigger docs,build -o json
expect_json "$out" .trigger build,docs "schedule add -o json"
expect_exit 0 "$TASKQ" schedule show builds
expect_match "$(grep '^trigger:' <<<"$out")" '^trigger: +build,docs$' \
  "schedule show's table"
expect_exit 0 "$TASKQ" schedule list -o json
expect_json "$out" '[.name, .trigger]' '["builds","build,docs"]' \
  "schedule list -o json"
tq schedule add plain pq --every minute >/dev/null
expect_exit 0 "$TASKQ" schedule show plain -o json
expect_json "$out" .trigger null "a schedule without --trigger"
expect_exit 0 "$TASKQ" schedule show plain
expect_not_contains "$out" "trigger:" "no trigger line without --trigger"
set_now 2026-11-21T08:01:05Z
expect_exit 0 "$TASKQ" tick --queue sq
e1=$out
expect_match "$e1" '^[0-9]+$' "the tick emitted one task"
expect_json "$(snapshot "$e1")" '[.schedule, .trigger]' '["builds","build,docs"]' \
  "the emitted task carries the keys"
expect_eq "$(gate_tasks)" "" "no gate task before the emitted task completes"
complete "$e1" sq
expect_eq "$(gate_tasks | grep -c .)" 1 "the emitted task, done, fills the gate"
expect_exit 0 "$TASKQ" show "$(gate_tasks)" -o json
expect_json "$out" '[.gate, .payload]' '["deploy","go"]'
set_now 2026-11-21T08:02:05Z
expect_exit 0 "$TASKQ" tick --queue sq
e2=$out
check "the next tick emits a new task" test "$e2" -gt "$e1"
complete "$e2" sq
expect_eq "$(gate_tasks | grep -c .)" 2 "and the gate emits again"
expect_exit 0 "$TASKQ" db check
