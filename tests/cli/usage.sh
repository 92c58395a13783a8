# Bad input (doc/reference/invocation.md#exit-codes,
# doc/reference/guarantees.md#bad-input: "bad input of any kind gets a clear
# message and the documented exit code, and changes nothing"): usage errors
# exit 2, unknown ids exit 3, and the database is left as it was.

set_now 2026-11-21T08:00:00Z

# Two tasks give the refused commands something to damage.
victim=$(add_task q --payload '{"keep":true}')
leased_id=$(add_task held)
lease_json=$(tq lease held --worker w1)
tok=$(jq -r .lease.token <<<"$lease_json")
tasks_before=$(count_tasks)
victim_before=$(snapshot "$victim")
leased_before=$(snapshot "$leased_id")

# unchanged: the database is as it was before the refused commands. Then
# takes the state as the new baseline, so one bad command fails one check.
unchanged() {
  local now_count now_victim now_leased
  now_count=$(count_tasks)
  now_victim=$(snapshot "$victim")
  now_leased=$(snapshot "$leased_id")
  expect_eq "$now_count" "$tasks_before" "number of tasks"
  expect_eq "$now_victim" "$victim_before" "task $victim"
  expect_eq "$now_leased" "$leased_before" "task $leased_id"
  tasks_before=$now_count victim_before=$now_victim leased_before=$now_leased
}

section "help"
expect_exit 0 "$TASKQ" --help
expect_contains "$out" lease "taskq --help"
# doc/reference/commands.md: each command explains itself with an example.
for sub in add lease heartbeat done fail release sleep pause resume kill \
  checkpoint send retry show list stats why queue db "queue set" \
  "queue list" "db check" "db path" "db migrate" "db backup"; do
  read -ra words <<<"$sub"
  expect_exit 0 "$TASKQ" "${words[@]}" --help
  expect_contains "$out" "taskq $sub " "example in taskq $sub --help"
done

section "unknown commands and options"
expect_exit 2 "$TASKQ" frobnicate
expect_err_format
expect_exit 2 "$TASKQ" add q --frobnicate
expect_exit 2 "$TASKQ" list --frobnicate
expect_exit 2 "$TASKQ" -o yaml list
expect_exit 2 "$TASKQ" add
unchanged

section "an unknown command or option suggests the nearest"
# Each case: the command line, then the exact message.
while IFS='|' read -r line message; do
  read -ra words <<<"$line"
  expect_exit 2 "$TASKQ" "${words[@]}"
  expect_eq "$err" "taskq: $message" "stderr of taskq $line"
  expect_out_empty
done <<'EOF_CASES'
lsit|unknown command 'lsit'; did you mean 'list'?
LIST|unknown command 'LIST'; did you mean 'list'?
frobnicate|unknown command 'frobnicate' (see taskq --help)
queue sett q|unknown command 'queue sett'; did you mean 'queue set'?
db chek|unknown command 'db chek'; did you mean 'db check'?
help lsit|unknown command 'lsit'; did you mean 'list'?
list --stat ready|unknown option '--stat' for list; did you mean '--state'?
list --stat=ready|unknown option '--stat' for list; did you mean '--state'?
list --state ready --limt 3|unknown option '--limt' for list; did you mean '--limit'?
list --frobnicate|unknown option '--frobnicate' for list (see taskq list --help)
list -x|unknown option '-x' for list (see taskq list --help)
list -x5|unknown option '-x' for list (see taskq list --help)
list --dbb x|unknown option '--dbb' for list; did you mean '--db'?
--dbb x list|unknown option '--dbb'; did you mean '--db'?
--outptu json list|unknown option '--outptu'; did you mean '--output'?
-O json list|unknown option '-O'; did you mean '-o'?
queue set q --max-runing 2|unknown option '--max-runing' for queue set; did you mean '--max-running'?
add q --prioriti 3|unknown option '--prioriti' for add; did you mean '--priority'?
send 1 pause --queu q|unknown option '--queu' for send; did you mean '--queue'?
run q --concurency 2 -- true|unknown option '--concurency' for run; did you mean '--concurrency'?
EOF_CASES
unchanged

