# Operators and leased tasks (doc/reference/commands.md#messages-to-tasks):
# pause, sleep, kill and release revoke a live lease, so the worker learns it
# at its next heartbeat and can no longer finish; run and checkpoint leave the
# lease alone. With ids the commands are all or nothing; the bulk forms count
# what they changed.

set_now 2026-11-21T08:00:00Z

# expect_count N: stdout reports the count N (and no other number).
expect_count() {
  expect_match "$out" "^[^0-9]*$1[^0-9]*\$" "count printed by $cmd"
}

# leased QUEUE: adds a task to QUEUE and leases it as worker w1; sets $id and
# $tok.
leased() {
  id=$(add_task "$1")
  tok=$(tq lease "$1" --worker w1 | jq -r .lease.token)
}

for msg in kill pause sleep release; do
  section "an operator's $msg revokes the worker's lease"
  leased "revoke-$msg"
  args=("$msg" "$id")
  [[ $msg == sleep ]] && args+=(--for 1h)
  expect_exit 0 "$TASKQ" "${args[@]}"
  expect_out_empty
  expect_exit 0 "$TASKQ" show "$id" -o json
  expect_json "$out" .lease null "lease after $msg"
  case $msg in
  kill) want=killed ;;
  pause) want=paused ;;
  sleep) want=sleeping ;;
  release) want=runnable ;;
  esac
  expect_json "$out" .state "$want" "state after $msg"

  expect_exit 4 "$TASKQ" heartbeat "$id" --lease "$tok"
  expect_out "$msg"
  expect_err_format
  before=$(snapshot "$id")
  expect_exit 4 "$TASKQ" done "$id" --lease "$tok" --result '{"late":true}'
  expect_err_format
  expect_exit 4 "$TASKQ" fail "$id" --lease "$tok" --error late
  expect_exit 4 "$TASKQ" release "$id" --lease "$tok"
  expect_exit 4 "$TASKQ" sleep "$id" --lease "$tok" --for 5m
  expect_eq "$(snapshot "$id")" "$before" "task after the revoked worker's writes"
  # Asking again gives the same answer: the reason is not used up.
  expect_exit 4 "$TASKQ" heartbeat "$id" --lease "$tok"
  expect_out "$msg"
done

section "after an operator's release another worker can lease at once"
leased handover
tq release "$id" >/dev/null
expect_exit 0 "$TASKQ" lease handover --worker w2
expect_json "$out" .id "$id"
expect_json "$out" .lease.worker w2
tok2=$(jout .lease.token)
expect_exit 4 "$TASKQ" done "$id" --lease "$tok"
expect_exit 0 "$TASKQ" done "$id" --lease "$tok2"
expect_eq "$(state "$id")" completed

section "run on a leased task keeps the lease"
leased keep-run
expect_exit 0 "$TASKQ" resume "$id"
expect_exit 0 "$TASKQ" send "$id" run
expect_exit 0 "$TASKQ" heartbeat "$id" --lease "$tok"
expect_out_empty
expect_exit 0 "$TASKQ" done "$id" --lease "$tok"
expect_eq "$(state "$id")" completed

section "checkpoint asks the worker to save state, through heartbeat"
leased keep-cp
expect_exit 0 "$TASKQ" checkpoint "$id"
expect_exit 0 "$TASKQ" heartbeat "$id" --lease "$tok"
expect_out checkpoint
# The request stays until the worker stores a checkpoint.
expect_exit 0 "$TASKQ" heartbeat "$id" --lease "$tok"
expect_out checkpoint
expect_exit 0 "$TASKQ" heartbeat "$id" --lease "$tok" --checkpoint '{"done":5}'
expect_exit 0 "$TASKQ" heartbeat "$id" --lease "$tok"
expect_out_empty
expect_eq "$(field "$id" .checkpoint)" '{"done":5}' "stored checkpoint"
expect_exit 0 "$TASKQ" send "$id" checkpoint
expect_exit 0 "$TASKQ" heartbeat "$id" --lease "$tok"
expect_out checkpoint
expect_exit 0 "$TASKQ" done "$id" --lease "$tok"

section "resume of a paused task keeps its attempts: the next run is the next one"
leased attempts
tq pause "$id" >/dev/null
expect_eq "$(field "$id" .attempts)" 1 "attempts while paused"
expect_exit 0 "$TASKQ" resume "$id"
expect_jq "$(snapshot "$id")" '.state == "runnable" and .attempts == 1 and .errors == []'
expect_exit 0 "$TASKQ" lease attempts
expect_json "$out" .attempts 2 "the run after resume"

