# Dependencies, `add --after ID,...` (doc/reference/commands.md#dependencies):
# a task waits (runnable, "waiting": true, never leased) until every listed
# task is completed. When one ends failed or killed, the waiting task is paused
# with that reason, so an operator decides: resume runs it anyway, kill drops
# it.

set_now 2026-11-21T08:00:00Z

# finish ID QUEUE: leases ID from QUEUE (it must be the one leased) and
# completes it.
finish() {
  local j tok
  j=$(tq lease "$2" --worker w1) || return
  expect_json "$j" .id "$1" "the task leased from $2"
  tok=$(jq -r .lease.token <<<"$j")
  tq done "$1" --lease "$tok" >/dev/null
}

# fail_for_good ID QUEUE: leases ID from QUEUE and fails it with --no-retry.
fail_for_good() {
  local j tok
  j=$(tq lease "$2" --worker w1) || return
  expect_json "$j" .id "$1" "the task leased from $2"
  tok=$(jq -r .lease.token <<<"$j")
  tq fail "$1" --lease "$tok" --error broken --no-retry >/dev/null
}

section "a task waits until each of its dependencies is completed"
fresh_db
a=$(add_task build)
b=$(add_task build)
c=$(add_task deploy --after "$a,$b")
expect_exit 0 "$TASKQ" show "$c" -o json
expect_json "$out" .after "[$a,$b]"
expect_json "$out" .waiting true
expect_json "$out" .state runnable
expect_exit 75 "$TASKQ" lease deploy
expect_eq "$(field "$c" .attempts)" 0 "attempts of the waiting task"
expect_exit 0 "$TASKQ" list --state ready -o id
expect_not_contains "$out" "$c" "ready tasks (a waiting task is not ready)"
expect_exit 0 "$TASKQ" show "$c"
expect_match "$out" "after: +$a, $b" "show names the dependencies"

finish "$a" build
expect_eq "$(field "$c" .waiting)" true "waiting with one of two completed"
expect_exit 75 "$TASKQ" lease deploy
finish "$b" build
expect_eq "$(field "$c" .waiting)" false "waiting once both are completed"
expect_exit 0 "$TASKQ" lease deploy
expect_json "$out" .id "$c" "leased once its dependencies completed"

section "--after is repeatable, and a chain waits link by link"
fresh_db
a=$(add_task s1)
b=$(add_task s2 --after "$a")
c=$(add_task s3 --after "$b" --after "$a")
expect_json "$(snapshot "$c")" .after "[$b,$a]" "--after given twice"
finish "$a" s1
expect_exit 75 "$TASKQ" lease s3
expect_exit 0 "$TASKQ" lease s2
expect_json "$out" .id "$b" "the second link is leasable"
tok=$(jout .lease.token)
expect_exit 75 "$TASKQ" lease s3
tq done "$b" --lease "$tok" >/dev/null
expect_exit 0 "$TASKQ" lease s3
expect_json "$out" .id "$c" "the third link is leasable"

section "a failed dependency pauses the waiting task; resume runs it anyway"
fresh_db
a=$(add_task fq)
w=$(add_task fw --after "$a")
fail_for_good "$a" fq
expect_eq "$(state "$a")" failed "the dependency"
expect_exit 0 "$TASKQ" show "$w" -o json
expect_json "$out" .state paused "the waiting task"
expect_json "$out" .reason "dependency $a failed"
expect_exit 75 "$TASKQ" lease fw
expect_exit 0 "$TASKQ" resume "$w"
expect_eq "$(state "$w")" runnable "after resume"
expect_exit 0 "$TASKQ" lease fw
expect_json "$out" .id "$w" "resume runs it anyway"
tok=$(jout .lease.token)
expect_exit 0 "$TASKQ" done "$w" --lease "$tok"
expect_eq "$(state "$w")" completed "the resumed task"

section "a killed dependency pauses the waiting task; kill drops it"
fresh_db
a=$(add_task kq)
w=$(add_task kw --after "$a")
expect_exit 0 "$TASKQ" kill "$a"
expect_exit 0 "$TASKQ" show "$w" -o json
expect_json "$out" .state paused "the waiting task"
expect_json "$out" .reason "dependency $a was killed"
expect_exit 75 "$TASKQ" lease kw
expect_exit 0 "$TASKQ" kill "$w"
expect_eq "$(state "$w")" killed "after kill"
expect_exit 75 "$TASKQ" lease kw

section "with several dependencies, one failure pauses it for good"
fresh_db
a=$(add_task mq)
b=$(add_task mq2)
w=$(add_task mw --after "$a,$b")
expect_exit 0 "$TASKQ" kill "$b"
expect_eq "$(state "$w")" paused "after one of two was killed"
expect_eq "$(field "$w" .reason)" "dependency $b was killed" "reason"
finish "$a" mq
expect_eq "$(state "$w")" paused "the other completing does not resume it"
expect_exit 75 "$TASKQ" lease mw
expect_exit 0 "$TASKQ" resume "$w"
expect_exit 0 "$TASKQ" lease mw
expect_json "$out" .id "$w" "leased after resume"

