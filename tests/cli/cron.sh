# Honest outcomes for cron (doc/workers.md, "What run says, and its exit
# status"): run's summary tells apart completed, failed for good, will retry
# at TIME, released and revoked, naming the tasks that failed; -v lines
# carry a timestamp and the same words; run exits 6 when a handler it ran
# failed, even if its task will retry (--fail-on retry|failed|never chooses
# which outcomes count); -q prints nothing when nothing was done, and lease
# -q says nothing on an empty queue (still exit 75).
#
# The clock is frozen, so a retry's time is exact: the default retry delay
# is 10 minutes after the failure.

set_now 2026-11-21T08:00:00Z
at_10m=2026-11-21T08:10:00Z

# summary L C G W R V [AT [FAILED [RETRYING]]]: run's summary line, as run
# prints it; FAILED and RETRYING name the tasks ("task 3", "tasks 3, 4").
summary() {
  local retry="$4 will retry" failed=${8:-} retrying=${9:-}
  if (($4 == 1)); then
    retry+=" at $7"
  elif (($4 > 1)); then
    retry+=" (first at $7)"
  fi
  echo "leased $1: $2 completed, $3 failed for good${failed:+ ($failed)}, $retry${retrying:+ ($retrying)}, $5 released, $6 revoked"
}

db_digest() { db_dump | sha256sum; }

# Tasks that carry their own command (add QUEUE -- CMD): a run with no
# -- CMD executes each one's argv.
ok() { add_task "$1" -- true; }
boom() { add_task "$@" -- sh -c 'echo "boom: $TASKQ_ID" >&2; exit 3'; }
give_back() { add_task "$1" -- sh -c 'exit 75'; }

section "all completed: exit 0, and the summary says so"
ok all >/dev/null
ok all >/dev/null
ok all >/dev/null
expect_exit 0 "$TASKQ" run all --until-empty
expect_out "$(summary 3 3 0 0 0 0)"
expect_eq "$err" "" "stderr of a clean run"

section "some will retry: exit 6 by default, the summary gives the retry's time"
ok retry1 >/dev/null
id=$(boom retry1)
expect_exit 6 "$TASKQ" run retry1 --until-empty
expect_out "$(summary 2 1 0 1 0 0 "$at_10m" "" "task $id")"
expect_err_contains "boom: $id" # the handler's stderr passes through
expect_eq "$(state "$id")" sleeping
expect_eq "$(field "$id" .run_at)" "$at_10m" "the task sleeps until the time the summary gave"

section "--fail-on retry counts a retry: exit 6"
ok retry2 >/dev/null
id=$(boom retry2)
expect_exit 6 "$TASKQ" run retry2 --until-empty --fail-on retry
expect_out "$(summary 2 1 0 1 0 0 "$at_10m" "" "task $id")"

section "--fail-on failed and never: a retry is no failure"
id=$(boom retry3)
expect_exit 0 "$TASKQ" run retry3 --until-empty --fail-on failed
expect_out "$(summary 1 0 0 1 0 0 "$at_10m" "" "task $id")"
id=$(boom retry4)
expect_exit 0 "$TASKQ" run retry4 --until-empty --fail-on never
expect_out "$(summary 1 0 0 1 0 0 "$at_10m" "" "task $id")"

section "some failed for good: exit 6, whatever else completed"
ok good1 >/dev/null
id=$(boom good1 --max-errors 1)
id2=$(boom good1)
expect_exit 6 "$TASKQ" run good1 --until-empty
expect_out "$(summary 3 1 1 1 0 0 "$at_10m" "task $id" "task $id2")"
expect_eq "$(state "$id")" failed
expect_eq "$(field "$id" .reason)" "exceeded error rate"

section "failed for good with --fail-on retry: exit 6; with never: exit 0"
id=$(boom good2 --max-errors 1)
expect_exit 6 "$TASKQ" run good2 --until-empty --fail-on retry
expect_out "$(summary 1 0 1 0 0 0 "" "task $id")"
id=$(boom good3 --max-errors 1)
expect_exit 0 "$TASKQ" run good3 --until-empty --fail-on never
expect_out "$(summary 1 0 1 0 0 0 "" "task $id")"

section "--max-tasks: the same rule for the tasks it ran"
id=$(boom max --max-errors 1)
ok max >/dev/null
expect_exit 6 "$TASKQ" run max --max-tasks 1
expect_out "$(summary 1 0 1 0 0 0 "" "task $id")"
expect_exit 0 "$TASKQ" run max --max-tasks 1
expect_out "$(summary 1 1 0 0 0 0)"

section "several retries: the summary names the first"
m1=$(boom many --retry-delay 5m)
m2=$(boom many --retry-delay 1m)
m3=$(boom many --retry-delay 1h)
expect_exit 6 "$TASKQ" run many --until-empty
expect_out "$(summary 3 0 0 3 0 0 2026-11-21T08:01:00Z "" "tasks $m1, $m2, $m3")"

