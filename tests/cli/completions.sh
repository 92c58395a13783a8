# Shell completions: the scripts parse; the bash one (and the fish one, when
# fish is installed) completes commands, option values and dynamic values,
# asking $TASKQ with the --db on the line; `taskq completion SHELL` prints
# exactly the scripts in completions/.

completions=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../completions" && pwd)

# bash complete.bash WANT WORD...: completes the command line WORD... (the
# last word is the one under the cursor) with completions/taskq.bash; exits 0
# when WANT is among the candidates (WANT empty: when there are none), 1
# otherwise or when completing wrote anything to stderr.
printf 'source %q\n' "$completions/taskq.bash" >complete.bash
cat >>complete.bash <<'EOF'
want=$1
shift
COMP_WORDS=("$@")
COMP_CWORD=$(($# - 1))
COMPREPLY=()
_taskq 2>complete.err
if [[ -s complete.err ]]; then
    echo "completion wrote to stderr: $(<complete.err)"
    exit 1
fi
echo "offered: ${COMPREPLY[*]}"
if [[ -z $want ]]; then
    ((${#COMPREPLY[@]} == 0))
else
    printf '%s\n' "${COMPREPLY[@]}" | grep -qxF -- "$want"
fi
EOF

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
    expect_exit 0 fish --no-config complete.fish pause "$TASKQ pa"
    expect_exit 0 fish --no-config complete.fish ready "$TASKQ list --state "
    expect_exit 0 fish --no-config complete.fish "$queue" "$TASKQ --db q.db add "
    expect_exit 1 fish --no-config complete.fish "$queue" "$TASKQ add "
    expect_exit 0 fish --no-config complete.fish "$id" "$TASKQ --db=q.db show "
    expect_exit 0 fish --no-config complete.fish kill "$TASKQ send $id "
    expect_exit 0 fish --no-config complete.fish '' "$TASKQ --db bad.db add "
    expect_eq "$err" "" "stderr of $cmd"
fi
