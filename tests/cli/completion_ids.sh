# taskq __ids COMMAND (hidden): the ids the completion scripts offer after
# COMMAND, the tasks it can act on, newest first (completions.sh checks
# that each shell offers them in that order).

section "setup"
running=$(tq add ids)
token=$(tq lease ids -o json | jq -r .lease.token)
paused=$(tq add ids)
tq pause "$paused" >/dev/null
sleeping=$(tq add ids)
tq sleep "$sleeping" --for 1h >/dev/null
killed=$(tq add ids)
tq kill "$killed" >/dev/null
failed=$(tq add ids --priority 9)
t=$(tq lease ids -o json | jq -r .lease.token)
tq fail "$failed" --lease "$t" --no-retry --error boom >/dev/null
completed=$(tq add ids --priority 9)
t=$(tq lease ids -o json | jq -r .lease.token)
tq done "$completed" --lease "$t" >/dev/null
runnable=$(tq add ids)
check "task $running holds a lease" test -n "$token"
nl() { printf '%s\n' "$@"; }

section "by command"
expect_exit 0 "$TASKQ" __ids resume
expect_out "$(nl "$sleeping" "$paused")"
expect_exit 0 "$TASKQ" __ids pause
expect_out "$(nl "$runnable" "$sleeping" "$running")"
expect_exit 0 "$TASKQ" __ids sleep
expect_out "$(nl "$runnable" "$sleeping" "$paused" "$running")"
for c in kill send wait why; do
    expect_exit 0 "$TASKQ" __ids "$c"
    expect_out "$(nl "$runnable" "$sleeping" "$paused" "$running")"
done
expect_exit 0 "$TASKQ" __ids retry
expect_out "$(nl "$failed" "$killed")"
for c in release checkpoint heartbeat done fail; do
    expect_exit 0 "$TASKQ" __ids "$c"
    expect_out "$running"
done
for c in show add; do
    expect_exit 0 "$TASKQ" __ids "$c"
    expect_out "$(nl "$runnable" "$completed" "$failed" "$killed" "$sleeping" "$paused" "$running")"
done
expect_exit 0 "$TASKQ" __ids show --limit 2
expect_out "$(nl "$runnable" "$completed")"
expect_exit 0 "$TASKQ" __ids kill --limit 1
expect_out "$runnable"

section "hidden"
expect_exit 0 "$TASKQ" --help
expect_not_contains "$out" "__ids" "taskq --help does not list __ids"
