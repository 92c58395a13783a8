# Bulk add (doc/reference/commands.md#bulk-add): one
# payload per line from a file or stdin, one transaction, all or nothing.

set_now 2026-11-21T08:00:00Z

cat >three.jsonl <<'JSONL'
{"file":"a.png"}
"just a string"

[1,2,3]
JSONL

section "add --jsonl FILE adds one task per line and prints the count"
expect_exit 0 "$TASKQ" add bulk --jsonl three.jsonl --label src=file --priority 2
expect_out 3
expect_exit 0 "$TASKQ" list --queue bulk -o json
expect_eq "$(grep -c . <<<"$out")" 3 "tasks added"
expect_eq "$(jq -s -c 'sort_by(.id) | map(.payload)' <<<"$out")" \
  '[{"file":"a.png"},"just a string",[1,2,3]]' "payloads, in file order"
expect_eq "$(jq -s -c 'map(.labels.src + ":" + (.priority | tostring)) | unique' <<<"$out")" \
  '["file:2"]' "the other options apply to every task"

section "add --jsonl - reads stdin; -o id prints the ids"
before=$(count_tasks)
expect_exit 0 "$TASKQ" add bulk2 --jsonl - -o id <three.jsonl
expect_eq "$(grep -c . <<<"$out")" 3 "ids printed"
expect_match "$out" $'^[0-9]+(\n[0-9]+)*$' "ids printed"
ids=$out
expect_eq "$("$TASKQ" list --queue bulk2 -o id | sort -n)" "$(sort -n <<<"$ids")" \
  "printed ids are the added tasks"
expect_eq "$(count_tasks)" $((before + 3)) "tasks after stdin add"
expect_exit 0 "$TASKQ" add bulk3 --jsonl - < <(printf '{"n":1}\n{"n":2}\n')
expect_out 2

section "a bad line aborts the whole add"
printf '{"ok":1}\n{"ok":2}\n{bad\n{"ok":4}\n' >bad.jsonl
before=$(count_tasks)
expect_exit 2 "$TASKQ" add bulk --jsonl bad.jsonl
expect_err_format
expect_err_word 3 # the line number
expect_eq "$(count_tasks)" "$before" "tasks after a bad file"
expect_exit 2 "$TASKQ" add bulk --jsonl - <bad.jsonl
expect_eq "$(count_tasks)" "$before" "tasks after bad stdin"
# The last line is bad: everything before it must be rolled back too.
printf '{"ok":1}\n{"ok":2}\nnot json' >badlast.jsonl
expect_exit 2 "$TASKQ" add bulk --jsonl badlast.jsonl
expect_eq "$(count_tasks)" "$before" "tasks after a bad last line"

section "an empty input adds nothing"
: >empty.jsonl
expect_exit 0 "$TASKQ" add bulk --jsonl empty.jsonl
expect_out 0
expect_eq "$(count_tasks)" "$before" "tasks after an empty file"

section "a missing file is an error and adds nothing"
"$TASKQ" add bulk --jsonl no-such-file.jsonl >/dev/null 2>&1
rc=$?
check "exit status $rc is an error" test "$rc" -ne 0
expect_eq "$(count_tasks)" "$before" "tasks after a missing file"

section "a large input streams in one go"
seq 1 5000 | sed 's/.*/{"n":&}/' >big.jsonl
expect_exit 0 "$TASKQ" add big --jsonl big.jsonl
expect_out 5000
expect_exit 0 "$TASKQ" lease big
expect_json "$out" .payload '{"n":1}' "first task leased"
