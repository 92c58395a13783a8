# Failures seen at once: the error that failed a task (not the policy's
# "exceeded error rate") and the policy's verdict beside it in list, wait
# and -o json; run's exit status when a handler failed, even if its task
# will retry, and its summary naming the failed tasks; why's retry line;
# retry of a task sleeping after an error runs it now; wait's notes on
# stderr; command tasks shown by their command.
#
# The clock is frozen, so a retry's time is exact: the default retry delay
# is 10 minutes after the failure.

set_now 2026-11-21T08:00:00Z
at_10m=2026-11-21T08:10:00Z

section "list, wait and -o json: the cause and the verdict, not 'exceeded error rate'"
fresh_db
id=$(add_task f1 --max-errors 1 -- sh -c 'echo oops >&2; exit 3')
expect_exit 6 "$TASKQ" run f1 --until-empty
expect_eq "$(field "$id" .reason)" "exceeded error rate" \
  "the stored reason is unchanged"
expect_exit 0 "$TASKQ" list --state failed
expect_match "$out" "LAST_ERROR" "list's header"
expect_match "$(grep "^$id " <<<"$out")" "^$id +f1 +failed .*exit status 3:.*\\(gave up after 1 error\\)$" \
  "list --state failed shows the cause and the verdict (a cut keeps the verdict)"
expect_exit 0 "$TASKQ" list --state failed --wide
expect_match "$(grep "^$id " <<<"$out")" "^$id +f1 +failed .*exit status 3: oops \\(gave up after 1 error\\)$" \
  "list --wide: the whole cause and the verdict"
expect_not_contains "$out" "exceeded error rate" "list"
expect_exit 0 "$TASKQ" list --state failed -o json
expect_json "$out" .cause "exit status 3: oops" "-o json's cause"
expect_json "$out" .verdict "gave up after 1 error" "-o json's verdict"
expect_json "$out" .last_error "exceeded error rate" \
  "-o json's last_error is unchanged"
expect_exit 6 "$TASKQ" wait "$id"
expect_match "$(grep "^$id " <<<"$out")" "^$id +failed +exit status 3: oops \\(gave up after 1 error\\)$" \
  "wait shows the cause and the verdict"

section "after several errors: the last one's cause, and how many"
id=$(add_task f2 --max-errors 3 --retry-delay 1s -- sh -c 'echo "no disk: $TASKQ_ATTEMPT" >&2; exit 1')
for n in 1 2 3; do
  expect_exit 6 "$TASKQ" run f2 --until-empty
  advance 1
done
expect_eq "$(state "$id")" failed
expect_exit 0 "$TASKQ" list --state failed --queue f2 --wide
expect_match "$out" "exit status 1: no disk: 3 \\(gave up after 3 errors\\)$" \
  "the latest error and the count"
set_now 2026-11-21T08:00:00Z

section "a signal, and fail --no-retry"
id=$(add_task f3 --max-errors 1 -- sh -c 'kill -SEGV $$')
expect_exit 6 "$TASKQ" run f3 --until-empty
expect_exit 0 "$TASKQ" list --state failed --queue f3 --wide
expect_match "$out" "killed by SIGSEGV.* \\(gave up after 1 error\\)$" "a handler killed by a signal"
nr=$(add_task f4)
eval "$(tq lease f4 -o env)"
expect_exit 0 "$TASKQ" fail --error "convert: disk full" --no-retry
unset TASKQ_ID TASKQ_LEASE
expect_exit 0 "$TASKQ" list --state failed --queue f4
expect_match "$(grep "^$nr " <<<"$out")" "^$nr .*convert: disk full \\(not retried\\)$" "--no-retry's verdict"
expect_exit 0 "$TASKQ" show "$nr" -o json
expect_json "$out" .verdict "not retried"
expect_exit 0 "$TASKQ" list --queue f4 --state failed -o json
expect_json "$out" .cause "convert: disk full"
ok=$(add_task f5)
expect_exit 0 "$TASKQ" show "$ok" -o json
expect_json "$out" .cause null "an unfailed task has no cause"
expect_json "$out" .verdict null "nor a verdict"

