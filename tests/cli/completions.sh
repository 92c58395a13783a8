# Shell completions: the scripts parse; the bash one (and the zsh and fish
# ones, when those shells are installed) completes commands, option values
# and dynamic values, asking $TASKQ with the --db on the line, and after
# run's -- a command and its arguments as the shell would; `taskq completion
# SHELL` prints exactly the scripts in completions/.

# Its databases are SQLite files named with --db (completion never reads
# $TASKQ_DB), so a PostgreSQL run would repeat the SQLite run word for word.
if ! sqlite_only; then
  section "skipped"
  check "skipped: completions read the SQLite files named with --db, never TASKQ_DB" true
  return 0
fi

completions=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../completions" && pwd)

# bash complete.bash WANT WORD...: completes the command line WORD... (the
# last word is the one under the cursor) with completions/taskq.bash; exits 0
# when WANT is among the candidates (WANT empty: when there are none), 1
# otherwise or when completing wrote anything to stderr. compopt works only
# while bash completes: its calls are listed in the output instead
# ("compopt -o default": the shell completes file names).
printf 'source %q\n' "$completions/taskq.bash" >complete.bash
cat >>complete.bash <<'EOF'
want=$1
shift
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMPREPLY=()
compopt() { echo "compopt $*" >>complete.opt; }
rm -f complete.opt
_taskq 2>complete.err
if [[ -s complete.err ]]; then
    echo "completion wrote to stderr: $(<complete.err)"
    exit 1
