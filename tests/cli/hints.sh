# Hints and mistakes (doc/reference/commands.md#suggestions): every command
# line taskq prints for the user to paste is quoted for the POSIX shell (the
# harness runs each one recorded through sh with a stand-in taskq: see
# tests/cli/run, "suggestions"), a shell line is suggested as --sh; -q
# never hides a mistake on the command line; a program given to `run`
# without -- is refused, not waited on as a queue.

set_now 2026-11-21T08:00:00Z

# suggested TEXT: the binary recorded a suggestion whose printed text is
# TEXT (so the harness's sh check covers it).
suggested() {
  local hex
  hex=$(printf '%s' "$1" | od -An -v -tx1 | tr -d ' \n')
  check "suggestion recorded: $1" \
    grep -qF "\"text_hex\":\"$hex\"" "$TASKQ_TEST_SUGGESTIONS"
}

section "a shell line given without -- is suggested as --sh, quoted"
fresh_db
add_task other -- true >/dev/null
expect_exit 2 "$TASKQ" add jobs 'cd /srv/app && rm -rf build'
expect_err_contains "to add it as a task: taskq add jobs --sh 'cd /srv/app && rm -rf build'"
expect_not_contains "$err" "-- cd /srv/app" "no hint that runs rm here"
suggested "taskq add jobs --sh 'cd /srv/app && rm -rf build'"
expect_eq "$(count_tasks)" 1 "nothing added"
expect_exit 2 "$TASKQ" add jobs -- 'make; make test > log'
expect_err_contains "taskq add jobs --sh 'make; make test > log'"
suggested "taskq add jobs --sh 'make; make test > log'"
expect_exit 2 "$TASKQ" add jobs "echo it's \$HOME"
expect_err_contains "taskq add jobs --sh 'echo it'\\''s \$HOME'"
suggested "taskq add jobs --sh 'echo it'\\''s \$HOME'"

section "words given without -- are suggested after --, each quoted"
expect_exit 2 "$TASKQ" add jobs echo 'a b' '*.png' 'x|y' '(z)' "q'r" '`id`'
expect_err_contains "taskq add jobs -- echo 'a b' '*.png' 'x|y' '(z)' 'q'\\''r' '\`id\`'"
suggested "taskq add jobs -- echo 'a b' '*.png' 'x|y' '(z)' 'q'\\''r' '\`id\`'"
expect_exit 2 "$TASKQ" add jobs grep -v '-n' 'a?b'
suggested "taskq add jobs -- grep -v -n 'a?b'"
expect_exit 2 "$TASKQ" add jobs echo $'two\nlines'
expect_eq "$(grep -c . <<<"$err")" 1 "a word with a newline: the message stays one line"
expect_err_contains "taskq add QUEUE -- CMD [ARG...]"
expect_eq "$(count_tasks)" 1 "nothing added"

section "a queue given where --queue goes: the line, quoted"
expect_exit 2 "$TASKQ" stats 'my queue'
expect_err_contains "a queue is named with --queue: taskq stats --queue 'my queue'"
suggested "taskq stats --queue 'my queue'"

section "the store's hints are suggestions too"
fresh_db
id=$(add_task jobs -- false)
expect_exit 6 "$TASKQ" run jobs --until-empty --max-tasks 1
expect_exit 0 "$TASKQ" why "$id"
expect_contains "$out" "(taskq retry $id runs it now)" "why names the command"
suggested "taskq retry $id"
expect_exit 0 "$TASKQ" kill "$id"
expect_exit 4 "$TASKQ" resume "$id"
expect_err_contains "taskq retry $id runs it again"
pid=$(add_task jobs -- true)
expect_exit 0 "$TASKQ" pause "$pid"
expect_exit 0 "$TASKQ" why "$pid"
expect_contains "$out" "(taskq resume $pid)" "why names the command"
suggested "taskq resume $pid"

section "-q keeps a typo's note, silences a new queue's"
fresh_db
add_task thumbs -- true >/dev/null
expect_exit 0 "$TASKQ" run thumb --until-empty -q -- true
expect_err_contains "note: queue 'thumb' has no tasks yet; did you mean 'thumbs'?"
expect_eq "$(grep -c . <<<"$err")" 1 "lines on stderr of $cmd"
expect_out_empty
expect_eq "$(state 1)" runnable "thumbs' task is left alone"
expect_exit 75 "$TASKQ" lease thumb -q
expect_err_contains "did you mean 'thumbs'?"
expect_exit 75 "$TASKQ" lease thumb -q --wait 1ms
expect_err_contains "did you mean 'thumbs'?"
expect_exit 0 "$TASKQ" run brandnew --until-empty -q -- true
expect_eq "$err" "" "run -q on a queue before its first task: nothing (normal)"
expect_out_empty
expect_exit 75 "$TASKQ" lease brandnew -q
expect_eq "$err" "" "lease -q on a queue before its first task: nothing"
expect_exit 0 "$TASKQ" run thumbs --until-empty -q
expect_eq "$err" "" "run -q of a known queue: no note"