section "run exits 6 when a handler failed, even if its task will retry"
fresh_db
good=$(add_task r1 -- true)
bad=$(add_task r1 -- sh -c 'echo "disk full" >&2; exit 1')
expect_exit 6 "$TASKQ" run r1 --until-empty
expect_out "leased 2: 1 completed, 0 failed for good, 1 will retry at $at_10m (task $bad), 0 released, 0 revoked"
expect_eq "$(state "$bad")" sleeping
expect_eq "$(state "$good")" completed
bad2=$(add_task r2 -- sh -c 'exit 1')
expect_exit 0 "$TASKQ" run r2 --until-empty --fail-on failed
expect_out "leased 1: 0 completed, 0 failed for good, 1 will retry at $at_10m (task $bad2), 0 released, 0 revoked"
expect_exit 0 "$TASKQ" run r2 --until-empty -q
expect_out_empty
a=$(add_task r3 --max-errors 1 -- false)
b=$(add_task r3 --max-errors 1 -- false)
expect_exit 6 "$TASKQ" run r3 --until-empty -o json
expect_json "$out" .failed_ids "[$a,$b]" "-o json names the failed tasks"
expect_json "$out" .retrying_ids "[]"
c=$(add_task r4 -- true)
expect_exit 0 "$TASKQ" run r4 --until-empty
expect_out "leased 1: 1 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked"

section "why: the attempt that failed, its cause, which retry and when"
expect_exit 0 "$TASKQ" why "$bad"
expect_out "attempt 1 failed (exit status 1: disk full); retry 2 of 8 at $at_10m (taskq retry $bad runs it now)"
sl=$(add_task r5)
tq sleep "$sl" --until "$at_10m" >/dev/null
expect_exit 0 "$TASKQ" why "$sl"
expect_match "$out" "^it is sleeping until 2026-11-21T08:10:00(\\.0+)?Z$" \
  "an operator's sleep is still just a sleep"

section "wait says once that the task failed an attempt"
expect_exit 75 "$TASKQ" wait "$bad" --timeout 100ms
expect_eq "$(grep -c "attempt 1 failed" <<<"$err")" 1 "said once"
expect_contains "$err" "taskq: task $bad: attempt 1 failed (exit status 1: disk full); retry 2 of 8 at $at_10m" \
  "wait's note"

section "retry of a task sleeping after an error runs it now, itself"
before=$(count_tasks)
expect_exit 0 "$TASKQ" retry "$bad"
expect_out "$bad"
expect_eq "$(count_tasks)" "$before" "no copy is added"
expect_eq "$(state "$bad")" runnable
expect_exit 0 "$TASKQ" why "$bad"
expect_match "$out" "eligible" "it is due now"
expect_eq "$(field "$bad" '.events[-1].detail')" "retried now, not at $at_10m" \
  "the event says so"
expect_exit 0 "$TASKQ" lease r1
expect_json "$out" .id "$bad" "the next lease takes it"
expect_exit 4 "$TASKQ" retry "$sl"
expect_err_contains "sleeping"
expect_eq "$(state "$sl")" sleeping "an operator's sleeper is not woken by retry"

section "wait says when no worker has leased from the queue lately"
fresh_db
w=$(add_task idle)
expect_exit 75 "$TASKQ" wait "$w" --timeout 100ms
expect_eq "$err" "taskq: no worker has leased from queue idle yet; task $w waits for one (taskq run idle)
taskq: timed out after 100ms; not finished: $w" "wait's note, then its timeout"
w2=$(add_task busy)
w3=$(add_task busy)
tq lease busy >/dev/null
expect_exit 75 "$TASKQ" wait "$w3" --timeout 100ms
expect_not_contains "$err" "no worker" "a queue leased from just now"
advance 3600
expect_exit 75 "$TASKQ" wait "$w3" --timeout 100ms
expect_contains "$err" "no worker has leased from queue busy since 2026-11-21T08:00:00" \
  "an hour later, it says when the last lease was"
set_now 2026-11-21T08:00:00Z

section "list and top show a command task's command"
fresh_db
ct=$(add_task c1 -- sh -c 'echo "it ran"; echo "it complained" >&2')
txt=$(add_task c1 --text hello)
expect_exit 0 "$TASKQ" list
expect_match "$(grep "^$ct " <<<"$out")" "^$ct +c1 +runnable .*\\\$ sh -c 'echo \"it ran\"; echo [^ ]*\\.\\.\\.$" \
  "the command, shell-quoted, cut as payloads are"
expect_match "$(grep "^$txt " <<<"$out")" "^$txt +c1 +runnable .*\"hello\"$" "a payload as before"
expect_not_contains "$out" "null" "no PAYLOAD null"

