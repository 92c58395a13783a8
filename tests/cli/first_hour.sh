# A newcomer's first hour, as one script: queue 20 commands (some failing,
# some shell strings), drain them with two overlapping cron-style workers,
# read list, logs and why as a user would, retry the failures, and check
# every figure a user reads along the way (README "When a command fails",
# doc/workers.md).
#
# The clock is frozen: a failed attempt's retry is due 10 minutes later by
# the default policy, and `retry ID` runs it now.

set_now 2026-11-21T08:00:00Z

section "twenty commands, some failing, some shell strings"
fresh_db
ok_ids=() bad_ids=() sh_ids=()
for n in $(seq 1 12); do
  ok_ids+=("$(add_task jobs -- sh -c "echo done $n")")
done
for n in 1 2 3 4; do
  bad_ids+=("$(add_task jobs -- sh -c "echo 'disk full $n' >&2; exit 3")")
done
for n in 1 2 3 4; do
  sh_ids+=("$(add_task jobs --sh "printf 'sh %s\n' $n | tr a-z A-Z")")
done
expect_exit 0 "$TASKQ" stats --queue jobs -o json
expect_jq "$out" '.runnable == 20' "20 tasks queued"

section "two overlapping cron-style workers drain the queue"
"$TASKQ" run jobs --until-empty -q >w1.out 2>w1.err &
p1=$!
"$TASKQ" run jobs --until-empty -q >w2.out 2>w2.err &
p2=$!
wait "$p1"
rc1=$?
wait "$p2"
rc2=$?
out1=$(<w1.out) out2=$(<w2.out)
check "a worker that ran a failing task exits 6 (w1 $rc1, w2 $rc2)" \
  test "$rc1" = 6 -o "$rc2" = 6
check "each exit is 0 or 6 (w1 $rc1, w2 $rc2)" \
  test "$rc1$rc2" = 00 -o "$rc1$rc2" = 06 -o "$rc1$rc2" = 60 -o "$rc1$rc2" = 66
leased=0
for n in $(sed -n 's/^leased \([0-9]*\):.*/\1/p' w1.out w2.out); do
  leased=$((leased + n))
done
expect_eq "$leased" 20 "the two summaries' leased add up to 20"
check "a summary names the tasks that will retry" \
  grep -q "will retry.*(task" w1.out w2.out

section "list says what happened, in the user's words"
expect_exit 0 "$TASKQ" list --queue jobs --wide # every column: PRI, RUN_AT
for id in "${ok_ids[@]}" "${sh_ids[@]}"; do
  expect_match "$(grep "^$id " <<<"$out")" "^$id +jobs +completed" "task $id completed"
done
for id in "${bad_ids[@]}"; do
  expect_match "$(grep "^$id " <<<"$out")" "^$id +jobs +sleeping +0 +1 +2026-11-21T08:10:00" \
    "task $id sleeps after its first attempt, due again at 08:10"
done
expect_not_contains "$out" "null" "a command task shows its command, not a null payload"
expect_exit 0 "$TASKQ" list --queue jobs -o json
expect_eq "$(jq -s '[.[] | select(.state == "completed")] | length' <<<"$out")" 16 \
  "16 completed"

section "logs and why"
expect_exit 0 "$TASKQ" logs "${ok_ids[4]}"
expect_out "done 5"
expect_exit 0 "$TASKQ" logs "${sh_ids[1]}"
expect_out "SH 2"
expect_exit 0 "$TASKQ" logs "${bad_ids[0]}"
expect_eq "$err" "disk full 1" "a failing task's stderr"
expect_exit 0 "$TASKQ" why "${bad_ids[0]}"
expect_match "$out" "attempt 1 failed \\(exit status 3: disk full 1\\); retry 2 of 8 at 2026-11-21T08:10:00(\\.0+)?Z" \
  "why says which attempt failed, why, and when the retry is"

section "retry the failures now, fixed"
for id in "${bad_ids[@]}"; do
  expect_exit 0 "$TASKQ" retry "$id"
  expect_out "$id" # a task sleeping after an error runs now, as itself
done
expect_exit 6 "$TASKQ" run jobs --until-empty
expect_match "$out" "^leased 4: 0 completed, 0 failed for good, 4 will retry" \
  "the four ran again, and failed again"
expect_exit 0 "$TASKQ" stats --queue jobs -o json
expect_jq "$out" '.completed == 16 and .sleeping == 4' "16 done, 4 waiting to retry"
