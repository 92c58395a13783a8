# Flows from the operator's side (doc/flows.md#workers, doc/flows.md#commands):
# what lease, show, why, stats, metrics and events say of flows and atoms'
# tasks, and operator commands on an atom's task (kill fails its atom; retry is
# refused).

doc=$scratch/ci.json
cat >"$doc" <<'EOF'
{"name": "ci", "pattern": "linear", "store": {"rev": "abc"},
 "atoms": [
   {"name": "build", "execute": {"queue": "ci", "payload": {"step": 1}},
    "requires": "rev", "provides": "bin", "revert": {"queue": "undo"}},
   {"name": "ship", "execute": {"queue": "ci"}, "requires": "bin"}]}
EOF

section "lease -o json and -o env show the flow object and TASKQ_FLOW/ATOM/ACTION/ARGS"
fresh_db
flow=$(tq flow submit "$doc")
expect_match "$flow" '^[0-9]+$' "flow submit prints the id"
expect_exit 0 "$TASKQ" lease ci -o json
expect_json "$out" '.flow' "{\"id\":$flow,\"atom\":\"build\",\"action\":\"execute\",\"args\":{\"rev\":\"abc\"}}"
expect_json "$out" '.payload' '{"step":1}'
build=$(jout .id)
token=$(jout .lease.token)
expect_exit 0 "$TASKQ" show "$build" -o json
expect_json "$out" '.flow.atom' build "show -o json has the flow object"
expect_exit 0 "$TASKQ" show "$build"
expect_contains "$out" "atom 'build'" "show names the atom"
expect_exit 0 "$TASKQ" why "$build"
expect_contains "$out" "atom 'build' of flow $flow" "why names the flow and atom"
expect_exit 0 "$TASKQ" done "$build" --lease "$token" --result '"b.tar"'
expect_exit 0 "$TASKQ" lease ci -o env
eval "$out"
expect_eq "$TASKQ_FLOW $TASKQ_ATOM $TASKQ_ACTION $TASKQ_ARGS" \
  "$flow ship execute {\"bin\":\"b.tar\"}" "lease -o env: TASKQ_FLOW/ATOM/ACTION/ARGS"
expect_exit 0 "$TASKQ" done --result 1
unset TASKQ_ID TASKQ_LEASE
expect_exit 0 "$TASKQ" flow wait "$flow" --timeout 5s
expect_out SUCCESS
expect_exit 0 "$TASKQ" show "$build" -o json
expect_json "$out" '.flow' "{\"id\":$flow,\"atom\":\"build\",\"action\":\"execute\",\"args\":{\"rev\":\"abc\"}}"
expect_exit 0 "$TASKQ" add plain
expect_exit 0 "$TASKQ" show "$out" -o json
expect_json "$out" '.flow' null "a plain task has flow null"

