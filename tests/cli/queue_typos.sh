# A queue name with a typo (doc/reference/commands.md#queues-nobody-uses):
# a worker, which may rightly start before a queue's first `add`, says once
# on stderr that the queue has no tasks and goes on (-q says it only when a
# queue near it exists: a typo); `queue pause` and `queue set` of a name
# near an existing queue are refused (exit 3) unless --create, and of
# another new queue say that they create it; a file given where a queue
# goes (a forgotten --) is refused before anything is leased. The refusals
# of operator commands are cases of badinput.sh.

set_now 2026-11-21T08:00:00Z

section "a worker on a queue with no tasks says so once"
fresh_db
add_task thumbs >/dev/null
expect_exit 0 "$TASKQ" run thumb --until-empty
expect_err_contains "note: queue 'thumb' has no tasks yet; did you mean 'thumbs'?"
expect_eq "$(grep -c . <<<"$err")" 1 "lines on stderr of $cmd"
expect_eq "$(state 1)" runnable "thumbs' task is left alone"
expect_exit 75 "$TASKQ" lease thumb
expect_err_contains "note: queue 'thumb' has no tasks yet; did you mean 'thumbs'?"
expect_exit 75 "$TASKQ" lease thumb --wait 1ms
expect_eq "$(grep -c 'has no tasks yet' <<<"$err")" 1 "notes of $cmd"
expect_exit 0 "$TASKQ" lease thumbs -o id
expect_out 1
expect_eq "$err" "" "no note for a queue with tasks"
expect_exit 0 "$TASKQ" run brandnew --until-empty
expect_err_contains "note: queue 'brandnew' has no tasks yet"
expect_not_contains "$err" "did you mean" "no suggestion when nothing is near"

section "reads of a queue with no tasks are empty, and say why"
fresh_db
add_task thumbs >/dev/null
expect_exit 0 "$TASKQ" list --queue thumb
expect_eq "$(grep -c . <<<"$out")" 1 "list prints its header only"
expect_err_contains "note: queue 'thumb' has no tasks yet; did you mean 'thumbs'?"
expect_exit 0 "$TASKQ" stats --queue thumb
expect_err_contains "note: queue 'thumb' has no tasks yet"
expect_exit 0 "$TASKQ" events --queue thumb
expect_err_contains "did you mean 'thumbs'?"
expect_exit 0 "$TASKQ" list --queue thumb -o id
expect_out_empty
expect_eq "$err" "" "a machine format: no note (a script may merge stderr)"
expect_exit 0 "$TASKQ" run thumb --until-empty -q
expect_err_contains "did you mean 'thumbs'?" # a typo is not nothing to do
expect_exit 75 "$TASKQ" lease thumb -q
expect_err_contains "did you mean 'thumbs'?"
expect_exit 0 "$TASKQ" run unrelated --until-empty -q
expect_eq "$err" "" "run -q, a new queue near none: no note (cron mails nothing)"
expect_exit 75 "$TASKQ" lease unrelated -q
expect_eq "$err" "" "lease -q, a new queue near none: no note"
expect_exit 0 "$TASKQ" list --queue thumbs -o id
expect_out 1
expect_eq "$err" "" "no note for a queue with tasks"

section "a worker started before the first add runs it"
fresh_db
expect_exit 0 "$TASKQ" add later --payload 1 --delay 0s
expect_exit 0 "$TASKQ" run later --until-empty -q -- true
expect_eq "$err" "" "a queue with a task gets no note"
expect_eq "$(state 1)" completed "the task ran"

section "queue pause and set of a name near a queue: refused without --create"
fresh_db
add_task jobs >/dev/null
expect_exit 3 "$TASKQ" queue pause jbos
expect_err_contains "no queue 'jbos': it has no tasks, settings, schedules or history; did you mean 'jobs'? (--create makes it)"
expect_exit 3 "$TASKQ" queue set jbos --max-running 2
expect_err_contains "did you mean 'jobs'?"
expect_exit 0 "$TASKQ" queue list -o json
expect_not_contains "$out" '"jbos"' "the typo made no queue"
expect_exit 3 "$TASKQ" kill --queue jbos
expect_err_contains "did you mean 'jobs'?"
expect_exit 0 "$TASKQ" queue pause jbos --create
expect_err_contains "new queue 'jbos'"
expect_exit 0 "$TASKQ" queue pause jbos
expect_eq "$err" "" "the second pause: the queue exists now"
expect_exit 0 "$TASKQ" queue set jbos2 --create --max-running 2
expect_exit 0 "$TASKQ" queue list -o json
expect_contains "$out" '"jbos"' "the paused queue was created"
expect_contains "$out" '"jbos2"' "the set queue was created"

section "a likely typo is one slip from a queue, in a name of 3 or more"
fresh_db
add_task jobs >/dev/null
add_task q1 >/dev/null
expect_exit 3 "$TASKQ" queue pause job
expect_err_contains "did you mean 'jobs'?"
expect_exit 3 "$TASKQ" queue pause jobsx
expect_exit 3 "$TASKQ" queue set Jobs --max-running 1
expect_exit 0 "$TASKQ" queue set qs --max-running 1
expect_err_contains "new queue 'qs'" # q1 and qs: short names, often chosen so
expect_exit 0 "$TASKQ" queue pause jo
expect_exit 0 "$TASKQ" queue pause bojs
expect_err_contains "new queue 'bojs'" # two slips from jobs
expect_exit 0 "$TASKQ" run q2 --until-empty -q -- true
expect_eq "$err" "" "run -q, a short name: no note"

section "queue pause and set of a new queue near none say so"
fresh_db
add_task thumbs >/dev/null
expect_exit 0 "$TASKQ" queue pause archive
expect_err_contains "new queue 'archive': it had no tasks, settings or history"
expect_not_contains "$err" "did you mean" "nothing near"
expect_exit 0 "$TASKQ" queue set fresh --max-running 2
expect_err_contains "new queue 'fresh'"
expect_exit 0 "$TASKQ" queue set thumbs --max-running 2
expect_eq "$err" "" "a queue with tasks gets no note"

section "a schedule's or gate's queue is known before its first task"
fresh_db
add_task jobs >/dev/null
expect_exit 0 "$TASKQ" schedule add nightly jobz --every 'day at 02:00'
expect_exit 0 "$TASKQ" queue pause jobz
expect_not_contains "$err" "did you mean" "the schedule's queue is no typo"
expect_exit 0 "$TASKQ" gate add publish jobx --keys a
expect_exit 0 "$TASKQ" queue set jobx --max-running 1
expect_not_contains "$err" "did you mean" "the gate's queue is no typo"

section "a queue the database knows may share a file's name"
fresh_db
expect_exit 0 "$TASKQ" add jobs -- true
: >jobs
expect_exit 0 "$TASKQ" run jobs --until-empty -q
expect_eq "$(state 1)" completed "jobs is a queue here, though a file is named so"
add_task jobs2 >/dev/null
: >jobs3
expect_exit 2 "$TASKQ" run jobs2 jobs3 --until-empty
expect_err_contains "'jobs3' is a program, not a queue; to run it on each task: taskq run jobs2 --until-empty -- jobs3"
expect_eq "$(state 2)" runnable "nothing was leased"

section "queues whose names sort differently by byte and by collation"
fresh_db
for q in alpha Jobs b.c b_c Zeta zeta; do
  add_task "$q" >/dev/null
done
for q in alpha Jobs b.c b_c Zeta zeta; do
  expect_exit 0 "$TASKQ" kill --queue "$q"
  expect_out 1
done
