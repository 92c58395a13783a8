# Recurring schedules (doc/reference/schedules.md, rescue Cron): schedule
# add|list|show|pause|resume|rm and tick. Ticks sit on a UTC grid; a due
# tick is emitted lazily by lease, run or tick, once however many workers
# look, never before its time, never while the last emitted task is
# unfinished, and missed ticks are not back-filled. `done --sync K=V`
# carries state to the next emitted task.

# ticks EVERY-OR-CRON SCHEDULE NOW PREV NEXT: `schedule show` at NOW prints PREV
# and NEXT, in JSON and in the table, and `schedule list` has them too.
ticks() {
  local opt=$1 spec=$2 now=$3 prev=$4 next=$5 name
  name=s$((++_ticks_seq))
  set_now "$now"
  expect_exit 0 "$TASKQ" schedule add "$name" tq "$opt" "$spec" -o json
  expect_json "$out" .prev_tick "$prev" "prev tick of $spec at $now (add)"
  expect_json "$out" .next_tick "$next" "next tick of $spec at $now (add)"
  expect_exit 0 "$TASKQ" schedule show "$name" -o json
  expect_json "$out" .prev_tick "$prev" "prev tick of $spec at $now"
  expect_json "$out" .next_tick "$next" "next tick of $spec at $now"
  expect_exit 0 "$TASKQ" schedule show "$name"
  expect_eq "$(detail prev_tick)" "$prev" "table prev tick of $spec at $now"
  expect_eq "$(detail next_tick)" "$next" "table next tick of $spec at $now"
  expect_exit 0 "$TASKQ" schedule list
  expect_match "$(grep "^$name " <<<"$out")" \
    "^$name +tq +${opt#--} .* +$prev +$next +no +- *$" \
    "list row of $spec at $now"
}
_ticks_seq=0

# detail KEY: the value of KEY in the last command's `KEY: value` lines.
detail() { sed -n "s/^$1: *//p" <<<"$out"; }

# lease_all N QUEUE...: N concurrent `taskq lease QUEUE... --for 1h`; leaves
# their stdout and status in lease.I.out and lease.I.rc.
lease_all() {
  local n=$1 i
  shift
  rm -f lease.*.out lease.*.rc
  for ((i = 1; i <= n; i++)); do
    ("$TASKQ" lease "$@" --for 1h >"lease.$i.out" 2>"lease.$i.err" 3>&-
      echo $? >"lease.$i.rc") &
  done
  wait
}

# rcs N: how many of the last lease_all ended with status N.
rcs() { cat lease.*.rc | grep -cx "$1"; }

section "each command explains itself with an example"
for sub in schedule "schedule add" "schedule list" "schedule show" \
  "schedule pause" "schedule resume" "schedule rm" gate "gate add" \
  "gate list" "gate show" "gate rm" tick; do
  read -ra words <<<"$sub"
  expect_exit 0 "$TASKQ" "${words[@]}" --help
  expect_contains "$out" "taskq $sub " "example in taskq $sub --help"
done
expect_exit 0 "$TASKQ" --help
for sub in schedule gate tick; do
  expect_word "$out" "$sub" "taskq --help"
done

section "previous and next ticks (the examples of doc/reference/schedules.md#ticks), table and JSON"
fresh_db
ticks --every minute 2026-11-21T14:23:00Z \
  2026-11-21T14:22:00Z 2026-11-21T14:24:00Z
ticks --every '1 minute' 2026-11-21T14:23:20Z \
  2026-11-21T14:23:00Z 2026-11-21T14:24:00Z
ticks --every '7 minutes' 2026-11-21T14:58:00Z \
  2026-11-21T14:56:00Z 2026-11-21T15:03:00Z
ticks --every '6 hours' 2026-11-21T14:23:00Z \
  2026-11-21T12:00:00Z 2026-11-21T18:00:00Z
ticks --every '6 hours' 2026-11-21T18:00:00Z \
  2026-11-21T12:00:00Z 2026-11-22T00:00:00Z
ticks --every '5 months' 2026-07-15T10:00:00Z \
  2026-06-01T00:00:00Z 2026-11-01T00:00:00Z
ticks --every '5 months' 2026-03-10T00:00:00Z \
  2026-01-01T00:00:00Z 2026-06-01T00:00:00Z
