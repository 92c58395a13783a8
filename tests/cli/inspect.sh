# Looking at tasks (doc/reference/commands.md#show): show with its error
# history and event log, list and its state filters, stats per queue, why, and
# retry.

T0=2026-11-21T08:00:00Z
set_now $T0
export TASKQ_WORKER=ops # operator events are recorded under this name

section "show: the error history and the event log"
id=$(add_task img --payload '{"file":"a.png"}' --label kind=image)
set_now 2026-11-21T08:01:00Z
tok=$(tq lease img --worker w1 | jq -r .lease.token)
set_now 2026-11-21T08:02:00Z
tq fail "$id" --lease "$tok" --error "disk full" --worker w1 >/dev/null
set_now 2026-11-21T08:03:00Z
tq pause "$id" >/dev/null
set_now 2026-11-21T08:04:00Z
tq kill "$id" >/dev/null

expect_exit 0 "$TASKQ" show "$id" -o json
task=$out
expect_eq "$(wc -l <<<"$task")" 1 "lines of show -o json"
expect_json "$task" .id "$id"
expect_json "$task" .state killed
expect_json "$task" '.errors | length' 1
expect_json "$task" '.errors[0].error' "disk full"
expect_time "$(jq -r '.errors[0].time' <<<"$task")" 2026-11-21T08:02:00Z \
  "error time"
expect_json "$task" '.events | type' array
expect_json "$task" \
  '[.events[] | has("time") and has("message") and has("from") and has("to") and has("actor")] | all' \
  true "every event has time, message, from, to, actor"
expect_json "$task" '[.events[].time] == ([.events[].time] | sort)' true \
  "events oldest first"
# The worker's error, then the operator's pause and kill.
expect_json "$task" \
  '[.events[] | select(.message == "error")][0] | [.from, .actor]' \
  '["runnable","w1"]' "the error event"
expect_json "$task" '[.events[] | select(.to == "sleeping")] | length > 0' \
  true "an event puts the task to sleep after the error"
expect_json "$task" '.events[-2] | [.message, .from, .to, .actor]' \
  '["pause","sleeping","paused","ops"]' "the pause event"
expect_time "$(jq -r '.events[-2].time' <<<"$task")" 2026-11-21T08:03:00Z \
  "pause event time"
expect_json "$task" '.events[-1] | [.message, .from, .to, .actor]' \
  '["kill","paused","killed","ops"]' "the kill event"
expect_time "$(jq -r '.events[-1].time' <<<"$task")" 2026-11-21T08:04:00Z \
  "kill event time"

expect_exit 0 "$TASKQ" show "$id"
for text in "$id" img killed "disk full" pause kill sleeping paused ops w1 \
  a.png kind; do
  expect_contains "$out" "$text" "show table"
done
expect_contains "$out" 2026-11-21T08:03:00 "show table (pause time)"

section "show: the error policy is recorded as taskq's own decision"
set_now $T0
id=$(add_task pol --max-errors 1)
tok=$(tq lease pol --worker w1 | jq -r .lease.token)
tq fail "$id" --lease "$tok" --error boom --worker w1 >/dev/null
expect_json "$(snapshot "$id")" '.events[-1] | [.to, .actor]' \
  '["failed","taskq"]' "the event that failed the task"

section "list: state filters, ids, limit"
fresh_db list
set_now $T0
ready=$(add_task lq --label team=a)
running=$(add_task lq --priority 9 --label team=b)
tq lease lq --worker w1 >/dev/null
paused=$(add_task lq)
tq pause "$paused" >/dev/null
delayed=$(add_task lq --delay 1h)
sleeping=$(add_task lq)
tq sleep "$sleeping" --for 1h >/dev/null
completed=$(add_task lq --priority 8)
tq done "$completed" --lease "$(tq lease lq | jq -r .lease.token)" >/dev/null
other=$(add_task otherq)

# ids_of ARGS...: the sorted ids `taskq list ARGS... -o id` prints, on one line.
ids_of() {
  expect_exit 0 "$TASKQ" list "$@" -o id
  sort -n <<<"$out" | tr '\n' ' ' | sed 's/ $//'
}
sorted() { printf '%s\n' "$@" | sort -n | tr '\n' ' ' | sed 's/ $//'; }

