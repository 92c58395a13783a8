# Commands as tasks (doc/workers.md, "Commands as tasks"): `add QUEUE -- CMD
# [ARG...]` stores an argv in the task, `run QUEUE` with no `-- CMD`
# executes it with execve (never through a shell), and show, lease,
# export/import and retry carry it. `add --lines FILE|-` adds one JSON
# string payload per line, all or nothing.

db_digest() { db_dump | sha256sum; }

# unchanged WHAT EXIT CMD...: CMD exits EXIT and the database is the same
# afterwards.
unchanged() {
  local what=$1 want=$2 before
  shift 2
  before=$(db_digest)
  expect_exit "$want" "$@"
  expect_eq "$(db_digest)" "$before" "database after $what"
}

# The handler: writes its argv, NUL-terminated, to got/ID, and what its
# parent process is (run itself, not a shell) to got/ID.parent.
mkdir -p got
export GOT=$scratch/got
cat >argv.sh <<'EOF'
#!/bin/sh
printf '%s\0' "$@" >"$GOT/$TASKQ_ID"
readlink "/proc/$PPID/exe" >"$GOT/$TASKQ_ID.parent"
cat >"$GOT/$TASKQ_ID.stdin"
EOF
chmod +x argv.sh

# The words that a shell would change: spaces, quotes, $(...), globs,
# backslashes, a tab, a newline, an empty word, non-ASCII text, and a
# second --.
words=('two words' '"double"' "it's" '$(touch pwned)' '`touch pwned2`' '*' '?'
  'a\b' $'tab\there' $'new\nline' '' 'héllo wörld ✓' '--' '-x' '$HOME' '~')

