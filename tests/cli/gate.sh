# Gates (doc/reference/schedules.md#gates, rescue Gate): a task added with
# `--trigger K` covers key K of every gate that has it when it completes; once
# each key is covered, the gate emits its task into its queue and re-arms. gate
# add|list|show|rm.

set_now 2026-11-21T08:00:00Z

# trigger KEY: adds a task with `--trigger KEY` to queue trig-KEY (where
# every earlier task is finished), leases it and completes it; prints its id.
trigger() {
  local id tok
  id=$(add_task "trig-$1" --trigger "$1") || return 1
  tok=$(tq lease "trig-$1" | jq -r .lease.token)
  tq done "$id" --lease "$tok" >/dev/null
  printf '%s\n' "$id"
}

# gate_tasks: the ids of the tasks in the gates' queue gq.
gate_tasks() { "$TASKQ" list --queue gq -o id 2>&1 3>&-; }

# detail KEY: the value of KEY in the last command's `KEY: value` lines.
detail() { sed -n "s/^$1: *//p" <<<"$out"; }

section "gate add and show"
fresh_db
expect_exit 0 "$TASKQ" gate add g gq --keys b,a,a --payload '{"deploy": true}' \
  --label team=web --priority 4 -o json
expect_json "$out" '[.name, .queue, .keys, .covered, .waiting, .emitted, .last_task]' \
  '["g","gq",["a","b"],[],["a","b"],0,null]' "a new gate"
expect_exit 0 "$TASKQ" gate show g -o json
expect_json "$out" 'keys_unsorted' \
  '["name","queue","keys","covered","waiting","emitted","last_task","payload","labels","priority","created_at"]' \
  "fields of a gate"
expect_json "$out" '[.payload, .labels, .priority]' '[{"deploy":true},{"team":"web"},4]'
expect_exit 0 "$TASKQ" gate show g
expect_eq "$(detail keys)" a,b "table keys"
expect_eq "$(detail waiting)" a,b "table waiting"
expect_eq "$(detail emitted)" 0 "table emitted"
expect_exit 0 "$TASKQ" gate add solo gq2 --keys x --text hello
expect_eq "$(detail name)" solo "gate add prints the gate"
expect_exit 0 "$TASKQ" gate list -o id
expect_out $'g\nsolo'
expect_exit 0 "$TASKQ" gate list -o json
expect_eq "$(jout .name | tr '\n' ' ')" "g solo " "gate list -o json"
expect_exit 0 "$TASKQ" gate list
expect_match "$(head -1 <<<"$out")" \
  '^NAME +QUEUE +KEYS +WAITING +EMITTED +LAST_TASK *$' "table header"
expect_match "$(grep '^g ' <<<"$out")" '^g +gq +a,b +a,b +0 +- *$' "table row"

section "two full cycles: each emits exactly one task"
a1=$(trigger a)
expect_exit 0 "$TASKQ" gate show g -o json
expect_json "$out" '[.covered, .waiting, .emitted]' '[["a"],["b"],0]' \
  "after key a"
expect_eq "$(gate_tasks)" "" "no gate task with one key of two"
b1=$(trigger b)
expect_eq "$(gate_tasks | grep -c .)" 1 "gate tasks after keys a and b"
g1=$(gate_tasks)
expect_exit 0 "$TASKQ" show "$g1" -o json
expect_json "$out" '[.queue, .gate, .payload, .labels, .priority, .state]' \
  '["gq","g",{"deploy":true},{"team":"web"},4,"runnable"]' "the emitted task"
expect_exit 0 "$TASKQ" gate show g -o json
expect_json "$out" '[.covered, .waiting, .emitted, .last_task]' \
  "[[],[\"a\",\"b\"],1,$g1]" "the gate re-armed"
expect_exit 0 "$TASKQ" gate list
expect_match "$(grep '^g ' <<<"$out")" "^g +gq +a,b +a,b +1 +$g1 *\$" \
  "table row after a cycle"
check "trigger tasks completed" test "$(state "$a1")/$(state "$b1")" = \
  completed/completed
b2=$(trigger b)
expect_eq "$(gate_tasks)" "$g1" "no second gate task with key b alone"
a2=$(trigger a)
expect_eq "$(gate_tasks | grep -c .)" 2 "gate tasks after the second cycle"
g2=$(gate_tasks | tail -1)
check "the second cycle's task is new" test "$g2" -gt "$g1"
expect_exit 0 "$TASKQ" gate show g -o json
expect_json "$out" '[.covered, .emitted, .last_task]' "[[],2,$g2]"