expect_eq "$(ids_of)" \
  "$(sorted "$ready" "$running" "$paused" "$delayed" "$sleeping" "$completed" "$other")" \
  "list -o id"
expect_eq "$(ids_of --state ready)" "$(sorted "$ready" "$other")" "--state ready"
expect_eq "$(ids_of --state running)" "$running" "--state running"
expect_eq "$(ids_of --state paused)" "$paused" "--state paused"
expect_eq "$(ids_of --state sleeping)" "$sleeping" "--state sleeping"
expect_eq "$(ids_of --state completed)" "$completed" "--state completed"
expect_eq "$(ids_of --state runnable)" \
  "$(sorted "$ready" "$running" "$delayed" "$other")" "--state runnable"
expect_eq "$(ids_of --state ready --queue lq)" "$ready" "--state ready --queue lq"
expect_eq "$(ids_of --queue otherq)" "$other" "--queue otherq"
expect_eq "$(ids_of --match team=b)" "$running" "--match team=b"
expect_eq "$(ids_of --state killed)" "" "--state killed"
expect_exit 0 "$TASKQ" list --limit 2 -o id
expect_eq "$(grep -c . <<<"$out")" 2 "lines with --limit 2"
expect_exit 0 "$TASKQ" list --state ready --limit 1 -o id
expect_eq "$(grep -c . <<<"$out")" 1 "lines with --state ready --limit 1"
expect_exit 2 "$TASKQ" list --state bogus

expect_exit 0 "$TASKQ" list -o json
expect_eq "$(grep -c . <<<"$out")" 7 "JSON lines"
expect_eq "$(jq -s 'map(.id) | sort | map(tostring) | join(" ")' -r <<<"$out")" \
  "$(sorted "$ready" "$running" "$paused" "$delayed" "$sleeping" "$completed" "$other")" \
  "ids in list -o json"
expect_json "$(jq -c "select(.id == $running)" <<<"$out")" .state runnable \
  "a leased task's state in JSON"

expect_exit 0 "$TASKQ" list
table=$out
# The table shows a leased task as running.
expect_contains "$(grep -E "^[[:space:]]*${running}[[:space:]]" <<<"$table")" \
  running "table row of the leased task"
expect_contains "$(grep -E "^[[:space:]]*${paused}[[:space:]]" <<<"$table")" \
  paused "table row of the paused task"

section "no colour when stdout is not a terminal"
for args in "list" "show $running" "stats" "why $paused" "queue list"; do
  # shellcheck disable=SC2086 # args are words
  expect_exit 0 env -u NO_COLOR "$TASKQ" $args
  expect_not_contains "$out" $'\e' "stdout of $cmd"
done

section "stats: counts per queue"
expect_exit 0 "$TASKQ" stats
for q in lq otherq; do
  expect_contains "$out" "$q" "stats table"
done
expect_exit 0 "$TASKQ" stats --queue otherq
expect_contains "$out" otherq "stats --queue otherq"
expect_not_contains "$out" lq "stats --queue otherq"
expect_exit 0 "$TASKQ" stats -o json
stats=$out
expect_eq "$(jq -s 'length' <<<"$stats")" 2 "JSON lines of stats"
lq_stats=$(jq -c 'select((.queue // .name) == "lq")' <<<"$stats")
expect_json "$lq_stats" .running 1 "lq running"
expect_json "$lq_stats" .ready 1 "lq ready"
counts='(.counts // .states // .)'
expect_json "$lq_stats" "$counts.paused" 1 "lq paused"
expect_json "$lq_stats" "$counts.sleeping" 1 "lq sleeping"
expect_json "$lq_stats" "$counts.completed" 1 "lq completed"
expect_json "$lq_stats" "$counts.runnable" 3 "lq runnable"
other_stats=$(jq -c 'select((.queue // .name) == "otherq")' <<<"$stats")
expect_json "$other_stats" .ready 1 "otherq ready"
expect_json "$other_stats" .running 0 "otherq running"