ticks --every 'day at 08:00' 2026-11-21T14:23:00Z \
  2026-11-21T08:00:00Z 2026-11-22T08:00:00Z
ticks --every 'day at 08:00' 2026-11-21T08:00:00Z \
  2026-11-20T08:00:00Z 2026-11-22T08:00:00Z
ticks --every 'hour at **:30' 2026-11-21T14:23:00Z \
  2026-11-21T13:30:00Z 2026-11-21T14:30:00Z
ticks --every 'week on Wednesday at 06:00' 2026-11-21T14:23:00Z \
  2026-11-18T06:00:00Z 2026-11-25T06:00:00Z
# 2026-11-21 is a Saturday.
ticks --cron '30 6 * * MON-FRI' 2026-11-21T14:23:00Z \
  2026-11-20T06:30:00Z 2026-11-23T06:30:00Z
ticks --cron '*/15 9-17 * * *' 2026-11-21T14:23:00Z \
  2026-11-21T14:15:00Z 2026-11-21T14:30:00Z
ticks --cron '0 0 1 * *' 2026-11-21T14:23:00Z \
  2026-11-01T00:00:00Z 2026-12-01T00:00:00Z

section "the JSON form"
fresh_db
set_now 2026-11-21T14:23:00Z
expect_exit 0 "$TASKQ" schedule add nightly reports --every '  6   hours ' \
  --payload '{"kind": "daily", "n": 12345678901234567890}' \
  --label team=ops --priority 3 -o json
expect_json "$out" .every "6 hours" "canonical every text"
expect_exit 0 "$TASKQ" schedule show nightly -o json
expect_json "$out" 'keys_unsorted' \
  '["name","queue","every","prev_tick","next_tick","paused","sync","last_task","payload","labels","priority","trigger","due","created_at"]' \
  "fields of a schedule"
expect_json "$out" '[.name, .queue, .paused, .sync, .last_task, .due]' \
  '["nightly","reports",false,{},null,false]'
expect_contains "$out" '"payload":{"kind":"daily","n":12345678901234567890}' \
  "the payload, stored as written"
expect_json "$out" '[.labels, .priority]' '[{"team":"ops"},3]'
expect_exit 0 "$TASKQ" schedule add cr reports \
  --cron '*/15  9-17 * jan,jul mon-fri' -o json
expect_json "$out" '[.cron, has("every")]' '["*/15 9-17 * JAN,JUL MON-FRI",false]' \
  "canonical cron text"
expect_exit 0 "$TASKQ" schedule add plain reports --every hour --text 'hi there'
expect_eq "$(detail name)" plain "add prints the schedule"
expect_eq "$(detail every)" hour
expect_eq "$(detail payload)" '"hi there"'
expect_eq "$(detail paused)" no
expect_exit 0 "$TASKQ" schedule list -o json
expect_eq "$(jout .name | tr '\n' ' ')" "cr nightly plain " "list -o json, by name"
expect_exit 0 "$TASKQ" schedule list -o id
expect_out $'cr\nnightly\nplain'
expect_exit 0 "$TASKQ" schedule list
expect_match "$(head -1 <<<"$out")" \
  '^NAME +QUEUE +SCHEDULE +PREV +NEXT +PAUSED +LAST_TASK *$' "table header"
expect_match "$(grep '^nightly ' <<<"$out")" \
  '^nightly +reports +every 6 hours +2026-11-21T12:00:00Z +2026-11-21T18:00:00Z +no +- *$' \
  "table row"
expect_exit 2 "$TASKQ" schedule list -o env

section "invalid expressions exit 2 and create nothing"
fresh_db
set_now 2026-11-21T14:23:00Z
for spec in '3 hour' hours '0 days' '20 seconds' '8 years' 'day at 25:00' \
  '1.5 hours' '-2 days' 'minute at **:30' 'every hour' ''; do
  expect_exit 2 "$TASKQ" schedule add bad q --every="$spec"
  expect_err_format
  [[ -n $spec ]] && expect_err_contains "invalid --every \"$spec\""