fi
echo "offered: ${COMPREPLY[*]}"
[[ -s complete.opt ]] && cat complete.opt
if [[ -z $want ]]; then
    ((${#COMPREPLY[@]} == 0))
else
    printf '%s\n' "${COMPREPLY[@]}" | grep -qxF -- "$want"
fi
EOF

# offered_commands: the words of the "offered: ..." line in $out, sorted,
# on one line; $commands: the commands of `taskq __command-table`, the same way.
offered_commands() {
    sed -n 's/^offered: //p' <<<"$out" | tr ' ' '\n' | grep . | sort | tr '\n' ' '
}
commands=$("$TASKQ" __command-table | cut -f1 | sort | tr '\n' ' ')

section "syntax"
expect_exit 0 bash -n "$completions/taskq.bash"
if command -v zsh >/dev/null; then
    expect_exit 0 zsh -n "$completions/_taskq"
else
    echo "note: zsh is not installed; skipping the zsh syntax check"
fi
if command -v fish >/dev/null; then
    expect_exit 0 fish -n "$completions/taskq.fish"
else
    echo "note: fish is not installed; skipping the fish checks"
fi

section "bash: commands and fixed values"
expect_exit 0 bash complete.bash pause "$TASKQ" pa
expect_exit 1 bash complete.bash add "$TASKQ" pa
expect_exit 0 bash complete.bash completion "$TASKQ" ''
expect_exit 0 bash complete.bash set "$TASKQ" queue ''
expect_exit 0 bash complete.bash backup "$TASKQ" --db q.db db ''
expect_exit 0 bash complete.bash zsh "$TASKQ" completion ''
expect_exit 0 bash complete.bash ready "$TASKQ" list --state ''
expect_exit 0 bash complete.bash ready "$TASKQ" list --limit 5 --state = r
expect_exit 0 bash complete.bash json "$TASKQ" -o ''
expect_exit 0 bash complete.bash env "$TASKQ" lease q --output = ''
expect_exit 0 bash complete.bash exponential "$TASKQ" add q --backoff ''
expect_exit 0 bash complete.bash --max-delay "$TASKQ" queue set q --max
expect_exit 0 bash complete.bash --no-retry "$TASKQ" fail --
expect_exit 0 bash complete.bash --db "$TASKQ" show 1 --d
expect_exit 0 bash complete.bash kill "$TASKQ" send 1 ''
expect_exit 1 bash complete.bash complete "$TASKQ" send 1 ''
expect_exit 0 bash complete.bash '' "$TASKQ" send 1 pause ''
expect_exit 0 bash complete.bash '' "$TASKQ" add q --priority ''

# Every command of taskq (cli/command_table.cpp, printed by taskq
# __command-table), and nothing else: the scripts ask the binary for them.
section "bash: the commands are taskq's"
expect_exit 0 bash complete.bash freeze "$TASKQ" ''
expect_eq "$(offered_commands)" "$commands" "the commands bash offers"
expect_exit 0 bash complete.bash continue "$TASKQ" --db q.db co

section "bash: run, wait, progress, lease --wait"
expect_exit 0 bash complete.bash run "$TASKQ" r
expect_exit 0 bash complete.bash wait "$TASKQ" ''
expect_exit 0 bash complete.bash progress "$TASKQ" pro
expect_exit 0 bash complete.bash --concurrency "$TASKQ" run q --c
expect_exit 0 bash complete.bash --until-empty "$TASKQ" run q --for 5m --
expect_exit 0 bash complete.bash --verbose "$TASKQ" run q --
expect_exit 0 bash complete.bash --checkpoint-signal "$TASKQ" run q --check
expect_exit 1 bash complete.bash --interval "$TASKQ" run q --
expect_exit 0 bash complete.bash USR2 "$TASKQ" run q --checkpoint-signal ''
expect_exit 0 bash complete.bash USR1 "$TASKQ" run q --checkpoint-signal = U
expect_exit 0 bash complete.bash '' "$TASKQ" run q --grace ''
expect_exit 0 bash complete.bash '' "$TASKQ" run q --max-tasks = ''
expect_exit 0 bash complete.bash --timeout "$TASKQ" wait 1 --
expect_exit 0 bash complete.bash '' "$TASKQ" wait 1 --timeout ''
expect_exit 0 bash complete.bash --interval "$TASKQ" progress q --
expect_exit 0 bash complete.bash '' "$TASKQ" progress q --interval ''
expect_exit 0 bash complete.bash --wait "$TASKQ" lease q --w

# After run's --: the handler's command, then its arguments as files (or
# as its own completion has them), never taskq's options or queues.
section "bash: after run's --"
mkdir -p bin
printf '#!/bin/sh\n' >bin/handler.sh
chmod +x bin/handler.sh
expect_exit 0 bash complete.bash bash "$TASKQ" run q -- ba
expect_contains "$out" "compopt -o filenames"
expect_exit 0 bash complete.bash bin/handler.sh "$TASKQ" run q --for 5m -- bin/h
expect_exit 0 bash complete.bash '' "$TASKQ" run q -- bin/handler.sh ''
expect_contains "$out" "compopt -o default"
expect_exit 0 bash complete.bash '' "$TASKQ" run q -- sh -c --c
expect_contains "$out" "compopt -o default"
expect_exit 1 bash complete.bash q "$TASKQ" run q -- ''

# Queue names and task ids come from the database named by --db (before or
# after the command, `--db F` or `--db=F`), not from $TASKQ_DB.
section "bash: dynamic values"
queue=completion-queue
id=$(tq --db q.db add "$queue" --payload '{}')
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db add ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" add --db q.db ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db = q.db lease ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db queue set ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db list --queue ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db fail --move-to ''
expect_exit 1 bash complete.bash "$queue" "$TASKQ" add ''
expect_exit 0 bash complete.bash "$id" "$TASKQ" --db q.db show ''
expect_exit 0 bash complete.bash "$id" "$TASKQ" --db q.db pause 999 ''
expect_exit 0 bash complete.bash "$id" "$TASKQ" --db q.db send ''
expect_exit 0 bash complete.bash "$id" "$TASKQ" --db q.db send 999 ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db run ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" run --db q.db "$queue" --for 5m ''
expect_exit 1 bash complete.bash "$queue" "$TASKQ" --db q.db run "$queue" -- ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db progress ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db requeue ''
expect_exit 0 bash complete.bash requeue "$TASKQ" req
expect_exit 0 bash complete.bash '' "$TASKQ" --db q.db progress "$queue" ''
expect_exit 0 bash complete.bash "$id" "$TASKQ" --db q.db wait ''
expect_exit 0 bash complete.bash "$id" "$TASKQ" --db q.db wait 999 ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db lease --wait ''
expect_exit 0 bash complete.bash '' "$TASKQ" --db q.db lease "$queue" --wait ''
expect_exit 0 bash complete.bash '' "$TASKQ" --db q.db lease --wait = ''

# Schedules, gates and tick (and the options of add and done that feed
# them): subcommands, options, and schedule and gate names from --db.
section "bash: schedule, gate, tick"
tq --db q.db schedule add sched-one "$queue" --every hour >/dev/null
tq --db q.db gate add gate-one "$queue" --keys a,b >/dev/null
expect_exit 0 bash complete.bash schedule "$TASKQ" sch
expect_exit 0 bash complete.bash gate "$TASKQ" ga
expect_exit 0 bash complete.bash tick "$TASKQ" ti
expect_exit 0 bash complete.bash top "$TASKQ" to
expect_exit 0 bash complete.bash --db "$TASKQ" top --d
expect_exit 0 bash complete.bash resume "$TASKQ" schedule ''
expect_exit 0 bash complete.bash rm "$TASKQ" gate ''
expect_exit 1 bash complete.bash pause "$TASKQ" gate ''
expect_exit 0 bash complete.bash --every "$TASKQ" schedule add n q --
expect_exit 0 bash complete.bash --cron "$TASKQ" schedule add n q --c
expect_exit 0 bash complete.bash --keys "$TASKQ" gate add n q --
expect_exit 0 bash complete.bash --payload "$TASKQ" gate add n q --keys a --p
expect_exit 0 bash complete.bash '' "$TASKQ" schedule add n q --every ''
expect_exit 0 bash complete.bash '' "$TASKQ" gate add n q --keys ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db schedule add n ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db gate add n --keys a ''
expect_exit 0 bash complete.bash '' "$TASKQ" --db q.db schedule add n "$queue" ''
expect_exit 0 bash complete.bash sched-one "$TASKQ" --db q.db schedule show ''
expect_exit 0 bash complete.bash sched-one "$TASKQ" schedule pause --db q.db ''
expect_exit 0 bash complete.bash gate-one "$TASKQ" --db q.db gate rm ''
expect_exit 1 bash complete.bash gate-one "$TASKQ" --db q.db schedule rm ''
expect_exit 0 bash complete.bash --queue "$TASKQ" tick --
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db tick --queue ''
expect_exit 0 bash complete.bash --trigger "$TASKQ" add q --tr
expect_exit 0 bash complete.bash --broadcast "$TASKQ" add q --b
for opt in --after --root --to --ttl; do
    expect_exit 0 bash complete.bash "$opt" "$TASKQ" add q --
done
expect_exit 0 bash complete.bash "$id" "$TASKQ" --db q.db add q --after ''
expect_exit 0 bash complete.bash '' "$TASKQ" add q --trigger ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db add --to w ''
expect_exit 0 bash complete.bash --sync "$TASKQ" done 1 --s
expect_exit 0 bash complete.bash '' "$TASKQ" done --sync ''

# Flows: subcommands, each one's options and output formats, flow states,
# a document file for submit, and flow ids from --db. The flow's atom task
# makes the database hold a task id that is no flow id: only flow ids are
# offered.
section "bash: flow"
printf '{"name":"comp-flow","atoms":[{"name":"a","execute":{"queue":"%s"}}]}\n' \
    "$queue" >flow.json
flow_id=$(tq --db q.db flow submit flow.json)
expect_exit 0 bash complete.bash flow "$TASKQ" fl
for sub in submit list show wait suspend resume rerun; do
    expect_exit 0 bash complete.bash "$sub" "$TASKQ" flow ''
done
expect_exit 1 bash complete.bash add "$TASKQ" flow ''
expect_exit 0 bash complete.bash '' "$TASKQ" flow submit ''
expect_contains "$out" "compopt -o default"
expect_exit 0 bash complete.bash '' "$TASKQ" flow submit flow.json ''
expect_exit 0 bash complete.bash id "$TASKQ" flow submit -o ''
expect_exit 1 bash complete.bash table "$TASKQ" flow submit flow.json -o ''
expect_exit 0 bash complete.bash id "$TASKQ" flow list --output = ''
expect_exit 0 bash complete.bash table "$TASKQ" flow show 1 -o ''
expect_exit 1 bash complete.bash id "$TASKQ" flow show 1 -o ''
expect_exit 1 bash complete.bash env "$TASKQ" flow wait 1 -o ''
expect_exit 0 bash complete.bash --state "$TASKQ" flow list --
expect_exit 0 bash complete.bash SUSPENDED "$TASKQ" flow list --state ''
expect_exit 0 bash complete.bash RESUMING "$TASKQ" flow list --state = R
expect_exit 1 bash complete.bash ready "$TASKQ" flow list --state ''
expect_exit 0 bash complete.bash '' "$TASKQ" --db q.db flow list --state RUNNING ''
expect_exit 0 bash complete.bash --timeout "$TASKQ" flow wait 1 --
expect_exit 1 bash complete.bash --state "$TASKQ" flow wait 1 --
expect_exit 0 bash complete.bash '' "$TASKQ" flow wait 1 --timeout ''
expect_exit 0 bash complete.bash --reset "$TASKQ" flow rerun 1 --r
expect_exit 1 bash complete.bash --reset "$TASKQ" flow resume 1 --r
for sub in show wait suspend resume rerun; do
    expect_exit 0 bash complete.bash "$flow_id" "$TASKQ" --db q.db flow "$sub" ''
    expect_eq "$out" "offered: $flow_id" "flow ids offered by flow $sub"
done
expect_exit 0 bash complete.bash "$flow_id" "$TASKQ" flow rerun --db=q.db --reset ''
expect_exit 0 bash complete.bash "$flow_id" "$TASKQ" flow wait --db q.db --timeout 5m ''
expect_exit 1 bash complete.bash "$flow_id" "$TASKQ" flow show ''
expect_exit 0 bash complete.bash '' "$TASKQ" --db q.db flow show "$flow_id" ''

# events, purge (its --state takes S,...: a state after each comma, each
# state once), queue pause/resume/redrive and db vacuum.
section "bash: events, purge, queue and db subcommands"
expect_exit 0 bash complete.bash events "$TASKQ" ev
expect_exit 0 bash complete.bash purge "$TASKQ" pu
expect_exit 0 bash complete.bash --follow "$TASKQ" events --queue q --
expect_exit 0 bash complete.bash -f "$TASKQ" events -
expect_exit 0 bash complete.bash --since "$TASKQ" events --s
expect_exit 0 bash complete.bash '' "$TASKQ" events --since ''
expect_exit 0 bash complete.bash json "$TASKQ" events -o ''
expect_exit 1 bash complete.bash env "$TASKQ" events --output = ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db events --queue ''
for opt in --queue --state --older-than --force --dry-run; do
    expect_exit 0 bash complete.bash "$opt" "$TASKQ" purge --
done
expect_exit 0 bash complete.bash fault "$TASKQ" purge --state ''
expect_exit 1 bash complete.bash ready "$TASKQ" purge --state ''
expect_exit 0 bash complete.bash completed,failed "$TASKQ" purge --state completed,f
expect_exit 0 bash complete.bash failed,killed "$TASKQ" purge --dry-run --state = failed,k
expect_exit 1 bash complete.bash completed,completed "$TASKQ" purge --state completed,
expect_exit 0 bash complete.bash '' "$TASKQ" purge --older-than ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db purge --queue ''
expect_exit 0 bash complete.bash --force "$TASKQ" purge --older-than 7d --f
for sub in pause resume redrive; do
    expect_exit 0 bash complete.bash "$sub" "$TASKQ" queue ''
    expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db queue "$sub" ''
done
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db queue redrive "$queue" ''
expect_exit 0 bash complete.bash '' "$TASKQ" --db q.db queue pause "$queue" ''
expect_exit 0 bash complete.bash '' "$TASKQ" --db q.db queue redrive a b ''
expect_exit 0 bash complete.bash vacuum "$TASKQ" db ''
expect_exit 0 bash complete.bash '' "$TASKQ" db vacuum ''

# Operating many at once: retry's ids and bulk options, list
# --state S,... and --newest, workers, queue show.
section "bash: retry, list --state S,..., workers, queue show"
expect_exit 0 bash complete.bash workers "$TASKQ" wor
expect_exit 0 bash complete.bash --since "$TASKQ" workers --
expect_exit 0 bash complete.bash '' "$TASKQ" workers --since ''
for opt in --queue --state --match --again; do
    expect_exit 0 bash complete.bash "$opt" "$TASKQ" retry --
done
# retry offers the tasks it can act on: failed or killed ones, not $id.
kid=$(tq --db q.db add "$queue" --payload '{}')
tq --db q.db kill "$kid" >/dev/null
expect_exit 0 bash complete.bash "$kid" "$TASKQ" --db q.db retry "$id" ''
expect_exit 1 bash complete.bash "$id" "$TASKQ" --db q.db retry "$kid" ''
expect_exit 0 bash complete.bash killed "$TASKQ" retry --state ''
expect_exit 1 bash complete.bash runnable "$TASKQ" retry --state ''
expect_exit 0 bash complete.bash failed,killed "$TASKQ" retry --state failed,k
expect_exit 0 bash complete.bash --newest "$TASKQ" list --n
expect_exit 0 bash complete.bash failed,running "$TASKQ" list --state failed,r
expect_exit 1 bash complete.bash failed,failed "$TASKQ" list --state failed,
expect_exit 0 bash complete.bash running,ready "$TASKQ" pause --state running,r
expect_exit 0 bash complete.bash show "$TASKQ" queue ''
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db queue show ''

section "bash: tx, export and import"
for c in tx export import; do
    expect_exit 0 bash complete.bash "$c" "$TASKQ" "${c:0:2}"
done
expect_exit 0 bash complete.bash --queue "$TASKQ" export --
expect_exit 0 bash complete.bash "$queue" "$TASKQ" --db q.db export --queue ''
expect_exit 0 bash complete.bash json "$TASKQ" export -o ''
expect_exit 1 bash complete.bash table "$TASKQ" tx -o ''
expect_exit 0 bash complete.bash '' "$TASKQ" tx ''
expect_exit 0 bash complete.bash '' "$TASKQ" import ''

# A database taskq cannot read offers nothing, and its error stays silent.
printf 'not a database\n' >bad.db
expect_exit 0 bash complete.bash '' "$TASKQ" --db bad.db add ''

section "taskq completion SHELL"
for file in taskq.bash _taskq taskq.fish; do
    shell=${file#*.}
    [[ $file == _taskq ]] && shell=zsh
    expect_exit 0 "$TASKQ" completion "$shell"
    "$TASKQ" completion "$shell" >"printed.$shell"
    expect_exit 0 diff -u "$completions/$file" "printed.$shell"
done
expect_exit 2 "$TASKQ" completion tcsh
expect_exit 0 bash -c \
    'source <("$0" completion bash) && complete -p taskq' "$TASKQ"
expect_contains "$out" "-F _taskq taskq"

# The same behaviour through zsh's own completion system.
if command -v zsh >/dev/null; then
    section "zsh"
    # complete.zsh waits up to 120 s for a completion (below): longer than
    # the 30 s a command may take, so these checks get longer.
    cmd_timeout=150
    # zsh complete.zsh WANT WORD...: like complete.bash, with
    # completions/_taskq, typing the words and a tab into an interactive zsh
    # on a pseudo-terminal; every compadd call records what it would offer.
    printf 'completions=%q\n' "$completions" >complete.zsh
    cat >>complete.zsh <<'EOF'
zmodload zsh/zpty || exit 1
want=$1
shift
typeset -a typed=("${(@q)argv[1,-2]}" "${argv[-1]:+${(q)argv[-1]}}")
rm -f complete.out complete.err complete.done
zpty z zsh -f -i
# compinit keeps what it found in a dump, made by the first check: without
# one (-D), each check spent 0.3 s of CPU reading zsh's function folders.
zpty -w z "PROMPT=; exec 2>complete.err; autoload -Uz compinit; compinit -u -d ${(q)PWD}/complete.zcompdump"
zpty -w z "source ${(q)completions}/_taskq; bindkey '^I' complete-word"
zpty -w z 'compadd() {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
    builtin compadd "$@"
    return
  fi
  local -a hits
  builtin compadd -O hits "$@"
  print -rl -- $hits >>complete.out
  builtin compadd "$@"
}'
zpty -w z '_done() { : >complete.done; exit }; comppostfuncs=(_done)'
zpty -w z "${(j: :)typed}"$'\t'
# Wait on the clock, not on a count of polls: on a loaded machine the
# pseudo-terminal's zsh can stall on the disk for seconds while this loop
# keeps its pace (CI once gave up on a first check after 10 s).
zmodload zsh/zselect zsh/datetime || exit 1
deadline=$(( EPOCHSECONDS + 120 ))
while [[ ! -e complete.done ]] && (( EPOCHSECONDS < deadline )); do
  zselect -t 2 # 20 ms, no process started
done
zpty -d z
if [[ ! -e complete.done ]]; then
  echo "completion did not finish"
  exit 1
elif [[ -s complete.err ]]; then
  echo "completion wrote to stderr: $(<complete.err)"
  exit 1
fi
typeset -a offered=(${(f)"$(cat complete.out 2>/dev/null)"})
echo "offered: $offered"
if [[ -z $want ]]; then
  (( $#offered == 0 ))
else
  (( $offered[(Ie)$want] ))
fi
EOF
    expect_exit 0 zsh -f complete.zsh freeze "$TASKQ" ''
    expect_eq "$(offered_commands)" "$commands" "the commands zsh offers"
    expect_exit 0 zsh -f complete.zsh pause "$TASKQ" pa
    expect_exit 0 zsh -f complete.zsh top "$TASKQ" to
    expect_exit 0 zsh -f complete.zsh ready "$TASKQ" list --state ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db add ''
    expect_exit 1 zsh -f complete.zsh "$queue" "$TASKQ" add ''
    expect_exit 0 zsh -f complete.zsh "$id" "$TASKQ" --db=q.db show ''
    expect_exit 0 zsh -f complete.zsh run "$TASKQ" r
    expect_exit 0 zsh -f complete.zsh wait "$TASKQ" w
    expect_exit 0 zsh -f complete.zsh progress "$TASKQ" pro
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db run ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db run "$queue" --for 5m ''
    expect_exit 0 zsh -f complete.zsh --concurrency "$TASKQ" run q --c
    expect_exit 0 zsh -f complete.zsh --verbose "$TASKQ" run q --v
    expect_exit 0 zsh -f complete.zsh USR2 "$TASKQ" run q --checkpoint-signal ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db progress ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db requeue ''
    expect_exit 0 zsh -f complete.zsh --interval "$TASKQ" progress q --
    expect_exit 0 zsh -f complete.zsh "$id" "$TASKQ" --db q.db wait ''
    expect_exit 0 zsh -f complete.zsh "$id" "$TASKQ" --db q.db wait 999 ''
    expect_exit 0 zsh -f complete.zsh --timeout "$TASKQ" wait 1 --
    expect_exit 0 zsh -f complete.zsh --wait "$TASKQ" lease q --w
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db lease --wait ''
    expect_exit 0 zsh -f complete.zsh schedule "$TASKQ" sch
    expect_exit 0 zsh -f complete.zsh resume "$TASKQ" schedule ''
    expect_exit 0 zsh -f complete.zsh --every "$TASKQ" schedule add n q --e
    expect_exit 0 zsh -f complete.zsh '' "$TASKQ" schedule add n q --every ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db schedule add n ''
    expect_exit 0 zsh -f complete.zsh sched-one "$TASKQ" --db q.db schedule show ''
    expect_exit 0 zsh -f complete.zsh gate-one "$TASKQ" --db q.db gate rm ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db tick --queue=''
    expect_exit 0 zsh -f complete.zsh --trigger "$TASKQ" add q --tr
    expect_exit 0 zsh -f complete.zsh --sync "$TASKQ" done --s
    expect_exit 0 zsh -f complete.zsh "$id" "$TASKQ" --db q.db add q --after ''
    expect_exit 0 zsh -f complete.zsh flow "$TASKQ" fl
    expect_exit 0 zsh -f complete.zsh rerun "$TASKQ" flow ''
    expect_exit 0 zsh -f complete.zsh flow.json "$TASKQ" flow submit ''
    expect_exit 0 zsh -f complete.zsh id "$TASKQ" flow submit -o ''
    expect_exit 1 zsh -f complete.zsh table "$TASKQ" flow submit -o ''
    expect_exit 0 zsh -f complete.zsh id "$TASKQ" flow list -o ''
    expect_exit 1 zsh -f complete.zsh id "$TASKQ" flow show -o ''
    expect_exit 0 zsh -f complete.zsh SUSPENDING "$TASKQ" flow list --state ''
    expect_exit 1 zsh -f complete.zsh ready "$TASKQ" flow list --state ''
    expect_exit 0 zsh -f complete.zsh --timeout "$TASKQ" flow wait 1 --
    expect_exit 0 zsh -f complete.zsh --reset "$TASKQ" flow rerun 1 --r
    expect_exit 1 zsh -f complete.zsh --reset "$TASKQ" flow suspend 1 --r
    expect_exit 0 zsh -f complete.zsh "$flow_id" "$TASKQ" --db q.db flow show ''
    expect_exit 0 zsh -f complete.zsh "$flow_id" "$TASKQ" flow rerun --db=q.db --reset ''
    expect_exit 1 zsh -f complete.zsh "$flow_id" "$TASKQ" flow resume ''
    expect_exit 0 zsh -f complete.zsh events "$TASKQ" ev
    expect_exit 0 zsh -f complete.zsh purge "$TASKQ" pu
    expect_exit 0 zsh -f complete.zsh --follow "$TASKQ" events --
    expect_exit 0 zsh -f complete.zsh json "$TASKQ" events -o ''
    expect_exit 1 zsh -f complete.zsh env "$TASKQ" events -o ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db events --queue=''
    expect_exit 0 zsh -f complete.zsh --dry-run "$TASKQ" purge --d
    expect_exit 0 zsh -f complete.zsh fault "$TASKQ" purge --state ''
    expect_exit 1 zsh -f complete.zsh ready "$TASKQ" purge --state ''
    # (zsh adds what follows the last comma, after the rest as a prefix)
    expect_exit 0 zsh -f complete.zsh failed "$TASKQ" purge --state completed,f
    expect_exit 1 zsh -f complete.zsh completed "$TASKQ" purge --state completed,
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db purge --queue ''
    expect_exit 0 zsh -f complete.zsh redrive "$TASKQ" queue ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db queue pause ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db queue resume ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db queue redrive "$queue" ''
    expect_exit 0 zsh -f complete.zsh vacuum "$TASKQ" db ''
    expect_exit 0 zsh -f complete.zsh workers "$TASKQ" wor
    expect_exit 0 zsh -f complete.zsh --again "$TASKQ" retry --a
    expect_exit 0 zsh -f complete.zsh "$kid" "$TASKQ" --db q.db retry "$id" ''
    expect_exit 0 zsh -f complete.zsh killed "$TASKQ" retry --state ''
    expect_exit 1 zsh -f complete.zsh runnable "$TASKQ" retry --state ''
    expect_exit 0 zsh -f complete.zsh running "$TASKQ" list --state failed,r
    expect_exit 0 zsh -f complete.zsh --newest "$TASKQ" list --n
    expect_exit 0 zsh -f complete.zsh show "$TASKQ" queue ''
    expect_exit 0 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db queue show ''
    # After run's --: a command, then files, never taskq's own.
    expect_exit 0 zsh -f complete.zsh bash "$TASKQ" run q -- ba
    # (zsh adds a path's last part, after the rest as a prefix)
    expect_exit 0 zsh -f complete.zsh handler.sh "$TASKQ" run q -- bin/h
    expect_exit 0 zsh -f complete.zsh q.db "$TASKQ" run q -- bin/handler.sh ''
    expect_exit 1 zsh -f complete.zsh "$queue" "$TASKQ" --db q.db run "$queue" -- ''
    expect_exit 1 zsh -f complete.zsh --concurrency "$TASKQ" run q -- bin/handler.sh --c
    unset cmd_timeout
fi

# The same behaviour through fish's own completion engine.
if command -v fish >/dev/null; then
    section "fish"
    # fish complete.fish WANT LINE: like complete.bash, for the command line
    # LINE (the cursor at its end), with completions/taskq.fish.
    fish --no-config -c 'echo source (string escape -- $argv[1])' \
        "$completions/taskq.fish" >complete.fish
    cat >>complete.fish <<'EOF'
set -l offered (complete -C$argv[2] | string replace -r '\t.*' '')
echo offered: $offered
if test -z "$argv[1]"
    test (count $offered) -eq 0
else
    contains -- $argv[1] $offered
end
EOF
    expect_exit 0 fish --no-config complete.fish freeze "$TASKQ "
    expect_eq "$(offered_commands)" "$commands" "the commands fish offers"
    expect_exit 0 fish --no-config complete.fish pause "$TASKQ pa"
    expect_exit 0 fish --no-config complete.fish ready "$TASKQ list --state "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db add "
    expect_exit 1 fish --no-config complete.fish "$queue" "$TASKQ add "
    expect_exit 0 fish --no-config complete.fish "$id" "$TASKQ --db=q.db show "
    expect_exit 0 fish --no-config complete.fish kill "$TASKQ send $id "
    expect_exit 0 fish --no-config complete.fish run "$TASKQ r"
    expect_exit 0 fish --no-config complete.fish wait "$TASKQ w"
    expect_exit 0 fish --no-config complete.fish progress "$TASKQ pro"
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db run "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db run $queue --for 5m "
    expect_exit 0 fish --no-config complete.fish --concurrency "$TASKQ run q --c"
    expect_exit 0 fish --no-config complete.fish --verbose "$TASKQ run q --v"
    expect_exit 0 fish --no-config complete.fish USR2 "$TASKQ run q --checkpoint-signal "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db progress "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db requeue "
    expect_exit 0 fish --no-config complete.fish requeue "$TASKQ req"
    expect_exit 0 fish --no-config complete.fish '' "$TASKQ --db q.db progress $queue "
    expect_exit 0 fish --no-config complete.fish --interval "$TASKQ progress q --"
    expect_exit 0 fish --no-config complete.fish "$id" "$TASKQ --db q.db wait "
    expect_exit 0 fish --no-config complete.fish "$id" "$TASKQ --db q.db wait 999 "
    expect_exit 0 fish --no-config complete.fish --timeout "$TASKQ wait 1 --"
    expect_exit 0 fish --no-config complete.fish --wait "$TASKQ lease q --w"
    expect_exit 0 fish --no-config complete.fish schedule "$TASKQ sch"
    expect_exit 0 fish --no-config complete.fish tick "$TASKQ ti"
    expect_exit 0 fish --no-config complete.fish top "$TASKQ to"
    expect_exit 0 fish --no-config complete.fish resume "$TASKQ schedule "
    expect_exit 0 fish --no-config complete.fish rm "$TASKQ gate "
    expect_exit 0 fish --no-config complete.fish --every "$TASKQ schedule add n q --e"
    expect_exit 0 fish --no-config complete.fish --keys "$TASKQ gate add n q --k"
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db schedule add n "
    expect_exit 1 fish --no-config complete.fish "$queue" "$TASKQ --db q.db schedule add n $queue "
    expect_exit 0 fish --no-config complete.fish sched-one "$TASKQ --db q.db schedule show "
    expect_exit 0 fish --no-config complete.fish gate-one "$TASKQ --db q.db gate rm "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db tick --queue "
    expect_exit 0 fish --no-config complete.fish --trigger "$TASKQ add q --tr"
    expect_exit 0 fish --no-config complete.fish --broadcast "$TASKQ add q --b"
    expect_exit 0 fish --no-config complete.fish --sync "$TASKQ done --s"
    expect_exit 0 fish --no-config complete.fish flow "$TASKQ fl"
    expect_exit 0 fish --no-config complete.fish suspend "$TASKQ flow "
    expect_exit 0 fish --no-config complete.fish flow.json "$TASKQ flow submit "
    expect_exit 0 fish --no-config complete.fish id "$TASKQ flow submit -o "
    expect_exit 1 fish --no-config complete.fish table "$TASKQ flow submit -o "
    expect_exit 0 fish --no-config complete.fish id "$TASKQ flow list -o "
    expect_exit 0 fish --no-config complete.fish table "$TASKQ flow show 1 -o "
    expect_exit 1 fish --no-config complete.fish id "$TASKQ flow show 1 -o "
    expect_exit 1 fish --no-config complete.fish env "$TASKQ flow wait 1 -o "
    expect_exit 0 fish --no-config complete.fish REVERTED "$TASKQ flow list --state "
    expect_exit 1 fish --no-config complete.fish ready "$TASKQ flow list --state "
    expect_exit 0 fish --no-config complete.fish --timeout "$TASKQ flow wait 1 --t"
    expect_exit 0 fish --no-config complete.fish --reset "$TASKQ flow rerun 1 --r"
    expect_exit 1 fish --no-config complete.fish --reset "$TASKQ flow resume 1 --r"
    expect_exit 0 fish --no-config complete.fish "$flow_id" "$TASKQ --db q.db flow wait "
    expect_exit 0 fish --no-config complete.fish "$flow_id" "$TASKQ flow rerun --db=q.db --reset "
    expect_exit 1 fish --no-config complete.fish "$flow_id" "$TASKQ flow show "
    expect_exit 0 fish --no-config complete.fish '' "$TASKQ --db q.db flow show $flow_id "
    expect_exit 0 fish --no-config complete.fish events "$TASKQ ev"
    expect_exit 0 fish --no-config complete.fish purge "$TASKQ pu"
    expect_exit 0 fish --no-config complete.fish --follow "$TASKQ events --f"
    expect_exit 0 fish --no-config complete.fish -f "$TASKQ events -"
    expect_exit 0 fish --no-config complete.fish json "$TASKQ events -o "
    expect_exit 1 fish --no-config complete.fish env "$TASKQ events -o "
    expect_exit 0 fish --no-config complete.fish env "$TASKQ lease q -o "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db events --queue "
    expect_exit 0 fish --no-config complete.fish --older-than "$TASKQ purge --o"
    expect_exit 0 fish --no-config complete.fish fault "$TASKQ purge --state "
    expect_exit 1 fish --no-config complete.fish ready "$TASKQ purge --state "
    expect_exit 0 fish --no-config complete.fish completed,failed "$TASKQ purge --state completed,f"
    expect_exit 0 fish --no-config complete.fish --state=failed,killed "$TASKQ purge --state=failed,k"
    expect_exit 1 fish --no-config complete.fish completed,completed "$TASKQ purge --state completed,"
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db purge --dry-run --queue "
    expect_exit 0 fish --no-config complete.fish redrive "$TASKQ queue "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db queue pause "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db queue resume "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db queue redrive $queue "
    expect_exit 1 fish --no-config complete.fish "$queue" "$TASKQ --db q.db queue pause $queue "
    expect_exit 0 fish --no-config complete.fish vacuum "$TASKQ db "
    expect_exit 0 fish --no-config complete.fish workers "$TASKQ wor"
    expect_exit 0 fish --no-config complete.fish --since "$TASKQ workers --s"
    expect_exit 0 fish --no-config complete.fish --again "$TASKQ retry --a"
    expect_exit 0 fish --no-config complete.fish "$kid" "$TASKQ --db q.db retry $id "
    expect_exit 0 fish --no-config complete.fish killed "$TASKQ retry --state "
    expect_exit 1 fish --no-config complete.fish runnable "$TASKQ retry --state "
    expect_exit 0 fish --no-config complete.fish failed,running "$TASKQ list --state failed,r"
    expect_exit 0 fish --no-config complete.fish --newest "$TASKQ list --n"
    expect_exit 0 fish --no-config complete.fish show "$TASKQ queue "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db queue show "
    # After run's --: a command, then files, never taskq's own.
    expect_exit 0 fish --no-config complete.fish bash "$TASKQ run q -- ba"
    expect_exit 0 fish --no-config complete.fish bin/handler.sh "$TASKQ run q -- bin/h"
    expect_exit 0 fish --no-config complete.fish q.db "$TASKQ run q -- bin/handler.sh "
    expect_exit 1 fish --no-config complete.fish "$queue" "$TASKQ --db q.db run $queue -- "
    expect_exit 1 fish --no-config complete.fish --concurrency "$TASKQ run q -- bin/handler.sh --c"
    expect_exit 1 fish --no-config complete.fish --db "$TASKQ run q -- bin/handler.sh --d"
    expect_exit 0 fish --no-config complete.fish '' "$TASKQ --db bad.db add "
    expect_eq "$err" "" "stderr of $cmd"
fi

# Task ids: each command is offered the tasks it can act on, newest first,
# in that order by every shell (completion_ids.sh checks taskq __ids itself).
ids=(--db ids.db)
running=$(tq "${ids[@]}" add ids)
token=$(tq "${ids[@]}" lease ids -o json | jq -r .lease.token)
paused=$(tq "${ids[@]}" add ids)
tq "${ids[@]}" pause "$paused" >/dev/null
sleeping=$(tq "${ids[@]}" add ids)
tq "${ids[@]}" sleep "$sleeping" --for 1h >/dev/null
killed=$(tq "${ids[@]}" add ids)
tq "${ids[@]}" kill "$killed" >/dev/null
failed=$(tq "${ids[@]}" add ids --priority 9)
t=$(tq "${ids[@]}" lease ids -o json | jq -r .lease.token)
tq "${ids[@]}" fail "$failed" --lease "$t" --no-retry --error boom >/dev/null
completed=$(tq "${ids[@]}" add ids --priority 9)
t=$(tq "${ids[@]}" lease ids -o json | jq -r .lease.token)
tq "${ids[@]}" done "$completed" --lease "$t" >/dev/null
runnable=$(tq "${ids[@]}" add ids)
section "bash: ids by command"
expect_exit 0 bash complete.bash "$paused" "$TASKQ" --db ids.db resume ''
expect_contains "$out" "offered: $sleeping $paused" "resume: sleeping and paused, newest first"
expect_contains "$out" "compopt -o nosort" "bash keeps the order"
expect_exit 1 bash complete.bash "$runnable" "$TASKQ" --db ids.db resume ''
expect_exit 1 bash complete.bash "$completed" "$TASKQ" --db ids.db kill ''
expect_exit 0 bash complete.bash "$runnable" "$TASKQ" --db ids.db kill "$paused" ''
expect_exit 0 bash complete.bash "$killed" "$TASKQ" --db ids.db retry ''
expect_contains "$out" "offered: $failed $killed"
expect_exit 1 bash complete.bash "$runnable" "$TASKQ" --db ids.db retry ''
expect_exit 0 bash complete.bash "$completed" "$TASKQ" --db ids.db show ''
expect_exit 0 bash complete.bash "$running" "$TASKQ" --db ids.db release ''
expect_contains "$out" "offered: $running"
expect_exit 0 bash complete.bash "$paused" "$TASKQ" --db ids.db send ''
expect_exit 1 bash complete.bash "$failed" "$TASKQ" --db ids.db send "$paused" ''
expect_exit 0 bash complete.bash "$completed" "$TASKQ" --db ids.db add q --after ''

if command -v zsh >/dev/null; then
    section "zsh: ids by command"
    cmd_timeout=150 # as in the section "zsh"
    expect_exit 0 zsh -f complete.zsh "$paused" "$TASKQ" --db ids.db resume ''
    expect_contains "$out" "offered: $sleeping $paused" "resume: sleeping and paused, newest first"
    expect_exit 1 zsh -f complete.zsh "$runnable" "$TASKQ" --db ids.db resume ''
    expect_exit 1 zsh -f complete.zsh "$completed" "$TASKQ" --db ids.db kill ''
    expect_exit 0 zsh -f complete.zsh "$killed" "$TASKQ" --db ids.db retry ''
    expect_exit 0 zsh -f complete.zsh "$completed" "$TASKQ" --db ids.db show ''
    expect_contains "$out" "offered: $runnable $completed $failed" "show: every task, newest first"
    unset cmd_timeout
fi

if command -v fish >/dev/null; then
    section "fish: ids by command"
    expect_exit 0 fish --no-config complete.fish "$paused" "$TASKQ --db ids.db resume "
    expect_contains "$out" "offered: $sleeping $paused" "resume: sleeping and paused, newest first"
    expect_exit 1 fish --no-config complete.fish "$runnable" "$TASKQ --db ids.db resume "
    expect_exit 1 fish --no-config complete.fish "$completed" "$TASKQ --db ids.db kill "
    expect_exit 0 fish --no-config complete.fish "$killed" "$TASKQ --db ids.db retry "
    expect_exit 0 fish --no-config complete.fish "$running" "$TASKQ --db ids.db release "
    expect_exit 0 fish --no-config complete.fish "$completed" "$TASKQ --db ids.db show "
    expect_contains "$out" "offered: $runnable $completed $failed" "show: every task, newest first"
fi
