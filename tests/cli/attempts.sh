# Attempts and the attempt limit (rescue's circuit breaker,
# doc/reference/task.md#attempt-limit): attempts count leases, and number
# each run (its output is kept under that number); the lease that would
# exceed max_attempts pauses the task instead, with the reason recorded;
# resume starts the limit's count afresh, and the runs go on numbering.

T0=2026-11-21T08:00:00Z
set_now $T0

section "attempts count leases, expired or not"
id=$(add_task cb --max-attempts 2)
expect_eq "$(field "$id" .attempts)" 0 "attempts after add"
expect_exit 0 "$TASKQ" lease cb --for 1m
expect_json "$out" .attempts 1
expect_json "$out" .max_attempts 2
set_now 2026-11-21T08:02:00Z # the first lease has expired
expect_exit 0 "$TASKQ" lease cb --for 1m
expect_json "$out" .id "$id"
expect_json "$out" .attempts 2

section "the lease that would be attempt 3 of 2 pauses the task instead"
set_now 2026-11-21T08:04:00Z
expect_exit 75 "$TASKQ" lease cb
expect_out_empty
task=$(snapshot "$id")
expect_json "$task" .state paused
expect_json "$task" .lease null
expect_json "$task" .attempts 2
expect_contains "$task" "reached max attempts (2)" "show -o json"
expect_json "$task" '.events[-1].to' paused "last event"
expect_json "$task" '.events[-1].actor' taskq "who paused it"
expect_exit 0 "$TASKQ" why "$id"
expect_word "$out" paused "why"
expect_contains "$out" "max attempts" "why"
expect_exit 75 "$TASKQ" lease cb

section "resume gives the limit a fresh count; the attempts go on numbering"
expect_exit 0 "$TASKQ" resume "$id"
expect_jq "$(snapshot "$id")" '.state == "runnable" and .attempts == 2'
expect_exit 0 "$TASKQ" why "$id"
expect_not_contains "$out" "attempts" "why after resume: the limit counts afresh"
set_now 2026-11-21T08:06:00Z
expect_exit 0 "$TASKQ" lease cb --for 1m
expect_json "$out" .id "$id"
expect_json "$out" .attempts 3 "the run after resume is attempt 3"
set_now 2026-11-21T08:08:00Z
expect_exit 0 "$TASKQ" lease cb --for 1m
expect_json "$out" .attempts 4 "and the next, 4: two since resume"
set_now 2026-11-21T08:10:00Z
expect_exit 0 "$TASKQ" why "$id"
expect_contains "$out" "used its 2 attempts" "why: two attempts since resume"
expect_exit 75 "$TASKQ" lease cb
expect_eq "$(state "$id")" paused "the third lease since resume pauses it"
expect_exit 0 "$TASKQ" resume "$id"
expect_exit 0 "$TASKQ" lease cb
expect_json "$out" .attempts 5
tok=$(jout .lease.token)
expect_exit 0 "$TASKQ" done "$id" --lease "$tok"
expect_eq "$(state "$id")" completed
expect_eq "$(field "$id" '.errors | length')" 0 "no pause counted as an error"

section "show and -o json say the attempts the limit counts after a pause and resume"
set_now $T0
id=$(add_task shown --max-attempts 1)
tok=$(tq lease shown --for 1m | jq -r .lease.token)
expect_exit 0 "$TASKQ" show "$id"
expect_match "$out" $'\nattempts: +1 of 1\n' "show before any resume: 1 of 1"
expect_json "$(snapshot "$id")" .attempts_counted 1 "-o json before any resume"
expect_exit 0 "$TASKQ" pause "$id"
expect_exit 0 "$TASKQ" resume "$id"
expect_exit 0 "$TASKQ" show "$id"
expect_match "$out" $'\nattempts: +1 \\(0 of 1 counted\\)\n' \
  "show after resume: none counted yet"
set_now 2026-11-21T08:02:00Z
expect_exit 0 "$TASKQ" lease shown --for 1m
expect_json "$out" .attempts 2 "the run after resume is attempt 2"
expect_exit 0 "$TASKQ" show "$id"
expect_match "$out" $'\nattempts: +2 \\(1 of 1 counted\\)\n' \
  "show: attempt 2, one of the limit's 1 counted (not '2 of 1')"
task=$(snapshot "$id")
expect_json "$task" .attempts 2 "-o json: attempts numbers the runs"
expect_json "$task" .attempts_counted 1 "-o json: attempts_counted since resume"
expect_exit 0 "$TASKQ" list --queue shown -o json
expect_json "$out" .attempts_counted 1 "list -o json has it too"

section "a paused task does not block the next task of its queue"
set_now $T0
first=$(add_task cb2 --max-attempts 1)
second=$(add_task cb2)
tq lease cb2 --for 1m >/dev/null
set_now 2026-11-21T08:02:00Z
expect_exit 0 "$TASKQ" lease cb2
expect_json "$out" .id "$second" "task leased after the first hit its limit"
expect_eq "$(state "$first")" paused "first task"

