# Flows end to end (doc/flows.md):
# real `taskq run` workers drain flows whose atoms are small shell handlers
# that look at TASKQ_ACTION and TASKQ_ARGS and append what they did to a
# log. Linear success and the store, revert in reverse order, a revert that
# fails, `times`, `for_each`, an unordered subflow run concurrently,
# suspend/resume, and rerun.
#
# Every wait for another process is a bounded poll or `flow wait
# --timeout`, never a bare sleep.

# --- the handler -------------------------------------------------------------------

# One handler for every atom; what it does comes from the atom's payload:
#   {"fail": true}        execute exits 1 (stderr "boom ATOM")
#   {"fail_if": "F"}      execute exits 1 while the file flags/F exists
#   {"ok_if": V}          execute exits 1 unless args.mirror == V
#   {"fail_revert": true} revert exits 1
#   {"gather": N}         execute waits (10 s at most, else exits 1) until
#                         N atoms of its flow have reached this point
#   {"hold": true}        execute notes held/FLOW.ATOM and waits (20 s at
#                         most, else exits 1) for the file release.FLOW
# An execute that succeeds prints "ATOM-out" (JSON) as its result (`run
# --result-stdout`); a revert prints nothing. Each run appends one JSON line
# to log: {flow, atom, action, task, args, start, end (microseconds since
# 1970), ok}.
LOG=$scratch/log
: >"$LOG"
mkdir -p "$scratch/flags" "$scratch/gather" "$scratch/held"
H=$scratch/handler
cat >"$H" <<EOF
#!/bin/bash
start=\${EPOCHREALTIME/[.,]/}
p=\${TASKQ_PAYLOAD:-null}
args=\$(jq -c . <<<"\${TASKQ_ARGS:-null}" 2>/dev/null) || args='"<not JSON>"'
ok=true
opt() { jq -r "\$1" <<<"\$p" 2>/dev/null; }
if [[ \$TASKQ_ACTION == execute ]]; then
  if [[ \$(opt '.fail // false') == true ]]; then ok=false; fi
  f=\$(opt '.fail_if // empty')
  if [[ -n \$f && -e $scratch/flags/\$f ]]; then ok=false; fi
  v=\$(opt 'if has("ok_if") then .ok_if | tojson else empty end')
  if [[ -n \$v && \$(jq -c '.mirror' <<<"\$args") != "\$v" ]]; then ok=false; fi
  n=\$(opt '.gather // empty')
  if [[ -n \$n ]]; then
    : >"$scratch/gather/\$TASKQ_FLOW.\$TASKQ_ATOM"
    for ((i = 0; i < 500; i++)); do
      c=\$(ls "$scratch/gather" | grep -c "^\$TASKQ_FLOW\\\\.")
      ((c >= n)) && break
      sleep 0.02
    done
    ((c >= n)) || ok=false
  fi
  if [[ \$(opt '.hold // false') == true ]]; then
    : >"$scratch/held/\$TASKQ_FLOW.\$TASKQ_ATOM"
    for ((i = 0; i < 1000; i++)); do
      [[ -e $scratch/release.\$TASKQ_FLOW ]] && break
      sleep 0.02
    done
    [[ -e $scratch/release.\$TASKQ_FLOW ]] || ok=false
  fi
elif [[ \$TASKQ_ACTION == revert ]]; then
  if [[ \$(opt '.fail_revert // false') == true ]]; then ok=false; fi
fi
end=\${EPOCHREALTIME/[.,]/}
jq -nc --arg flow "\$TASKQ_FLOW" --arg atom "\$TASKQ_ATOM" \\
  --arg action "\$TASKQ_ACTION" --arg task "\$TASKQ_ID" --argjson args "\$args" \\
  --argjson start "\$start" --argjson fin "\$end" --argjson ok "\$ok" \\
  '{flow: (\$flow | tonumber? // \$flow), atom: \$atom, action: \$action,
    task: (\$task | tonumber), args: \$args, start: \$start, "end": \$fin,
    ok: \$ok}' >>"$LOG"