section "resume runs it anyway, even with another dependency unfinished"
fresh_db
a=$(add_task rq1)
b=$(add_task rq2)
w=$(add_task rw --after "$a,$b")
tq kill "$a" >/dev/null
expect_eq "$(state "$w")" paused "after one dependency was killed"
expect_exit 0 "$TASKQ" resume "$w"
expect_json "$(snapshot "$w")" '[.state, .waiting]' '["runnable",false]' \
  "after resume"
expect_exit 0 "$TASKQ" lease rw
expect_json "$out" .id "$w" "leased though $b is unfinished"

section "an operator's pause and resume do not end the wait"
fresh_db
a=$(add_task pq1)
w=$(add_task pw --after "$a")
expect_exit 0 "$TASKQ" pause "$w"
expect_exit 0 "$TASKQ" resume "$w"
expect_json "$(snapshot "$w")" '[.state, .waiting]' '["runnable",true]' \
  "after pause and resume"
expect_exit 75 "$TASKQ" lease pw
expect_exit 0 "$TASKQ" sleep "$w" --for 1m
advance 60
expect_exit 75 "$TASKQ" lease pw
finish "$a" pq1
expect_exit 0 "$TASKQ" lease pw
expect_json "$out" .id "$w" "leased once its dependency completed"
set_now 2026-11-21T08:00:00Z

section "a failure travels one link: the next one waits for the paused task"
fresh_db
a=$(add_task c1)
b=$(add_task c2 --after "$a")
c=$(add_task c3 --after "$b")
fail_for_good "$a" c1
expect_eq "$(state "$b")" paused "the direct dependent"
expect_eq "$(state "$c")" runnable "the one after it"
expect_eq "$(field "$c" .waiting)" true "the one after it still waits"
expect_exit 0 "$TASKQ" kill "$b"
expect_eq "$(state "$c")" paused "once its own dependency is killed"
expect_eq "$(field "$c" .reason)" "dependency $b was killed" "reason"

section "a dependency that is already finished when the task is added"
fresh_db
done_dep=$(add_task pre)
finish "$done_dep" pre
w=$(add_task post --after "$done_dep")
expect_exit 0 "$TASKQ" show "$w" -o json
expect_json "$out" .state runnable
expect_json "$out" .waiting false
expect_exit 0 "$TASKQ" lease post
expect_json "$out" .id "$w" "a completed dependency counts as done"

failed_dep=$(add_task pre)
fail_for_good "$failed_dep" pre
w2=$(add_task post --after "$failed_dep")
expect_exit 0 "$TASKQ" show "$w2" -o json
expect_json "$out" .state paused "added after a failed dependency"
expect_json "$out" .reason "dependency $failed_dep failed"

killed_dep=$(add_task pre)
tq kill "$killed_dep" >/dev/null
w3=$(add_task post --after "$done_dep,$killed_dep")
expect_json "$(snapshot "$w3")" .state paused "added after a killed dependency"
expect_json "$(snapshot "$w3")" .reason "dependency $killed_dep was killed"
expect_exit 75 "$TASKQ" lease post

section "--jsonl: every task of the batch waits"
fresh_db
a=$(add_task jq1)
printf '{"n":1}\n{"n":2}\n' >batch.jsonl
expect_exit 0 "$TASKQ" add jq2 --jsonl batch.jsonl --after "$a" -o id
ids=$out
expect_eq "$(wc -l <<<"$ids")" 2 "tasks added"
for id in $ids; do
  expect_json "$(snapshot "$id")" '[.after, .waiting]' "[[$a],true]" "task $id"
done
expect_exit 75 "$TASKQ" lease jq2
finish "$a" jq1
expect_exit 0 "$TASKQ" lease jq2 --count 5 -o id
expect_eq "$out" "$ids" "both leased once the dependency completed"

section "an unknown dependency adds nothing"
fresh_db
a=$(add_task uq)
expect_exit 3 "$TASKQ" add uq --after "$a,4242"
expect_err_format
expect_err_contains 4242
expect_out_empty
expect_exit 3 "$TASKQ" add uq --jsonl batch.jsonl --after 4242
expect_eq "$(count_tasks)" 1 "tasks after the refused adds"

section "bad --after values exit 2 and change nothing"
for bad in x 0 -1 "$a,x" "$a,,$a" "$a," ",$a" "$a $a" 1.5 ''; do
  expect_exit 2 "$TASKQ" add uq --after "$bad"
  expect_err_format
done
expect_eq "$(count_tasks)" 1 "tasks after the refused adds"
expect_exit 2 "$TASKQ" add uq --after
expect_eq "$(count_tasks)" 1 "tasks after a missing value"

section "a task without dependencies says so"
expect_exit 0 "$TASKQ" show "$a" -o json
expect_json "$out" '[.after, .waiting]' '[[],false]'
