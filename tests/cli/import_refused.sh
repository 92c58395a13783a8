# Times and imports from outside: every time that enters the database is within
# years 0000-9999, and `import` takes only rows add/tx could have written
# and db check accepts. A refused import names the line and changes nothing.

# db_digest: the whole database as SQL text, hashed.
db_digest() { db_dump | sha256sum; }

k_min=-62167219200000 # 0000-01-01T00:00:00.000Z
k_max=253402300799999 # 9999-12-31T23:59:59.999Z
base='"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1'
good="{\"id\":900,$base}"

# refuse LINE WANT: a file of a good line, a blank line and LINE is refused
# with exit 2 and a message naming line 3; the database is unchanged.
refuse() {
  local before
  before=$(db_digest)
  printf '%s\n\n%s\n' "$good" "$1" >bad.jsonl
  expect_exit 2 "$TASKQ" import bad.jsonl
  expect_err_contains "taskq: line 3: $2"
  expect_err_contains "; nothing was imported"
  expect_eq "$(grep -c . <<<"$err")" 1 "one line: $err"
  expect_eq "$(db_digest)" "$before" "nothing imported: $1"
}

section "times outside years 0000-9999 are refused, in every time column"
fresh_db
tq add keep >/dev/null
for v in -9223372036854775808 9223372036854775807 $((k_min - 1)) $((k_max + 1)); do
  for col in run_at created_at updated_at broadcast_until; do
    row="{\"id\":901,$base}"
    row=${row/\"$col\":1/\"$col\":$v}
    [[ $row == *"\"$col\":$v"* ]] || row="{\"id\":901,$base,\"$col\":$v}"
    refuse "$row" "'$col' must be a time within years 0000-9999"
  done
  refuse "{\"id\":901,$base,\"lease_token\":\"t\",\"lease_worker\":\"w\",\"lease_expires\":$v,\"lease_for_ms\":1000}" \
    "'lease_expires' must be a time within years 0000-9999"
  refuse "{\"id\":901,$base,\"events\":[{\"time\":$v,\"message\":\"lease\"}]}" \
    "events: 'time' must be a time within years 0000-9999"
  refuse "{\"id\":901,$base,\"errors\":[{\"time\":$v,\"message\":\"boom\"}]}" \
    "errors: 'time' must be a time within years 0000-9999"
  refuse "{\"id\":901,$base,\"deliveries\":[{\"worker\":\"w\",\"token\":\"t\",\"time\":$v}]}" \
    "deliveries: 'time' must be a time within years 0000-9999"
done

section "after a refused out-of-range import every command still works"
# On the old code the row went in, and these aborted under UBSan (signed
# overflow in chrono) or printed year 10850.
printf '%s\n' "{\"id\":901,${base/\"run_at\":1/\"run_at\":-9223372036854775808}}" >min.jsonl
expect_exit 2 "$TASKQ" import min.jsonl
expect_exit 0 "$TASKQ" list -o json
expect_exit 3 "$TASKQ" show 901
expect_exit 0 "$TASKQ" events
expect_exit 0 "$TASKQ" lease keep
expect_exit 0 "$TASKQ" db check

section "the edges themselves are kept and print as years 0000 and 9999"
fresh_db
printf '%s\n' \
  "{\"id\":1,\"queue\":\"n\",\"state\":\"sleeping\",\"payload\":1,\"run_at\":$k_max,\"created_at\":$k_min,\"updated_at\":$k_max,\"events\":[{\"time\":$k_min,\"message\":\"sleep\"}],\"errors\":[{\"time\":$k_max,\"message\":\"boom\"}]}" \
  "{\"id\":2,\"queue\":\"n\",\"state\":\"runnable\",\"payload\":1,\"run_at\":$k_min,\"created_at\":$k_min,\"updated_at\":$k_min,\"lease_token\":\"t\",\"lease_worker\":\"w\",\"lease_expires\":$k_max,\"lease_for_ms\":60000}" \
  >edges.jsonl
expect_exit 0 "$TASKQ" import edges.jsonl
expect_out "imported 2 tasks"
expect_exit 0 "$TASKQ" show 1 -o json
expect_jq "$out" '.run_at == "9999-12-31T23:59:59.999Z" and .created_at == "0000-01-01T00:00:00Z"'
expect_exit 0 "$TASKQ" show 2 -o json
expect_jq "$out" '.run_at == "0000-01-01T00:00:00Z" and .lease.expires_at == "9999-12-31T23:59:59.999Z"'
expect_exit 0 "$TASKQ" list
expect_exit 0 "$TASKQ" events
expect_exit 0 "$TASKQ" db check
times='[.id, .run_at, .created_at, .updated_at, .lease_expires, .events[]?.time, .errors[]?.time]'
expect_exit 0 "$TASKQ" export
expect_eq "$(jq -c "$times" <<<"$out")" "$(jq -c "$times" edges.jsonl)" "the edges export as imported"

section "rows add and tx would refuse are refused, naming the line"
fresh_db
tq add keep >/dev/null
while IFS=$'\t' read -r extra want; do
  refuse "{\"id\":901,$base,$extra}" "$want"
done <<'CASES'
"attempts":-1	'attempts' must be 0 or more
"max_attempts":0	'max_attempts' must be at least 1
"rev":0	'rev' must be at least 1
"blockers":-2	'blockers' must be 0 or more
"checkpoint_req":2	'checkpoint_req' must be 0 or 1
"max_errors":0	'max_errors' must be between 1 and 1000000
"max_errors":1000001	'max_errors' must be between 1 and 1000000
"error_window_ms":0	'error_window_ms' must be a duration of 1 ms to 100 years
"retry_delay_ms":-1	'retry_delay_ms' must be a duration of 0 to 100 years
"max_delay_ms":9223372036854775807	'max_delay_ms' must be a duration of 0 to 100 years
"lease_for_ms":-5	'lease_for_ms' must be a duration of 0 to 100 years
"backoff":"linear"	'backoff' must be constant or exponential
"retry_of":0	'retry_of' must be a task id
"labels":{"a b":"c"}	'labels' must be an object of strings
"labels":{"k":"tab\there"}	'labels' must be an object of strings
"labels":{"k":1}	'labels' must be an object of strings
"root":{"=":"x"}	'root' must be an object of strings
"sync":[]	'sync' must be an object of strings
"after_ids":[0]	'after_ids' must be an array of task ids
"lease_token":"t"	'lease_token', 'lease_worker' and 'lease_expires' must be given together
"events":[{"time":1,"message":"x","from_state":"asleep"}]	events: 'from_state' must be a task state
"deps":[{"dep_id":0}]	deps: 'dep_id' must be a task id
"to_worker":""	'to_worker' must be a worker's name: UTF-8 text, not empty
"to_worker":"a\nb"	'to_worker' must be a worker's name: UTF-8 text, not empty
"to_worker":"a\u007fb"	'to_worker' must be a worker's name: UTF-8 text, not empty
"trigger_key":"a=b"	'trigger_key' must be a gate key of letters, digits
"trigger_key":""	'trigger_key' must be a gate key of letters, digits
"unique_key":"a\u0001b"	'unique_key' must be UTF-8 text without control characters
"broadcast_until":5,"to_worker":"w"	'to_worker' must be absent from a broadcast (it goes to every worker)
"broadcast_until":5,"unique_key":"k"	'unique_key' must be absent from a broadcast (it goes to every worker)
"broadcast_until":5,"after_ids":[1]	'after_ids' must be absent from a broadcast (it goes to every worker)
"broadcast_until":5,"root":{"k":"v"}	'root' must be absent from a broadcast (it goes to every worker)
"broadcast_until":1	'broadcast_until' must be later than 'created_at' (a broadcast's ttl is longer than 0)
CASES
refuse "{\"id\":901,${base/\"queue\":\"n\"/\"queue\":\"a b\"}}" "'queue' must be a name of 1-128 letters"
refuse "{\"id\":901,${base/\"queue\":\"n\"/\"queue\":\"\"}}" "'queue' must be a name of 1-128 letters"

section "rows that break what db check checks are refused, naming the line"
refuse "{\"id\":901,${base/runnable/fault}}" "task 901: its state is fault"
refuse "{\"id\":901,${base/runnable/completed},\"lease_token\":\"t\",\"lease_worker\":\"w\",\"lease_expires\":5}" \
  "task 901: it holds a lease but is not runnable"
refuse "{\"id\":901,${base/runnable/paused},\"lease_token\":\"t\",\"lease_worker\":\"w\",\"lease_expires\":5}" \
  "task 901: it holds a lease but is not runnable"
refuse "{\"id\":901,$base,\"blockers\":7}" \
  "task 901: its 'blockers' is not the number of its unfinished dependencies"
# The count is checked once every row is in: a dependency may come later.
before=$(db_digest)
printf '%s\n%s\n%s\n' \
  "{\"id\":910,$base,\"blockers\":1,\"after_ids\":[911],\"deps\":[{\"dep_id\":911}]}" \
  "{\"id\":911,${base/runnable/completed}}" \
  "$good" >later.jsonl
expect_exit 2 "$TASKQ" import later.jsonl
expect_err_contains "taskq: line 1: task 910: its 'blockers' is not the number"
expect_eq "$(db_digest)" "$before" "nothing imported from later.jsonl"
printf '%s\n%s\n' \
  "{\"id\":910,$base,\"blockers\":1,\"after_ids\":[911],\"deps\":[{\"dep_id\":911}]}" \
  "{\"id\":911,$base}" >later.jsonl
expect_exit 0 "$TASKQ" import later.jsonl
expect_out "imported 2 tasks"
expect_exit 0 "$TASKQ" db check
tok=$(tq lease n --worker w -o json | jq -r .lease.token)
expect_exit 0 "$TASKQ" done 911 --lease "$tok"
expect_eq "$(state 910)" runnable "the imported waiter is released by its imported dependency"

section "times given with an offset stay within years 0000-9999"
fresh_db
# Refused before anything is written: no file on SQLite, no tables in a
# server's database on PostgreSQL (which taskq reads the clock of first).
before=$(db_digest)
for at in 9999-12-31T23:59:59-23:59 9999-12-31T23:30:00-00:31 0000-01-01T00:00:00+00:01; do
  expect_exit 2 "$TASKQ" add q --at "$at"
  expect_err_contains "--at"
  expect_exit 2 "$TASKQ" events --since "$at"
  expect_exit 2 env TASKQ_NOW="$at" "$TASKQ" add q
  expect_err_contains "invalid TASKQ_NOW"
  expect_exit 2 bash -c 'printf %s "$1" | "$TASKQ" tx' _ "{\"create\":[{\"queue\":\"q\",\"run_at\":\"$at\"}]}"
  expect_err_contains "run_at"
done
expect_eq "$(db_digest)" "$before" "nothing was added"
expect_exit 0 "$TASKQ" add q --at 9999-12-31T00:00:00-23:59
expect_exit 0 "$TASKQ" show "$out" -o json
expect_jq "$out" '.run_at == "9999-12-31T23:59:00Z"'

section "now + a duration may not leave year 9999"
fresh_db
set_now 9999-12-31T00:00:00Z
id=$(add_task q)
before=$(db_digest)
expect_exit 2 "$TASKQ" add q --delay 2d
expect_err_contains "--delay 2d from 9999-12-31T00:00:00Z ends after 9999-12-31T23:59:59.999Z"
expect_exit 2 "$TASKQ" add b --broadcast --ttl 1w
expect_err_contains "--ttl"
expect_exit 2 "$TASKQ" sleep "$id" --for 100y
expect_exit 2 "$TASKQ" sleep "$id" --for 1d
expect_err_contains "--for"
expect_exit 2 "$TASKQ" lease q --for 2d
expect_err_contains "--for"
expect_eq "$(db_digest)" "$before" "nothing changed"
tok=$(tq lease q --for 1h -o json | jq -r .lease.token)
before=$(db_digest)
expect_exit 2 "$TASKQ" heartbeat "$id" --lease "$tok" --for 1d
expect_err_contains "--for"
expect_exit 2 "$TASKQ" fail "$id" --lease "$tok" --error boom --retry-in 1d
expect_err_contains "--retry-in"
expect_exit 2 "$TASKQ" release "$id" --lease "$tok" --delay 1d
expect_err_contains "--delay"
expect_eq "$(db_digest)" "$before" "nothing changed"
expect_exit 0 "$TASKQ" add q --delay 23h59m59s
expect_exit 0 "$TASKQ" db check