if [[ \$ok != true ]]; then
  echo "boom \$TASKQ_ATOM" >&2
  exit 1
fi
if [[ \$TASKQ_ACTION == execute ]]; then
  printf '"%s-out"\n' "\$TASKQ_ATOM"
fi
exit 0
EOF
chmod +x "$H"

# --- helpers -----------------------------------------------------------------------

# submit DOC: submits the flow document DOC (from stdin) and prints its id.
submit() {
  local id
  id=$(printf '%s\n' "$1" | tq flow submit -) || return 1
  if [[ ! $id =~ ^[0-9]+$ ]]; then
    _ko "flow submit prints the new id" "stdout: $id"
    return 1
  fi
  printf '%s\n' "$id"
}

# drain [RUN OPTION...]: one `taskq run fq --until-empty --result-stdout`
# with the handler, as a check (exit 0).
drain() {
  expect_exit 0 "$TASKQ" run fq --until-empty --result-stdout "$@" -- "$H"
}

# drain_failing: the same where an atom's task fails for good, which makes
# run exit 6.
drain_failing() {
  expect_exit 6 "$TASKQ" run fq --until-empty --result-stdout -- "$H"
}

# fshow ID FILTER: jq -rc FILTER over `taskq flow show ID -o json`.
fshow() {
  local j
  if ! j=$("$TASKQ" flow show "$1" -o json 2>&1 3>&-); then
    echo "<flow show $1 failed: $j>"
    return
  fi
  jq -rc "$2" <<<"$j" 2>/dev/null || echo "<flow show $1 is not JSON: $j>"
}

# fstate ID: the flow's state.
fstate() { fshow "$1" .state; }
fstate_is() { [[ $(fstate "$1") == "$2" ]]; }

# log_of ID FILTER: jq -rc FILTER over the array of the log lines of flow ID.
log_of() {
  jq -rsc --argjson f "$1" "map(select(.flow == \$f)) | $2" "$LOG" 2>&1
}

# actions ID: "atom:action" of each handler run of flow ID, in log order,
# space-separated.
actions() { log_of "$1" 'map("\(.atom):\(.action)") | join(" ")'; }

# flow_events ID KIND: the states of the events of KIND of flow ID, in
# order, space-separated ("NAME:STATE" for kinds other than flow).
flow_events() {
  if [[ $2 == flow ]]; then
    # (A leading PENDING, the flow's creation, is left out.)
    fshow "$1" '[.events[] | select(.kind == "flow") | .state]
      | if .[0] == "PENDING" then .[1:] else . end | join(" ")'
  else
    fshow "$1" "[.events[] | select(.kind == \"$2\") | \"\(.name):\(.state)\"] | join(\" \")"
  fi
}

# wait_flow CODE ID STATE: `flow wait ID --timeout 20s` exits CODE and
# prints STATE.
wait_flow() {
  expect_exit "$1" "$TASKQ" flow wait "$2" --timeout 20s
  expect_out "$3"
}

count_log() { grep -c . "$LOG"; }

# The store with its keys sorted (its order is not part of the contract).
STORE='.store | to_entries | sort_by(.key) | from_entries'
FULL='{"pa":"a-out","pb":"b-out","pc":"c-out","v":"1.0"}'

# --- documents ---------------------------------------------------------------------

# A linear flow of three atoms, each with a revert, passing data along:
# a gets v from the store and provides pa, b requires pa and provides pb,
# c requires pb and provides pc. C: c's extra fields.
linear_doc() {
  local name=$1 c_extra=${2:-} b_extra=${3:-}
  cat <<EOF
{"name": "$name", "pattern": "linear", "store": {"v": "1.0"},
 "atoms": [
   {"name": "a", "execute": {"queue": "fq"}, "revert": {"queue": "fq"},
    "requires": ["v"], "provides": "pa"},
   {"name": "b", "execute": {"queue": "fq"$b_extra}, "revert": {"queue": "fq"$b_extra},
    "requires": ["pa"], "provides": "pb", "max_errors": 1},
   {"name": "c", "execute": {"queue": "fq"$c_extra}, "revert": {"queue": "fq"},
    "requires": ["pb"], "provides": "pc", "max_errors": 1}]}
EOF
}