section "a program on \$PATH given to run without -- is refused"
fresh_db
add_task jobs -- true >/dev/null
cmd_timeout=10 expect_exit 2 "$TASKQ" run jobs echo hi
expect_err_contains "'echo' is a program, not a queue; to run it on each task: taskq run jobs -- echo hi"
suggested "taskq run jobs -- echo hi"
cmd_timeout=10 expect_exit 2 "$TASKQ" run jobs printf '%s\n' 'a; b'
expect_err_contains "to run it on each task: taskq run jobs -- printf '%s\n' 'a; b'"
suggested "taskq run jobs -- printf '%s\n' 'a; b'"
cmd_timeout=10 expect_exit 2 "$TASKQ" run echo --until-empty
expect_err_contains "to run it on each task: taskq run QUEUE -- echo"
expect_eq "$(state 1)" runnable "nothing was leased"

section "a number given to run is a task id, not a queue"
cmd_timeout=10 expect_exit 2 "$TASKQ" run 2
expect_err_contains "'2' is a task id, not a queue"
expect_err_contains "taskq retry 2"
suggested "taskq retry 2"
cmd_timeout=10 expect_exit 2 "$TASKQ" run jobs 1 --until-empty
expect_err_contains "'1' is a task id"
expect_eq "$(state 1)" runnable "nothing was leased"

section "a queue with history may share a program's name, or be a number"
fresh_db
add_task echo -- true >/dev/null
add_task 7 -- true >/dev/null
expect_exit 0 "$TASKQ" run echo 7 --until-empty
expect_eq "$(state 1)/$(state 2)" completed/completed "both queues ran"
expect_exit 0 "$TASKQ" run jobs --until-empty -- echo hi
expect_err_contains "note: queue 'jobs' has no tasks yet"

section "before the first add, a program given to run is still refused"
if sqlite_only; then
  TASKQ_DB=$PWD/none.db cmd_timeout=10 expect_exit 2 "$TASKQ" run echo hi
  expect_err_contains "to run it on each task: taskq run QUEUE -- echo hi"
  check "no database was made" test ! -e none.db
fi

section "a suggestion keeps every option the user gave, and the database named"
fresh_db
add_task jobs -- true >/dev/null
expect_exit 2 "$TASKQ" add jobs --priority 5 echo hi
expect_err_contains "to add it as a task: taskq add jobs --priority 5 -- echo hi"
suggested "taskq add jobs --priority 5 -- echo hi"
cmd_timeout=10 expect_exit 2 "$TASKQ" run jobs --concurrency 4 --for 1h echo hi
expect_err_contains "to run it on each task: taskq run jobs --concurrency 4 --for 1h -- echo hi"
suggested "taskq run jobs --concurrency 4 --for 1h -- echo hi"
expect_exit 2 "$TASKQ" list --state failed --limit 3 jobs
expect_err_contains "a queue is named with --queue: taskq list --state failed --limit 3 --queue jobs"
suggested "taskq list --state failed --limit 3 --queue jobs"
# What follows a -- is a program's: not rebuilt, the usage form instead.
expect_exit 2 "$TASKQ" add jobs 'echo a;' -- b
expect_err_contains "to add it as a task: taskq add QUEUE -- CMD [ARG...]"
expect_eq "$(count_tasks)" 1 "nothing added"
# --db given on the command line: each suggestion names it, so a pasted
# one acts on that database, not on $TASKQ_DB's.
db=$TASKQ_DB
expect_exit 2 env TASKQ_DB=/nonexistent/elsewhere.db "$TASKQ" --db "$db" add jobs 'a && b'
expect_err_contains "taskq --db "
expect_err_contains " add jobs --sh 'a && b'"
id=$(add_task bad -- false)
expect_exit 6 "$TASKQ" run bad --until-empty --max-tasks 1
expect_exit 0 env TASKQ_DB=/nonexistent/elsewhere.db "$TASKQ" --db "$db" why "$id"
expect_contains "$out" "taskq --db " "why's hint names the database given"
expect_contains "$out" " retry $id runs it now)" "and the command"

section "run QUEUE where QUEUE is a program and no task has used it: how to make it a queue"
fresh_db
add_task jobs -- true >/dev/null
cmd_timeout=10 expect_exit 2 "$TASKQ" run sort --until-empty
expect_err_contains "'sort' is a program, not a queue"
expect_err_contains "taskq queue set NAME --create"
expect_exit 0 "$TASKQ" queue set sort --create
cmd_timeout=10 expect_exit 0 "$TASKQ" run sort --until-empty
expect_not_contains "$err" "is a program" "a queue once set is run"

section "progress of a typo says so"
fresh_db
add_task jobs -- true >/dev/null
expect_exit 0 "$TASKQ" progress jbos
expect_err_contains "queue 'jbos' has no tasks yet; did you mean 'jobs'?"
