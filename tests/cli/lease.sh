# Leases (doc/reference/task.md#leases): who gets which task, in what order,
# for how long, and how a stale token is fenced out.

T0=2026-11-21T08:00:00Z
set_now $T0

section "lease on an empty or unknown queue finds nothing"
tq db migrate >/dev/null # the database exists (a missing one is exit 5)
expect_exit 75 "$TASKQ" lease empty
expect_out_empty
expect_exit 75 "$TASKQ" lease empty -o env
expect_out "(exit 75)"
# eval of "(exit 75)" fails, so a shell worker takes its || branch.
expect_exit 0 bash -c 'eval "$("$TASKQ" lease empty -o env)" || echo none'
expect_out none
# On a missing database too, a shell worker's eval fails: (exit 5).
if sqlite_only; then
  expect_exit 5 "$TASKQ" --db "$scratch/missing.db" lease empty -o env
  expect_out "(exit 5)"
  expect_exit 0 bash -c 'eval "$("$TASKQ" --db "$1" lease empty -o env)" ||
    echo "none $?"' - "$scratch/missing.db"
  expect_out "none 5"
  check "lease created no database" test ! -e "$scratch/missing.db"
fi

section "a live lease is exclusive"
id=$(add_task q)
expect_exit 0 "$TASKQ" lease q --worker w1 --for 1m
tok1=$(jout .lease.token)
expect_time "$(jout .lease.expires_at)" 2026-11-21T08:01:00Z "--for 1m expiry"
expect_exit 75 "$TASKQ" lease q --worker w2

section "a stale token after expiry and re-lease is refused and changes nothing"
set_now 2026-11-21T08:02:00Z
expect_exit 0 "$TASKQ" lease q --worker w2 --for 5m
expect_json "$out" .id "$id"
expect_json "$out" .attempts 2
expect_json "$out" .lease.worker w2
tok2=$(jout .lease.token)
expect_ne "$tok2" "$tok1" "new token"
before=$(snapshot "$id")
expect_exit 4 "$TASKQ" done "$id" --lease "$tok1"
expect_err_format
expect_eq "$(snapshot "$id")" "$before" "task after stale done"
expect_exit 4 "$TASKQ" fail "$id" --lease "$tok1" --error boom
expect_eq "$(snapshot "$id")" "$before" "task after stale fail"
expect_exit 4 "$TASKQ" heartbeat "$id" --lease "$tok1"
expect_eq "$(snapshot "$id")" "$before" "task after stale heartbeat"
expect_exit 4 "$TASKQ" release "$id" --lease "$tok1"
expect_eq "$(snapshot "$id")" "$before" "task after stale release"
expect_exit 4 "$TASKQ" sleep "$id" --lease "$tok1" --for 1h
expect_eq "$(snapshot "$id")" "$before" "task after stale sleep"
expect_exit 4 "$TASKQ" done "$id" --lease not-a-token
expect_eq "$(snapshot "$id")" "$before" "task after made-up token"
# The current holder is unaffected.
expect_exit 0 "$TASKQ" done "$id" --lease "$tok2"
expect_eq "$(state "$id")" completed
# And a token is dead once its task is done.
expect_exit 4 "$TASKQ" done "$id" --lease "$tok2"
expect_exit 4 "$TASKQ" heartbeat "$id" --lease "$tok2"

section "an expired token is refused even when nobody leased the task again"
set_now $T0
id=$(add_task expiry)
tok=$(tq lease expiry --for 1m | jq -r .lease.token)
set_now 2026-11-21T08:01:30Z
before=$(snapshot "$id")
expect_exit 4 "$TASKQ" done "$id" --lease "$tok"
expect_exit 4 "$TASKQ" heartbeat "$id" --lease "$tok"
expect_exit 4 "$TASKQ" fail "$id" --lease "$tok" --error late
expect_exit 4 "$TASKQ" release "$id" --lease "$tok"
expect_exit 4 "$TASKQ" sleep "$id" --lease "$tok" --for 1h
expect_eq "$(snapshot "$id")" "$before" "task after the expired token's writes"
expect_eq "$(state "$id")" runnable
# The expired lease is as good as none: leasable with no daemon.
expect_exit 0 "$TASKQ" lease expiry
expect_json "$out" .id "$id"

section "the lease is live until exactly expires_at"
set_now $T0
id=$(add_task edge)
tok=$(tq lease edge --for 1m | jq -r .lease.token)
set_now 2026-11-21T08:00:59Z
expect_exit 75 "$TASKQ" lease edge
expect_exit 0 "$TASKQ" heartbeat "$id" --lease "$tok" --for 1m
expect_exit 0 "$TASKQ" show "$id" -o json
expect_time "$(jout .lease.expires_at)" 2026-11-21T08:01:59Z \
  "expiry moved by heartbeat --for"

section "heartbeat extends by the leased duration by default"
set_now $T0
id=$(add_task hb)
tok=$(tq lease hb --for 10m | jq -r .lease.token)
set_now 2026-11-21T08:09:00Z
expect_exit 0 "$TASKQ" heartbeat "$id" --lease "$tok"
expect_out_empty
expect_time "$(field "$id" .lease.expires_at)" 2026-11-21T08:19:00Z \
  "expiry after heartbeat"
# Past the old expiry but inside the extended one, the lease still holds.
set_now 2026-11-21T08:15:00Z
expect_exit 75 "$TASKQ" lease hb
expect_exit 0 "$TASKQ" done "$id" --lease "$tok"

