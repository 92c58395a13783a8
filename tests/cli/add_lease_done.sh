# The happy path: add a task, lease it, finish it; payload forms, the task's
# JSON shape (doc/reference/task.md#json-form) and global options anywhere on
# the command line.

set_now 2026-11-21T08:00:00Z

section "add prints the new id"
expect_exit 0 "$TASKQ" add thumbs --payload '{"file":"a.png"}' \
  --label kind=image --priority 3
expect_match "$out" '^[0-9]+$' "add output"
id=$out
expect_eq "$(state "$id")" runnable "state after add"
expect_json "$(snapshot "$id")" .payload '{"file":"a.png"}' "stored payload"

section "lease prints the task with its lease as one JSON line"
expect_exit 0 "$TASKQ" lease thumbs --worker w1
expect_eq "$(wc -l <<<"$out")" 1 "lines printed by lease"
lease=$out
for key in id rev queue state payload labels priority attempts max_attempts \
  run_at created_at updated_at lease errors checkpoint result; do
  expect_json "$lease" "has(\"$key\")" true "lease JSON has $key"
done
expect_json "$lease" .id "$id"
expect_json "$lease" '.rev | type' number
expect_json "$lease" .queue thumbs
expect_json "$lease" .state runnable
expect_json "$lease" .payload '{"file":"a.png"}'
expect_json "$lease" .labels '{"kind":"image"}'
expect_json "$lease" .priority 3
expect_json "$lease" .attempts 1
expect_json "$lease" .max_attempts null
expect_time "$(jq -r .run_at <<<"$lease")" 2026-11-21T08:00:00Z run_at
expect_time "$(jq -r .created_at <<<"$lease")" 2026-11-21T08:00:00Z created_at
expect_time "$(jq -r .updated_at <<<"$lease")" 2026-11-21T08:00:00Z updated_at
# The three lease fields of doc/reference/task.md#json-form, when the lease
# began (list/show's STARTED), and whether an operator froze its command.
expect_json "$lease" '.lease | keys | sort' '["expires_at","frozen","started_at","token","worker"]'
expect_json "$lease" .lease.frozen false
expect_time "$(jq -r .lease.started_at <<<"$lease")" 2026-11-21T08:00:00Z lease.started_at
expect_json "$lease" '.lease.token | type == "string" and length > 0' true \
  "lease token is a non-empty string"
expect_json "$lease" .lease.worker w1
# The default lease is 5 minutes.
expect_time "$(jq -r .lease.expires_at <<<"$lease")" 2026-11-21T08:05:00Z \
  lease.expires_at
expect_json "$lease" .errors '[]'
expect_json "$lease" .checkpoint null
expect_json "$lease" .result null
rfc3339='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$'
for key in run_at created_at updated_at lease.expires_at; do
  expect_match "$(jq -r ".$key" <<<"$lease")" "$rfc3339" "$key is RFC 3339 UTC"
done
token=$(jq -r .lease.token <<<"$lease")
rev_leased=$(jq -r .rev <<<"$lease")

section "show agrees with the lease while it is live"
expect_exit 0 "$TASKQ" show "$id" -o json
expect_json "$out" .lease.token "$token"
expect_json "$out" .lease.worker w1
expect_json "$out" .attempts 1

section "done completes the task and stores the result"
set_now 2026-11-21T08:01:00Z
expect_exit 0 "$TASKQ" done "$id" --lease "$token" --result '{"thumb":"a.jpg"}'
expect_out_empty
expect_exit 0 "$TASKQ" show "$id" -o json
expect_json "$out" .state completed
expect_json "$out" .result '{"thumb":"a.jpg"}'
expect_json "$out" .lease null
expect_json "$out" ".rev > $rev_leased" true "rev grew with done"
expect_time "$(jout .updated_at)" 2026-11-21T08:01:00Z updated_at
expect_time "$(jout .created_at)" 2026-11-21T08:00:00Z created_at
expect_exit 75 "$TASKQ" lease thumbs --worker w1

