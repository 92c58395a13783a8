# The counts of each queue and state (what `stats`, `top` and `metrics`
# show without reading the history) stay exact while many writers of one
# queue change them at once. On PostgreSQL each count is spread over rows
# (slots) that writers update without waiting for each other; the sum is
# what is read, and `db check` compares it with the tasks counted again.

cs_n=16 # copies at once (hammer, tests/cli/run)

# counts_match Q: `stats` for queue Q against `list` counted by state.
counts_match() {
  local q=$1 want got
  want=$(tq list --queue "$q" --limit 100000 -o json | jq -s -c \
    'group_by(.state) | map({(.[0].state): length}) | add // {}')
  got=$(tq stats --queue "$q" -o json | jq -c \
    '(.counts // .states // .) | {runnable, sleeping, paused, completed, failed, killed}
     | with_entries(select(.value != null and .value != 0))')
  expect_eq "$(jq -S -c . <<<"$got")" "$(jq -S -c . <<<"$want")" \
    "$2: stats of $q agree with its tasks"
}

fresh_db cs
seq 1 20 >"$scratch/twenty"

section "16 bulk adds to one queue at once: every task counted"
hammer add $cs_n "$TASKQ" add c --lines "$scratch/twenty" --max-errors 1
expect_eq "$(rcs add)" "$cs_n 0" "every add exits 0 ($(errs add))"
expect_exit 0 "$TASKQ" stats --queue c -o json
expect_jq "$out" '.runnable == 320' "stats: 320 runnable"
expect_exit 0 "$TASKQ" db check
counts_match c "after the adds"

section "16 workers of one queue at once: every done and fail counted"
# A task whose id is a multiple of 4 fails (one error: failed); the
# others complete. Every state change of the queue moves its counts.
hammer run $cs_n "$TASKQ" run c --until-empty -q -- \
  sh -c 'test $((TASKQ_ID % 4)) -ne 0'
# Exit 6: a task the worker ran failed; anything else is wrong.
expect_eq "$(cat "$scratch"/run.*.rc | grep -cvx '[06]')" 0 \
  "every worker exits 0 or 6 ($(rcs run); $(errs run))"
failed=$(tq list --queue c --limit 100000 -o json | jq -s '[.[] | select(.state == "failed")] | length')
expect_eq "$failed" 80 "a quarter of the tasks failed"
expect_exit 0 "$TASKQ" stats --queue c -o json
expect_jq "$out" '((.counts // .states // .) | .completed == 240 and .failed == 80 and .runnable == 0)' \
  "stats: 240 completed, 80 failed, none runnable"
expect_exit 0 "$TASKQ" db check
counts_match c "after the workers"
# Each fail counted once in the queue's error counter, whatever its slot.
expect_exit 0 "$TASKQ" metrics
expect_contains "$out" 'taskq_errors_total{queue="c"} 80' "metrics: 80 errors in queue c"

section "16 workers streaming at once, then purged: counts back to none"
hammer add2 $cs_n "$TASKQ" add s --lines "$scratch/twenty"
expect_eq "$(rcs add2)" "$cs_n 0" "every add exits 0 ($(errs add2))"
cat >"$scratch/answer" <<'PL'
#!/usr/bin/perl
$| = 1;
while (<STDIN>) { print "{\"id\":$1,\"done\":null}\n" if /^\{"task":\{"id":(\d+)/; }
PL
chmod +x "$scratch/answer"
hammer stream $cs_n "$TASKQ" run s --stream --until-empty -q -- "$scratch/answer"
expect_eq "$(rcs stream)" "$cs_n 0" "every streaming worker exits 0 ($(errs stream))"
expect_exit 0 "$TASKQ" stats --queue s -o json
expect_jq "$out" '(.counts // .states // .) | .completed == 320' "stats: 320 completed"
expect_exit 0 "$TASKQ" db check
expect_exit 0 "$TASKQ" purge --queue s --state completed
expect_exit 0 "$TASKQ" stats -o json
expect_eq "$(jq -c 'select((.queue // .name) == "s") | (.counts // .states // .) | .completed // 0' <<<"$out")" \
  "" "stats: queue s gone once purged"
expect_exit 0 "$TASKQ" db check

if [[ $backend == postgresql ]]; then
  section "PostgreSQL: the counts of one queue are spread over slots"
  # Sixteen writers at once wrote the counts of queue c: their rows are in
  # more than one slot (transaction ids modulo 64), each count the sum.
  slots=$(PGOPTIONS='-c search_path=taskq' psql -XAtq -d "$TASKQ_DB" \
    -c "SELECT count(DISTINCT slot) FROM queue_counts WHERE queue = 'c'")
  check "more than one slot holds queue c's counts (got $slots)" \
    test "${slots:-0}" -gt 1
  sum=$(PGOPTIONS='-c search_path=taskq' psql -XAtq -d "$TASKQ_DB" \
    -c "SELECT sum(n) FROM queue_counts WHERE queue = 'c' AND state = 'completed'")
  expect_eq "$sum" 240 "the completed slots of c add up to 240"
  slots=$(PGOPTIONS='-c search_path=taskq' psql -XAtq -d "$TASKQ_DB" \
    -c "SELECT count(DISTINCT slot) FROM queue_counters WHERE queue = 'c' AND counter = 'errors'")
  check "more than one slot holds queue c's error counter (got $slots)" \
    test "${slots:-0}" -gt 1
fi