section "list: a finished command's exit and how long it ran"
expect_exit 0 "$TASKQ" run c1 --max-tasks 1
expect_exit 0 "$TASKQ" list --queue c1 --state completed
expect_match "$(head -1 <<<"$out")" "^ID +QUEUE +STATE +ATT +RUN_AT +EXIT +TOOK +PAYLOAD$" \
  "list's header with EXIT and TOOK (no PRI: no task has one)"
expect_match "$(grep "^$ct " <<<"$out")" "^$ct +c1 +completed +1 +[-0-9TZ:.]+ +0 +[0-9][0-9a-z.]* +\\\$ sh -c " \
  "a completed command: exit 0, and how long"
bad3=$(add_task c2 --max-errors 1 -- sh -c 'exit 3')
sig=$(add_task c2 --max-errors 1 -- sh -c 'kill -KILL $$')
expect_exit 6 "$TASKQ" run c2 --until-empty
expect_exit 0 "$TASKQ" list --queue c2 --wide
expect_match "$(grep "^$bad3 " <<<"$out")" "^$bad3 +c2 +failed .* 3 +[0-9][0-9a-z.]* +\\\$ sh -c 'exit 3' +exit status 3" \
  "a failed command: its exit status"
expect_match "$(grep "^$sig " <<<"$out")" "^$sig +c2 +failed .* SIGKILL +[0-9][0-9a-z.]* +\\\$ sh -c " \
  "a command killed by a signal: the signal"
expect_exit 0 "$TASKQ" list --queue c2 -o json
expect_json "$(head -1 <<<"$out")" .verdict "gave up after 1 error"

section "a failed attempt is findable: EXIT and LAST_ERROR while its task waits to retry"
fresh_db
ok=$(add_task e1 -- true)
bad=$(add_task e1 -- sh -c 'echo "disk full" >&2; exit 4')
expect_exit 6 "$TASKQ" run e1 --until-empty
expect_eq "$(state "$bad")" sleeping "the error policy will retry it"
expect_exit 0 "$TASKQ" list --queue e1
expect_match "$(head -1 <<<"$out")" "^ID .* EXIT .* LAST_ERROR$" \
  "list's header has EXIT and LAST_ERROR"
expect_match "$(grep "^$bad " <<<"$out")" "^$bad +e1 +sleeping .* 4 .*exit status 4: disk full$" \
  "the sleeping task: its exit and its error"
expect_match "$(grep "^$ok " <<<"$out")" "^$ok +e1 +completed .* 0 .* -$" \
  "the completed task: exit 0, no error"
expect_exit 0 "$TASKQ" list --queue e1 --wide
expect_match "$(grep "^$bad " <<<"$out")" "^$bad +e1 +sleeping +0 +1 +$at_10m +4 +[0-9][0-9a-z.]* +\\\$ sh -c .* +exit status 4: disk full$" \
  "--wide: when it is due again, its exit, how long it ran, its error"
expect_exit 0 "$TASKQ" list --queue e1 -o json
expect_eq "$(jq -c 'keys_unsorted' <<<"$out" | sort -u | wc -l)" 1 \
  "-o json: every task has the same fields"
expect_eq "$(jq -r "select(.id == $bad) | .last_error" <<<"$out")" "exit status 4: disk full" \
  "-o json's last_error"

section "list --state erred: the tasks whose last attempt failed, whatever their state"
gave_up=$(add_task e2 --max-errors 1 -- sh -c 'exit 5')
again=$(add_task e2 --retry-delay 0s -- sh -c '[ "$TASKQ_ATTEMPT" = 2 ] || exit 6')
paused=$(add_task e2 -- false)
killed=$(add_task e2 -- false)
p2=$(add_task e2 --text "worked by hand")
never=$(add_task e2 -- true)
expect_exit 6 "$TASKQ" run e2 --until-empty --max-tasks 5
expect_exit 0 "$TASKQ" pause "$paused"
expect_exit 0 "$TASKQ" kill "$killed"
eval "$(tq lease e2 -o env)"
expect_eq "$TASKQ_ID" "$p2" "the next lease takes the task worked by hand"
expect_exit 0 "$TASKQ" fail --error "no such file"
unset TASKQ_ID TASKQ_LEASE
expect_exit 0 "$TASKQ" run e2 --until-empty
expect_eq "$(state "$again")" completed "the task that failed once, then completed"
expect_exit 0 "$TASKQ" list --queue e2 --state erred -o id
expect_out "$gave_up"$'\n'"$paused"$'\n'"$killed"$'\n'"$p2"
expect_exit 0 "$TASKQ" list --queue e2 --wide
expect_eq "$(awk 'NR > 1 && $NF != "-" {print $1}' <<<"$out")" "$gave_up"$'\n'"$paused"$'\n'"$killed"$'\n'"$p2" \
  "list shows an error for the same tasks as --state erred selects"