# --- linear success ------------------------------------------------------------------

section "a linear flow succeeds; its store holds every provided symbol"
ok_id=$(submit "$(linear_doc lin)")
expect_exit 0 "$TASKQ" flow show "$ok_id" -o json
expect_json "$out" .name lin
expect_json "$out" .state RUNNING "state before any worker"
expect_json "$out" '[.atoms[] | select(.state == "RUNNING") | .name] | join(",")' a \
  "only the first atom runs"
tid=$(fshow "$ok_id" '.atoms[] | select(.name == "a") | .task')
expect_match "$tid" '^[0-9]+$' "atom a's task id"
expect_exit 0 "$TASKQ" show "$tid" -o json
expect_json "$out" .queue fq
expect_json "$out" .flow.id "$ok_id" "flow.id of a's task"
expect_json "$out" .flow.atom a
expect_json "$out" .flow.action execute
expect_json "$out" .flow.args '{"v":"1.0"}'
expect_exit 0 "$TASKQ" why "$tid"
expect_contains "$out$err" "$ok_id" "why names the flow"
expect_word "$out$err" a "why names the atom"
drain
wait_flow 0 "$ok_id" SUCCESS
expect_eq "$(actions "$ok_id")" "a:execute b:execute c:execute" "handler runs"
expect_eq "$(log_of "$ok_id" '[.[].args]')" \
  '[{"v":"1.0"},{"pa":"a-out"},{"pb":"b-out"}]' "each atom's args"
expect_exit 0 "$TASKQ" flow show "$ok_id" -o json
expect_json "$out" .state SUCCESS
expect_json "$out" "$STORE" "$FULL" \
  "store of a SUCCESS flow"
expect_json "$out" '[.atoms[] | "\(.name):\(.kind):\(.state):\(.result)"] | join(" ")' \
  "a:task:SUCCESS:a-out b:task:SUCCESS:b-out c:task:SUCCESS:c-out"
expect_eq "$(flow_events "$ok_id" flow)" "RUNNING SUCCESS" "flow events"
expect_json "$out" '[.events[] | select(.kind == "task" and .state == "SUCCESS") | .name] | join(" ")' \
  "a b c" "atoms' SUCCESS events, in order"
expect_jq "$out" '[.events[].time] | . == sort' "event times in order"
expect_exit 0 "$TASKQ" flow list -o json
expect_json "$out" "select(.id == $ok_id) | .state" SUCCESS "flow list"
expect_exit 0 "$TASKQ" flow list --state SUCCESS -o json
expect_json "$out" "[.id] | index($ok_id) != null" true "flow list --state SUCCESS"
expect_exit 0 "$TASKQ" flow list
expect_match "$(head -n 1 <<<"$out")" '^ID +NAME +STATE +UPDATED$' "flow list's table header"
check "flow list's row" grep -qE "^$ok_id +lin +SUCCESS +[0-9]{4}-" <<<"$out"
expect_exit 0 "$TASKQ" flow show "$ok_id"
expect_match "$out" 'TIME +ELEMENT +KIND +STATE +RESULT' "flow show's event table"
check "flow show's event row of c" grep -qE '^[0-9TZ:.-]+ +c +task +SUCCESS +c-out$' <<<"$out"

section "without run: lease -o env, done --result, and a killed atom task"
expect_exit 0 "$TASKQ" flow submit - -o json <<<'{"name": "manual", "pattern": "linear",
 "atoms": [
   {"name": "m1", "execute": {"queue": "mq", "payload": {"k": 1}}, "provides": "got"},
   {"name": "m2", "execute": {"queue": "mq"}, "requires": ["got"]}]}'