section "done without --result stores no result"
id=$(add_task plain)
token=$(tq lease plain | jq -r .lease.token)
expect_exit 0 "$TASKQ" done "$id" --lease "$token"
expect_eq "$(state "$id")" completed
expect_eq "$(field "$id" .result)" null "result"

section "payload forms"
id=$(add_task forms --text 'hello world')
expect_jq "$(snapshot "$id")" '.payload == "hello world"' \
  "--text stores a JSON string"
id=$(add_task forms --text '{"a":1}')
expect_jq "$(snapshot "$id")" '.payload == "{\"a\":1}"' \
  "--text stores JSON-looking text as a string"
id=$(add_task forms --text '')
expect_jq "$(snapshot "$id")" '.payload == ""' "--text '' stores an empty string"
id=$(add_task forms)
expect_eq "$(field "$id" .payload)" null "no payload is null"
printf '{"b":[1,2,{"c":null}],"a":"x"}\n' >payload.json
id=$(add_task forms --payload-file payload.json)
expect_jq "$(field "$id" .payload)" '. == {"a":"x","b":[1,2,{"c":null}]}' \
  "--payload-file stores the file's JSON"
for value in 42 '"str"' '[1,2]' true null 3.5; do
  id=$(add_task forms --payload "$value")
  expect_jq "$(snapshot "$id")" ".payload == $value" "payload $value"
done
id=$(add_task forms --payload '{"text":"naïve 日本 🎉"}')
expect_eq "$(field "$id" .payload.text)" 'naïve 日本 🎉' "non-ASCII payload"

section "the payload is stored exactly as given"
# Numbers that do not fit a double or an int64 must survive, digit for digit
# (ids from other systems); jq would round them, so compare the text.
exact='{"big":12345678901234567890123,"f":1.0,"z":[],"a":{}}'
id=$(add_task exact --payload "$exact")
expect_contains "$(snapshot "$id")" "\"payload\":$exact" "show -o json"
expect_exit 0 "$TASKQ" lease exact -o env
expect_eq "$(eval "$out" && printf '%s' "$TASKQ_PAYLOAD")" "$exact" \
  "TASKQ_PAYLOAD"

section "add options end up in the task"
id=$(add_task opts --label a=1 --label b=two --priority -5 --max-attempts 3)
expect_jq "$(snapshot "$id")" \
  '.labels == {"a":"1","b":"two"} and .priority == -5 and .max_attempts == 3'
id=$(add_task opts --delay 90s)
expect_time "$(field "$id" .run_at)" 2026-11-21T08:02:30Z "run_at with --delay"
id=$(add_task opts --at 2026-11-22T10:00:00Z)
expect_time "$(field "$id" .run_at)" 2026-11-22T10:00:00Z "run_at with --at"

section "times with an offset are stored and printed in UTC"
id=$(add_task tz --at 2026-11-22T12:00:00+02:00)
expect_exit 0 "$TASKQ" show "$id" -o json
expect_match "$(jout .run_at)" '^2026-11-22T10:00:00(\.0+)?Z$' "run_at in UTC"

section "ids are stable integers that grow"
a=$(add_task ids)
b=$(add_task ids)
check "second id ($b) is greater than first ($a)" test "$b" -gt "$a"

section "global options are accepted before and after the command"
expect_exit 0 "$TASKQ" --db other.db add elsewhere --text x
expect_match "$out" '^[0-9]+$'
expect_exit 0 "$TASKQ" add elsewhere --text y --db other.db
expect_exit 0 "$TASKQ" --db other.db -o id list
expect_eq "$(grep -c . <<<"$out")" 2 "tasks in other.db"
expect_exit 0 "$TASKQ" list --queue elsewhere -o id
expect_out_empty
expect_exit 0 "$TASKQ" -o json --db other.db --worker wx lease elsewhere
expect_json "$out" .lease.worker wx
expect_exit 0 "$TASKQ" lease elsewhere --db other.db --output json --worker wy
expect_json "$out" .lease.worker wy
expect_exit 0 "$TASKQ" --output json show "$a"
expect_json "$out" .id "$a"
