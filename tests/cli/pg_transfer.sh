# Moving a queue between the backends
# (doc/reference/postgresql.md#moving-between-backends): `export` from SQLite
# and `import` into PostgreSQL, and back, keeps every task and its history byte
# for byte, and the ids taskq gives out next continue after the imported ones
# on both.
#
# Needs both backends: it runs only with TASKQ_TEST_BACKEND=postgresql
# (the PostgreSQL databases come from fresh_db; the SQLite ones are files
# in the scratch folder, named with --db or TASKQ_DB).

if [[ $backend != postgresql ]]; then
  section "skipped"
  check "skipped: moves queues between SQLite and PostgreSQL; run it with TASKQ_TEST_BACKEND=postgresql" true
  return 0
fi

# scene: on the database TASKQ_DB names, a queue of every kind of task and
# history: labels, payloads with every digit and escape, an error history,
# dependencies, a schedule's and a gate's tasks, a leased task, a broadcast
# delivered to two workers, a sleeping, a killed and a retried task, in
# several queues.
scene() {
  local t tok emitted failing leased
  set_now 2026-11-21T08:00:00Z
  t=$(add_task q --payload '{"n":123456789012345678901234567890.000,"s":"\u00e9\t\"q\""}' \
    --label 'team=a "b" é' --label k=v --priority 2)
  tok=$(tq lease q --worker w1 -o json | jq -r .lease.token)
  tq heartbeat "$t" --lease "$tok" --checkpoint '{"step":2}' >/dev/null
  tq done "$t" --lease "$tok" --result '[1, 2.50]' >/dev/null
  # Two errors: the first retried, the second final.
  failing=$(add_task f --max-errors 2 --retry-delay 0s)
  tok=$(tq lease f --worker w2 -o json | jq -r .lease.token)
  tq fail "$failing" --lease "$tok" --error $'boom\nline two' >/dev/null
  tok=$(tq lease f --worker w2 -o json | jq -r .lease.token)
  tq fail "$failing" --lease "$tok" --error 'boom again' >/dev/null
  t=$(add_task q --priority 3)
  tq kill "$t" >/dev/null
  t=$(add_task q --after "$t")                       # paused by its dependency
  add_task w --after "$failing,$t" --label stage=2 >/dev/null # waits for both
  t=$(add_task q --at 2026-11-22T00:00:00Z)
  tq sleep "$t" --for 1h >/dev/null
  leased=$(add_task l --unique only --to w3 --root 'r=1' --label r=1 --trigger key \
    --max-attempts 4 --text 'ünïcode "text"')
  tq lease l --worker w3 >/dev/null                  # leased, and left so
  add_task w --after "$leased" >/dev/null            # waits for it
  add_task b --broadcast --ttl 1d --payload '[null,true,{"a":{}}]' >/dev/null
  tq lease b --worker b-one >/dev/null
  tq lease b --worker A-two >/dev/null
  tq gate add g gq --keys docs --payload '{"deploy":true}' >/dev/null
  t=$(add_task docs --trigger docs)
  tok=$(tq lease docs --worker w6 -o json | jq -r .lease.token)
  tq done "$t" --lease "$tok" >/dev/null             # the gate emits into gq
  tq schedule add every sq --every minute --label from=schedule >/dev/null
  set_now 2026-11-21T08:01:05Z
  emitted=$(tq lease sq --worker w5 -o json)
  tq done "$(jq -r .id <<<"$emitted")" --lease "$(jq -r .lease.token <<<"$emitted")" \
    --sync cursor=42 >/dev/null
  tq retry "$failing" >/dev/null
  add_task 'other/queue.x' --payload '"plain"' >/dev/null
}

# masked FILE: the export with what is random in each run (lease tokens)
# replaced, for comparing two scenes made separately.
masked() {
  jq -c '(.lease_token, .revoked_token) |= (if . == null then null else "T" end)
    | .deliveries |= map(.token = "T")' "$1"
}