done
expect_exit 2 "$TASKQ" schedule add bad q --every '3 hour'
expect_err_contains "15 minutes"
for cron in '* * * *' '60 * * * *' '0 0 30 2 *' '* * * * MON-SUN' \
  '*/0 * * * *' 'a b c d e'; do
  expect_exit 2 "$TASKQ" schedule add bad q --cron="$cron"
  expect_err_contains "invalid --cron \"$cron\""
done
expect_exit 2 "$TASKQ" schedule add bad q
expect_err_contains "exactly one of --every"
expect_exit 2 "$TASKQ" schedule add bad q --every hour --cron '* * * * *'
expect_exit 2 "$TASKQ" schedule add 'bad name' q --every hour
expect_err_contains "invalid schedule name"
expect_exit 2 "$TASKQ" schedule add '' q --every hour
expect_exit 2 "$TASKQ" schedule add bad 'a queue' --every hour
expect_exit 2 "$TASKQ" schedule add bad q --every hour --payload '{bad'
expect_err_contains "--text"
expect_exit 2 "$TASKQ" schedule add bad q --every hour --payload 1 --text x
expect_exit 2 "$TASKQ" schedule add bad q --every hour --label novalue
expect_exit 2 "$TASKQ" schedule add bad q --every hour --priority high
expect_exit 2 "$TASKQ" schedule add bad q --every hour -o id
expect_exit 2 "$TASKQ" schedule add bad
expect_exit 2 "$TASKQ" schedule
# A file that is not there (on PostgreSQL, where the harness made the
# database already, taskq's schema in it).
if sqlite_only; then
  check "no database was created by refused adds" test ! -e "$TASKQ_DB"
fi
expect_exit 5 "$TASKQ" schedule list -o id
expect_out_empty

section "not found and duplicate names"
fresh_db
set_now 2026-11-21T14:23:00Z
tq schedule add dup q --every hour --payload 1 >/dev/null
before=$(tq schedule show dup -o json)
expect_exit 4 "$TASKQ" schedule add dup other --every minute --payload 2
expect_err_format
expect_eq "$(tq schedule show dup -o json)" "$before" "the schedule is unchanged"
for verb in show pause resume rm; do
  expect_exit 3 "$TASKQ" schedule "$verb" nosuch
  expect_err_format
done
expect_eq "$(tq schedule list -o id)" dup "schedules after refused commands"

section "nothing is emitted before the tick"
fresh_db
set_now 2026-11-21T08:00:30Z
expect_exit 0 "$TASKQ" schedule add every-minute em --every minute \
  --payload '{"job":"sweep"}' --label kind=cron --priority 7 -o json
expect_json "$out" .next_tick 2026-11-21T08:01:00Z
expect_exit 75 "$TASKQ" lease em
expect_exit 0 "$TASKQ" tick
expect_out_empty
set_now 2026-11-21T08:00:59.999Z
expect_exit 75 "$TASKQ" lease em
expect_exit 0 "$TASKQ" tick
expect_out_empty
expect_eq "$(count_tasks)" 0 "tasks before the first tick"
expect_exit 0 "$TASKQ" schedule show every-minute -o json
expect_json "$out" .due false "due before the tick"

section "8 concurrent leases at the tick: exactly one task"
set_now 2026-11-21T08:01:10Z
expect_exit 0 "$TASKQ" schedule show every-minute -o json
expect_json "$out" .due true "due once the tick has passed"
expect_exit 75 "$TASKQ" lease other
expect_eq "$(count_tasks)" 0 "a lease of another queue emits nothing"
lease_all 8 em
expect_eq "$(rcs 0)" 1 "leases that got a task"
expect_eq "$(rcs 75)" 7 "leases that found nothing"
expect_eq "$(count_tasks)" 1 "tasks after 8 concurrent leases"
first=$("$TASKQ" list -o id)
leased=$(cat lease.*.out)
expect_json "$leased" .id "$first" "the leased task"
expect_json "$leased" '[.queue, .schedule, .payload, .labels, .priority]' \
  '["em","every-minute",{"job":"sweep"},{"kind":"cron"},7]' \
  "the emitted task"
tok1=$(jq -r .lease.token <<<"$leased")
expect_exit 0 "$TASKQ" schedule show every-minute -o json
expect_json "$out" '[.last_task, .due, .prev_tick, .next_tick]' \
  "[$first,false,\"2026-11-21T08:01:00Z\",\"2026-11-21T08:02:00Z\"]"