expect_match "$out" '^\{"id":[0-9]+\}$' "submit -o json"
mn_id=$(jout .id)
expect_exit 0 "$TASKQ" lease mq -o env --for 5m
m1_env=$out
envvar() { (eval "$m1_env" && printf '%s' "${!1-<unset>}"); }
expect_eq "$(envvar TASKQ_FLOW)" "$mn_id" "lease -o env: TASKQ_FLOW"
expect_eq "$(envvar TASKQ_ATOM)" m1 "lease -o env: TASKQ_ATOM"
expect_eq "$(envvar TASKQ_ACTION)" execute "lease -o env: TASKQ_ACTION"
expect_eq "$(envvar TASKQ_ARGS)" '{}' "lease -o env: TASKQ_ARGS"
m1_id=$(envvar TASKQ_ID)
m1_tok=$(envvar TASKQ_LEASE)
expect_exit 0 "$TASKQ" done "$m1_id" --lease "$m1_tok" --result '{"n": [1, 2]}'
expect_eq "$(fshow "$mn_id" .store)" '{"got":{"n":[1,2]}}' "done --result reaches the store"
expect_exit 0 "$TASKQ" lease mq -o json --for 5m
expect_json "$out" '.flow | to_entries | sort_by(.key) | from_entries' "{\"action\":\"execute\",\"args\":{\"got\":{\"n\":[1,2]}},\"atom\":\"m2\",\"id\":$mn_id}" \
  "lease -o json: the flow object, with args"
m2_id=$(jout .id)
expect_exit 0 "$TASKQ" kill "$m2_id"
wait_flow 6 "$mn_id" REVERTED
expect_eq "$(fshow "$mn_id" '[.atoms[] | "\(.name):\(.state)"] | join(" ")')" \
  "m1:REVERTED m2:REVERTED" "a killed atom task fails its atom; the flow is reverted"
expect_eq "$(fshow "$mn_id" '[.events[] | select(.kind == "task") | "\(.name):\(.state)"] | join(" ")')" \
  "m1:RUNNING m1:SUCCESS m2:RUNNING m2:FAILURE m2:REVERTING m2:REVERTED m1:REVERTING m1:REVERTED" \
  "atom events"
expect_eq "$(fshow "$mn_id" .store)" '{}' "store after the revert"

# --- revert in reverse order ----------------------------------------------------------

section "a step that fails for good is reverted in reverse order; the flow ends REVERTED"
: >"$scratch/flags/c_fails"
rv_id=$(submit "$(linear_doc rev ', "payload": {"fail_if": "c_fails"}')")
drain_failing
wait_flow 6 "$rv_id" REVERTED
expect_eq "$(actions "$rv_id")" \
  "a:execute b:execute c:execute c:revert b:revert a:revert" "handler runs"
expect_eq "$(log_of "$rv_id" '[.[] | select(.action == "revert") | .args.result] | join(",")')" \
  ",b-out,a-out" "each revert's args.result is its atom's result (none for c)"
expect_eq "$(log_of "$rv_id" '[.[] | select(.action == "revert") | .args.failures | keys] | unique')" \
  '[["c"]]' "each revert's args.failures names c"
expect_eq "$(log_of "$rv_id" '[.[] | select(.atom == "b" and .action == "revert") | .args.pa][0]')" \
  a-out "b's revert gets its requirements too"
expect_exit 0 "$TASKQ" flow show "$rv_id" -o json
expect_json "$out" .state REVERTED
expect_json "$out" .store '{"v":"1.0"}' "a REVERTED flow's store holds only what was injected"
expect_json "$out" '[.atoms[] | .state] | unique | join(",")' REVERTED "every atom REVERTED"
expect_json "$out" '[.events[] | select(.kind == "task" and .state == "REVERTED") | .name] | join(" ")' \
  "c b a" "atoms' REVERTED events, in reverse order"
expect_eq "$(flow_events "$rv_id" flow)" "RUNNING REVERTED" "flow events"