expect_exit 0 "$TASKQ" list --queue e2 --state erred
expect_match "$(grep "^$p2 " <<<"$out")" "^$p2 +e2 +sleeping .*no such file$" \
  "a task failed by hand: its error (no EXIT: it has no command)"
expect_match "$(grep "^$killed " <<<"$out")" "^$killed +e2 +killed .* 1 .*exit status 1$" \
  "a task killed after its attempt failed: that attempt's exit and error"
expect_not_contains "$(awk '{print $1}' <<<"$out")" "$never" "a task that never failed"
tq retry "$p2" >/dev/null
expect_eq "$(state "$p2")" runnable "retried now"
expect_exit 0 "$TASKQ" list --queue e2 --state erred -o id
expect_contains "$out" "$p2" "a task retried now is still erred until it runs"
eval "$(tq lease e2 -o env)"
expect_exit 0 "$TASKQ" list --queue e2 --state erred -o id
expect_not_contains "$out" "$p2" "a task leased again is running, not erred"
expect_exit 0 "$TASKQ" list --queue e2 --state erred,running -o id
expect_out "$gave_up"$'\n'"$paused"$'\n'"$killed"$'\n'"$p2"
unset TASKQ_ID TASKQ_LEASE
expect_exit 0 "$TASKQ" list --queue e2 --state erred --limit 1 --newest -o id
expect_out "$killed"
expect_exit 0 "$TASKQ" list --queue nothing-here --state erred
expect_eq "$(wc -l <<<"$out")" 1 "only the header when none"

section "operators refuse --state erred: nothing changes"
before=$(db_dump)
expect_exit 2 "$TASKQ" kill --queue e2 --state erred
expect_err_format
expect_err_contains "--state erred is for list only"
expect_exit 2 "$TASKQ" retry --queue e2 --state erred
expect_err_format
expect_eq "$(db_dump)" "$before" "no task changed"
expect_exit 2 "$TASKQ" list --state errored
expect_err_contains "expected runnable, sleeping, paused, completed, failed, killed, running, ready or erred"

section "list --state failed finds none: stderr says which tasks wait to retry, with a command that lists them"
fresh_db
w1=$(add_task e3 --label 'team=night shift' -- sh -c 'exit 1')
w2=$(add_task e3 --label 'team=night shift' -- sh -c 'exit 1')
expect_exit 6 "$TASKQ" run e3 --until-empty
expect_exit 0 "$TASKQ" list --state failed
expect_eq "$(wc -l <<<"$out")" 1 "no failed task: only the header"
expect_eq "$err" "taskq: no task has failed for good; 2 failed their last attempt and wait to be retried: taskq list --state erred" \
  "the note"
expect_match "$("$TASKQ" list --state failed 2>&1 3>&-)" $'^ID [^\n]*\ntaskq: no task has failed for good' \
  "in a log of both, the note comes after the table"
expect_exit 0 "$TASKQ" list --state failed,killed --queue e3 --match 'team=night shift'
hint=${err##*: }
expect_eq "$hint" "taskq list --state erred --queue e3 --match 'team=night shift'" \
  "the command keeps the filters, quoted for the shell"
cat >taskq <<'SH'
#!/bin/sh
for a in "$@"; do printf '[%s]' "$a"; done
SH
chmod +x taskq
expect_eq "$(PATH=$PWD:$PATH sh -c "$hint")" "[list][--state][erred][--queue][e3][--match][team=night shift]" \
  "pasted into sh, the command gets the words meant"
expect_exit 0 "$TASKQ" list --state failed --queue e3 --match 'team=day'
expect_eq "$err" "" "no note when none of the selected tasks failed an attempt"
expect_exit 0 "$TASKQ" list --state failed -o json
expect_eq "$err" "" "no note with -o json (for a reader, not a pipe)"
tq kill "$w1" "$w2" >/dev/null
expect_exit 0 "$TASKQ" list --state failed
expect_eq "$err" "" "no note when those tasks are finished"