expect_exit 0 "$TASKQ" tick
expect_out_empty
expect_exit 75 "$TASKQ" lease em

section "no emission while the emitted task is unfinished"
set_now 2026-11-21T08:02:10Z
expect_exit 75 "$TASKQ" lease em
expect_exit 0 "$TASKQ" tick
expect_out_empty
set_now 2026-11-21T08:03:20Z
expect_exit 0 "$TASKQ" tick
expect_out_empty
expect_exit 75 "$TASKQ" lease em
expect_eq "$(count_tasks)" 1 "tasks while the first one runs"
expect_exit 0 "$TASKQ" schedule show every-minute -o json
expect_json "$out" .last_task "$first" "last task while it runs"
expect_exit 0 "$TASKQ" done "$first" --lease "$tok1"
# The 08:03 tick passed while the task ran: it is not made up.
expect_exit 0 "$TASKQ" tick
expect_out_empty
expect_exit 75 "$TASKQ" lease em
set_now 2026-11-21T08:04:01Z
expect_exit 0 "$TASKQ" tick
second=$out
expect_match "$second" '^[0-9]+$' "tick prints the one emitted id"
check "a new task at the following tick" test "$second" -gt "$first"
expect_eq "$(field "$second" .schedule)" every-minute "its schedule"
expect_exit 0 "$TASKQ" tick
expect_out_empty
expect_eq "$(count_tasks)" 2 "tasks after the following tick"

section "a tick missed while the task ran, unseen by anyone, is not made up"
# Nobody looks between 08:04:01 and the task's completion at 08:05:30; the
# 08:05 tick fell while it was unfinished.
set_now 2026-11-21T08:05:30Z
tq kill "$second" >/dev/null
expect_eq "$(state "$second")" killed "the second task, killed"
set_now 2026-11-21T08:05:40Z
expect_exit 0 "$TASKQ" tick
expect_out_empty
set_now 2026-11-21T08:06:01Z
expect_exit 0 "$TASKQ" tick
third=$out
expect_match "$third" '^[0-9]+$' "emitted at the next tick"

section "tick: 8 concurrent ticks emit exactly one task"
fresh_db
set_now 2026-11-21T09:00:00Z
tq schedule add t1 tk --every '5 minutes' >/dev/null
tq schedule add t2 tk2 --every hour >/dev/null
set_now 2026-11-21T09:05:00.001Z
rm -f tick.*.out tick.*.rc
for i in 1 2 3 4 5 6 7 8; do
  ("$TASKQ" tick --queue tk >"tick.$i.out" 2>"tick.$i.err" 3>&-
    echo $? >"tick.$i.rc") &
done
wait
expect_eq "$(cat tick.*.rc | sort -u)" 0 "every tick exits 0"
expect_eq "$(cat tick.*.out | grep -c .)" 1 "ids printed by the 8 ticks"
expect_eq "$(cat tick.*.out)" "$(tq list -o id)" "the printed id is the task"
expect_eq "$(tq list --queue tk2 -o id)" "" "tick --queue leaves other queues"
set_now 2026-11-21T10:00:01Z
expect_exit 2 "$TASKQ" tick --queue 'bad queue'
expect_exit 0 "$TASKQ" tick -o json
expect_json "$out" '[.queue, .schedule]' '["tk2","t2"]' "tick -o json"
expect_eq "$(grep -c . <<<"$out")" 1 "one task: t1's last task is unfinished"

section "sync: done --sync reaches the next emitted task"
fresh_db
set_now 2026-11-21T10:00:30Z
tq schedule add syncer sq --every minute >/dev/null
set_now 2026-11-21T10:01:05Z
t1=$(tq lease sq)
id1=$(jq -r .id <<<"$t1")
expect_json "$t1" '.sync // {}' '{}' "the first task has no sync state"
expect_exit 0 "$TASKQ" done "$id1" --lease "$(jq -r .lease.token <<<"$t1")" \
  --sync cursor=42 --sync 'page=a b'