section "a revert that fails ends the flow FAILURE"
fr_id=$(submit "$(linear_doc revfail ', "payload": {"fail": true}' ', "payload": {"fail_revert": true}')")
drain_failing
wait_flow 6 "$fr_id" FAILURE
expect_eq "$(actions "$fr_id")" \
  "a:execute b:execute c:execute c:revert b:revert" "handler runs (nothing after b's revert failed)"
expect_exit 0 "$TASKQ" flow show "$fr_id" -o json
expect_json "$out" .state FAILURE
expect_json "$out" '[.atoms[] | "\(.name):\(.state)"] | join(" ")' \
  "a:SUCCESS b:REVERT_FAILURE c:REVERTED"
expect_json "$out" '.atoms[] | select(.name == "b") | .failure | length > 0' true \
  "b's failure is set"

# --- retry controllers ------------------------------------------------------------------

section "times 3 runs its subflow three times, then reverts"
tm_id=$(submit '{"name": "tm", "pattern": "linear",
 "retry": {"name": "r", "times": 3, "provides": "attempt"},
 "atoms": [
   {"name": "x", "execute": {"queue": "fq"}, "revert": {"queue": "fq"},
    "requires": ["attempt"], "provides": "px"},
   {"name": "y", "execute": {"queue": "fq", "payload": {"fail": true}},
    "requires": ["attempt", "px"], "max_errors": 1}]}')
drain_failing
wait_flow 6 "$tm_id" REVERTED
expect_eq "$(actions "$tm_id")" \
  "x:execute y:execute x:revert x:execute y:execute x:revert x:execute y:execute x:revert" \
  "handler runs"
expect_eq "$(log_of "$tm_id" '[.[] | select(.action == "execute") | .args.attempt] | join(",")')" \
  "1,1,2,2,3,3" "the attempt number each execution got"
expect_eq "$(fshow "$tm_id" '[.events[] | select(.kind == "retry" and .state == "SUCCESS") | .result] | join(",")')" \
  "1,2,3" "the controller's values (events)"
expect_eq "$(fshow "$tm_id" '[.atoms[] | "\(.name):\(.kind):\(.state)"] | join(" ")')" \
  "r:retry:REVERTED x:task:REVERTED y:task:REVERTED" "atoms"
expect_eq "$(fshow "$tm_id" .store)" '{}' "store after the revert"

section "times 0 runs its subflow once, with no retry (TaskFlow's Times(0))"
t0_id=$(submit '{"name": "t0", "pattern": "linear",
 "retry": {"name": "r", "times": 0},
 "atoms": [
   {"name": "x", "execute": {"queue": "fq"}, "revert": {"queue": "fq"}},
   {"name": "y", "execute": {"queue": "fq", "payload": {"fail": true}},
    "max_errors": 1}]}')
drain_failing
wait_flow 6 "$t0_id" REVERTED
expect_eq "$(actions "$t0_id")" "x:execute y:execute x:revert" \
  "handler runs: once, then the revert"

section "for_each hands each value in turn through args and stops at the first success"
fe_id=$(submit '{"name": "fe", "pattern": "linear",
 "retry": {"name": "m", "for_each": ["m-a", "m-b", "m-c", "m-d"], "provides": "mirror"},
 "atoms": [
   {"name": "up", "execute": {"queue": "fq", "payload": {"ok_if": "m-c"}},
    "revert": {"queue": "fq"}, "requires": ["mirror"], "provides": "where", "max_errors": 1}]}')
drain_failing
wait_flow 0 "$fe_id" SUCCESS
expect_eq "$(log_of "$fe_id" '[.[] | "\(.action):\(.args.mirror)"] | join(" ")')" \
  "execute:m-a revert:m-a execute:m-b revert:m-b execute:m-c" "handler runs and their mirror"
expect_exit 0 "$TASKQ" flow show "$fe_id" -o json
expect_json "$out" "$STORE" '{"mirror":"m-c","where":"up-out"}' "store"
expect_json "$out" '.atoms[] | select(.name == "m") | [.history[].value] | join(",")' \
  "m-a,m-b,m-c" "the controller's history"
