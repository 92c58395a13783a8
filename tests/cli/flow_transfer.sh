# Flows in export and import (doc/flows.md#storage): a flow travels as one
# line after the tasks (its row, its atoms, its event history); export ->
# import into an empty database -> export gives the same bytes, on each
# backend and (with TASKQ_TEST_BACKEND=postgresql) from SQLite to
# PostgreSQL and back; an imported flow goes on where it was; import
# refuses a flow that flow_store could not have written or whose atoms and
# tasks do not name each other; db check finds a broken link.

examples=$(cd "${BASH_SOURCE[0]%/*}/../../examples/flows" && pwd)

# step QUEUE done [RESULT] | step QUEUE fail: leases the one task of QUEUE
# (one second later) and ends it; prints its id.
step() {
  local j id tok
  advance 1
  j=$(tq lease "$1" --worker w1 -o json)
  id=$(jq -r .id <<<"$j")
  tok=$(jq -r .lease.token <<<"$j")
  if [[ $2 == done ]]; then
    tq done "$id" --lease "$tok" ${3:+--result "$3"} >/dev/null
  else
    tq fail "$id" --lease "$tok" --error "boom in $id" --no-retry >/dev/null
  fi
  echo "$id"
}

# raw_sql SQL: runs SQL on $TASKQ_DB behind taskq's back.
raw_sql() {
  if [[ $TASKQ_DB == postgresql://* ]]; then
    PGOPTIONS='-c search_path=taskq' psql -X -q -v ON_ERROR_STOP=1 -d "$TASKQ_DB" -c "$1" >/dev/null
  else
    sqlite3 "$TASKQ_DB" "$1"
  fi
}

wide='{"name": "wide", "pattern": "unordered", "atoms": [
  {"name": "x", "execute": {"queue": "u"}},
  {"name": "y", "execute": {"queue": "u", "payload": {"n": 1.50}}, "labels": {"k": "é"}}]}'
undo='{"name": "undo", "pattern": "linear", "atoms": [
  {"name": "p", "execute": {"queue": "v"}, "revert": {"queue": "v"}, "provides": "pv"},
  {"name": "q", "execute": {"queue": "v"}, "requires": ["pv"]}]}'
pause='{"name": "pause", "atoms": [{"name": "s", "execute": {"queue": "s"}}]}'

# scene: on $TASKQ_DB, four flows and a plain task. 1: deploy.json, whose
# upload fails on mirror-a, is reverted and succeeds on mirror-b: SUCCESS.
# 2: unordered, one atom's task leased (and left so), the other's waiting.
# 3: its second atom fails for good, the first is reverted by its revert
# task: REVERTED. 4: suspended before its task was leased: SUSPENDED.
scene() {
  set_now 2026-11-24T08:00:00Z
  tq flow submit "$examples/deploy.json" >/dev/null
  step deploy done '"web-1.4.2.tar.gz"' >/dev/null # build
  step deploy fail >/dev/null                      # upload to mirror-a
  step deploy done >/dev/null                      # its revert
  step deploy done '"https://mirror-b/web"' >/dev/null
  step deploy done '"announced"' >/dev/null
  advance 1
  tq flow submit - <<<"$wide" >/dev/null
  tq lease u --worker keeper >/dev/null
  advance 1
  tq flow submit - <<<"$undo" >/dev/null
  step v done '{"made": [1, 2.50]}' >/dev/null
  step v fail >/dev/null
  step v done >/dev/null # p's revert
  advance 1
  tq flow submit - <<<"$pause" >/dev/null
  tq flow suspend 4 >/dev/null
  add_task other --payload '"plain"' >/dev/null
}

# flow_states: "ID STATE" of every flow.
flow_states() { tq flow list -o json | jq -r '"\(.id) \(.state)"'; }

section "the scene"
scene
expect_eq "$(flow_states | tr '\n' ' ')" "1 SUCCESS 2 RUNNING 3 REVERTED 4 SUSPENDED " \
  "four flows in four states"
expect_exit 0 "$TASKQ" db check

section "export: one line per task, then one per flow"
n=$(count_tasks)
expect_exit 0 "$TASKQ" export
printf '%s\n' "$out" >src.jsonl
expect_eq "$(wc -l <src.jsonl)" $((n + 4)) "a line per task and per flow"
expect_eq "$(jq -sc '[.[] | has("id")]' src.jsonl)" \
  "[$(printf 'true,%.0s' $(seq "$n"))false,false,false,false]" \
  "the flows come after the tasks, without an id of their own at the top"
expect_eq "$(jq -c 'select(has("flow") and (has("id") | not)) | keys_unsorted' src.jsonl | sort -u)" \
  '["flow","atoms","events"]' "a flow's line: its row, its atoms, its events"
