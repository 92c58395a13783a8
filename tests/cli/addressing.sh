# Addressing (doc/reference/commands.md#addressing, rescue): `add --to WORKER`
# is leased by that worker only (--worker or TASKQ_WORKER); `add --broadcast`
# reaches every worker that leases from the queue exactly once, each with a
# token of its own, needs no `done`, and ends completed after its --ttl
# (default 7d). Also: `add --trigger K` and `done --sync K=V` with TASKQ_SYNC,
# the two other fields a task carries for gates and schedules.

set_now 2026-11-21T08:00:00Z

# The handler for `taskq run`: records what it got in got/ID.WORKER.
mkdir -p got
cat >handler.sh <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$TASKQ_SYNC" >"got/$TASKQ_ID.$TASKQ_WORKER"
EOF
chmod +x handler.sh

section "--to: only the named worker leases the task"
fresh_db
t=$(add_task aq --to w2 --priority 5)
other=$(add_task aq)
expect_json "$(snapshot "$t")" .to w2
expect_exit 0 "$TASKQ" show "$t"
expect_match "$out" $'(^|\n)to: +w2(\n|$)' "show prints the worker"
expect_json "$(snapshot "$other")" .to null
expect_exit 0 "$TASKQ" lease aq --worker w1
expect_json "$out" .id "$other" "w1 gets the unaddressed task, not w2's"
expect_exit 75 "$TASKQ" lease aq --worker w1
expect_exit 75 "$TASKQ" lease aq --worker w3
expect_exit 75 env TASKQ_WORKER=w3 "$TASKQ" lease aq
expect_eq "$(field "$t" .attempts)" 0 "attempts after the others tried"
expect_exit 0 "$TASKQ" lease aq --worker w2
expect_json "$out" .id "$t" "w2 gets its task"
expect_json "$out" .lease.worker w2

t2=$(add_task aq --to w2)
expect_exit 0 env TASKQ_WORKER=w2 "$TASKQ" lease aq
expect_json "$out" .id "$t2" "TASKQ_WORKER=w2 gets it too"

section "--to with --jsonl addresses every task of the batch"
printf '1\n2\n' >two.jsonl
expect_exit 0 "$TASKQ" add bulk --jsonl two.jsonl --to w3 -o id
ids=$out
for id in $ids; do
  expect_json "$(snapshot "$id")" .to w3 "task $id"
done
expect_exit 75 "$TASKQ" lease bulk --worker w1 --count 5
expect_exit 0 "$TASKQ" lease bulk --worker w3 --count 5 -o id
expect_eq "$out" "$ids" "w3 leases both"

section "--broadcast: each of w1, w2, w3 receives it exactly once"
fresh_db
b=$(add_task news --broadcast --ttl 1h --payload '{"msg":"hello"}')
expect_exit 0 "$TASKQ" show "$b" -o json
expect_json "$out" .broadcast_until 2026-11-21T09:00:00Z
expect_json "$out" .state runnable
expect_exit 0 "$TASKQ" show "$b"
expect_match "$out" "broadcast: +until 2026-11-21T09:00:00Z" \
  "show prints the broadcast"
tokens=()
for w in w1 w2 w3; do
  expect_exit 0 "$TASKQ" lease news --worker "$w"
  expect_json "$out" .id "$b" "$w receives the broadcast"
  expect_json "$out" .payload '{"msg":"hello"}' "payload for $w"
  tok=$(jout .lease.token)
  expect_match "$tok" '^[^ ]+$' "$w's token"
  tokens+=("$tok")
  expect_exit 75 "$TASKQ" lease news --worker "$w"
done
expect_eq "$(printf '%s\n' "${tokens[@]}" | sort -u | wc -l)" 3 \
  "distinct tokens"
expect_exit 75 "$TASKQ" lease news --worker w1 --wait 0s

section "the token of a delivery is accepted, and done is not needed"
before=$(field "$b" '[.state, .rev]')
expect_exit 0 "$TASKQ" heartbeat "$b" --lease "${tokens[0]}"
expect_exit 0 "$TASKQ" done "$b" --lease "${tokens[0]}"
expect_exit 0 "$TASKQ" release "$b" --lease "${tokens[1]}"
expect_exit 0 "$TASKQ" fail "$b" --lease "${tokens[2]}" --error 'no disk'
expect_eq "$(field "$b" '[.state, .rev]')" "$before" \
  "state and rev after the workers' writes"
