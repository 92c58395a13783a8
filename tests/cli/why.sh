# taskq why ID (doc/reference/commands.md#why): one line per reason a task is
# not running now, naming what it waits for (a time, a task, a worker, a queue
# limit), and a line saying it is eligible when nothing stands in its way. Each
# scene below has exactly one reason unless it says otherwise.

set_now 2026-11-21T08:00:00Z

# why_is ID PATTERN [WORKER]: `taskq why ID` exits 0 and prints one line,
# matching the ERE PATTERN.
why_is() {
  local args=(why "$1")
  [[ -n ${3:-} ]] && args+=(--worker "$3")
  expect_exit 0 "$TASKQ" "${args[@]}"
  expect_eq "$(grep -c . <<<"$out")" 1 "lines printed by $cmd"
  expect_match "$out" "$2" "why $1"
}

# Ends an id in a pattern: 3 must not match 31.
E='([^0-9]|$)'

section "an eligible task"
fresh_db
ok=$(add_task wq)
why_is "$ok" "eligible"
expect_exit 0 "$TASKQ" lease wq
expect_json "$out" .id "$ok" "the task said eligible is leased"

section "not due until T"
later_t=$(add_task wq --delay 1h)
why_is "$later_t" "not due until 2026-11-21T09:00:00(\\.0+)?Z"
advance 3600
why_is "$later_t" "eligible"
set_now 2026-11-21T08:00:00Z

section "sleeping until T"
sl=$(add_task wq)
tq sleep "$sl" --until 2026-11-21T10:00:00Z >/dev/null
why_is "$sl" "sleeping until 2026-11-21T10:00:00(\\.0+)?Z"

section "paused, by whom"
p=$(add_task wq)
tq pause "$p" --worker alice >/dev/null
why_is "$p" "paused"
expect_word "$out" alice "why names who paused it"

section "queue paused"
if "$TASKQ" queue --help 2>/dev/null | grep -Eq '^ +pause '; then
  qp=$(add_task pq)
  tq queue pause pq >/dev/null
  why_is "$qp" "queue pq is paused"
  tq queue resume pq >/dev/null
  why_is "$qp" "eligible"
else
  echo "why.sh: skipped 'queue paused': this taskq has no 'queue pause'" >&3
fi

section "queue at its running limit"
fresh_db
tq queue set lq --max-running 2 >/dev/null
l1=$(add_task lq)
add_task lq >/dev/null
l3=$(add_task lq)
tq lease lq --count 2 >/dev/null
why_is "$l3" "queue lq is at its running limit \\(2\\)"
expect_exit 75 "$TASKQ" lease lq
tq queue set lq --max-running 3 >/dev/null
why_is "$l3" "eligible"

section "leased by W until T"
why_is "$l1" "leased by [^ ]+ until" # leased above by the default worker
l4=$(add_task lw)
tq lease lw --worker w9 --for 10m >/dev/null
why_is "$l4" "leased by w9 until 2026-11-21T08:10:00(\\.0+)?Z"

section "frozen, by whom, and how to continue it"
fz=$(add_task fw)
tq lease fw --worker w9 --for 10m >/dev/null
expect_exit 0 "$TASKQ" freeze "$fz" --worker alice
why_is "$fz" "^it is frozen: frozen by alice, its command stopped where it is, leased by w9 until 2026-11-21T08:10:00(\\.0+)?Z \\(taskq continue $fz\\)\$"
expect_exit 0 "$TASKQ" continue "$fz" --worker alice
why_is "$fz" "^it is leased by w9 until 2026-11-21T08:10:00(\\.0+)?Z\$"

section "waiting for tasks N and M"
fresh_db
d1=$(add_task dq)
d2=$(add_task dq)
d3=$(add_task dq)
w=$(add_task dw --after "$d1,$d2,$d3")
tok=$(tq lease dq | jq -r .lease.token)
tq done "$d1" --lease "$tok" >/dev/null
why_is "$w" "waiting for tasks $d2 and $d3$E"
expect_not_contains "$out" "$d1," "why lists only unfinished dependencies"
tok=$(tq lease dq | jq -r .lease.token)
tq done "$d2" --lease "$tok" >/dev/null
why_is "$w" "waiting for task $d3$E"
tq kill "$d3" >/dev/null
why_is "$w" "paused.*dependency $d3 was killed"

section "obsolete because of root N"
fresh_db
o=$(add_task oq --root env=prod)
why_is "$o" "eligible"
r=$(add_task other --label env=prod)
why_is "$o" "obsolete.*task $r$E"
before=$(snapshot "$o")
expect_exit 0 "$TASKQ" why "$o"
expect_eq "$(snapshot "$o")" "$before" "why changes nothing"

section "addressed to another worker"
fresh_db
a=$(add_task aq --to w2)
why_is "$a" "addressed to worker w2$" w1
expect_exit 0 env TASKQ_WORKER=w3 "$TASKQ" why "$a"
expect_match "$out" "addressed to worker w2$" "why as TASKQ_WORKER=w3"
why_is "$a" "eligible" w2

section "a broadcast"
b=$(add_task bq --broadcast --ttl 1h)
tq lease bq --worker w1 >/dev/null
expect_exit 0 "$TASKQ" why "$b" --worker w1
expect_word "$out" broadcast "why for a broadcast w1 has had"

section "several reasons, one line each"
dep=$(add_task depq)
m=$(add_task mq --to w2 --delay 1h --after "$dep")
expect_exit 0 "$TASKQ" why "$m" --worker w1
expect_eq "$(grep -c . <<<"$out")" 3 "lines of why"
expect_match "$out" "waiting for task $dep$E" "why"
expect_contains "$out" "addressed to worker w2" "why"
expect_contains "$out" "not due until" "why"
expect_not_contains "$out" "eligible" "why"

section "a finished task"
expect_exit 0 "$TASKQ" kill "$m"
why_is "$m" "killed"
expect_not_contains "$out" "eligible" "why of a killed task"

section "bad input"
expect_exit 3 "$TASKQ" why 4242
expect_err_format
expect_exit 2 "$TASKQ" why x
expect_exit 2 "$TASKQ" why 0
expect_exit 2 "$TASKQ" why
