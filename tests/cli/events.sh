# taskq events (doc/reference/commands.md#events): the event log as a stream,
# oldest first; --queue, --since, -o json; --follow waits for new events.

section "the log, oldest first, with creations as add events"
fresh_db
set_now 2026-11-21T08:00:00Z
a=$(add_task evq --text a)
advance 1
b=$(add_task other)
advance 1
tok=$(tq lease evq --worker w1 -o json | jq -r .lease.token)
advance 1
tq done "$a" --lease "$tok" >/dev/null
expect_exit 0 "$TASKQ" events -o json
expect_eq "$(jq -r '[.task, .message] | join(":")' <<<"$out" | tr '\n' ' ')" \
  "$a:add $b:add $a:lease $a:complete " "every event, in time order"
expect_eq "$(jout 'select(.message == "lease") | .actor')" w1 "the lease's actor"
expect_eq "$(jout 'select(.message == "lease") | .from + ">" + .to')" \
  "runnable>runnable" "the lease's transition"
expect_eq "$(jout 'select(.message == "add") | .id' | sort -u)" null \
  "a creation has no event row id"
expect_eq "$(jout 'select(.message == "complete") | .time')" \
  2026-11-21T08:00:03Z "the event's time"
expect_eq "$(jout 'select(.message == "complete") | .queue')" evq "its queue"

section "--queue and --since filter"
expect_exit 0 "$TASKQ" events --queue other -o json
expect_eq "$(jout .task | tr '\n' ' ')" "$b " "--queue other"
expect_exit 0 "$TASKQ" events --since 2026-11-21T08:00:02Z -o json
expect_eq "$(jout .message | tr '\n' ' ')" "lease complete " "--since"
expect_exit 0 "$TASKQ" events
expect_eq "$(wc -l <<<"$out")" 4 "the table has one line per event"
expect_contains "$out" "2026-11-21T08:00:01Z  $b  other  add  - -> runnable" \
  "a table line"

section "bad input"
expect_exit 2 "$TASKQ" events --since yesterday
expect_exit 2 "$TASKQ" events --queue 'no spaces'
expect_exit 2 "$TASKQ" events -o id

section "--follow prints events of other processes as they happen"
unset TASKQ_NOW
fresh_db
add_task fq >/dev/null
"$TASKQ" events --follow -o json >"$scratch/follow.out" 2>"$scratch/follow.err" &
follower=$!
# The follower starts at the end of the log. Its first read is done once
# an event added after it started shows up; keep adding until one does.
seen() { [[ -s $scratch/follow.out ]]; }
wait_until 10 sh -c "\"\$TASKQ\" add fq --text marker >/dev/null; test -s '$scratch/follow.out'"
check "the follower prints new events" seen
expect_eq "$(jq -r .message "$scratch/follow.out" | sort -u)" add \
  "only events after it started (no history)"
start=$(now_ms)
id=$(add_task fq --text fresh)
arrived() { grep -q "\"task\":$id," "$scratch/follow.out"; }
wait_until 10 arrived
check "the new task's add event arrives" arrived
echo "  (arrived in $(($(now_ms) - start)) ms, including the add itself)"
tq lease fq --worker wf >/dev/null
leased() { grep -q '"message":"lease"' "$scratch/follow.out"; }
wait_until 10 leased
check "a lease by another process arrives" leased
check "the follower is still running" alive "$follower"
kill "$follower"
wait "$follower" 2>/dev/null
expect_eq "$(cat "$scratch/follow.err")" "" "the follower wrote no errors"

section "--follow --since prints the history from then, then follows"
fresh_db
set_now 2026-11-21T08:00:00Z
old=$(add_task hq)
unset TASKQ_NOW
"$TASKQ" events --follow --since 2026-11-21T07:00:00Z -o json \
  >"$scratch/since.out" &
follower=$!
has_old() { grep -q "\"task\":$old," "$scratch/since.out"; }
wait_until 10 has_old
check "the history since --since comes first" has_old
new=$(add_task hq)
has_new() { grep -q "\"task\":$new," "$scratch/since.out"; }
wait_until 10 has_new
check "then new events" has_new
kill "$follower"
wait "$follower" 2>/dev/null