section "add -- CMD stores the argv; run executes it byte for byte, no shell"
id=$(add_task argv -- "$scratch/argv.sh" "${words[@]}")
expect_exit 0 "$TASKQ" show "$id" -o json
expect_eq "$(jout '.command | length')" $((${#words[@]} + 1)) "words stored"
expect_eq "$(jout .payload)" null "payload without --payload"
expect_exit 0 "$TASKQ" run argv --until-empty
expect_out "leased 1: 1 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked"
printf '%s\0' "${words[@]}" >expected
check "the handler got every word byte for byte" cmp expected "got/$id"
check "no \$(...) or backquote ran" test ! -e pwned -a ! -e pwned2
expect_eq "$(cat "got/$id.parent")" "$(readlink -f "$TASKQ")" \
  "the handler's parent is taskq run itself (no shell between)"

section "show and lease show the command"
id=$(add_task shown -- printf '%s\n' 'a b' "it's" plain)
expect_exit 0 "$TASKQ" show "$id"
expect_contains "$out" "command:     printf '%s\\n' 'a b' 'it'\\''s' plain" "show's command line"
expect_exit 0 "$TASKQ" lease shown -o json
expect_json "$out" .command '["printf","%s\\n","a b","it'"'"'s","plain"]'
plain=$(add_task shown --payload 1)
expect_exit 0 "$TASKQ" show "$plain" -o json
expect_json "$out" .command null "a task without a command"
expect_exit 0 "$TASKQ" show "$plain"
expect_not_contains "$out" "command:" "show of a task without a command"

section "--payload goes with a command: the payload arrives on stdin"
id=$(add_task withpayload --payload '{"n":1}' -- "$scratch/argv.sh" x)
expect_exit 0 "$TASKQ" run withpayload --until-empty
expect_eq "$(cat "got/$id.stdin")" '{"n":1}' "stdin of the task's command"

section "run QUEUE -- CMD runs CMD, not the task's command"
id=$(add_task override -- sh -c 'touch override-task-ran')
expect_exit 0 "$TASKQ" run override --until-empty -- "$scratch/argv.sh" given
check "the task's own command did not run" test ! -e override-task-ran
printf '%s\0' given >expected
check "CMD ran, with its own arguments" cmp expected "got/$id"

section "a command found nowhere fails its task for good at once (no retry)"
id=$(add_task missing -- no-such-command-taskq-test arg)
expect_exit 6 "$TASKQ" run missing --until-empty
expect_eq "$(state "$id")" failed
expect_eq "$(field "$id" '.errors[0].error')" \
  'cannot run no-such-command-taskq-test: no such executable file on $PATH'

section "a task without a command, leased by a run without -- CMD, fails for good"
id=$(add_task mixed --text nocmd)
ok=$(add_task mixed -- "$scratch/argv.sh" fine)
expect_exit 6 "$TASKQ" run mixed --until-empty
expect_eq "$(state "$id") $(state "$ok")" "failed completed"
expect_eq "$(field "$id" '.errors[0].error')" "task has no command and run was given no -- CMD"

section "refused: no command after --, an empty name, bytes that are not UTF-8"
add_task keep >/dev/null # the database exists
unchanged "add q --" 2 "$TASKQ" add bad --
expect_err_format
expect_err_contains "--"
unchanged "add q -- ''" 2 "$TASKQ" add bad -- '' x
expect_err_format
unchanged "add q -- non-UTF-8" 2 "$TASKQ" add bad -- printf $'caf\xe9'
expect_err_format
expect_err_contains "not UTF-8"
unchanged "add q -- non-UTF-8 name" 2 "$TASKQ" add bad -- $'\xff' x
expect_err_contains "not UTF-8"
unchanged "run q --" 2 "$TASKQ" run keep --until-empty --

section "retry copies the command"
id=$(add_task again --max-errors 1 -- sh -c 'test -e "$GOT/again-ok" || exit 3; printf x >"$GOT/again-ran"')
expect_exit 6 "$TASKQ" run again --until-empty
expect_eq "$(state "$id")" failed
expect_exit 0 "$TASKQ" retry "$id"
new=$out
expect_eq "$(field "$new" .command)" "$(field "$id" .command)" "the retry's command"
touch got/again-ok
expect_exit 0 "$TASKQ" run again --until-empty
expect_eq "$(state "$new")" completed
expect_eq "$(cat got/again-ran)" x "the retry ran the command"

section "export and import carry the command"
fresh_db carry
id=$(add_task carry -- "$scratch/argv.sh" "${words[@]}")
add_task carry --payload 2 >/dev/null # and a task without one
expect_exit 0 "$TASKQ" export --queue carry
image=$out
expect_eq "$(head -n1 <<<"$image" | jq -c '.command[1:]')" "$(printf '%s\0' "${words[@]}" E | jq -Rsc 'split("\u0000")[:-1]')" \
  "the export holds the command as a JSON array"
fresh_db carried
expect_exit 0 "$TASKQ" import - <<<"$image"
expect_exit 0 "$TASKQ" export --queue carry
expect_eq "$out" "$image" "export of the import: the same bytes"
expect_exit 0 "$TASKQ" run carry --until-empty -- true # the one without
expect_exit 0 "$TASKQ" run carry --until-empty
printf '%s\0' "${words[@]}" >expected
check "the imported task ran its argv byte for byte" cmp expected "got/$id"

section "import refuses a command that is not an argv"
fresh_db badimport
add_task keep >/dev/null
line=$(head -n1 <<<"$image")
for bad in '"ls"' '[]' '[""]' '[1]' '["ls",2]' '["a\u0000b"]' '{"argv":["ls"]}'; do
  unchanged "import with command $bad" 2 "$TASKQ" import - \
    <<<"$(jq -c --argjson c "$bad" '.id = 1000 | .command = $c' <<<"$line")"
  expect_err_contains "command"
done

# --- add --lines ----------------------------------------------------------------

section "add --lines FILE: one JSON string payload per line, as written"
printf '%s\n' 'a.png' 'with space.png' '"quoted"' 'back\slash' '' '  padded  ' 'ünï ✓' >lines.txt
printf 'last without newline' >>lines.txt
expect_exit 0 "$TASKQ" add lines --lines lines.txt --label src=lines
expect_out 8
expect_exit 0 "$TASKQ" list --queue lines -o json
expect_eq "$(jq -s -c 'sort_by(.id) | map(.payload)' <<<"$out")" \
  '["a.png","with space.png","\"quoted\"","back\\slash","","  padded  ","ünï ✓","last without newline"]' \
  "payloads, in file order, the empty line kept"
expect_eq "$(jq -s -c 'map(.labels.src) | unique' <<<"$out")" '["lines"]' "options apply to every task"

section "add --lines -: stdin; -o id prints the ids; a final newline adds no task"
expect_exit 0 "$TASKQ" add lines2 --lines - -o id < <(printf 'x\ny\n')
expect_eq "$(grep -c . <<<"$out")" 2 "ids printed"
expect_eq "$("$TASKQ" list --queue lines2 -o id | sort -n)" "$(sort -n <<<"$out")" "printed ids are the added tasks"
expect_exit 0 "$TASKQ" add lines3 --lines - < /dev/null
expect_out 0
expect_exit 0 "$TASKQ" add lines3 --lines - < <(printf '\n')
expect_out 1 # one empty line: one empty string
expect_exit 0 "$TASKQ" add lines4 --lines - < <(printf 'a\r\n')
expect_out 1
expect_eq "$("$TASKQ" list --queue lines4 -o json | jq -c .payload)" '"a\r"' \
  "a carriage return is the line's (only the newline ends it)"

section "add --lines with -- CMD: every task runs the command with its line on stdin"
printf '%s\n' one two >cmdlines.txt
expect_exit 0 "$TASKQ" add lcmd --lines cmdlines.txt -o id -- "$scratch/argv.sh" fixed
ids=($out)
expect_exit 0 "$TASKQ" run lcmd --until-empty
expect_eq "$(cat "got/${ids[0]}.stdin")|$(cat "got/${ids[1]}.stdin")" "one|two" "each task's line on stdin"

section "a bad line in the middle adds none: the database is unchanged"
printf 'good\n' >bad.txt
printf 'bad \xff byte\n' >>bad.txt
printf 'good too\n' >>bad.txt
unchanged "add --lines with a non-UTF-8 line" 2 "$TASKQ" add lines --lines bad.txt
expect_err_format
expect_err_contains "line 2"
expect_err_contains "nothing was added"
unchanged "add --lines - with a non-UTF-8 line" 2 "$TASKQ" add lines --lines - <bad.txt
unchanged "add --lines of a missing file" 2 "$TASKQ" add lines --lines no-such-file
unchanged "--lines with --jsonl" 2 "$TASKQ" add lines --lines lines.txt --jsonl lines.txt
unchanged "--lines with --payload" 2 "$TASKQ" add lines --lines lines.txt --payload 1
unchanged "--lines with --unique" 2 "$TASKQ" add lines --lines lines.txt --unique k
expect_err_contains "--lines"