expect_json "$out" '.atoms[] | select(.name == "m") | [.history[] | .failures | keys | join("+")] | join(",")' \
  "up,up," "failures recorded in the history"

# --- concurrency --------------------------------------------------------------------------

section "an unordered subflow's atoms run concurrently with run --concurrency 4"
un_id=$(submit '{"name": "par", "pattern": "linear",
 "atoms": [
   {"name": "first", "execute": {"queue": "fq"}},
   {"flow": {"name": "fan", "pattern": "unordered", "atoms": [
     {"name": "p1", "execute": {"queue": "fq", "payload": {"gather": 4}}, "max_errors": 1},
     {"name": "p2", "execute": {"queue": "fq", "payload": {"gather": 4}}, "max_errors": 1},
     {"name": "p3", "execute": {"queue": "fq", "payload": {"gather": 4}}, "max_errors": 1},
     {"name": "p4", "execute": {"queue": "fq", "payload": {"gather": 4}}, "max_errors": 1}]}},
   {"name": "last", "execute": {"queue": "fq"}}]}')
drain --concurrency 4
wait_flow 0 "$un_id" SUCCESS
expect_eq "$(actions "$un_id" | tr ' ' '\n' | sort | tr '\n' ' ')" \
  "first:execute last:execute p1:execute p2:execute p3:execute p4:execute " "handler runs"
expect_eq "$(log_of "$un_id" '[.[] | select(.atom | test("^p"))] | (map(.start) | max) < (map(.end) | min)')" \
  true "the four ran at once (each started before any ended)"
expect_eq "$(log_of "$un_id" '(.[] | select(.atom == "first") | .end) <= ([.[] | select(.atom | test("^p")) | .start] | min)')" \
  true "they started after first ended"
expect_eq "$(log_of "$un_id" '(.[] | select(.atom == "last") | .start) >= ([.[] | select(.atom | test("^p")) | .end] | max)')" \
  true "last started after they all ended"

# --- suspend and resume --------------------------------------------------------------------

section "suspend while two atoms run: SUSPENDING, nothing new leased, SUSPENDED, resume completes"
sp_id=$(submit '{"name": "sp", "pattern": "linear",
 "atoms": [
   {"flow": {"name": "three", "pattern": "unordered", "atoms": [
     {"name": "h1", "execute": {"queue": "fq", "payload": {"hold": true}}},
     {"name": "h2", "execute": {"queue": "fq", "payload": {"hold": true}}},
     {"name": "h3", "execute": {"queue": "fq", "payload": {"hold": true}}}]}},
   {"name": "z", "execute": {"queue": "fq"}}]}')
held() { (($(ls "$scratch/held" | grep -c "^$sp_id\\.") >= $1)); }
perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV or die "exec: $!"' \
  "$TASKQ" run fq --until-empty --concurrency 2 --result-stdout -- "$H" \
  >"$scratch/sp_run.out" 2>"$scratch/sp_run.err" 3>&- &
sp_run=$!
check "two atoms are running" wait_until 15 held 2
expect_exit 0 "$TASKQ" flow suspend "$sp_id"
expect_out "flow $sp_id: SUSPENDING"
expect_eq "$(fstate "$sp_id")" SUSPENDING "state while the two run"
expect_exit 75 "$TASKQ" lease fq -o json --for 1m
expect_out_empty
expect_eq "$(fshow "$sp_id" '[.atoms[] | select(.state == "RUNNING") | .name] | length')" 3 \
  "the three atoms stay RUNNING"
expect_eq "$(fshow "$sp_id" '[.atoms[] | select(.task != null)] | length')" 2 \
  "only the two leased ones keep a task"
: >"$scratch/release.$sp_id"
check "SUSPENDED once both finished" wait_until 20 fstate_is "$sp_id" SUSPENDED
if wait_until 20 gone "$sp_run"; then
  wait "$sp_run"
  expect_eq "$?" 0 "the background run's exit"
