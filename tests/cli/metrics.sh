# taskq metrics (doc/reference/commands.md#metrics): Prometheus text
# exposition, valid for promtool (Debian package prometheus, which
# scripts/setup test installs).

set_now 2026-11-21T08:00:00Z
fresh_db

section "tasks in every state, a running one, an expired lease, errors"
for i in 1 2 3 4 5 6 7; do add_task mq >/dev/null; done
add_task 'other.q' --delay 1h >/dev/null
# 1: completed, 2: failed (no retry), 3: sleeping (the policy), 4: killed,
# 5: paused, 6: leased (running), 7: runnable and ready.
lease_one() { tq lease mq --worker "$1" --for "${2:-5m}" -o json | jq -r .lease.token; }
tq done 1 --lease "$(lease_one a)" >/dev/null
tq fail 2 --lease "$(lease_one a)" --error "broken" --no-retry >/dev/null
tq fail 3 --lease "$(lease_one a)" --error "flaky" >/dev/null
tq kill 4 >/dev/null
tq pause 5 >/dev/null
lease_one a 1m >/dev/null # task 6, until 08:01
advance 30

expect_exit 0 "$TASKQ" metrics
metrics=$out
sample() { grep -F "$1 " <<<"$metrics" | awk '{print $NF}'; }
expect_eq "$(sample 'taskq_tasks{queue="mq",state="runnable"}')" 2 "runnable (6 and 7)"
expect_eq "$(sample 'taskq_tasks{queue="mq",state="sleeping"}')" 1 sleeping
expect_eq "$(sample 'taskq_tasks{queue="mq",state="paused"}')" 1 paused
expect_eq "$(sample 'taskq_tasks{queue="mq",state="completed"}')" 1 completed
expect_eq "$(sample 'taskq_tasks{queue="mq",state="failed"}')" 1 failed
expect_eq "$(sample 'taskq_tasks{queue="mq",state="killed"}')" 1 killed
expect_eq "$(sample 'taskq_running{queue="mq"}')" 1 running
expect_eq "$(sample 'taskq_ready{queue="mq"}')" 1 ready
expect_eq "$(sample 'taskq_oldest_ready_seconds{queue="mq"}')" 30.000 \
  "oldest ready age"
expect_eq "$(sample 'taskq_errors_total{queue="mq"}')" 2 "errors"
expect_eq "$(sample 'taskq_leases_expired_total{queue="mq"}')" 0 "no expiry yet"
expect_eq "$(sample 'taskq_tasks{queue="other.q",state="runnable"}')" 1 \
  "another queue"
expect_eq "$(sample 'taskq_ready{queue="other.q"}')" 0 "a delayed task is not ready"
expect_contains "$metrics" "# TYPE taskq_errors_total counter" "counter type"
expect_contains "$metrics" "# TYPE taskq_tasks gauge" "gauge type"

section "promtool check metrics accepts it"
if command -v promtool >/dev/null; then
  printf '%s\n' "$metrics" >"$scratch/metrics.prom"
  check "promtool check metrics" promtool check metrics <"$scratch/metrics.prom"
else
  _ko "promtool is installed" "install it: apt-get install prometheus"
fi

section "an expired lease counts at once, and again after it is reclaimed"
advance 60 # task 6's lease ran out at 08:01
expect_exit 0 "$TASKQ" metrics
metrics=$out
expect_eq "$(sample 'taskq_leases_expired_total{queue="mq"}')" 1 \
  "an expired, not yet reclaimed lease"
expect_eq "$(sample 'taskq_running{queue="mq"}')" 0 "not running any more"
tq lease mq --worker b >/dev/null # reclaims it
expect_exit 0 "$TASKQ" metrics
metrics=$out
expect_eq "$(sample 'taskq_leases_expired_total{queue="mq"}')" 1 \
  "the same expiry, counted once"

section "purge never makes a counter go back"
expect_exit 0 "$TASKQ" purge --queue mq
expect_exit 0 "$TASKQ" metrics
metrics=$out
expect_eq "$(sample 'taskq_errors_total{queue="mq"}')" 2 "errors kept"
expect_eq "$(sample 'taskq_tasks{queue="mq",state="failed"}')" 0 "failed purged"

section "an empty database prints the families and no samples"
fresh_db
tq db migrate >/dev/null # a missing database is exit 5
expect_exit 0 "$TASKQ" metrics
expect_eq "$(grep -vc '^#' <<<"$out")" 0 "no samples"
expect_eq "$(grep -c '^# TYPE' <<<"$out")" 7 "seven families (taskq_flows too)"