section "a varied SQLite queue"
sq=$scratch/source.db
TASKQ_DB=$sq scene
expect_exit 0 env TASKQ_DB="$sq" "$TASKQ" db check
n=$(TASKQ_DB=$sq count_tasks)
expect_exit 0 env TASKQ_DB="$sq" "$TASKQ" export
printf '%s\n' "$out" >sqlite.jsonl
expect_eq "$(wc -l <sqlite.jsonl)" "$n" "one line per task"
expect_eq "$(jq -s '[.[] | select((.errors | length) >= 2)] | length' sqlite.jsonl)" 1 \
  "the scene has a task with an error history"
expect_eq "$(jq -s '[.[] | .deliveries[]] | length' sqlite.jsonl)" 2 \
  "the scene has a broadcast delivered twice"
expect_eq "$(jq -s '[.[] | select(.schedule != null or .gate != null)] | length' sqlite.jsonl)" 2 \
  "the scene has a schedule's and a gate's task"
expect_eq "$(jq -s '[.[] | select(.lease_token != null)] | length' sqlite.jsonl)" 1 \
  "the scene has a leased task"
expect_eq "$(jq -s '[.[] | .deps[]] | length' sqlite.jsonl)" 1 \
  "the scene has a task waiting for its dependency"
expect_eq "$(jq -s '[.[] | select(.after_ids != null)] | length' sqlite.jsonl)" 3 \
  "the scene has tasks with dependencies"
max=$(jq -s 'map(.id) | max' sqlite.jsonl)

section "SQLite -> PostgreSQL -> export: the same bytes"
expect_match "$TASKQ_DB" '^postgresql:' "the harness's database is on PostgreSQL"
expect_exit 0 "$TASKQ" import "$scratch/sqlite.jsonl"
expect_out "imported $n tasks"
"$TASKQ" export >pg.jsonl
check "PostgreSQL exports what SQLite exported, byte for byte" cmp -s sqlite.jsonl pg.jsonl
expect_exit 0 "$TASKQ" db check
for id in $(jq .id sqlite.jsonl); do
  expect_eq "$(snapshot "$id")" "$(TASKQ_DB=$sq snapshot "$id")" "show $id on both"
done
expect_exit 0 "$TASKQ" list -o json
pg_list=$out
expect_exit 0 env TASKQ_DB="$sq" "$TASKQ" list -o json
expect_eq "$pg_list" "$out" "list -o json on both"
expect_exit 0 "$TASKQ" why "$(jq -r 'select(.lease_token != null) | .id' pg.jsonl)" --worker w9
expect_contains "$out" "leased by w3" "the lease came along"
expect_exit 0 "$TASKQ" add q2 --root r=1
expect_out_empty
expect_contains "$err" "obsolete" "the label index came along: the leased task's root makes --root r=1 obsolete"

section "PostgreSQL: new ids continue after the imported ones"
set_now 2026-11-21T09:00:00Z
next=$(add_task new)
expect_eq "$next" $((max + 1)) "the first add after the import"
expect_eq "$(add_task new)" $((max + 2)) "and the next"
ev=$(tq events -o json | jq -s 'map(.id) | max')
tok=$(tq lease new --worker w7 -o json | jq -r .lease.token)
tq done "$next" --lease "$tok" >/dev/null
expect_exit 0 "$TASKQ" events -o json
expect_jq "$(jq -s 'map(.id)' <<<"$out")" "map(select(. > $ev)) | length == 2" \
  "new events get ids after the imported ones"