else
  _ko "the background run exits" "pid $sp_run still running after 20 s"
  kill -KILL "$sp_run" 2>/dev/null
fi
expect_eq "$(actions "$sp_id" | wc -w)" 2 "only the two ran"
expect_exit 75 "$TASKQ" lease fq -o json --for 1m
expect_exit 0 "$TASKQ" flow show "$sp_id" -o json
expect_json "$out" '[.atoms[] | "\(.name):\(.state)"] | sort | join(" ")' \
  "$(log_of "$sp_id" '[.[].atom]' | jq -r '
    ["h1", "h2", "h3"] as $all | . as $ran
    | [$all[] | . as $a | "\($a):\(if ($ran | any(. == $a)) then "SUCCESS" else "RUNNING" end)"]
      + ["z:PENDING"]
    | sort | join(" ")')" "atoms while SUSPENDED"
expect_exit 75 "$TASKQ" flow wait "$sp_id" --timeout 1s
expect_exit 0 "$TASKQ" flow resume "$sp_id"
expect_out "flow $sp_id: RUNNING"
drain --concurrency 2
wait_flow 0 "$sp_id" SUCCESS
expect_eq "$(log_of "$sp_id" '[.[].atom] | sort | join(" ")')" "h1 h2 h3 z" \
  "each atom ran once"
expect_eq "$(flow_events "$sp_id" flow)" "RUNNING SUSPENDING SUSPENDED RUNNING SUCCESS" \
  "flow events"

# --- rerun ------------------------------------------------------------------------------------

section "rerun of a SUCCESS flow executes nothing"
runs_before=$(count_log)
tasks_before=$(count_tasks)
expect_exit 0 "$TASKQ" flow rerun "$ok_id"
expect_out "flow $ok_id: SUCCESS"
drain
wait_flow 0 "$ok_id" SUCCESS
expect_eq "$(count_log)" "$runs_before" "handler runs after the rerun"
expect_eq "$(count_tasks)" "$tasks_before" "tasks after the rerun"
expect_eq "$(fshow "$ok_id" "$STORE")" "$FULL" \
  "store kept"

section "rerun --reset of a SUCCESS flow executes everything again"
expect_exit 0 "$TASKQ" flow rerun "$ok_id" --reset
expect_out "flow $ok_id: RUNNING"
expect_eq "$(fshow "$ok_id" .store)" '{"v":"1.0"}' "store reset to what was injected"
drain
wait_flow 0 "$ok_id" SUCCESS
expect_eq "$(actions "$ok_id")" \
  "a:execute b:execute c:execute a:execute b:execute c:execute" "handler runs"
expect_eq "$(fshow "$ok_id" "$STORE")" "$FULL" \
  "store"
# (The plain rerun before may have recorded RUNNING SUCCESS once more.)
expect_match "$(flow_events "$ok_id" flow)" '^RUNNING SUCCESS( RUNNING SUCCESS)? PENDING RUNNING SUCCESS$' \
  "flow events"

section "rerun of a REVERTED flow resets it first"
rm -f "$scratch/flags/c_fails"
expect_exit 0 "$TASKQ" flow rerun "$rv_id"
expect_out "flow $rv_id: RUNNING"
expect_eq "$(fshow "$rv_id" '[.atoms[] | "\(.name):\(.state)"] | join(" ")')" \
  "a:RUNNING b:PENDING c:PENDING" "atoms after the rerun"
drain
wait_flow 0 "$rv_id" SUCCESS
expect_eq "$(actions "$rv_id")" \
  "a:execute b:execute c:execute c:revert b:revert a:revert a:execute b:execute c:execute" \
  "handler runs"
expect_eq "$(flow_events "$rv_id" flow)" "RUNNING REVERTED PENDING RUNNING SUCCESS" \
  "flow events"
expect_eq "$(fshow "$rv_id" "$STORE")" "$FULL" \
  "store"