section "order: priority, then run_at, then id"
set_now $T0
low=$(add_task order --priority 0)
high_late=$(add_task order --priority 5)
high_early=$(add_task order --priority 5 --at 2026-11-21T07:00:00Z)
high_tie=$(add_task order --priority 5)
got=""
for _ in 1 2 3 4; do
  got+="$(tq lease order | jq -r .id) "
done
expect_eq "$got" "$high_early $high_late $high_tie $low " "lease order"
expect_exit 75 "$TASKQ" lease order

section "a task is not leased before its run_at"
set_now $T0
id=$(add_task later --delay 10m)
expect_exit 75 "$TASKQ" lease later
set_now 2026-11-21T08:09:59Z
expect_exit 75 "$TASKQ" lease later
set_now 2026-11-21T08:10:00Z
expect_exit 0 "$TASKQ" lease later
expect_json "$out" .id "$id"

section "lease from several queues, several tasks, as ids"
set_now $T0
a=$(add_task qa)
b=$(add_task qb)
expect_exit 0 "$TASKQ" lease qa qb --count 5
expect_eq "$(jq -r .id <<<"$out" | sort -n | tr '\n' ' ')" "$a $b " \
  "ids leased from qa and qb"
expect_exit 75 "$TASKQ" lease qa qb
# Across queues the order is the same: priority first.
low=$(add_task qa)
high=$(add_task qb --priority 5)
expect_exit 0 "$TASKQ" lease qa qb
expect_json "$out" .id "$high" "the higher priority of two queues"
expect_exit 0 "$TASKQ" lease qa qb
expect_json "$out" .id "$low"
c=$(add_task qc)
expect_exit 0 "$TASKQ" lease qc -o id
expect_out "$c"

section "queue set --max-running caps the live leases of a queue"
set_now $T0
expect_exit 0 "$TASKQ" queue set capped --max-running 1
first=$(add_task capped)
second=$(add_task capped)
tok=$(tq lease capped --for 1m | jq -r .lease.token)
expect_exit 75 "$TASKQ" lease capped
expect_exit 0 "$TASKQ" why "$second"
expect_contains "$out" limit "why names the running limit"
expect_exit 0 "$TASKQ" done "$first" --lease "$tok"
expect_exit 0 "$TASKQ" lease capped --for 1m
expect_json "$out" .id "$second"
third=$(add_task capped)
expect_exit 75 "$TASKQ" lease capped
# An expired lease no longer holds a place.
set_now 2026-11-21T08:02:00Z
expect_exit 0 "$TASKQ" lease capped --count 5
expect_eq "$(jq -r .id <<<"$out" | tr '\n' ' ')" "$second " \
  "leased once the lease of $second expired (the lowest id first)"
set_now $T0

section "--match leases only tasks with matching labels"
img=$(add_task m --label kind=image --label size=big)
txt=$(add_task m --label kind=text)
expect_exit 75 "$TASKQ" lease m --match kind=video
expect_exit 0 "$TASKQ" lease m --match kind=text
expect_json "$out" .id "$txt"
expect_exit 0 "$TASKQ" lease m --match kind=image --match size=big
expect_json "$out" .id "$img"

section "--match with * as the value matches any value of that label"
any=$(add_task star --label kind=video)
add_task star --label other=1 >/dev/null
expect_exit 0 "$TASKQ" lease star --match 'kind=*'
expect_json "$out" .id "$any"
expect_exit 75 "$TASKQ" lease star --match 'kind=*'

section "a worker's release gives the task back untouched"
set_now $T0
id=$(add_task rel)
tok=$(tq lease rel | jq -r .lease.token)
expect_exit 0 "$TASKQ" release "$id" --lease "$tok"
expect_out_empty
expect_jq "$(snapshot "$id")" \
  '.state == "runnable" and .lease == null and .errors == [] and .attempts == 0'
expect_exit 0 "$TASKQ" lease rel
expect_json "$out" .attempts 1 "attempts after release and re-lease"
tok=$(jout .lease.token)
expect_exit 0 "$TASKQ" release "$id" --lease "$tok" --delay 5m
expect_time "$(field "$id" .run_at)" 2026-11-21T08:05:00Z "run_at after release --delay"
expect_exit 75 "$TASKQ" lease rel
set_now 2026-11-21T08:05:00Z
expect_exit 0 "$TASKQ" lease rel
expect_json "$out" .id "$id"

section "a worker's sleep puts the task to sleep and ends the lease"
set_now $T0
id=$(add_task ws)
tok=$(tq lease ws | jq -r .lease.token)
expect_exit 0 "$TASKQ" sleep "$id" --lease "$tok" --for 10m
expect_jq "$(snapshot "$id")" '.state == "sleeping" and .lease == null'
expect_exit 4 "$TASKQ" done "$id" --lease "$tok"
set_now 2026-11-21T08:05:00Z
expect_exit 75 "$TASKQ" lease ws
set_now 2026-11-21T08:10:00Z
expect_exit 0 "$TASKQ" lease ws
expect_json "$out" .id "$id"

section "heartbeat stores a checkpoint that survives the next attempt"
set_now $T0
id=$(add_task cp)
tok=$(tq lease cp --for 1m | jq -r .lease.token)
expect_exit 0 "$TASKQ" heartbeat "$id" --lease "$tok" --checkpoint '{"page":3}'
expect_eq "$(field "$id" .checkpoint)" '{"page":3}' "checkpoint"
expect_exit 2 "$TASKQ" heartbeat "$id" --lease "$tok" --checkpoint '{page'
expect_eq "$(field "$id" .checkpoint)" '{"page":3}' "checkpoint after bad JSON"
set_now 2026-11-21T08:02:00Z
expect_exit 0 "$TASKQ" lease cp
expect_json "$out" .checkpoint '{"page":3}' "checkpoint in the next lease"