section "a worker's release gives its attempt back"
set_now $T0
id=$(add_task giveback --max-attempts 1)
for i in 1 2 3; do
  tok=$(tq lease giveback | jq -r .lease.token)
  expect_exit 0 "$TASKQ" release "$id" --lease "$tok"
  expect_eq "$(field "$id" .attempts)" 0 "attempts after release $i"
done
expect_exit 0 "$TASKQ" lease giveback
expect_json "$out" .attempts 1

section "fail does not give the attempt back"
set_now $T0
id=$(add_task failcount --max-attempts 1)
tok=$(tq lease failcount | jq -r .lease.token)
tq fail "$id" --lease "$tok" --error boom >/dev/null
set_now 2026-11-21T08:10:00Z
expect_exit 75 "$TASKQ" lease failcount
expect_eq "$(state "$id")" paused "state when the sleeping task comes due"

section "queue set --max-attempts applies to the queue's tasks"
set_now $T0
expect_exit 0 "$TASKQ" queue set capped --max-attempts 1
id=$(add_task capped)
tq lease capped --for 1m >/dev/null
set_now 2026-11-21T08:02:00Z
expect_exit 75 "$TASKQ" lease capped
expect_eq "$(state "$id")" paused "state after the queue's limit"
expect_contains "$(snapshot "$id")" "reached max attempts (1)" "show -o json"

section "without a limit a task can be leased again and again"
set_now $T0
id=$(add_task unlimited)
for i in 1 2 3 4 5 6 7 8 9 10; do
  tq lease unlimited --for 1m >/dev/null
  advance 120
done
expect_eq "$(field "$id" .attempts)" 10 "attempts after 10 expired leases"
expect_eq "$(state "$id")" runnable

section "a running command paused, then resumed: its next run is the next attempt, both runs' output kept"
# Real time: `run` holds the lease while the command runs.
unset TASKQ_NOW
mkdir -p got
export GOT=$scratch/got
file_has() { [[ -s $1 ]]; }
# Says its attempt on both streams, then works until told to finish (a
# file appears).
id=$(add_task runs -- perl -e '
  my ($dir, $id, $n) = ($ENV{GOT}, $ENV{TASKQ_ID}, $ENV{TASKQ_ATTEMPT});
  $| = 1;
  print "out of attempt $n\n";
  print STDERR "err of attempt $n\n";
  open(my $f, ">", "$dir/started.$id.$n") or die; print $f "$$\n"; close $f;
  select(undef, undef, undef, 0.02) until -e "$dir/go.$id";
  print "attempt $n finished\n";')
bg_run runs1 run runs --until-empty --grace 5s
worker=$bg
wait_until 20 file_has "got/started.$id.1" || _ko "the first run started" "no started.$id.1"
expect_exit 0 "$TASKQ" pause "$id"
bg_finish "$worker" runs1
expect_eq "$(state "$id") $(field "$id" .attempts)" "paused 1" "paused after attempt 1"
expect_exit 0 "$TASKQ" resume "$id"
touch "got/go.$id"
bg_run runs2 run runs --until-empty
bg_finish "$bg" runs2
expect_eq "$rc" 0 "the second run's exit"
expect_eq "$(state "$id") $(field "$id" .attempts)" "completed 2" "done at attempt 2"
check "the second run had TASKQ_ATTEMPT=2" test -s "got/started.$id.2"
expect_eq "$(field "$id" '.errors | length')" 0 "the pause is not an error"
expect_exit 0 "$TASKQ" logs "$id" --attempt 1 --stdout
expect_out "out of attempt 1"
expect_exit 0 "$TASKQ" logs "$id" --attempt 1 --stderr
expect_out "err of attempt 1"
expect_exit 0 "$TASKQ" logs "$id" --stdout
expect_out $'out of attempt 2\nattempt 2 finished'
expect_exit 0 "$TASKQ" logs "$id" --attempt 2 --stderr
expect_out "err of attempt 2"
expect_exit 0 "$TASKQ" show "$id" -o json
expect_json "$out" '[.output[].attempt] | unique' '[1,2]' "show: output kept for both attempts"

section "a handler's exit 75 that printed keeps its output: the next run is the next attempt, the limit unaffected"
rm -f got/busy
cat >busy.sh <<'SH'
#!/bin/sh
if [ ! -e "$GOT/busy" ]; then
  : >"$GOT/busy"
  echo "busy, later"
  exit 75
fi
echo "done at attempt $TASKQ_ATTEMPT"
SH
chmod +x busy.sh
id=$(add_task busy --max-attempts 1)
expect_exit 0 "$TASKQ" run busy --until-empty --release-delay 0s -- ./busy.sh
expect_eq "$(state "$id") $(field "$id" .attempts)" "completed 2" \
  "released once (not counted by --max-attempts 1), done at attempt 2"
expect_exit 0 "$TASKQ" logs "$id" --attempt 1
expect_out "busy, later"
expect_exit 0 "$TASKQ" logs "$id"
expect_out "done at attempt 2"
# A lease given back with nothing kept gives its number back too.
quiet=$(add_task quietq --max-attempts 1)
tok=$(tq lease quietq | jq -r .lease.token)
expect_exit 0 "$TASKQ" release "$quiet" --lease "$tok"
expect_eq "$(field "$quiet" .attempts)" 0 "attempts after a release with no output"
