# -o json everywhere (doc/reference/invocation.md#output-formats): every
# command runs once with -o json (a representative invocation, after setting up
# tasks, flows, schedules and gates) and every line it prints must parse as
# JSON (lists are JSON Lines); its exit code is checked too. The commands come
# from the help texts, so a new command without a case here fails the suite.

set_now 2026-11-24T09:00:00Z

declare -A covered=()

# j CODE CMD...: runs `taskq -o json CMD...`, expects exit CODE and checks
# that each line of stdout is one JSON value (`jq -e .`); marks CMD's
# command (its first word, or first two for a group) as covered.
j() {
  local code=$1 line n=0 bad=""
  shift
  expect_exit "$code" "$TASKQ" -o json "$@"
  while IFS= read -r line; do
    n=$((n + 1))
    if ! jq -e . >/dev/null 2>&1 <<<"$line"; then
      bad+="line $n: $line"$'\n'
    fi
  done <<<"$out"
  check "-o json: each line of taskq $* is JSON${bad:+ (not: $bad)}" \
    test -z "$bad"
  if [[ " $groups " == *" $1 "* ]]; then
    covered["$1 $2"]=1
  else
    covered["$1"]=1
  fi
}

# Every command, with each group's subcommands as "group sub", from the
# help texts.
subcommands() { help_commands "$@"; }
groups=""
all=()
while read -r c; do
  subs=""
  [[ $c == help ]] || subs=$(subcommands "$c")
  if [[ -n $subs ]]; then
    groups+=" $c"
    for s in $subs; do all+=("$c $s"); done
  else
    all+=("$c")
  fi
done < <(subcommands)

section "producing and working"
j 0 add q1 --payload '{"n":1}'
expect_json "$out" .queue q1
printf '{"n":2}\n{"n":3}\n' >batch.jsonl
j 0 add q1 --jsonl batch.jsonl
expect_json "$out" .added 2
j 0 lease q1 --worker w1
lid=$(jout .id) tok=$(jout .lease.token)
j 0 heartbeat "$lid" --lease "$tok"
expect_json "$out" .checkpoint_requested false
j 0 done "$lid" --lease "$tok"
j 0 lease q1 --worker w1
fid=$(jout .id) ftok=$(jout .lease.token)
j 0 fail "$fid" --lease "$ftok" --error boom
# Nothing to lease: exit 75, and nothing on stdout.
j 75 lease empty

section "operating"
dead=$(add_task qd --max-errors 1)
dtok=$(tq lease qd -o json | jq -r .lease.token)
tq fail "$dead" --lease "$dtok" --error gone >/dev/null
j 0 retry "$dead"
p=$(add_task qo)
j 0 pause "$p"
expect_json "$out" .state paused
j 0 resume "$p"
j 0 sleep "$p" --for 1h
j 0 requeue qo
j 0 send "$p" pause
j 0 resume --queue qo
j 0 checkpoint "$p"
# freeze and continue act on a running task: leased here by hand.
tq lease qo >/dev/null
j 0 freeze "$p"
expect_json "$out" .lease.frozen true
j 0 continue "$p"
expect_json "$out" .lease.frozen false
j 0 release "$p"
j 0 kill "$p"
j 0 purge --queue qo --dry-run
expect_json "$out" .would_purge 1
j 0 purge --queue qo
expect_json "$out" .purged 1

section "inspecting"
j 0 show "$fid"
j 0 list
j 0 stats
j 0 why "$fid"
expect_json "$out" '.reasons | length > 0' true
# metrics is Prometheus text: -o json is refused (doc/behaviour.md).
j 2 metrics
expect_err_contains "taskq stats -o json"
j 0 events --queue q1

section "queues"
j 0 queue set qs --max-running 2
j 0 queue pause qs
j 0 queue resume qs
j 0 queue redrive qd qe

section "running and waiting"
w=$(add_task qr)
j 0 run qr --until-empty -- true
j 0 wait "$w"
j 0 progress qr --interval 100ms # qr is finished: one line
j 0 tick

section "schedules and gates"
j 0 schedule add nightly qn --every '6 hours' --payload '{"k":1}'
j 0 schedule list
j 0 schedule show nightly
j 0 schedule pause nightly
j 0 schedule resume nightly
j 0 schedule rm nightly
j 0 gate add g gq --keys a,b
j 0 gate list
j 0 gate show g
j 0 gate rm g

section "transactions, export and import"
j 0 tx <<<'{"create":[{"queue":"qt","payload":{}}]}'
j 0 export
printf '%s\n' "$out" >export.jsonl

section "flows"
j 0 flow submit - <<<'{"name": "f", "pattern": "linear",
 "atoms": [{"name": "a", "execute": {"queue": "fq"}}]}'
flow=$(jout .id)
j 0 flow list
j 0 flow show "$flow"
j 0 flow suspend "$flow"
j 0 flow resume "$flow"
j 0 run fq --until-empty -- true
j 0 flow wait "$flow"
j 0 flow rerun "$flow"

section "workers, queues, output, top"
j 0 add q9 --text with-output
oid=$(jout .id)
j 0 lease q9 --worker w9
otok=$(jout .lease.token)
printf 'line one\nline two\n' >out.txt
j 0 done "$oid" --lease "$otok" --output-file out.txt
j 0 logs "$oid"
expect_contains "$out" "line two" "logs -o json carries the attached output"
j 0 workers
expect_contains "$out" '"w9"' "workers -o json names the worker that leased"
j 0 queue list
j 0 queue show q9
expect_json "$out" .queue q9
# top is a full-screen view: it refuses -o json (exit 2, stdout empty).
j 2 top
# serve is a web view: its JSON is each page's (Accept: application/json,
# tests/web); -o json is refused (exit 2) before it listens.
j 2 serve

section "the database"
j 0 db path
j 0 db check
j 0 db migrate
if sqlite_only; then
  j 0 db backup backup.db
else
  j 2 db backup backup.db # db backup copies SQLite files
fi
j 0 db vacuum
fresh_db imported
j 0 import export.jsonl
expect_json "$out" .imported "$(grep -c '"queue"' export.jsonl)"

section "not applicable"
# completion prints a shell script, help a help text: -o does not apply.
j 2 completion bash
covered[help]=1

section "every command has a case"
for c in "${all[@]}"; do
  if [[ -z ${covered[$c]:-} ]]; then
    _ko "taskq $c has an -o json case in json_everywhere.sh"
  else
    _ok "taskq $c has an -o json case in json_everywhere.sh"
  fi
done