expect_exit 4 "$TASKQ" done "$b" --lease not-a-token
expect_err_format
# Neither done nor release nor fail hands it out again to the same worker.
for w in w1 w2 w3; do
  expect_exit 75 "$TASKQ" lease news --worker "$w"
done

section "a new worker still gets it; -o env carries its token"
expect_exit 0 "$TASKQ" lease news --worker w4 -o env
expect_contains "$out" "export TASKQ_ID=$b" "env of w4's delivery"
check "-o env can be eval'd and done" \
  bash -c "eval \"\$1\" && \"\$TASKQ\" done" _ "$out"

section "after its ttl the broadcast is completed and no longer delivered"
advance 3601
expect_exit 75 "$TASKQ" lease news --worker w5
expect_exit 75 "$TASKQ" lease news --worker w1
expect_eq "$(state "$b")" completed "after the ttl"

section "a killed broadcast is no longer delivered; its tokens are refused"
fresh_db
kb=$(add_task kbq --broadcast --ttl 1h)
tok=$(tq lease kbq --worker w1 | jq -r .lease.token)
expect_exit 0 "$TASKQ" kill "$kb"
expect_exit 4 "$TASKQ" done "$kb" --lease "$tok"
expect_err_format
expect_exit 75 "$TASKQ" lease kbq --worker w2
expect_eq "$(state "$kb")" killed "the killed broadcast"

section "the default ttl is 7 days"
b7=$(add_task news --broadcast)
expect_time "$(field "$b7" .broadcast_until)" "$(later $((7 * 86400)))" \
  "broadcast_until"

section "a broadcast and ordinary tasks share the queue"
fresh_db
plain=$(add_task mix)
bc=$(add_task mix --broadcast --ttl 1h)
expect_exit 0 "$TASKQ" lease mix --worker w1 --count 5 -o id
expect_eq "$(sort -n <<<"$out" | tr '\n' ' ')" "$plain $bc " "w1 gets both"
expect_exit 0 "$TASKQ" lease mix --worker w2 --count 5 -o id
expect_out "$bc"

section "a broadcast run through taskq run completes fine"
fresh_db
b=$(add_task runq --broadcast --ttl 1h)
for w in r1 r2; do
  expect_exit 0 "$TASKQ" run runq --until-empty --worker "$w" -- ./handler.sh
  expect_out "leased 1: 1 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked"
  check "the handler ran for $w" test -f "got/$b.$w"
  expect_exit 0 "$TASKQ" run runq --until-empty --worker "$w" -- ./handler.sh
  expect_out "leased 0: 0 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked"
done
expect_eq "$(state "$b")" runnable "the broadcast before its ttl"
expect_eq "$(find got -type f | wc -l)" 2 "handler runs"

section "run keeps a broadcast's handler through heartbeats and changes"
# The handler changes the database (run then checks that its leases are
# held) and works for 1 s, past three heartbeats of a 900ms lease, all with
# the delivery's token. Real time here: heartbeats follow the real clock.
cat >slow.sh <<'EOF'
#!/usr/bin/env bash
"$TASKQ" add elsewhere >/dev/null || exit 9
sleep 1
printf '%s\n' "$TASKQ_LEASE" >"got/slow.$TASKQ_WORKER"
EOF
chmod +x slow.sh
fresh_db
unset TASKQ_NOW
b=$(add_task slowq --broadcast --ttl 1h)
expect_exit 0 "$TASKQ" run slowq --until-empty --worker s1 --for 900ms \
  -- ./slow.sh
expect_out "leased 1: 1 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked"
expect_not_contains "$err" "lease" "run's stderr"
check "the handler finished" test -s got/slow.s1
expect_eq "$(state "$b")" runnable "the broadcast after the run"
set_now 2026-11-21T08:00:00Z

