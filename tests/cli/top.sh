# taskq top in a real terminal (doc/watching.md, "A live view: taskq top"). tmux
# runs a shell in a detached 120x40 window (80x24 for the width checks); the suite types `taskq top` and
# keys into it (send-keys) and reads the screen (capture-pane). Every wait is
# for a condition on the screen or in the database, with a generous deadline
# for the setup; the one measured figure is how soon a new task shows.

if ! command -v tmux >/dev/null; then
  _ko "tmux is required for this suite (scripts/setup test installs it)"
  return
fi

# A server of the suite's own (its socket in the scratch folder, no user
# configuration), killed with its panes when the suite ends.
tmx() { tmux -f /dev/null -S "$scratch/tmux.sock" "$@" 3>&-; }
trap 'tmx kill-server >/dev/null 2>&1; _finish' EXIT

# Seconds allowed for what is only setup (a shell starting, top drawing its
# first screen) on a loaded machine.
setup_wait=30

# The pane's shell gets the suite's database and PostgreSQL settings
# explicitly, whatever the server's environment.
pane_env=(-e "TASKQ_DB=$TASKQ_DB" -e "HOME=$HOME")
for v in PGHOST PGPORT PGUSER PGDATABASE PGPASSWORD XDG_DATA_HOME; do
  [[ -n ${!v:-} ]] && pane_env+=(-e "$v=${!v}")
done

# start_shell NAME [VAR=VALUE...]: a new window NAME (120x40) running bash;
# the extra variables go into its environment.
start_shell() {
  local name=$1 v extra=()
  shift
  for v in "$@"; do extra+=(-e "$v"); done
  if ! tmx new-session -d -s "$name" -x 120 -y 40 "${pane_env[@]}" \
    "${extra[@]}" "PS1='tq\$ ' exec bash --norc --noprofile"; then
    _ko "tmux new-session $name failed"
    return 1
  fi
  if ! wait_until "$setup_wait" screen_has "$name" 'tq$'; then
    _ko "the shell in window $name starts" "screen:" "$(screen "$name")"
    return 1
  fi
}