section "stats: oldest ready age and recent completions follow the clock"
# doc/reference/commands.md#stats names these figures but not their JSON keys;
# the keys are the binary's. The ready task and the completion are both from
# T0.
lq_at() {
  env TASKQ_NOW="$1" "$TASKQ" stats --queue lq -o json |
    jq -c '[.oldest_ready_seconds, .completed_last_minute, .completed_last_hour]'
}
expect_eq "$(lq_at 2026-11-21T08:00:30Z)" '[30,1,1]' "lq stats 30s after T0"
expect_eq "$(lq_at 2026-11-21T08:02:00Z)" '[120,0,1]' "lq stats 2m after T0"
expect_eq "$(lq_at 2026-11-21T09:01:00Z)" '[3660,0,0]' "lq stats 61m after T0"

section "why: one line per reason"
expect_exit 0 "$TASKQ" why "$paused"
expect_word "$out" paused "why paused"
expect_contains "$out" ops "why paused (by whom)"
expect_exit 0 "$TASKQ" why "$sleeping"
expect_word "$out" sleeping "why sleeping"
expect_contains "$out" 2026-11-21T09:00:00 "why sleeping (until)"
expect_exit 0 "$TASKQ" why "$running"
expect_word "$out" leased "why leased"
expect_contains "$out" w1 "why leased (by whom)"
expect_contains "$out" 2026-11-21T08:05:00 "why leased (until)"
expect_exit 0 "$TASKQ" why "$delayed"
expect_contains "$out" "not due" "why delayed"
expect_contains "$out" 2026-11-21T09:00:00 "why delayed (until)"
expect_exit 0 "$TASKQ" why "$completed"
expect_word "$out" completed "why completed"

section "retry: a failed or killed task begets a new one"
fresh_db retry
set_now $T0
failed=$(add_task rq --payload '{"n":7}' --label kind=x --priority 4 \
  --max-attempts 3)
tq fail "$failed" --lease "$(tq lease rq | jq -r .lease.token)" \
  --error boom --no-retry >/dev/null
before=$(snapshot "$failed")
set_now 2026-11-21T09:00:00Z
expect_exit 0 "$TASKQ" retry "$failed"
new=$("$TASKQ" list -o id | sort -n | tail -1)
expect_ne "$new" "$failed" "id of the retry"
expect_contains "$out" "$new" "retry output"
task=$(snapshot "$new")
expect_json "$task" .retry_of "$failed"
expect_json "$task" .queue rq
expect_json "$task" .state runnable
expect_json "$task" .payload '{"n":7}'
expect_json "$task" .labels '{"kind":"x"}'
expect_json "$task" .priority 4
expect_json "$task" .max_attempts 3
expect_json "$task" .attempts 0
expect_json "$task" .errors '[]'
expect_time "$(jq -r .created_at <<<"$task")" 2026-11-21T09:00:00Z created_at
expect_eq "$(snapshot "$failed")" "$before" "the failed task after retry"
expect_exit 0 "$TASKQ" lease rq
expect_json "$out" .id "$new"

killed=$(add_task rq)
tq kill "$killed" >/dev/null
expect_exit 0 "$TASKQ" retry "$killed"
new=$("$TASKQ" list -o id | sort -n | tail -1)
expect_json "$(snapshot "$new")" '[.retry_of, .state]' "[$killed,\"runnable\"]" \
  "retry of a killed task"

live=$(add_task rq)
before=$(snapshot "$live")
count=$(count_tasks)
expect_exit 4 "$TASKQ" retry "$live"
expect_err_format
expect_eq "$(count_tasks)" "$count" "tasks after refused retry"
expect_eq "$(snapshot "$live")" "$before" "runnable task after refused retry"

section "stats fits 80 columns: a column that says nothing goes, -o json keeps it"
fresh_db
add_task a-rather-long-queue-name -- true >/dev/null
add_task other -- true >/dev/null
expect_exit 0 env -u COLUMNS "$TASKQ" stats
expect_eq "$(awk '{ if (length($0) > 80) n++ } END { print n + 0 }' <<<"$out")" 0 \
  "no stats row is wider than 80"
expect_contains "$out" "READY" "a column with counts stays"
expect_not_contains "$out" "FAILED" "FAILED, 0 in every row, goes"
expect_exit 0 env COLUMNS=200 "$TASKQ" stats
expect_contains "$out" "FAILED" "with room, every column is shown"
expect_exit 0 env -u COLUMNS "$TASKQ" stats -o json
expect_eq "$(jq -s 'map(select(.queue) | has("failed")) | all' <<<"$out")" true \
  "-o json has every field"