section "bad addressing options exit 2 and change nothing"
fresh_db
printf '1\n' >one.jsonl
n0=$(count_tasks)
expect_exit 2 "$TASKQ" add q --to ''
expect_exit 2 "$TASKQ" add q --to $'w\n1'
expect_exit 2 "$TASKQ" add q --to w1 --broadcast
expect_err_format
expect_exit 2 "$TASKQ" add q --ttl 1h
expect_err_contains --broadcast
expect_exit 2 "$TASKQ" add q --broadcast --ttl 0
expect_exit 2 "$TASKQ" add q --broadcast --ttl bogus
expect_exit 2 "$TASKQ" add q --broadcast --jsonl one.jsonl
expect_exit 2 "$TASKQ" add q --broadcast --unique k
expect_exit 2 "$TASKQ" add q --broadcast --after 1
expect_eq "$(count_tasks)" "$n0" "tasks after the refused adds"

section "--trigger is stored; malformed keys exit 2"
fresh_db
g=$(add_task gq --trigger build.done)
expect_json "$(snapshot "$g")" .trigger build.done
expect_json "$(snapshot "$(add_task gq)")" .trigger null "without --trigger"
expect_exit 0 "$TASKQ" add gq --jsonl one.jsonl --trigger k1 -o id
expect_json "$(snapshot "$out")" .trigger k1 "with --jsonl"
n0=$(count_tasks)
for bad in '' 'a b' 'k=v' 'ä'; do
  expect_exit 2 "$TASKQ" add gq --trigger "$bad"
done
expect_eq "$(count_tasks)" "$n0" "tasks after the refused adds"

section "done --sync on a task from no schedule exits 4 and changes nothing"
fresh_db
id=$(add_task sq)
tok=$(tq lease sq | jq -r .lease.token)
expect_json "$(snapshot "$id")" '[.schedule, .sync]' '[null,{}]'
before=$(snapshot "$id")
expect_exit 4 "$TASKQ" done "$id" --lease "$tok" --sync cursor=5
expect_err_format
expect_exit 2 "$TASKQ" done "$id" --lease "$tok" --sync 'no-equals'
expect_exit 2 "$TASKQ" done "$id" --lease "$tok" --sync '=5'
expect_eq "$(snapshot "$id")" "$before" "task after the refused dones"
expect_exit 0 "$TASKQ" done "$id" --lease "$tok"

section "done --sync: the schedule's next task carries it, as TASKQ_SYNC"
fresh_db
rm -rf got && mkdir got
set_now 2026-11-21T08:00:30Z
expect_exit 0 "$TASKQ" schedule add feed feedq --every minute
set_now 2026-11-21T08:01:00Z
expect_exit 0 "$TASKQ" lease feedq -o env
first_env=$out
expect_contains "$first_env" "export TASKQ_SYNC='{}'" "env of the first task"
check "the first task's env can be eval'd" \
  bash -c "eval \"\$1\" && \"\$TASKQ\" done --sync cursor=5 --sync 'note=it'\''s'" \
  _ "$first_env"
set_now 2026-11-21T08:02:00Z
expect_exit 0 "$TASKQ" lease feedq -o env
expect_contains "$out" "export TASKQ_SYNC='{\"cursor\":\"5\",\"note\":\"it'\\''s\"}'" \
  "env of the next task"
sync=$(bash -c 'eval "$1" && printf %s "$TASKQ_SYNC"' _ "$out")
expect_json "$sync" . '{"cursor":"5","note":"it'\''s"}' "TASKQ_SYNC after eval"
id2=$(bash -c 'eval "$1" && printf %s "$TASKQ_ID"' _ "$out")
expect_json "$(snapshot "$id2")" '[.schedule, .sync]' \
  '["feed",{"cursor":"5","note":"it'\''s"}]'
tok2=$(bash -c 'eval "$1" && printf %s "$TASKQ_LEASE"' _ "$out")
expect_exit 0 "$TASKQ" done "$id2" --lease "$tok2" --sync cursor=9
set_now 2026-11-21T08:03:00Z
expect_exit 0 "$TASKQ" run feedq --until-empty --worker r1 -- ./handler.sh
expect_out "leased 1: 1 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked"
got=$(cat got/*.r1 2>/dev/null)
expect_json "$got" . '{"cursor":"9","note":"it'\''s"}' "TASKQ_SYNC in run"