section "words from other tools name the taskq command meant"
# tsp, nq, pueue, systemctl and git words: the command they mean, not the
# nearest spelling (rerun is not run, start is not stats, follow not flow).
while IFS='|' read -r line message; do
  read -ra words <<<"$line"
  expect_exit 2 "$TASKQ" "${words[@]}"
  expect_eq "$err" "taskq: unknown command '${words[0]}'; $message" \
    "stderr of taskq $line"
  expect_out_empty
done <<'EOF_CASES'
rerun 2|did you mean 'retry' (run an ended task again, or a sleeping one now)?
restart 2|did you mean 'retry' (run an ended task again, or a sleeping one now)?
start|did you mean 'run' (start a worker on a queue) or 'resume' (paused tasks)?
follow 2|did you mean 'logs --follow' (a task's output), 'events --follow' or 'top'?
watch|did you mean 'logs --follow' (a task's output), 'events --follow' or 'top'?
remove 2|did you mean 'kill' (stop tasks for good) or 'purge' (delete finished ones)?
rm 2|did you mean 'kill' (stop tasks for good) or 'purge' (delete finished ones)?
delete 2|did you mean 'kill' (stop tasks for good) or 'purge' (delete finished ones)?
clear|did you mean 'purge' (delete finished tasks)?
clean|did you mean 'purge' (delete finished tasks)?
enqueue q|did you mean 'add'?
submit q|did you mean 'add'?
push q|did you mean 'add'?
unpause 2|did you mean 'resume'?
stop 2|did you mean 'kill' (for good), 'pause' (until resumed) or 'freeze' (where it is)?
suspend 2|did you mean 'freeze' (stop it where it is) or 'pause' (stop it until resumed)?
work q|did you mean 'run' (start a worker on a queue)?
tail 2|did you mean 'logs' (--follow waits for more)?
status|did you mean 'list' (or 'stats', per queue)?
info 2|did you mean 'show'?
version|the version is: taskq --version
Version|the version is: taskq --version
EOF_CASES
unchanged

section "taskq help [CMD [SUB]] prints what --help prints"
for line in "" list run "queue set" "db check" schedule "flow submit"; do
  read -ra words <<<"$line"
  expect_exit 0 "$TASKQ" "${words[@]}" --help
  want=$out
  expect_exit 0 "$TASKQ" help "${words[@]}"
  expect_eq "$out" "$want" "taskq help $line"
done
expect_exit 0 "$TASKQ" --db x.db help list
expect_contains "$out" "Usage: taskq list" "help after a global option"
expect_exit 2 "$TASKQ" help list extra
expect_err_format

section "every command's help shows the global options, DUR and TIME"
commands() { help_commands; } # every command, from the help text
while read -r cmd; do
  [[ $cmd == help ]] && continue
  subs=$(help_commands "$cmd")
  for line in "$cmd" $(for s in $subs; do echo "$cmd/$s"; done); do
    read -ra words <<<"${line//\// }"
    expect_exit 0 "$TASKQ" "${words[@]}" --help
    for g in "--db PATH" "-o,--output FORMAT" "--worker NAME"; do
      expect_contains "$out" "$g" "$g in taskq ${words[*]} --help"
    done
    if grep -qE -- '-[-a-z]+ \[?DUR' <<<"${out%%Global options*}"; then
      expect_contains "$out" "DUR: 90s, 5m, 1h30m" "DUR in taskq ${words[*]} --help"
    fi
    if grep -qE -- '-[-a-z]+ TIME' <<<"${out%%Global options*}"; then
      expect_contains "$out" "TIME: RFC 3339" "TIME in taskq ${words[*]} --help"
    fi
  done
done < <(commands)
expect_exit 0 "$TASKQ" run --help
expect_contains "$out" "Usage: taskq run [OPTIONS] QUEUE... [-- CMD [ARG...]]" \
  "run --help usage"

section "malformed JSON payload"
for bad in '{bad' '{"a":1' "{'a':1}" 'hello' '' '{"a":1} {"b":2}' '[1,]'; do
  expect_exit 2 "$TASKQ" add q --payload "$bad"
  expect_err_format
  expect_err_contains --text
done
printf '{"a":\n' >bad.json
expect_exit 2 "$TASKQ" add q --payload-file bad.json
expect_exit 2 "$TASKQ" add q --payload '{"a":1}' --text a
expect_exit 2 "$TASKQ" done "$leased_id" --lease "$tok" --result '{bad'
expect_exit 2 "$TASKQ" heartbeat "$leased_id" --lease "$tok" --checkpoint '{bad'
unchanged

section "malformed durations"
expect_exit 2 "$TASKQ" lease held --for 5x
expect_exit 2 "$TASKQ" lease q --for 5x
expect_err_format
expect_exit 2 "$TASKQ" lease q --for ''
expect_exit 2 "$TASKQ" add q --delay -1s
expect_exit 2 "$TASKQ" add q --delay 1h30
expect_exit 2 "$TASKQ" add q --delay m
expect_exit 2 "$TASKQ" add q --retry-delay 10y
expect_exit 2 "$TASKQ" sleep "$victim" --for 5x
expect_exit 2 "$TASKQ" heartbeat "$leased_id" --lease "$tok" --for soon
expect_exit 2 "$TASKQ" fail "$leased_id" --lease "$tok" --error e --retry-in 1x
expect_exit 2 "$TASKQ" release "$leased_id" --lease "$tok" --delay -5m
unchanged

section "malformed times"
expect_exit 2 "$TASKQ" sleep "$victim" --until 2026-13-01T00:00:00Z
expect_err_format
expect_exit 2 "$TASKQ" sleep "$victim" --until tomorrow
expect_exit 2 "$TASKQ" send "$victim" sleep --until 2026-11-21T25:00:00Z
expect_exit 2 "$TASKQ" add q --at 2026-02-30T00:00:00Z
expect_exit 2 "$TASKQ" add q --at 'next tuesday'
# A bad clock is refused before anything happens.
for bad in yesterday 2026-13-01T00:00:00Z 1795248000; do
  expect_exit 2 env TASKQ_NOW="$bad" "$TASKQ" add q
  expect_err_contains TASKQ_NOW
  expect_exit 2 env TASKQ_NOW="$bad" "$TASKQ" lease q
done
unchanged

section "missing required values"
expect_exit 2 "$TASKQ" sleep "$victim"
expect_exit 2 "$TASKQ" send "$victim" sleep
expect_exit 2 "$TASKQ" fail "$leased_id" --lease "$tok"
expect_exit 2 "$TASKQ" send "$victim"
expect_exit 2 "$TASKQ" add q --delay 1m --at 2026-11-22T00:00:00Z
# Worker commands need a task and a token, from the line or the environment.
expect_exit 2 "$TASKQ" done "$leased_id"
expect_exit 2 "$TASKQ" done --lease "$tok"
expect_exit 2 "$TASKQ" heartbeat "$leased_id"
expect_exit 2 "$TASKQ" release --lease "$tok"
expect_exit 2 "$TASKQ" fail --lease "$tok" --error e
unchanged

section "malformed labels"
expect_exit 2 "$TASKQ" add q --label novalue
expect_err_format
expect_exit 2 "$TASKQ" add q --label =x
expect_exit 2 "$TASKQ" lease q --match =x
expect_exit 2 "$TASKQ" list --match =x
expect_exit 2 "$TASKQ" pause --queue q --match =x
unchanged

section "malformed numbers and ids"
expect_exit 2 "$TASKQ" add q --priority high
expect_exit 2 "$TASKQ" add q --max-attempts many
expect_exit 2 "$TASKQ" lease q --count x
expect_exit 2 "$TASKQ" list --limit x
expect_exit 2 "$TASKQ" show abc
expect_exit 2 "$TASKQ" pause 12abc
expect_exit 2 "$TASKQ" done abc --lease "$tok"
unchanged

section "an empty value is a malformed value, not a missing option"
# '' is not JSON, not a duration, not a time, not a number, not a name.
# Each worker command gets a task leased for it, so one bad answer cannot
# spoil the next check.
for args in "done --result" "heartbeat --checkpoint" "heartbeat --for" \
  "release --delay" "fail --error e --retry-in" "fail --error e --move-to"; do
  read -ra words <<<"$args"
  e_queue=empty-${args// /-} # a queue per case: a release gives its task back
  e_id=$(add_task "$e_queue")
  e_tok=$(tq lease "$e_queue" | jq -r .lease.token)
  e_before=$(snapshot "$e_id")
  expect_exit 2 "$TASKQ" "${words[0]}" "$e_id" --lease "$e_tok" \
    "${words[@]:1}" ''
  expect_eq "$(snapshot "$e_id")" "$e_before" "leased task after $args ''"
done
tasks_before=$(count_tasks)
for opt in --delay --at --priority --max-attempts --max-errors \
  --error-window --retry-delay --max-delay; do
  expect_exit 2 "$TASKQ" add q "$opt" ''
done
unchanged
for opt in --payload-file --jsonl; do
  "$TASKQ" add q "$opt" '' >/dev/null 2>&1
  rc=$?
  check "add $opt '' is refused (exit $rc)" test "$rc" = 1 -o "$rc" = 2
done
unchanged
expect_exit 2 "$TASKQ" queue set q --max-errors ''
expect_exit 2 "$TASKQ" queue set q --retry-delay ''
expect_exit 2 "$TASKQ" list --state ''
expect_exit 2 "$TASKQ" list --limit ''
expect_exit 2 "$TASKQ" stats --queue ''
unchanged

section "integers: decimal, within int64's range, never saturated"
for opt in --priority --max-attempts --max-errors; do
  expect_exit 2 "$TASKQ" add q "$opt" 99999999999999999999
  expect_err_contains "out of range (-9223372036854775808 to 9223372036854775807)"
  expect_exit 2 "$TASKQ" add q "$opt" -99999999999999999999
done
for bad in 0x10 1e3 1.5 +-1 ' 7'; do
  expect_exit 2 "$TASKQ" add q --priority "$bad"
  expect_err_contains "is not an integer"
done
expect_exit 2 "$TASKQ" queue set q --max-running 99999999999999999999
expect_exit 2 "$TASKQ" schedule add s q --every hour --priority 99999999999999999999
expect_exit 2 "$TASKQ" list --limit 99999999999999999999
unchanged
p=$(add_task q --priority -9223372036854775808)
# (jq reads numbers as doubles: look at the text.)
expect_contains "$(snapshot "$p")" '"priority":-9223372036854775808' \
  "the smallest int64 is taken"
tasks_before=$(count_tasks)

section "-o env leases one task only"
expect_exit 2 "$TASKQ" lease q --count 2 -o env
unchanged

section "unknown ids"
expect_exit 3 "$TASKQ" show 999999
expect_err_format
expect_exit 3 "$TASKQ" show 999999 -o json
expect_out_empty
expect_exit 3 "$TASKQ" why 999999
expect_exit 3 "$TASKQ" retry 999999
for sub in pause resume kill release checkpoint; do
  expect_exit 3 "$TASKQ" "$sub" 999999
done
expect_exit 3 "$TASKQ" sleep 999999 --for 1m
expect_exit 3 "$TASKQ" send 999999 pause
expect_exit 3 "$TASKQ" done 999999 --lease "$tok"
expect_exit 3 "$TASKQ" fail 999999 --lease "$tok" --error e
expect_exit 3 "$TASKQ" heartbeat 999999 --lease "$tok"
expect_exit 3 "$TASKQ" release 999999 --lease "$tok"
unchanged

section "accepted durations"
fresh_db durations
for pair in 90s:90 5m:300 1h30m:5400 2d:172800 1w:604800 45:45; do
  id=$(add_task durations --delay "${pair%%:*}")
  expect_time "$(field "$id" .run_at)" "$(later "${pair#*:}")" \
    "run_at for --delay ${pair%%:*}"
done
