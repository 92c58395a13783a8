# What `list` shows (doc/reference/commands.md#list): rows that fit the
# width ($COLUMNS, else the terminal's, else 80) however long the commands,
# queue names, labels and errors; `--wide` for every column uncut; a
# `--sh` task by its line; a frozen task's ELAPSED stopped.

set_now 2026-11-21T08:00:00Z
export TASKQ_TIMES=absolute

# widest TEXT: the length of TEXT's longest line, in characters.
widest() { LC_ALL=C.UTF-8 awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }' <<<"$1"; }

long_q=nightly-thumbnails-for-the-photo-archive-of-2026
long_arg=$(printf 'frame-%03d.png ' $(seq 1 30))
long_err=$(printf 'convert: unable to open image %s: No such file or directory; ' a.png b.png c.png d.png)

section "list fits 80 columns: long commands, queue names, labels, errors"
printf 'all:\n\t@true\ntest:\n\t@true\n' >Makefile
echo_id=$(add_task "$long_q" --label "source=$long_arg" -- echo $long_arg)
sh=$(add_task "$long_q" --sh 'make && make test')
bad=$(add_task "$long_q" --max-errors 1 -- sh -c "echo '$long_err' >&2; exit 3")
again=$(add_task "$long_q" -- sh -c "echo '$long_err' >&2; exit 4")
expect_exit 6 "$TASKQ" run "$long_q" --until-empty
expect_eq "$(state "$again")" sleeping "a task waits to retry"
txt=$(add_task "$long_q" --priority 5 --text "$long_arg")
tq lease "$long_q" --worker "a-worker-on-a-host-with-a-long-name:12345" --for 1h >/dev/null
advance 90
for how in "COLUMNS unset, not a terminal" "COLUMNS=80"; do
  if [[ $how == COLUMNS=80 ]]; then export COLUMNS=80; else unset COLUMNS; fi
  expect_exit 0 "$TASKQ" list
  expect_eq "$(wc -l <<<"$out")" 6 "a header and 5 rows ($how)"
  expect_match "$(grep "^$again " <<<"$out")" " 4 .*exit status 4: .*\\.\\.\\.$" \
    "a task waiting to retry: its exit and error, cut ($how)"
  check "no line is wider than 80 ($how, widest $(widest "$out"))" \
    test "$(widest "$out")" -le 80
  expect_match "$(grep "^$bad " <<<"$out")" " 3 .*exit status 3:.*\\.\\.\\.$" \
    "a failed task: its exit and error, cut ($how)"
  expect_match "$(grep "^$txt " <<<"$out")" "^$txt +nightly-t[^ ]*\\.\\.\\. +running .*\"frame-0" \
    "a running task's payload ($how)"
done
unset COLUMNS
expect_match "$(head -1 <<<"$out")" "^ID +QUEUE +STATE +.*ELAPSED +EXIT +PAYLOAD +LAST_ERROR$" \
  "the header keeps what a row needs; STARTED, TOOK, ATT and RUN_AT go first"
expect_exit 0 env COLUMNS=120 "$TASKQ" list
check "COLUMNS=120: no line is wider than 120 (widest $(widest "$out"))" \
  test "$(widest "$out")" -le 120
check "COLUMNS=120: the last column takes the spare width (widest $(widest "$out"))" \
  test "$(widest "$out")" -gt 110
expect_match "$(grep "^$bad " <<<"$out")" "exit status 3: convert: unable.*\\.\\.\\. \\(gave up after 1 error\\)$" \
  "COLUMNS=120: a cut error keeps its verdict"
expect_exit 0 env COLUMNS=100 "$TASKQ" list --state completed
expect_match "$(grep "^$sh " <<<"$out")" "^$sh +nightly-t[^ ]* +completed .* sh: make && make test$" \
  "a --sh task shows its line after sh:"