expect_exit 0 "$TASKQ" schedule show syncer -o json
expect_json "$out" .sync '{"cursor":"42","page":"a b"}' "the schedule's sync"
set_now 2026-11-21T10:02:05Z
t2=$(tq lease sq)
id2=$(jq -r .id <<<"$t2")
expect_json "$t2" .sync '{"cursor":"42","page":"a b"}' "the next task's sync"
expect_json "$(tq show "$id2" -o json)" .sync '{"cursor":"42","page":"a b"}'
expect_exit 0 "$TASKQ" done "$id2" --lease "$(jq -r .lease.token <<<"$t2")" \
  --sync cursor=43
set_now 2026-11-21T10:03:05Z
t3=$(tq lease sq)
expect_json "$t3" .sync '{"cursor":"43","page":"a b"}' "sync is merged"
expect_exit 0 "$TASKQ" done "$(jq -r .id <<<"$t3")" \
  --lease "$(jq -r .lease.token <<<"$t3")" --sync cursor=44
set_now 2026-11-21T10:04:05Z
expect_exit 0 "$TASKQ" run sq --until-empty -- \
  sh -c 'printf %s "$TASKQ_SYNC" >sync.out'
expect_eq "$(cat sync.out)" '{"cursor":"44","page":"a b"}' "TASKQ_SYNC in run"
expect_eq "$(tq list --queue sq --state completed -o id | grep -c .)" 4 \
  "run emitted the task and ran it"
plain=$(add_task hand)
expect_json "$(tq show "$plain" -o json)" '.schedule' null \
  "a task added by hand has no schedule"
ptok=$(tq lease hand | jq -r .lease.token)
before=$(snapshot "$plain")
expect_exit 4 "$TASKQ" done "$plain" --lease "$ptok" --sync k=v
expect_err_format
expect_eq "$(snapshot "$plain")" "$before" "a refused done --sync changes nothing"
expect_exit 2 "$TASKQ" done "$plain" --lease "$ptok" --sync novalue
expect_eq "$(snapshot "$plain")" "$before" "a malformed --sync changes nothing"

section "pause and resume: no emission while paused, none made up"
fresh_db
set_now 2026-11-21T11:00:30Z
tq schedule add p pq --every minute >/dev/null
expect_exit 0 "$TASKQ" schedule pause p
expect_out_empty
expect_exit 0 "$TASKQ" schedule show p -o json
expect_json "$out" .paused true
expect_exit 0 "$TASKQ" schedule list
expect_match "$(grep '^p ' <<<"$out")" ' yes +- *$' "the table says paused"
set_now 2026-11-21T11:03:30Z
expect_exit 0 "$TASKQ" tick
expect_out_empty
expect_exit 75 "$TASKQ" lease pq
expect_exit 0 "$TASKQ" schedule show p -o json
expect_json "$out" .due false "a paused schedule is not due"
expect_exit 0 "$TASKQ" schedule pause p
expect_exit 0 "$TASKQ" schedule resume p
expect_out_empty
expect_exit 0 "$TASKQ" schedule show p -o json
expect_json "$out" .paused false
expect_exit 0 "$TASKQ" tick
expect_out_empty
expect_eq "$(count_tasks)" 0 "tasks after resume: missed ticks are not made up"
set_now 2026-11-21T11:04:00Z
expect_exit 0 "$TASKQ" tick
expect_match "$out" '^[0-9]+$' "the first tick after resume emits"
expect_exit 0 "$TASKQ" schedule resume p

section "rm: the schedule goes, its tasks stay"
emitted=$(tq list -o id)
set_now 2026-11-21T11:04:30Z
expect_exit 0 "$TASKQ" schedule rm p
expect_out_empty
expect_exit 3 "$TASKQ" schedule show p
expect_exit 3 "$TASKQ" schedule rm p
expect_eq "$(tq schedule list -o id)" "" "schedules after rm"
expect_eq "$(state "$emitted")" runnable "the emitted task is untouched"
expect_exit 0 "$TASKQ" lease pq -o id
expect_out "$emitted"
expect_exit 0 "$TASKQ" done "$emitted" --lease "$(field "$emitted" .lease.token)"
set_now 2026-11-21T11:10:00Z
expect_exit 0 "$TASKQ" tick
expect_out_empty
expect_exit 0 "$TASKQ" schedule add p pq --every minute
expect_eq "$(detail name)" p "the name is free again after rm"