section "operator commands with ids are all or nothing"
a=$(add_task all)
b=$(add_task all)
k=$(add_task all)
tq kill "$k" >/dev/null
before_a=$(snapshot "$a")
before_b=$(snapshot "$b")
expect_exit 4 "$TASKQ" pause "$a" "$k" "$b"
expect_eq "$(snapshot "$a")" "$before_a" "first task after refused bulk pause"
expect_eq "$(snapshot "$b")" "$before_b" "last task after refused bulk pause"
expect_exit 3 "$TASKQ" pause "$a" 999999 "$b"
expect_eq "$(snapshot "$a")" "$before_a" "first task after pause of a missing id"
expect_eq "$(snapshot "$b")" "$before_b" "last task after pause of a missing id"
expect_exit 3 "$TASKQ" kill "$a" 999999
expect_eq "$(state "$a")" runnable "task after kill of a missing id"
expect_exit 0 "$TASKQ" pause "$a" "$b"
expect_out_empty
expect_eq "$(state "$a") $(state "$b")" "paused paused" "states after pause"
expect_exit 0 "$TASKQ" resume "$a" "$b"
expect_eq "$(state "$a") $(state "$b")" "runnable runnable" "states after resume"
expect_exit 0 "$TASKQ" sleep "$a" "$b" --for 1h
expect_eq "$(state "$a") $(state "$b")" "sleeping sleeping" "states after sleep"
expect_exit 0 "$TASKQ" kill "$a" "$b"
expect_eq "$(state "$a") $(state "$b")" "killed killed" "states after kill"

section "bulk forms apply where the table allows and print the count"
fresh_db bulk
# One completed task in bq gives the bulk pause something to skip.
done_id=$(add_task bq --priority 10)
tok=$(tq lease bq | jq -r .lease.token)
tq done "$done_id" --lease "$tok" >/dev/null
r1=$(add_task bq --label team=x)
r2=$(add_task bq --label team=y)
other=$(add_task otherq)
expect_exit 0 "$TASKQ" pause --queue bq
expect_count 2
expect_eq "$(state "$r1") $(state "$r2") $(state "$done_id") $(state "$other")" \
  "paused paused completed runnable" "states after pause --queue bq"
expect_exit 0 "$TASKQ" resume --queue bq --match team=x
expect_count 1
expect_eq "$(state "$r1") $(state "$r2")" "runnable paused" \
  "states after resume --match team=x"
expect_exit 0 "$TASKQ" kill --state paused
expect_count 1
expect_eq "$(state "$r2")" killed "paused task after kill --state paused"
expect_exit 0 "$TASKQ" kill --queue bq
expect_count 1
expect_eq "$(state "$r1") $(state "$done_id")" "killed completed" \
  "states after kill --queue bq"
expect_eq "$(state "$other")" runnable "task of another queue"

section "bulk forms revoke live leases too"
held=$(add_task bulkheld)
tok=$(tq lease bulkheld | jq -r .lease.token)
expect_exit 0 "$TASKQ" kill --queue bulkheld
expect_count 1
expect_exit 4 "$TASKQ" heartbeat "$held" --lease "$tok"
expect_out kill
expect_exit 4 "$TASKQ" done "$held" --lease "$tok"
expect_eq "$(state "$held")" killed

section "every operator command prints the same on success: nothing, -o id the ids, -o json the tasks"
# The rule (doc/reference/commands.md#messages-to-tasks): given ids,
# nothing (the caller named the tasks); -o id, the id of each task
# changed; -o json, each task as it is now; in bulk, the count (above).
# freeze and continue as pause and kill.
fresh_db words
# says ARG...: `taskq ARG...`, with ID replaced by a task that $setup
# made, exits 0 printing nothing; with -o id, that id; with -o json, that
# task.
says() {
  local id
  id=$($setup)
  expect_exit 0 "$TASKQ" "${@//ID/$id}"
  expect_out_empty
  id=$($setup)
  expect_exit 0 "$TASKQ" "${@//ID/$id}" -o id
  expect_out "$id"
  id=$($setup)
  expect_exit 0 "$TASKQ" "${@//ID/$id}" -o json
  expect_json "$out" .id "$id" "$1 -o json: the task"
}
runnable() { add_task words; }
paused() {
  local id
  id=$(add_task words) && tq pause "$id" >/dev/null && echo "$id"
}
# A task leased alone from a queue of its own.
running() {
  local q=run$RANDOM$RANDOM
  add_task "$q" >/dev/null && tq lease "$q" | jq -r .id
}
frozen() {
  local id
  id=$(running) && tq freeze "$id" >/dev/null && echo "$id"
}
setup=runnable
says pause ID
says kill ID
says sleep ID --for 1h
says send ID pause
setup=paused
says resume ID
setup=running
says checkpoint ID
says release ID
says freeze ID
setup=frozen
says continue ID