section "a key completed twice does not emit"
trigger a >/dev/null
trigger a >/dev/null
expect_eq "$(gate_tasks | grep -c .)" 2 "gate tasks after key a twice"
expect_exit 0 "$TASKQ" gate show g -o json
expect_json "$out" '[.covered, .waiting, .emitted]' '[["a"],["b"],2]'
trigger b >/dev/null
expect_eq "$(gate_tasks | grep -c .)" 3 "gate tasks once b completes too"

section "a failed, killed or unfinished trigger does not count"
f=$(add_task work --trigger a)
tok=$(tq lease work | jq -r .lease.token)
expect_exit 0 "$TASKQ" fail "$f" --lease "$tok" --error boom --no-retry
expect_eq "$(state "$f")" failed "the trigger task failed"
k=$(add_task work --trigger a)
expect_exit 0 "$TASKQ" kill "$k"
pending=$(add_task work --trigger a)
tok=$(tq lease work | jq -r .lease.token)
expect_exit 0 "$TASKQ" gate show g -o json
expect_json "$out" '[.covered, .waiting]' '[[],["a","b"]]' \
  "nothing covered by failed, killed or running triggers"
trigger b >/dev/null
expect_eq "$(gate_tasks | grep -c .)" 3 "no gate task: a is not covered"
expect_exit 0 "$TASKQ" done "$pending" --lease "$tok"
expect_eq "$(gate_tasks | grep -c .)" 4 "the running trigger completes: emitted"

section "a trigger counts toward every gate with its key"
solo_before=$(tq list --queue gq2 -o id)
trigger x >/dev/null
expect_eq "$(tq list --queue gq2 -o id | grep -c .)" \
  $(($(grep -c . <<<"$solo_before") + 1)) "gate solo emitted"
expect_exit 0 "$TASKQ" show "$(tq list --queue gq2 -o id | tail -1)" -o json
expect_json "$out" '[.gate, .payload]' '["solo","hello"]'
expect_eq "$(gate_tasks | grep -c .)" 4 "gate g is not moved by key x"

section "gate rm"
expect_exit 0 "$TASKQ" gate rm g
expect_out_empty
expect_exit 3 "$TASKQ" gate show g
expect_exit 3 "$TASKQ" gate rm g
expect_eq "$(tq gate list -o id)" solo "gates after rm"
trigger a >/dev/null
trigger b >/dev/null
expect_eq "$(gate_tasks | grep -c .)" 4 "a removed gate emits nothing"
expect_eq "$(state "$g1")" runnable "its emitted tasks stay"
expect_exit 0 "$TASKQ" gate add g gq --keys a
expect_exit 0 "$TASKQ" gate show g -o json
expect_json "$out" '[.covered, .emitted]' '[[],0]' \
  "a new gate of the same name starts afresh"

section "bad input exits 2 and creates nothing"
fresh_db
for keys in '' 'a,,b' ',a' 'a,' 'a b' 'a=b' "$(printf 'k%.0s' {1..129})"; do
  expect_exit 2 "$TASKQ" gate add g gq --keys="$keys"
  expect_err_format
done
expect_exit 2 "$TASKQ" gate add g gq
expect_exit 2 "$TASKQ" gate add 'bad name' gq --keys a
expect_err_contains "invalid gate name"
expect_exit 2 "$TASKQ" gate add g 'bad queue' --keys a
expect_exit 2 "$TASKQ" gate add g gq --keys a --payload '{bad'
expect_exit 2 "$TASKQ" gate add g gq --keys a --payload 1 --text x
expect_exit 2 "$TASKQ" gate add g gq --keys a --label nope
expect_exit 2 "$TASKQ" gate add g gq --keys a -o env
expect_exit 2 "$TASKQ" gate
# A file that is not there (on PostgreSQL, where the harness made the
# database already, taskq's schema in it).
if sqlite_only; then
  check "no database was created by refused adds" test ! -e "$TASKQ_DB"
fi
expect_exit 5 "$TASKQ" gate list

section "not found and duplicate names"
tq gate add dup gq --keys a >/dev/null
before=$(tq gate show dup -o json)
expect_exit 4 "$TASKQ" gate add dup other --keys b
expect_err_format
expect_eq "$(tq gate show dup -o json)" "$before" "the gate is unchanged"
expect_exit 3 "$TASKQ" gate show nosuch
expect_err_format
expect_exit 3 "$TASKQ" gate rm nosuch
expect_eq "$(tq gate list -o id)" dup "gates after refused commands"