expect_not_contains "$out" "/bin/sh" "not the shell that runs it"
expect_not_contains "$(head -1 <<<"$out")" "PRI" "PRI goes when no task shown has a priority"
if command -v script >/dev/null; then
  expect_exit 0 script -qec "stty cols 80 rows 40; env -u COLUMNS $(printf '%q' "$TASKQ") list" /dev/null
  check "on a terminal of 80 columns, no line is wider than 80 (widest $(widest "${out//$'\r'/}"))" \
    test "$(widest "${out//$'\r'/}")" -le 80
  expect_exit 0 script -qec "stty cols 132 rows 40; env -u COLUMNS $(printf '%q' "$TASKQ") list" /dev/null
  check "on a terminal of 132 columns, rows use it (widest $(widest "${out//$'\r'/}"))" \
    test "$(widest "${out//$'\r'/}")" -gt 80
fi

section "list --wide: every column, nothing cut"
expect_exit 0 "$TASKQ" list --wide
expect_match "$(head -1 <<<"$out")" "^ID +QUEUE +STATE +PRI +ATT +RUN_AT +WORKER +STARTED +ELAPSED +EXIT +TOOK +PAYLOAD +LAST_ERROR$" \
  "every column"
expect_contains "$(grep "^$echo_id " <<<"$out")" "\$ echo ${long_arg% }" "the whole command"
expect_contains "$(grep "^$bad " <<<"$out")" "exit status 3: ${long_err% } (gave up after 1 error)" \
  "the whole error and its verdict"
expect_contains "$(grep "^$txt " <<<"$out")" "a-worker-on-a-host-with-a-long-name:12345" \
  "the whole worker"
expect_exit 0 env COLUMNS=80 "$TASKQ" list --wide
check "--wide ignores COLUMNS (widest $(widest "$out"))" test "$(widest "$out")" -gt 200

section "a frozen task's ELAPSED stops, and goes on after continue without the frozen time"
fresh_db
set_now 2026-11-21T09:00:00Z
fz=$(add_task fz -- sleep 600)
tq lease fz --worker host-f:1 --for 1h >/dev/null
advance 60
expect_exit 0 "$TASKQ" freeze "$fz"
advance 300
expect_exit 0 "$TASKQ" list
expect_match "$(grep "^$fz " <<<"$out")" "^$fz +fz +frozen .* host-f:1 +2026-11-21T09:00:00Z +1m +" \
  "frozen after 1 minute, 5 minutes ago: ELAPSED 1m"
expect_exit 0 "$TASKQ" show "$fz"
expect_match "$out" $'elapsed: +1m \\(frozen\\)\n' "show: the time it ran, and frozen"
expect_exit 0 "$TASKQ" continue "$fz"
advance 120
expect_exit 0 "$TASKQ" list
expect_match "$(grep "^$fz " <<<"$out")" "^$fz +fz +running .* host-f:1 +2026-11-21T09:00:00Z +3m +" \
  "continued 2 minutes ago: 1m + 2m"
expect_exit 0 "$TASKQ" freeze "$fz"
advance 600
expect_exit 0 "$TASKQ" show "$fz"
expect_match "$out" $'elapsed: +3m \\(frozen\\)\n' "frozen again: stopped at 3m"
expect_exit 0 "$TASKQ" list --state running -o json
expect_json "$out" .lease.started_at 2026-11-21T09:00:00Z "-o json: the start, unchanged"

section "top shows a --sh task by its line too"
if command -v tmux >/dev/null; then
  # A tmux server of the suite's own, killed when the suite ends.
  tmx() { tmux -f /dev/null -S "$scratch/tmux.sock" "$@" 3>&-; }
  trap 'tmx kill-server >/dev/null 2>&1; _finish' EXIT
  unset TASKQ_NOW
  fresh_db
  top_sh=$(add_task topq --sh 'make && make test')
  top_env=(-e "TASKQ_DB=$TASKQ_DB")
  for v in PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD; do
    [[ -n ${!v:-} ]] && top_env+=(-e "$v=${!v}")
  done
  tmx new-session -d -s top -x 120 -y 40 "${top_env[@]}" "$(printf '%q' "$TASKQ") top"
  shown() { tmx capture-pane -p -t top 2>/dev/null | grep -Eq "^ *$top_sh topq .* sh: make && make test *$"; }
  check "top's task row reads 'sh: make && make test'" wait_until 30 shown
  expect_not_contains "$(tmx capture-pane -p -t top)" "/bin/sh" "not the shell that runs it"
  tmx kill-server >/dev/null 2>&1
else
  _ko "tmux is required for this suite (scripts/setup test installs it)"
fi