expect_eq "$(jq -sc '[.[] | select(has("atoms")) | .flow.id]' src.jsonl)" "[1,2,3,4]" \
  "in id order"
expect_eq "$(jq -c 'select(has("atoms")) | [(.flow | keys_unsorted | .[-1]), (.flow | has("version"))]' src.jsonl | sort -u)" \
  '["document",false]' "a flow's row ends with its document, without the version of its last step"
expect_eq "$(jq -c 'select(.flow.id == 1 and has("atoms")) | .atoms | map(.name)' src.jsonl)" \
  '["build","publish_retry","upload","announce"]' "atoms in node order"
expect_eq "$(jq -c 'select(.flow.id == 1 and has("atoms")) | .atoms[1].history | length' src.jsonl)" \
  2 "a controller's history"
expect_eq "$(jq -c 'select(.flow.id == 2 and has("atoms")) | [.atoms[].task_id | type]' src.jsonl)" \
  '["number","number"]' "the running flow's atoms name their tasks"
expect_eq "$(jq -c 'select(has("id") and .flow != null) | .flow | type' src.jsonl | sort -u)" \
  '"object"' "an atom's task carries its flow link as JSON"
expect_eq "$(jq -sc '[.[] | select(has("atoms")) | .events[] | select(.state == "REVERTED" and .kind != "flow") | has("result")] | unique' src.jsonl)" \
  '[true]' "an atom's REVERTED change keeps its null result"
expect_eq "$(jq -sc '[.[] | select(has("atoms")) | .events[] | select(.state == "RUNNING") | has("result")] | unique' src.jsonl)" \
  '[false]' "a change without a result has none"

section "import into an empty database, export again: the same bytes"
src_db=$TASKQ_DB
fresh_db copy
expect_exit 0 "$TASKQ" import "$scratch/src.jsonl"
expect_out "imported $n tasks and 4 flows"
"$TASKQ" export >copy.jsonl
check "the copy exports what the source exported, byte for byte" cmp -s src.jsonl copy.jsonl
expect_exit 0 "$TASKQ" db check
for id in 1 2 3 4; do
  expect_eq "$(tq flow show "$id" -o json)" "$(TASKQ_DB=$src_db tq flow show "$id" -o json)" \
    "flow show $id on both"
done

section "an imported flow goes on where it was"
# The leased atom's lease came along: its worker finishes it; then the
# other atom; the suspended flow resumes.
leased=$(jq -r 'select(.lease_worker == "keeper") | .id' src.jsonl)
tok=$(jq -r 'select(.lease_worker == "keeper") | .lease_token' src.jsonl)
advance 1
expect_exit 0 "$TASKQ" done "$leased" --lease "$tok"
step u done >/dev/null
expect_eq "$(tq flow show 2 -o json | jq -r .state)" SUCCESS "the imported running flow ends"
expect_exit 0 "$TASKQ" flow resume 4
step s done >/dev/null
expect_eq "$(tq flow show 4 -o json | jq -r .state)" SUCCESS "the imported suspended flow resumes and ends"
expect_exit 0 "$TASKQ" flow submit - <<<"$pause"
expect_out 5
expect_exit 0 "$TASKQ" db check

section "export --queue holds no flows, and its atoms' tasks need them"
TASKQ_DB=$src_db
expect_exit 0 "$TASKQ" export --queue u
printf '%s\n' "$out" >u.jsonl
expect_eq "$(jq -sc 'map(has("atoms"))' u.jsonl)" "[false,false]" "two tasks, no flow"
expect_exit 0 "$TASKQ" export --help
expect_contains "$out" "no flows" "export --help says so"
fresh_db queue_only
expect_exit 2 "$TASKQ" import "$scratch/u.jsonl"
expect_err_contains "line 1: task $(jq -r .id u.jsonl | head -1): its 'flow' names an atom, but no atom waits for it; nothing was imported"
expect_eq "$(count_tasks)" 0 "nothing was imported"