section "PostgreSQL -> SQLite -> export: the same bytes"
back=$scratch/back.db
expect_exit 0 "$TASKQ" --db "$back" import "$scratch/pg.jsonl"
expect_out "imported $n tasks"
expect_exit 0 "$TASKQ" --db "$back" export
printf '%s\n' "$out" >back.jsonl
check "SQLite exports what PostgreSQL exported, byte for byte" cmp -s pg.jsonl back.jsonl
expect_exit 0 "$TASKQ" --db "$back" db check
expect_exit 0 "$TASKQ" --db "$back" add q
expect_eq "$out" $((max + 1)) "SQLite's first add after the import"
# The whole PostgreSQL database now (the tasks added there included), the
# other way round.
"$TASKQ" export >pg-now.jsonl
expect_exit 0 "$TASKQ" --db "$scratch/back2.db" import "$scratch/pg-now.jsonl"
expect_exit 0 "$TASKQ" --db "$scratch/back2.db" export
printf '%s\n' "$out" >back2.jsonl
check "PostgreSQL's own history round-trips through SQLite" cmp -s pg-now.jsonl back2.jsonl
expect_exit 0 "$TASKQ" --db "$scratch/back2.db" add q
expect_eq "$out" $((max + 3)) "SQLite continues after PostgreSQL's ids"

section "the same scene made on PostgreSQL exports what SQLite's does"
fresh_db
expect_match "$TASKQ_DB" '^postgresql:' "fresh_db gives a PostgreSQL database"
scene
"$TASKQ" export >native.jsonl
check "the same commands give the same export on both backends (lease tokens aside)" \
  cmp -s <(masked sqlite.jsonl) <(masked native.jsonl)
expect_exit 0 "$TASKQ" --db "$scratch/native.db" import "$scratch/native.jsonl"
expect_exit 0 "$TASKQ" --db "$scratch/native.db" export
printf '%s\n' "$out" >native-back.jsonl
check "a queue made on PostgreSQL round-trips through SQLite" cmp -s native.jsonl native-back.jsonl

section "ids are never given out twice: after a purge, as SQLite's AUTOINCREMENT"
# Tasks 1-5 are added and purged; an import of tasks 1-2 follows: the next
# add gets 6 on both backends, not 3.
two=$(jq -c 'select(.id <= 2)' sqlite.jsonl | sed -n 1,2p)
for db in "$scratch/purged.db" pg; do
  if [[ $db == pg ]]; then
    fresh_db
  else
    export TASKQ_DB=$db
  fi
  for _ in 1 2 3 4 5; do add_task p >/dev/null; done
  tq kill 1 2 3 4 5 >/dev/null
  expect_exit 0 "$TASKQ" purge --queue p
  printf '%s\n' "$two" >two.jsonl
  expect_exit 0 "$TASKQ" import two.jsonl
  expect_out "imported 2 tasks"
  expect_eq "$(add_task p)" 6 "the next id on ${db##*/} is past the purged ones"
done

section "refused imports into PostgreSQL change nothing"
fresh_db
expect_exit 0 "$TASKQ" import "$scratch/sqlite.jsonl"
before=$("$TASKQ" export | sha256sum)
expect_exit 4 "$TASKQ" import "$scratch/sqlite.jsonl"
expect_err_contains "already exists; nothing was imported"
good='{"id":900,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1}'
printf '%s\n%s\n' "$good" \
  '{"id":901,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1,"deliveries":[{"worker":"w","token":"t","time":1},{"worker":"w","token":"u","time":2}]}' \
  >bad.jsonl
expect_exit 2 "$TASKQ" import bad.jsonl
expect_err_contains "line 2: deliveries: row refused: "
expect_err_contains "UNIQUE constraint failed: deliveries.task_id, deliveries.worker"
printf '%s\n%s\n' "$good" \
  '{"id":901,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1,"errors":[{"rowid":5,"time":1,"message":"x"}]}' \
  >bad.jsonl
expect_exit 2 "$TASKQ" import bad.jsonl
expect_err_contains "line 2: errors: unknown column 'rowid'"
expect_eq "$("$TASKQ" export | sha256sum)" "$before" "nothing was imported"
expect_eq "$(add_task q)" $((max + 1)) "a refused import moves no ids"