# screen NAME [-e]: what window NAME shows (-e: with its escape sequences).
screen() { tmx capture-pane -p -t "$1" ${2:+"$2"} 2>/dev/null; }
screen_has() { [[ $(screen "$1") == *"$2"* ]]; }
# coloured NAME: window NAME shows a colour (SGR 30-37, 40-47, 38;..., 48;...).
coloured() {
  screen "$1" -e | grep -Eq $'\e\\[([0-9;]*;)?(3[0-7]|4[0-7]|38|48)(;[0-9;]*)?m'
}
# narrow NAME WIDTH: no line of window NAME is wider than WIDTH characters.
narrow() {
  local LC_ALL=C.UTF-8 line
  while IFS= read -r line; do
    ((${#line} <= $2)) || return 1
  done < <(screen "$1")
}
# A task's row in the tasks or failures pane: its id right-aligned, then
# its queue.
row_shown() { screen "$1" | grep -Eq "^ *$2 $3 "; }

# type_line NAME TEXT: types TEXT and Enter into window NAME's shell.
type_line() { tmx send-keys -t "$1" -l "$2" && tmx send-keys -t "$1" Enter; }

# run_top NAME [ARGS...]: starts taskq top in window NAME; when it exits,
# the shell prints "top exited STATUS".
run_top() {
  local name=$1
  shift
  type_line "$name" "\"\$TASKQ_BIN\" $* top; echo \"top exited \$?\""
}

# expect_screen NAME TEXT WHAT: window NAME shows TEXT within the setup
# deadline.
expect_screen() {
  if wait_until "$setup_wait" screen_has "$1" "$2"; then
    _ok "$3"
  else
    _ko "$3" "the screen did not show: $2" "screen:" "$(screen "$1")"
  fi
}

# expect_sane NAME: the terminal of window NAME's shell is back in its
# normal mode (canonical input, echo) and the alternate screen was left.
expect_sane() {
  local file=$scratch/stty.$1
  rm -f "$file"
  type_line "$1" "stty -a >$file.tmp; mv $file.tmp $file"
  if ! wait_until "$setup_wait" test -s "$file"; then
    _ko "stty -a ran in window $1" "screen:" "$(screen "$1")"
    return
  fi
  local modes
  modes=$(tr ' ;' '\n\n' <"$file")
  check "icanon after top ($1)" grep -qx icanon <<<"$modes"
  check "echo after top ($1)" grep -qx echo <<<"$modes"
  expect_not_contains "$(screen "$1")" "Recent failures" \
    "the screen after top left ($1)"
}

export TASKQ_BIN=$TASKQ
pane_env+=(-e "TASKQ_BIN=$TASKQ")

section "not on a terminal"
expect_exit 2 "$TASKQ" top
expect_err_contains "needs a terminal"
expect_out_empty
expect_exit 2 "$TASKQ" top -o json
expect_err_contains "invalid output format 'json'"

a=$(add_task thumbs --payload '{"file":"a.png"}')

start_shell main || return
if sqlite_only; then
  section "a missing database is not created"
  run_top main --db "$scratch/none.db"
  expect_screen main "top exited 5" "top on a missing database exits 5"
  expect_contains "$(screen main)" "no database at $scratch/none.db" \
    "its message"
  check "no file was created" test ! -e "$scratch/none.db"
fi

section "a new task shows within 1 s"
run_top main
expect_screen main "taskq top" "top draws its first screen"
if wait_until "$setup_wait" row_shown main "$a" thumbs; then
  _ok "the task added before top started shows"
else
  _ko "task $a shows" "screen:" "$(screen main)"
fi
b=$(add_task thumbs --payload '{"file":"b.png"}')
t0=$(now_ms)
seen=""
until row_shown main "$b" thumbs; do
  (($(now_ms) - t0 < 10000)) || break
  sleep 0.01
done
row_shown main "$b" thumbs && seen=$(($(now_ms) - t0))
echo "top ($backend): task $b showed ${seen:-never} ms after its add returned" >&3
if [[ -n $seen ]] && ((seen <= 1000)); then
  _ok "task $b shows within 1 s ($seen ms)"
else
  _ko "task $b shows within 1 s" "after: ${seen:-more than 10000} ms" \
    "screen:" "$(screen main)"
fi

section "pause, resume and kill the selected task"
# The tasks pane is selected at start, newest first: G goes to the last
# row (a), k one up (b).
tmx send-keys -t main G k p
expect_screen main "paused task $b" "top says it paused task $b"
expect_eq "$(state "$b")" paused "show -o json: task $b after p"
expect_eq "$(state "$a")" runnable "show -o json: task $a is not touched"
expect_eq "$(field "$b" '.events[-1].actor')" "$(
  tq show "$a" -o json | jq -r .events[0].actor
)" "top pauses as the operator the commands log"
tmx send-keys -t main r
expect_screen main "resumed task $b" "top says it resumed task $b"
expect_eq "$(state "$b")" runnable "show -o json: task $b after r"
tmx send-keys -t main x
expect_screen main "kill task $b? (y/n)" "x asks before killing"
tmx send-keys -t main n
expect_screen main "not killed" "n answers no"
expect_eq "$(state "$b")" runnable "task $b after x, n"
tmx send-keys -t main K y
expect_screen main "killed task $b" "top says it killed task $b"
expect_eq "$(state "$b")" killed "show -o json: task $b after K, y"

section "pause and resume the selected queue"
# Tab: tasks -> failures -> queues.
tmx send-keys -t main Tab Tab p
expect_screen main "paused queue thumbs" "top says it paused the queue"
expect_exit 75 "$TASKQ" lease thumbs
tmx send-keys -t main r
expect_screen main "resumed queue thumbs" "top says it resumed the queue"
expect_exit 0 "$TASKQ" lease thumbs --worker w-top -o env
eval "$out"
if wait_until "$setup_wait" eval 'screen main | grep -Eq "^ *$a thumbs +running +w-top "'; then
  _ok "a leased task shows as running, with its worker"
else
  _ko "task $a shows as running by w-top" "screen:" "$(screen main)"
fi

section "failures and logs"
expect_exit 0 "$TASKQ" fail --error "convert: disk full" --no-retry
unset TASKQ_ID TASKQ_LEASE
if wait_until "$setup_wait" eval 'screen main | grep -Eq "^ *$a thumbs .*convert: disk full"'; then
  _ok "the failure shows with its error"
else
  _ko "task $a shows in the failures with its error" "screen:" "$(screen main)"
fi
if wait_until "$setup_wait" eval 'screen main | grep -Eq "^ *$a thumbs .*convert: disk full \(not retried\)"'; then
  _ok "the failure shows with the policy's verdict"
else
  _ko "task $a shows in the failures with its verdict" "screen:" "$(screen main)"
fi
expect_screen main "l output  e events" "the key bar labels l and e"
expect_match "$(screen main)" "ATT +TOOK +ERROR" "the failures pane has a TOOK column"
# Tab: queues -> tasks -> failures; l opens the selected task's output, e
# its events and errors.
tmx send-keys -t main Tab Tab l
expect_screen main "output of attempt 1: none kept" \
  "l shows the task's output (none was kept: it was leased by hand)"
expect_contains "$(screen main)" "task $a output" "the output is task $a's"
expect_contains "$(screen main)" "failed: convert: disk full (not retried)" \
  "with why it failed"
tmx send-keys -t main e
expect_screen main "errors, oldest first:" "e shows the task's errors"
expect_contains "$(screen main)" "task $a events and errors" \
  "the events are task $a's"
tmx send-keys -t main q
expect_screen main "Recent failures" "q in the logs goes back to the panes"
tmx send-keys -t main p
expect_screen main "cannot pause task $a: it is failed" \
  "a refused pause is shown, and top goes on"
# A command that printed: l shows the tail of its output, stderr marked.
o=$(add_task cmds --max-errors 1 -- sh -c 'echo "made 3 of 4"; echo "no space left" >&2; sleep 1; exit 3')
expect_exit 6 "$TASKQ" run cmds --until-empty
if wait_until "$setup_wait" eval 'screen main | grep -Eq "^ *$o cmds .* 1 +[12]s +exit status 3: no space left \(gave up after 1 error\)"'; then
  _ok "a failed command shows with how long it ran, its exit status, cause and verdict"
else
  _ko "task $o shows in the failures" "screen:" "$(screen main)"
fi
tmx send-keys -t main k l
expect_screen main "task $o output" "l on task $o"
expect_contains "$(screen main)" "made 3 of 4" "its stdout"
expect_contains "$(screen main)" "err| no space left" "its stderr, marked"
expect_contains "$(screen main)" "command: sh -c 'echo \"made 3 of 4\"" "its command"
tmx send-keys -t main q
expect_screen main "Recent failures" "q goes back to the panes"

section "colour"
check "NO_COLOR=1: no colour" eval '! coloured main'
start_shell colour NO_COLOR= || return
run_top colour
expect_screen colour "Recent failures" "top with colours draws"
if wait_until "$setup_wait" coloured colour; then
  _ok "colour when NO_COLOR is empty and the terminal has colours"
else
  _ko "colour when NO_COLOR is empty" "screen:" "$(screen colour -e | cat -v)"
fi
tmx send-keys -t colour q
expect_screen colour "top exited 0" "q exits 0 (with colour)"

section "resize"
tmx resize-window -t main -x 80 -y 24
if wait_until "$setup_wait" eval '[[ $(screen main | sed -n 24p) == *"q quit" && $(screen main | sed -n 23p) == "Tab pane"* ]]'; then
  _ok "after a resize the key bar is on the new last lines (two at 80 columns)"
else
  _ko "the view follows a resize" "screen:" "$(screen main)"
fi
check "no line is wider than 80 columns" narrow main 80
tmx resize-window -t main -x 120 -y 40

section "q quits and leaves the terminal sane"
tmx send-keys -t main q
expect_screen main "top exited 0" "q exits 0"
expect_sane main

section "SIGTERM and Ctrl-C leave the terminal sane"
run_top main
expect_screen main "Recent failures" "top runs again"
shell=$(tmx display-message -p -t main '#{pane_pid}')
pid=""
wait_until "$setup_wait" eval 'pid=$(pgrep -P "$shell" -x taskq)' || true
if [[ -n $pid ]]; then
  kill -TERM "$pid"
  expect_screen main "top exited 143" "SIGTERM ends top as the signal does"
  expect_sane main
else
  _ko "top's process found under the pane's shell $shell"
fi
# An interactive bash drops the rest of a command list that SIGINT ends,
# so the status is asked for once top has left the screen.
type_line main '"$TASKQ_BIN" top'
expect_screen main "Recent failures" "top runs again"
tmx send-keys -t main C-c
if wait_until "$setup_wait" eval '! screen_has main "Recent failures"'; then
  type_line main 'echo "top exited $?"'
fi
expect_screen main "top exited 130" "Ctrl-C ends top as SIGINT does"
expect_sane main

# The keys, the list of keys and the width checks run on a database of
# their own, in a window of their own, so that the rows above do not move.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fresh_db top_keys

section "80 columns: no line wraps, the last column takes the rest"
long_queue=thumbnails-for-the-nightly-gallery-export-of-2026
w=$(add_task "$long_queue" --label kind=a-rather-long-label-value-for-width \
  --payload '{"file":"a-very-long-file-name-of-a-picture-taken-in-2026.png"}')
c=$(add_task jobs --label owner=someone-with-a-long-name -- \
  ./render-thumbnails --size large --format webp --quality 85 input-folder)
s=$(add_task jobs --sh 'cd /srv/app && make -j8 all && ./deploy.sh --env production')
start_shell w80 || return
tmx resize-window -t w80 -x 80 -y 24
run_top w80 --db "$TASKQ_DB"
if wait_until "$setup_wait" row_shown w80 "$c" jobs; then
  _ok "top at 80x24 shows the tasks"
else
  _ko "top at 80x24 shows task $c" "screen:" "$(screen w80)"
fi
check "at 80 columns no line is wider than 80" narrow w80 80
expect_match "$(screen w80)" "DONE/1M +DONE/1H"$'\n' \
  "every count of the queues pane fits, the last at the line's end"
expect_contains "$(screen w80)" "$ ./render-thumbnails --size large --format" \
  "the last column takes the spare width: a command shows its arguments"
expect_match "$(screen w80)" "ID +QUEUE +STATE +ATT +PAYLOAD" \
  "empty columns go: no WORKER, no TIME while nothing runs or waits"
expect_contains "$(screen w80)" "thumbnails-for-" "a long queue name is cut"
# A --sh task reads as list shows it (what_it_runs): its line after sh:.
expect_match "$(screen w80)" " $s jobs +runnable +0 sh: cd /srv/app && make -j8 all" \
  "a --sh task shows its line (sh: LINE), not /bin/sh -c"
tmx send-keys -t w80 q
expect_screen w80 "top exited 0" "q exits 0 (80 columns)"

section "p on a running task asks first; f and c freeze and continue it"
# Leased by hand: it runs (as list says) until its lease ends, in 5m.
expect_exit 0 "$TASKQ" lease jobs --worker w-keys -o env
unset TASKQ_ID TASKQ_LEASE
leased() { "$TASKQ" list -o json | jq -se "any(.[]; .id == $1 and .lease != null)" >/dev/null; }
frozen() { "$TASKQ" list -o json | jq -sr ".[] | select(.id == $1) | .lease.frozen"; }
run_top w80 --db "$TASKQ_DB"
# Running first: task c is the first row of the tasks pane.
if wait_until "$setup_wait" eval 'screen w80 | grep -Eq "^ *$c jobs +running +w-keys "'; then
  _ok "task $c shows as running"
else
  _ko "task $c shows as running" "screen:" "$(screen w80)"
fi
tmx send-keys -t w80 g p
expect_screen w80 "pause task $c? (y/n)" "p on a running task asks first"
check "while it asks, task $c still runs" leased "$c"
tmx send-keys -t w80 n
expect_screen w80 "not paused: task $c runs on" "n answers no"
check "after p, n task $c still runs" leased "$c"
expect_eq "$(state "$c")" runnable "task $c's state after p, n"
tmx send-keys -t w80 f
expect_screen w80 "froze task $c" "f freezes the running task"
expect_eq "$(frozen "$c")" true "list -o json: task $c's lease is frozen after f"
if wait_until "$setup_wait" eval 'screen w80 | grep -Eq "^ *$c jobs +frozen "'; then
  _ok "the tasks pane says frozen"
else
  _ko "task $c shows as frozen" "screen:" "$(screen w80)"
fi
tmx send-keys -t w80 c
expect_screen w80 "continued task $c" "c continues the frozen task"
expect_eq "$(frozen "$c")" false "list -o json: task $c's lease is not frozen after c"
tmx send-keys -t w80 f
expect_screen w80 "froze task $c" "f again"
tmx send-keys -t w80 p
expect_screen w80 "pause task $c? (y/n)" "p on a frozen task asks too"
tmx send-keys -t w80 y
expect_screen w80 "paused task $c" "y pauses it"
expect_eq "$(state "$c")" paused "list -o json: task $c after p, y"
check "its lease is gone" eval '! leased "$c"'
tmx send-keys -t w80 f
expect_screen w80 "task $c is not running (it is paused)" \
  "f on a task that does not run is refused"
expect_eq "$(state "$c")" paused "and changes nothing"
tmx send-keys -t w80 j p
expect_screen w80 "paused task $w" "p on a task that does not run pauses at once"
expect_eq "$(state "$w")" paused "list -o json: task $w after p"
check "at 80 columns no line is wider than 80 (after the keys)" narrow w80 80
tmx send-keys -t w80 q
expect_screen w80 "top exited 0" "q exits 0 (keys)"

section "? lists every key, and taskq(1) and watching.md name them"
tmx resize-window -t w80 -x 120 -y 40
run_top w80 --db "$TASKQ_DB"
expect_screen w80 "? keys" "the key bar names ?"
bar=$(screen w80 | tail -2)
tmx send-keys -t w80 '?'
expect_screen w80 "In a task's output or events:" "? shows the list of keys"
help=$(screen w80)
# Each row of the list: two spaces, the key names, the spaces to the
# column of what they do (rows that go on are indented further).
names=$(sed -nE 's/^  ([^ ]+( [^ ]+)*)  +[^ ].*/\1/p' <<<"$help" | tr ' ' '\n' | sort -u)
for k in Tab Shift-Tab j k PgDn PgUp g G p r f c K x l Enter e Ctrl-L '?' q Esc; do
  check "? lists the key $k" grep -qxF -- "$k" <<<"$names"
done
# The key bar's keys are in the list too (both are drawn from k_keys).
for k in $(grep -oE '(^|  )[^ ]+ ' <<<"$bar" | tr -d ' ' | tr '/' '\n' | sort -u); do
  check "the key bar's $k is in ?" grep -qxF -- "$k" <<<"$names"
done
man_top=$(sed -n '/^=item B<taskq top>/,/^=item B<taskq show>/p' "$root/doc/man/taskq.1.pod")
doc_top=$(sed -n '/^## A live view: taskq top/,/^## /p' "$root/doc/watching.md" | grep '^|')
n=0
while IFS= read -r k; do
  [[ -n $k ]] || continue
  n=$((n + 1))
  check "taskq(1)'s top names the key $k" grep -qF -- "B<$k>" <<<"$man_top"
  if [[ " $doc_top " =~ [^A-Za-z-]"$k"[^A-Za-z-] ]]; then
    _ok "watching.md's key table names $k"
  else
    _ko "watching.md's key table names $k"
  fi
done <<<"$names"
check "the list has the keys of the panes, the logs and itself ($n)" test "$n" -ge 25
tmx send-keys -t w80 q
expect_screen w80 "Recent failures" "q leaves the list of keys"
tmx send-keys -t w80 q
expect_screen w80 "top exited 0" "q exits 0 (list of keys)"

section "a frozen task's TIME stops while top redraws, as list's ELAPSED does"
# Two tasks leased by hand (each runs until its lease ends, in 5m), one of
# them frozen at once: its TIME is the time it ran before the freeze, and
# stays so while the other's goes on counting, second by second.
ticking=$(add_task ticks)
tq lease ticks --worker w-ticking >/dev/null
stopped=$(add_task ticks)
tq lease ticks --worker w-stopped >/dev/null
expect_exit 0 "$TASKQ" freeze "$stopped"
# time_of ID: the TIME column of task ID's row in the tasks pane (ID QUEUE
# STATE WORKER TIME ...).
time_of() { screen fz | awk -v id="$1" '$1 == id && $2 == "ticks" { print $5; exit }'; }
time_is_not() { local t; t=$(time_of "$1") && [[ -n $t && $t != "$2" ]]; }
start_shell fz || return
run_top fz --db "$TASKQ_DB"
if wait_until "$setup_wait" eval 'screen fz | grep -Eq "^ *$stopped ticks +frozen +w-stopped +[0-9]"'; then
  _ok "the frozen task shows with its TIME"
else
  _ko "task $stopped shows as frozen with a TIME" "screen:" "$(screen fz)"
fi
frozen_before=$(time_of "$stopped")
ticked=$(time_of "$ticking")
for redraw in 1 2; do
  if wait_until "$setup_wait" time_is_not "$ticking" "$ticked"; then
    _ok "redraw $redraw: the running task's TIME went on ($ticked, then $(time_of "$ticking"))"
  else
    _ko "redraw $redraw: task $ticking's TIME goes on from $ticked" "screen:" "$(screen fz)"
  fi
  ticked=$(time_of "$ticking")
done
expect_eq "$(time_of "$stopped")" "$frozen_before" \
  "the frozen task's TIME after two redraws"
tmx send-keys -t fz q
expect_screen fz "top exited 0" "q exits 0 (frozen TIME)"