section "released: not a failure, even with --fail-on retry"
id=$(give_back rel)
expect_exit 0 "$TASKQ" run rel --until-empty --fail-on retry --release-delay 1h
expect_out "$(summary 1 0 0 0 1 0)"
expect_eq "$(state "$id")" runnable

section "-o json: the same counts, failed meaning failed for good"
ok js >/dev/null
j1=$(boom js)
j2=$(boom js --max-errors 1)
give_back js >/dev/null
expect_exit 6 "$TASKQ" run js --until-empty --release-delay 1h -o json
expect_json "$out" . \
  "{\"completed\":1,\"failed\":1,\"failed_ids\":[$j2],\"leased\":4,\"released\":1,\"retry_at\":\"$at_10m\",\"retrying\":1,\"retrying_ids\":[$j1],\"revoked\":0}"

section "-v: one timestamped line per event, in the summary's words"
ok verbose >/dev/null
r=$(boom verbose)
g=$(boom verbose --max-errors 1)
b=$(give_back verbose)
expect_exit 6 "$TASKQ" run verbose --until-empty -v --release-delay 1h
ts='2026-11-21T08:00:00(\.000)?Z taskq: task'
check "-v started, naming the task's command" grep -qE "^$ts [0-9]+: started \\(attempt 1\\): true\$" <<<"$err"
expect_match "$err" "$ts [0-9]+: completed \\(after [0-9a-z]+\\)" "-v completed"
expect_match "$err" "$ts $r: will retry at $at_10m \\(after [0-9a-z]+\\): exit status 3: boom: $r" \
  "-v will retry"
expect_match "$err" "$ts $g: failed for good \\(after [0-9a-z]+\\): exit status 3: boom: $g; exceeded error rate" \
  "-v failed for good"
expect_match "$err" "$ts $b: released \\(after [0-9a-z]+\\)" "-v released"
# Every line run wrote itself carries the time; the handlers' own lines are
# theirs ("boom: ID").
expect_eq "$(grep -v '^boom: ' <<<"$err" | grep -cvE "^$ts [0-9]+: ")" 0 \
  "lines of run -v without a timestamp"

section "-v: a multi-line error stays on its line, the newlines escaped"
id=$(add_task vlines -- sh -c 'printf "first\nsecond\n" >&2; exit 4')
expect_exit 6 "$TASKQ" run vlines --until-empty -v
expect_contains "$err" "task $id: will retry at $at_10m (" "-v will retry"
expect_contains "$err" '): exit status 4: first\nsecond' "-v error, one line"
expect_eq "$(grep -v -x -e first -e second <<<"$err" | grep -cvE "^$ts [0-9]+: ")" 0 \
  "lines of run -v without a timestamp"

section "-q on an empty queue prints nothing at all: cron sends no mail"
expect_exit 0 "$TASKQ" run nothing --until-empty -q
expect_out_empty
expect_eq "$err" "" "stderr of run -q with nothing to do"
expect_exit 0 "$TASKQ" run nothing --until-empty -q -o json
expect_out_empty
expect_exit 0 "$TASKQ" run nothing --until-empty
expect_out "$(summary 0 0 0 0 0 0)" # without -q: the summary

section "-q with work done still prints the summary (and exits by --fail-on)"
ok quiet >/dev/null
expect_exit 0 "$TASKQ" run quiet --until-empty -q
expect_out "$(summary 1 1 0 0 0 0)"
id=$(boom quiet --max-errors 1)
expect_exit 6 "$TASKQ" run quiet --until-empty -q
expect_out "$(summary 1 0 1 0 0 0 "" "task $id")"

section "a task with no command leased by a run with no -- CMD fails for good"
id=$(add_task nocmd --payload '{"n":1}')
expect_exit 6 "$TASKQ" run nocmd --until-empty
expect_out "$(summary 1 0 1 0 0 0 "" "task $id")"
expect_eq "$(state "$id")" failed
expect_eq "$(field "$id" .reason)" "task has no command and run was given no -- CMD"

section "a bad --fail-on is a usage error and leases nothing"
ok badopt >/dev/null
before=$(db_digest)
expect_exit 2 "$TASKQ" run badopt --until-empty --fail-on sometimes
expect_err_format
expect_err_contains "--fail-on"
expect_out_empty
expect_eq "$(db_digest)" "$before" "database after a refused run"

section "lease -q on an empty queue: nothing on stdout or stderr, exit 75"
expect_exit 75 "$TASKQ" lease empty -q
expect_out_empty
expect_eq "$err" "" "stderr of lease -q"
expect_exit 75 "$TASKQ" lease empty
expect_err_contains "nothing to lease" # without -q: says so
# -o env keeps its `(exit 75)` for eval: it is output for the script, not a
# message for the user.
expect_exit 75 "$TASKQ" lease empty -q -o env
expect_out "(exit 75)"
expect_eq "$err" "" "stderr of lease -q -o env"
expect_exit 75 "$TASKQ" lease empty -q --wait 1s
expect_out_empty
expect_eq "$err" "" "stderr of lease -q --wait"

section "lease -q with a task prints it as usual"
id=$(add_task full)
expect_exit 0 "$TASKQ" lease full -q
expect_json "$out" .id "$id"
