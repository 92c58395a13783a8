# Shell strings (doc/reference/commands.md#add): `add QUEUE --sh LINE`
# stores the command /bin/sh -c LINE, shown and exported as that argv and
# run by the shell; a lone word after -- that holds spaces or shell
# operators is refused at `add` with the --sh way to say it; a program
# that does not exist fails its task for good at once instead of being
# retried by the error policy.

db_digest() { db_dump | sha256sum; }

# refused WHAT CMD...: CMD exits 2 with one line on stderr, "taskq: ...",
# and the database is the same afterwards.
refused() {
  local what=$1 before
  shift
  before=$(db_digest)
  expect_exit 2 "$@"
  expect_err_format
  expect_eq "$(grep -c . <<<"$err")" 1 "lines on stderr of $what"
  expect_eq "$(db_digest)" "$before" "database after $what"
}

mkdir -p got
export GOT=$scratch/got

section "add --sh LINE stores /bin/sh -c LINE; show and export show it"
id=$(add_task jobs --sh 'echo hi; ls')
expect_exit 0 "$TASKQ" show "$id" -o json
expect_json "$out" .command '["/bin/sh","-c","echo hi; ls"]' "the stored argv"
expect_exit 0 "$TASKQ" show "$id"
expect_contains "$out" "command:     /bin/sh -c 'echo hi; ls'" "show's command line"
expect_exit 0 "$TASKQ" export --queue jobs
expect_json "$out" .command '["/bin/sh","-c","echo hi; ls"]' "the exported argv"
expect_exit 0 "$TASKQ" kill "$id"

section "run executes the line with the shell: operators, expansions, stdin"
id=$(add_task sh --text 'from stdin' --sh 'echo "one $TASKQ_ID" >"$GOT/$TASKQ_ID" && echo two >>"$GOT/$TASKQ_ID"; cat >"$GOT/$TASKQ_ID.stdin"')
expect_exit 0 "$TASKQ" run sh --until-empty
expect_eq "$(state "$id")" completed
expect_eq "$(cat "got/$id")" "one $id"$'\n'"two" "what the line wrote"
expect_eq "$(cat "got/$id.stdin")" "from stdin" "the payload on the line's stdin"
failing=$(add_task sh --max-errors 1 --sh 'exit 3')
expect_exit 6 "$TASKQ" run sh --until-empty
expect_eq "$(state "$failing")" failed
expect_eq "$(field "$failing" '.errors[0].error')" "exit status 3"

section "--jsonl with --sh: every task runs the line"
printf '%s\n' 1 2 >lines.jsonl
expect_exit 0 "$TASKQ" add bulk --jsonl lines.jsonl --sh 'cat >"$GOT/bulk-$TASKQ_ID"' -o id
ids=$out
expect_eq "$(grep -c . <<<"$ids")" 2 "tasks added"
expect_exit 0 "$TASKQ" run bulk --until-empty
for i in $ids; do
  expect_eq "$(field "$i" .command)" '["/bin/sh","-c","cat >\"$GOT/bulk-$TASKQ_ID\""]' "task $i's command"
  check "task $i's line ran" test -e "got/bulk-$i"
done

section "refused at add: a lone word holding a shell command line"
add_task keep >/dev/null
for word in 'echo hi; ls' 'ls -l' 'make && make test' 'a|b' 'date > now' \
  'sleep 1 &' '$(id)' '`id`' 'f()' $'two\twords'; do
  refused "add -- '$word'" "$TASKQ" add jobs -- "$word"
  expect_err_contains "is one word, not a program and its arguments"
  expect_err_contains "taskq add jobs --sh "
done
refused "add -- 'echo hi; ls'" "$TASKQ" add jobs -- 'echo hi; ls'
expect_eq "$err" "taskq: 'echo hi; ls' is one word, not a program and its arguments; to run it with /bin/sh -c: taskq add jobs --sh 'echo hi; ls' (or give the program and each argument as words after --)" \
  "the refusal, whole"
refused "add -- a word with a newline" "$TASKQ" add jobs -- $'echo a\necho b'
expect_err_contains "taskq add jobs --sh LINE"

section "refused: --sh with -- CMD, an empty line, a line not UTF-8"
refused "--sh and --" "$TASKQ" add jobs --sh 'echo hi' -- echo hi
expect_err_contains "give only one of --sh LINE and -- CMD"
refused "--sh ''" "$TASKQ" add jobs --sh ''
expect_err_contains "--sh: an empty value is not allowed"
refused "--sh of blanks" "$TASKQ" add jobs --sh '   '
expect_err_contains "give the command line after --sh"
refused "--sh not UTF-8" "$TASKQ" add jobs --sh $'echo caf\xe9'
expect_err_contains "not UTF-8"

section "accepted: words after --, and a program whose name holds a space"
id=$(add_task words -- echo 'hi; ls')
expect_eq "$(field "$id" .command)" '["echo","hi; ls"]' "an argument may hold anything"
printf '#!/bin/sh\necho ran >"$GOT/spaced"\n' >"my prog"
chmod +x "my prog"
expect_exit 0 "$TASKQ" add spaced -- "$scratch/my prog"
expect_eq "$err" "" "no note for a program that exists"
expect_exit 0 "$TASKQ" run spaced --until-empty
expect_eq "$(cat got/spaced)" ran "the program with a space in its name ran"

section "a program found nowhere: a note at add, failed for good at once by run"
expect_exit 0 "$TASKQ" add missing --max-errors 8 -- no-such-program-taskq-test x
id=$out
expect_eq "$err" "taskq: note: no program no-such-program-taskq-test on this host's \$PATH; a worker without it fails the task at once" \
  "add's note"
expect_eq "$(state "$id")" runnable "added all the same (the worker's host may differ)"
expect_exit 0 "$TASKQ" add missing -- ./no-such-handler
path_id=$out
expect_eq "$err" "taskq: note: no program ./no-such-handler on this host; a worker without it fails the task at once" \
  "add's note for a path"
expect_exit 6 "$TASKQ" run missing --until-empty
expect_out "leased 2: 0 completed, 2 failed for good (tasks 9, 10), 0 will retry, 0 released, 0 revoked"
expect_eq "$(state "$id") $(state "$path_id")" "failed failed" "failed for good, not sleeping"
expect_eq "$(field "$id" '.attempts') $(field "$id" '.errors | length')" "1 1" "one attempt, one error"
expect_eq "$(field "$id" '.errors[0].error')" \
  'cannot run no-such-program-taskq-test: no such executable file on $PATH'
expect_eq "$(field "$path_id" '.errors[0].error')" \
  'cannot run ./no-such-handler: no such executable file'

section "import restores a stored command as it was (no add-time check)"
fresh_db exported
add_task old -- echo hi >/dev/null
expect_exit 0 "$TASKQ" export --queue old
image=$(jq -c '.id = 50 | .command = ["echo hi; ls"]' <<<"$out")
fresh_db imported
expect_exit 0 "$TASKQ" import - <<<"$image"
expect_eq "$(field 50 .command)" '["echo hi; ls"]' "the imported command"