section "refused flows change nothing"
fresh_db refused
refused_db=$TASKQ_DB
expect_exit 0 "$TASKQ" import "$scratch/src.jsonl"
before=$(db_dump)
flow1=$(grep -m1 '^{"flow":{"id":1,' src.jsonl)
printf '%s\n' "$flow1" >one.jsonl
expect_exit 4 "$TASKQ" import one.jsonl
expect_err_contains "taskq: line 1: flow 1 already exists; nothing was imported"
expect_eq "$(db_dump)" "$before" "a taken flow id changed nothing"
fresh_db refused2
# A flow given twice is the file's fault (exit 2), not a taken id.
printf '%s\n%s\n' "$flow1" "$flow1" >twice.jsonl
expect_exit 2 "$TASKQ" import twice.jsonl
expect_err_contains "taskq: line 2: flow 1 is given twice (first on line 1); nothing was imported"
for bad in \
  "$(jq -c '.flow.state = "DONE"' <<<"$flow1")|line 1: flow: 'state' must be a flow state (PENDING, RUNNING, ...)" \
  "$(jq -c '.atoms[0].colour = 1' <<<"$flow1")|line 1: atoms: unknown column 'colour'" \
  "$(jq -c '. + {tasks: []}' <<<"$flow1")|line 1: unknown member 'tasks' of a flow" \
  "$(jq -c 'del(.atoms)' <<<"$flow1")|line 1: a flow's 'atoms' is required" \
  "$(jq -c '.atoms |= .[1:]' <<<"$flow1")|line 1: atoms: its document has 4 atoms" \
  "$(jq -c '.atoms[2].name = "download"' <<<"$flow1")|line 1: atoms: row 3 must be node 2 of its document: task atom 'upload'" \
  "$(jq -c '.flow.document = "{}"' <<<"$flow1")|line 1: flow: its 'document' does not compile: "; do
  printf '%s\n' "${bad%%|*}" >bad.jsonl
  expect_exit 2 "$TASKQ" import bad.jsonl
  expect_err_contains "${bad#*|}"
  expect_err_contains "; nothing was imported"
done
# The running flow without its atoms' tasks; a task whose link names
# another atom.
jq -c 'select(has("atoms") and .flow.id == 2)' src.jsonl >bad.jsonl
fresh_db refused3
expect_exit 2 "$TASKQ" import bad.jsonl
expect_err_contains "line 1: flow 2: an atom waits for a task that is missing, finished, or whose 'flow' names another flow or atom"
jq -c 'if .lease_worker == "keeper" then .flow.atom = "nope" else . end' src.jsonl >bad.jsonl
expect_exit 2 "$TASKQ" import bad.jsonl
expect_err_contains "flow 2: an atom waits for a task that is missing, finished, or whose 'flow' names another flow or atom"
expect_err_contains "line $((n + 2)): "
expect_eq "$(count_tasks)" 0 "nothing was imported"
expect_exit 3 "$TASKQ" flow show 1

section "db check finds an atom and its task that no longer name each other"
TASKQ_DB=$refused_db
raw_sql "UPDATE flow_atoms SET task_id = NULL WHERE flow_id = 2"
expect_exit 5 "$TASKQ" db check
expect_err_contains "2 unfinished task(s) of a flow's atom that no atom waits for"
raw_sql "UPDATE flows SET state = 'SUCCESS' WHERE id = 2"
raw_sql "UPDATE flow_atoms SET task_id = $leased WHERE flow_id = 2 AND node = 0"
expect_exit 5 "$TASKQ" db check
expect_err_contains "atom(s) of finished or suspended flows still waiting for a task"

section "from SQLite to PostgreSQL and back, the same bytes"
if [[ $backend != postgresql ]]; then
  check "skipped: needs both backends; run it with TASKQ_TEST_BACKEND=postgresql" true
  return 0
fi
sq=$scratch/sqlite-src.db
TASKQ_DB=$sq scene
expect_exit 0 env TASKQ_DB="$sq" "$TASKQ" export
printf '%s\n' "$out" >sqlite.jsonl
fresh_db cross
expect_exit 0 "$TASKQ" import "$scratch/sqlite.jsonl"
expect_out "imported $n tasks and 4 flows"
"$TASKQ" export >pg.jsonl
check "PostgreSQL exports what SQLite exported, byte for byte" cmp -s sqlite.jsonl pg.jsonl
expect_exit 0 "$TASKQ" db check
expect_exit 0 "$TASKQ" flow submit - <<<"$pause"
expect_out 5
"$TASKQ" export >pg-now.jsonl
expect_exit 0 "$TASKQ" --db "$scratch/back.db" import "$scratch/pg-now.jsonl"
expect_exit 0 "$TASKQ" --db "$scratch/back.db" export
printf '%s\n' "$out" >back.jsonl
check "SQLite exports what PostgreSQL exported, byte for byte" cmp -s pg-now.jsonl back.jsonl
expect_exit 0 "$TASKQ" --db "$scratch/back.db" db check
expect_exit 0 "$TASKQ" --db "$scratch/back.db" flow submit - <<<"$pause"
expect_out 6
check "the scene made on PostgreSQL exports what SQLite's does (lease tokens aside)" \
  cmp -s <(jq -c '.lease_token |= (if . == null then null else "T" end)' sqlite.jsonl) \
  <(jq -c '.lease_token |= (if . == null then null else "T" end)' src.jsonl)
