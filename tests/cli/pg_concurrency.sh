# Each rule that reads and then writes across rows stays exact under
# concurrency: 16 processes at once hammer one rule, and the rule's
# invariant is checked afterwards. On PostgreSQL the writers are not
# serialised by SQLite's one writer, so this is where a rule that lacks a
# lock of its own shows (doc/architecture.md, "How each rule holds on
# PostgreSQL"). It runs on SQLite too: the same invariants hold there.
#
# The writers are background processes (hammer, tests/cli/run). Each
# writes its exit status and output to files of its own, and the checks
# run in this shell afterwards.

pc_n=16

fresh_db pc
set_now 2026-11-21T08:00:00Z
# The database is made before the writers start: that its first users
# wait for each other is concurrency.sh's concern, not a rule's here.
tq queue set m --max-running 3

section "--unique: 16 adds of one key at once make one task"
# Five rounds: the adds race only while their transactions overlap.
for round in 1 2 3 4 5; do
  hammer uniq $pc_n "$TASKQ" add u --unique "key$round" --payload '{"n":@I}'
  expect_eq "$(rcs uniq)" "$pc_n 0" "round $round: every add exits 0 ($(errs uniq))"
  ids=$(cat "$scratch"/uniq.*.out | sort -u)
  expect_eq "$(grep -c . <<<"$ids")" 1 "round $round: all 16 print one id"
  out=$(tq list --queue u -o json)
  expect_eq "$(jq -s "[.[] | select(.unique == \"key$round\")] | length" <<<"$out")" 1 \
    "round $round: one task holds key$round"
done

section "bulk adds at once: each prints exactly the ids it added"
# On PostgreSQL concurrent adds take ids from one sequence in turns, so an
# add's ids need not be consecutive.
for i in 1 2 3 4; do
  seq 1 2000 | sed "s/.*/{\"add\":$i,\"n\":&}/" >"$scratch/bulk$i.jsonl"
done
hammer bulk 4 "$TASKQ" add b --jsonl "$scratch/bulk@I.jsonl" -o id
expect_eq "$(rcs bulk)" "4 0" "every bulk add exits 0 ($(errs bulk))"
out=$(tq list --queue b --limit 9000 -o json)
for i in 1 2 3 4; do
  want=$(jq -r "select(.payload.add == $i) | .id" <<<"$out" | sort -n | paste -sd' ')
  got=$(sort -n "$scratch/bulk.$i.out" | paste -sd' ')
  expect_eq "$(wc -w <<<"$got")" 2000 "add $i prints 2000 ids"
  expect_eq "$got" "$want" "add $i prints the ids of its own tasks"
done

section "--max-running 3: 16 leases at once hand out 3"
for i in $(seq 1 40); do add_task m >/dev/null; done
for round in 1 2 3; do
  hammer maxr $pc_n env TASKQ_WORKER=w@I "$TASKQ" lease m --for 1h -o id
  leased=$(cat "$scratch"/maxr.*.out | grep -c .)
  expect_eq "$leased" 3 "round $round: 3 leased ($(rcs maxr))"
  expect_eq "$(cat "$scratch"/maxr.*.rc | grep -vc -e '^0$' -e '^75$')" 0 \
    "round $round: the others exit 75 ($(errs maxr))"
  out=$(tq list --queue m --state running -o id)
  expect_eq "$(grep -c . <<<"$out")" 3 "round $round: 3 running"
  # Complete them for the next round.
  for id in $(cat "$scratch"/maxr.*.out); do
    tq done "$id" --lease "$(field "$id" .lease.token)" >/dev/null
  done
done

section "a schedule's tick: 16 leases at once emit it once"
tq schedule add tick tq_ticks --every minute
for round in 1 2 3; do
  advance 60
  hammer tick $pc_n env TASKQ_WORKER=t@I "$TASKQ" lease tq_ticks --for 1h -o id
  expect_eq "$(cat "$scratch"/tick.*.rc | grep -vc -e '^0$' -e '^75$')" 0 \
    "round $round: every lease exits 0 or 75 ($(errs tick))"
  out=$(tq list --queue tq_ticks -o id)
  expect_eq "$(grep -c . <<<"$out")" "$round" "round $round: $round tasks emitted in all"
  expect_eq "$(cat "$scratch"/tick.*.out | grep -c .)" 1 "round $round: one leased"
  # A schedule emits nothing while its previous task is unfinished.
  for id in $(cat "$scratch"/tick.*.out); do
    tq done "$id" --lease "$(field "$id" .lease.token)" >/dev/null
  done
done

section "a gate: 16 triggers completed at once fill it once"
keys=$(seq -f k%g -s, 1 $pc_n)
tq gate add g gq --keys "$keys"
for round in 1 2 3; do
  ids=()
  for i in $(seq 1 $pc_n); do ids+=("$(add_task gtrig --trigger "k$i")"); done
  hammer glease $pc_n env TASKQ_WORKER=g@I "$TASKQ" lease gtrig --for 1h -o env
  expect_eq "$(rcs glease)" "$pc_n 0" "round $round: 16 leased"
  hammer gdone $pc_n bash -c 'eval "$(cat "$1")"; "$TASKQ" done "$TASKQ_ID" --lease "$TASKQ_LEASE"' \
    _ "$scratch/glease.@I.out"
  expect_eq "$(rcs gdone)" "$pc_n 0" "round $round: 16 done ($(errs gdone))"
  out=$(tq list --queue gq -o id)
  expect_eq "$(grep -c . <<<"$out")" "$round" "round $round: the gate emitted $round in all"
done

section "a broadcast: one delivery to each worker, however many lease at once"
b=$(add_task bq --broadcast --ttl 1h)
hammer bsame $pc_n env TASKQ_WORKER=same "$TASKQ" lease bq --for 1h -o id
expect_eq "$(cat "$scratch"/bsame.*.out | grep -c .)" 1 "one of 16 leases as one worker gets it"
hammer bmany $pc_n env TASKQ_WORKER=b@I "$TASKQ" lease bq --for 1h -o id
expect_eq "$(cat "$scratch"/bmany.*.out | grep -c "^$b\$")" $pc_n "16 workers get it once each"
out=$(tq events --queue bq -o json)
expect_eq "$(jq -s '[.[] | select(.message == "lease")] | length' <<<"$out")" $((pc_n + 1)) \
  "17 deliveries logged"

section "dependents: a task after 16 parents that end at once wakes once"
parents=()
for i in $(seq 1 $pc_n); do parents+=("$(add_task dparent)"); done
child=$(add_task dchild --after "$(IFS=,; echo "${parents[*]}")")
hammer dlease $pc_n env TASKQ_WORKER=d@I "$TASKQ" lease dparent --for 1h -o env
hammer ddone $pc_n bash -c 'eval "$(cat "$1")"; "$TASKQ" done "$TASKQ_ID" --lease "$TASKQ_LEASE"' \
  _ "$scratch/dlease.@I.out"
expect_eq "$(rcs ddone)" "$pc_n 0" "16 done ($(errs ddone))"
expect_eq "$(field "$child" .waiting)" false "the child waits for nothing"
expect_exit 0 "$TASKQ" lease dchild --for 1h -o id
expect_out "$child"

section "dependents added while their parents end: none left waiting"
# 16 adds of a task --after a parent, each beside the parent's done: an
# add that read its parent unfinished must be seen by that done (the
# parent's row is held until the add commits), else the child waits for
# ever.
for i in $(seq 1 $pc_n); do add_task aparent >/dev/null; done
hammer alease $pc_n env TASKQ_WORKER=a@I "$TASKQ" lease aparent --for 1h -o env
hammer arace $((2 * pc_n)) bash -c 'eval "$(cat "$2/alease.$((($1 + 1) / 2)).out")"
  if (($1 % 2)); then "$TASKQ" done "$TASKQ_ID" --lease "$TASKQ_LEASE"
  else "$TASKQ" add achild --after "$TASKQ_ID"; fi' _ @I "$scratch"
expect_eq "$(rcs arace)" "$((2 * pc_n)) 0" "16 done and 16 add ($(errs arace))"
waiting=0
for i in $(seq 2 2 $((2 * pc_n))); do
  [[ $(field "$(<"$scratch/arace.$i.out")" .waiting) == false ]] || waiting=$((waiting + 1))
done
expect_eq "$waiting" 0 "children still waiting for a completed parent"

section "tx: 16 updates of one task at one rev: one applies"
t=$(add_task txq --payload '{"v":0}')
rev=$(field "$t" .rev)
hammer tx $pc_n bash -c 'printf "%s" "$1" | "$TASKQ" tx' _ \
  "{\"require\":[{\"id\":$t,\"rev\":$rev}],\"update\":[{\"id\":$t,\"rev\":$rev,\"payload\":{\"v\":@I}}]}"
expect_eq "$(cat "$scratch"/tx.*.rc | grep -c '^0$')" 1 "one tx applies ($(rcs tx))"
expect_eq "$(cat "$scratch"/tx.*.rc | grep -c '^4$')" $((pc_n - 1)) "the others exit 4"
expect_eq "$(field "$t" .rev)" $((rev + 1)) "the rev moved once"

section "root obsolescence: 16 leases at once kill each obsolete task once"
for i in $(seq 1 8); do add_task rq --root tenant=beta >/dev/null; done
add_task rroot --label tenant=beta >/dev/null
hammer root $pc_n env TASKQ_WORKER=r@I "$TASKQ" lease rq --for 1h -o id
expect_eq "$(cat "$scratch"/root.*.rc | grep -vc -e '^0$' -e '^75$')" 0 \
  "every lease exits 0 or 75 ($(errs root))"
expect_eq "$(cat "$scratch"/root.*.out | grep -c .)" 0 "none leased"
out=$(tq list --queue rq --state killed -o id)
expect_eq "$(grep -c . <<<"$out")" 8 "all 8 killed"
out=$(tq events --queue rq -o json)
expect_eq "$(jq -s '[.[] | select(.to == "killed")] | length' <<<"$out")" 8 \
  "each killed once"

section "expired leases: 16 leases at once reclaim each once"
for i in $(seq 1 8); do add_task xq >/dev/null; done
hammer xfirst 8 env TASKQ_WORKER=x@I "$TASKQ" lease xq --for 1m -o id
advance 120
hammer xsecond $pc_n env TASKQ_WORKER=y@I "$TASKQ" lease xq --for 1h -o id
expect_eq "$(cat "$scratch"/xsecond.*.out | sort -u | grep -c .)" 8 "8 leased again"
expect_eq "$(cat "$scratch"/xsecond.*.out | grep -c .)" 8 "each once"
out=$(tq events --queue xq -o json)
expect_eq "$(jq -s '[.[] | select(.message == "expire")] | length' <<<"$out")" 8 \
  "8 expiries logged"

section "operators and workers at once: a kill never overwrites a done"
# 16 leased tasks; their 16 workers' dones race 16 operators, every other
# one killing the queue's running tasks by filter, the others one task each
# by its id: each task ends once, completed by its done (exit 0) or killed
# (its done then refused, exit 4; a kill by id of a task already ended is
# refused too, exit 4), and the log agrees.
for round in 1 2 3; do
  q=ok$round
  for i in $(seq 1 $pc_n); do add_task $q >/dev/null; done
  hammer olease $pc_n env TASKQ_WORKER=o@I "$TASKQ" lease $q --for 1h -o json
  expect_eq "$(rcs olease)" "$pc_n 0" "round $round: 16 leased ($(errs olease))"
  hammer odone $pc_n bash -c 'j=$(<"$1") && "$TASKQ" done "$(jq -r .id <<<"$j")" --lease "$(jq -r .lease.token <<<"$j")"' \
    _ "$scratch/olease.@I.out" &
  dones=$!
  hammer okill $pc_n bash -c 'if (($1 % 2)); then "$TASKQ" kill --queue "$2" --state running; else "$TASKQ" kill "$(jq -r .id <"$3")"; fi' \
    _ @I $q "$scratch/olease.@I.out"
  wait $dones
  expect_eq "$(cat "$scratch"/okill.*.rc | grep -vc -e '^0$' -e '^4$')" 0 \
    "round $round: every kill exits 0 or 4 ($(errs okill))"
  expect_eq "$(cat "$scratch"/odone.*.rc | grep -vc -e '^0$' -e '^4$')" 0 \
    "round $round: every done exits 0 or 4 ($(errs odone))"
  completed=$(tq list --queue $q --state completed -o id | grep -c .)
  killed=$(tq list --queue $q --state killed -o id | grep -c .)
  expect_eq "$((completed + killed))" $pc_n "round $round: every task completed or killed"
  expect_eq "$completed" "$(cat "$scratch"/odone.*.rc | grep -c '^0$')" \
    "round $round: the completed tasks are those whose done exits 0"
  out=$(tq events --queue $q -o json)
  expect_eq "$(jq -s '[.[] | select(.to == "completed" or .to == "killed")] | length' <<<"$out")" $pc_n \
    "round $round: each task ended once in the log"
  expect_exit 0 "$TASKQ" db check
done

# raw_sql SQL: runs SQL on $TASKQ_DB behind taskq's back.
raw_sql() {
  if [[ $TASKQ_DB == postgresql://* ]]; then
    PGOPTIONS='-c search_path=taskq' psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$TASKQ_DB" -c "$1"
  else
    sqlite3 "$TASKQ_DB" "$1"
  fi
}

section "16 first commands at once on a new database, and on one to upgrade"
# Creating the schema and each migration take a lock of their own: one
# process makes them, the others wait and then find them made. A lease
# that looked before the first add made the schema says so (exit 5).
for round in 1 2 3; do
  fresh_db "pc-new-$round"
  hammer new $pc_n bash -c 'if (($1 % 2)); then "$TASKQ" add nq; else "$TASKQ" lease nq -o id; fi' _ @I
  expect_eq "$(cat "$scratch"/new.*.rc | grep -vc -e '^0$' -e '^75$' -e '^5$')" 0 \
    "round $round: adds and leases end well ($(errs new))"
  expect_eq "$(cat "$scratch"/new.*.err | grep -v -e 'no taskq schema' -e 'no database at' \
    -e 'nothing to lease' -e 'has no tasks yet' | grep -c .)" 0 \
    "round $round: no error but a missing schema ($(errs new))"
  expect_eq "$(count_tasks)" $((pc_n / 2)) "round $round: every add made its task"
  expect_exit 0 "$TASKQ" db check
done
fresh_db pc-upgrade
tq add uq --unique k >/dev/null
if [[ $TASKQ_DB == postgresql://* ]]; then
  rewind="DELETE FROM taskq_schema WHERE version >= 11"
else
  rewind="PRAGMA user_version = 10"
fi
# Schema 12's column goes too, so that the upgrade runs 11 and 12 again.
raw_sql "DROP INDEX events_errors; ALTER TABLE tasks DROP COLUMN attempts_base; DROP INDEX tasks_unique_key; CREATE INDEX tasks_unique ON tasks (queue, unique_key) WHERE unique_key IS NOT NULL AND state NOT IN ('completed', 'failed', 'killed'); $rewind"
hammer upgrade $pc_n "$TASKQ" add uq --unique k
expect_eq "$(rcs upgrade)" "$pc_n 0" "16 adds upgrading at once exit 0 ($(errs upgrade))"
expect_eq "$(count_tasks)" 1 "one task holds k"
expect_exit 0 "$TASKQ" db check

section "events --follow: 16 writers at once, every event once, in order"
unset TASKQ_NOW
"$TASKQ" events --follow --since 2000-01-01T00:00:00Z -o json \
  >"$scratch/follow.out" 2>"$scratch/follow.err" &
follower=$!
# The follower is reading once it has printed the events so far.
wait_until 30 test -s "$scratch/follow.out"
# A second one from the end, of one queue (no --since): it prints what
# happens after its start. It is following once an add made since shows.
"$TASKQ" events --follow --queue fq -o json \
  >"$scratch/tail.out" 2>"$scratch/tail.err" &
tailer=$!
for ((i = 0; i < 30; i++)); do
  tq add fq >/dev/null
  wait_until 1 test -s "$scratch/tail.out" && break
done
hammer fadd $pc_n bash -c 'for i in 1 2 3 4 5 6 7 8 9 10; do "$TASKQ" add fq >/dev/null || exit 1; done'
expect_eq "$(rcs fadd)" "$pc_n 0" "160 adds ($(errs fadd))"
all=$(tq events -o json)
want=$(grep -c . <<<"$all")
wait_until 60 bash -c "[[ \$(grep -c . '$scratch/follow.out') -ge $want ]]"
kill "$follower" 2>/dev/null
wait "$follower" 2>/dev/null
seen=$(<"$scratch/follow.out")
expect_eq "$(sort <<<"$seen" | uniq -d | head -3)" "" "no event twice"
expect_eq "$(grep -c . <<<"$seen")" "$want" "as many events as the log holds"
# Compared as lines, so that a failure shows the first lines that differ.
expect_eq "$(diff <(echo "$all") <(echo "$seen") | head -5)" "" \
  "the same events in the same order as the log"
# The queue's log from the first event the second follower printed on.
fq_all=$(tq events --queue fq -o json |
  awk -v first="$(head -1 "$scratch/tail.out")" '$0 == first { p = 1 } p')
fq_want=$(grep -c . <<<"$fq_all")
wait_until 60 bash -c "[[ \$(grep -c . '$scratch/tail.out') -ge $fq_want ]]"
kill "$tailer" 2>/dev/null
wait "$tailer" 2>/dev/null
expect_eq "$((fq_want >= 160))" 1 "the follower from the end saw the 160 adds"
expect_eq "$(diff <(echo "$fq_all") "$scratch/tail.out" | head -5)" "" \
  "from the end, of one queue: each event once, in the order of the log"