section "run sets the flow variables for its handler"
fresh_db
flow=$(tq flow submit "$doc")
handler=$scratch/handler.sh
cat >"$handler" <<'EOF'
#!/bin/sh
printf '%s %s %s %s\n' "$TASKQ_FLOW" "$TASKQ_ATOM" "$TASKQ_ACTION" "$TASKQ_ARGS" >>"$LOG"
echo "\"$TASKQ_ATOM-done\""
EOF
chmod +x "$handler"
export LOG=$scratch/run.log
expect_exit 0 "$TASKQ" run ci --until-empty --result-stdout -- "$handler"
expect_eq "$(cat "$LOG")" "$flow build execute {\"rev\":\"abc\"}
$flow ship execute {\"bin\":\"build-done\"}" "the handler saw each atom and its args"
expect_exit 0 "$TASKQ" flow show "$flow" -o json
expect_json "$out" '.store' '{"bin":"build-done","rev":"abc"}'
expect_json "$out" '[.atoms[].state]' '["SUCCESS","SUCCESS"]'
expect_json "$out" '[.events[] | select(.kind == "flow") | .state]' '["PENDING","RUNNING","SUCCESS"]'
expect_json "$out" '.events[-2] | [.name, .kind, .state, .result]' '["ship","task","SUCCESS","ship-done"]'
expect_exit 0 "$TASKQ" flow show "$flow"
expect_match "$out" 'ship +task +SUCCESS +ship-done' "the event table: element, kind, state, result"

section "a killed atom task fails its atom; the flow reverts and ends REVERTED"
fresh_db
flow=$(tq flow submit "$doc")
first=$(tq list --queue ci -o id)
expect_exit 0 "$TASKQ" kill "$first"
expect_exit 0 "$TASKQ" flow show "$flow" -o json
expect_json "$out" '.atoms[0].state' REVERTING
expect_match "$(jout .atoms[0].failure)" '^killed by .+@' "the atom's failure: who killed its task"
expect_exit 0 "$TASKQ" lease undo -o json
expect_json "$out" '.flow.action' revert
expect_match "$(jout .flow.args.failures.build)" '^killed by .+@' "the revert sees the failure"
expect_exit 0 "$TASKQ" done "$(jout .id)" --lease "$(jout .lease.token)"
expect_exit 6 "$TASKQ" flow wait "$flow" --timeout 5s
expect_out REVERTED

section "retry of an atom's task is refused and changes nothing"
before=$(db_dump)
expect_exit 4 "$TASKQ" retry "$first"
expect_err_contains "flow $flow"
expect_eq "$(db_dump)" "$before" "the database is unchanged"

section "stats and metrics count flows by state; events streams their changes"
fresh_db
tq db migrate >/dev/null # an empty database (a missing one is exit 5)
expect_exit 0 "$TASKQ" stats -o json
expect_out_empty
expect_exit 0 "$TASKQ" metrics
expect_not_contains "$out" 'taskq_flows{' "no flow samples before the first flow"
one=$(tq flow submit "$doc")
two=$(tq flow submit "$doc")
expect_exit 0 "$TASKQ" flow suspend "$two"
expect_out "flow $two: SUSPENDED"
expect_exit 0 "$TASKQ" stats -o json
expect_json "$out" 'select(.flows) | .flows | [.RUNNING, .SUSPENDED, .SUCCESS]' '[1,1,0]'
expect_exit 0 "$TASKQ" stats
expect_match "$out" 'SUSPENDED +1' "the stats table counts flows"
expect_exit 0 "$TASKQ" metrics
expect_contains "$out" 'taskq_flows{state="RUNNING"} 1' "metrics: running flows"
expect_contains "$out" 'taskq_flows{state="SUSPENDED"} 1' "metrics: suspended flows"
expect_contains "$out" 'taskq_flows{state="FAILURE"} 0' "metrics names every state, also at 0"
expect_exit 0 "$TASKQ" events -o json
expect_eq "$(jq -sr "[.[] | select(.flow == $two) | .to] | join(\",\")" <<<"$out")" \
  "PENDING,RUNNING,SUSPENDING,SUSPENDED" "events: the suspended flow's changes"
expect_eq "$(jq -sr "[.[] | select(.flow == $one) | .to] | join(\",\")" <<<"$out")" \
  "PENDING,RUNNING" "events: the running flow's changes"
expect_exit 0 "$TASKQ" events --queue ci -o json
expect_jq "$(jq -s 'map(select(.flow)) | length == 0' <<<"$out")" . "a queue's stream has no flow events"
expect_exit 0 "$TASKQ" flow list -o json
expect_json "$out" '[.id, .state] | join(" ")' "$one RUNNING
$two SUSPENDED"
expect_exit 0 "$TASKQ" flow list --state SUSPENDED -o id
expect_out "$two"
expect_exit 2 "$TASKQ" flow list --state sleeping
expect_exit 3 "$TASKQ" flow show 999
expect_exit 2 "$TASKQ" flow show x

section "a result the flow cannot hold (a number beyond a double) fails the atom; done still completes the task"
fresh_db
flow=$(tq flow submit - <<<'{"name":"z","atoms":[{"name":"a","execute":{"queue":"z"},"provides":"x"},{"name":"b","execute":{"queue":"z"},"requires":"x"}]}')
expect_exit 0 "$TASKQ" lease z -o json
expect_exit 0 "$TASKQ" done "$(jout .id)" --lease "$(jout .lease.token)" --result 1e400
expect_exit 0 "$TASKQ" show 1 -o json
expect_json "$out" '.state' completed "the task is completed"
expect_exit 6 "$TASKQ" flow wait "$flow" --timeout 5s
expect_out REVERTED
expect_exit 0 "$TASKQ" flow show "$flow" -o json
expect_match "$(jout '.atoms[0].failure')" 'result.*out of range' "the atom's failure says why"
