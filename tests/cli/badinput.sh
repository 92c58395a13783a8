# Bad input of every kind, on every command
# (doc/reference/guarantees.md#bad-input: "Bad input of any kind gets a clear
# message and the documented exit code, and changes nothing").
#
# Table-driven: one case per line,
#
#   CODE [NOBODY] [STDIN=FILE] [VAR=VALUE]... ARG...   [#> TEXT]
#
# read as shell words (quotes, $'\n' and $variables work), run as
# `taskq ARG...` with VAR=VALUE in its environment (as user nobody with
# NOBODY, who runs a copy of $TASKQ in the scratch folder, made by
# nobody_can_run: the built binary may lie where only its owner may enter,
# as in a clone under /root; stdin from FILE, else /dev/null). Each case is
# one check:
#   - the exit status is CODE;
#   - stderr is exactly one line, starting with "taskq: ", without control
#     characters (and containing TEXT when given);
#   - what is being watched (see `watch`) is unchanged: the database's
#     dump (db_dump: `sqlite3 .dump` or pg_dump), or a file's bytes, type
#     and -journal/-wal/-shm siblings when it is not a taskq database.

# --- the runner -----------------------------------------------------------------

_cases=0
_watched=()   # "dump PATH" or "file PATH" entries
_base=""      # the state of the watched things before the next case

# _state: one line per watched thing.
_state() {
  local w mode path
  for w in "${_watched[@]}"; do
    mode=${w%% *}
    path=${w#* }
    if [[ $mode == dump ]]; then
      if [[ -e $path || $path == postgresql://* ]]; then
        printf 'dump %s\n%s\n' "$path" "$(db_dump "$path")"
      else
        printf 'dump %s absent\n' "$path"
      fi
    else
      local kind="absent" sum="" s
      if [[ -e $path || -L $path ]]; then
        kind=$(stat -c '%F %a %s' "$path")
        if [[ -f $path ]]; then
          sum=$(md5sum <"$path")
        elif [[ -d $path ]]; then
          sum=$(ls -A "$path" | md5sum)
        fi
      fi
      printf 'file %s: %s %s' "$path" "$kind" "$sum"
      for s in -journal -wal -shm; do
        [[ -e $path$s ]] && printf ' +%s' "$s"
      done
      printf '\n'
    fi
  done
}

# watch MODE PATH [MODE PATH]...: what the following cases must leave as
# they found it (dump: a database's SQL dump; file: bytes and siblings).
watch() {
  _watched=()
  while (($# >= 2)); do
    _watched+=("$1 $2")
    shift 2
  done
  _base=$(_state)
}

# nobody_can_run: copies $TASKQ to $nobody_taskq, in a folder of the
# scratch folder that user nobody may enter, for the NOBODY cases (the
# scratch folder must be searchable by others: mode 0711).
nobody_can_run() {
  nobody_taskq=$scratch/nobody-bin/taskq
  [[ -x $nobody_taskq ]] && return
  mkdir -m 0755 -p "$scratch/nobody-bin"
  cp "$TASKQ" "$nobody_taskq"
  chmod 0755 "$nobody_taskq"
}

# one_case CODE NEEDLE [NOBODY] [STDIN=FILE] [VAR=VALUE]... ARG...
one_case() {
  local want=$1 needle=$2
  shift 2
  local -a envs=() as=()
  local input=/dev/null bin=$TASKQ
  while (($# > 0)); do
    case $1 in
      NOBODY)
        as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
        bin=${nobody_taskq:?NOBODY cases need nobody_can_run first}
        ;;
      STDIN=*) input=${1#STDIN=} ;;
      [A-Z_]*=*) envs+=("$1") ;;
      *) break ;;
    esac
    shift
  done
  _cases=$((_cases + 1))
  cmd=$(_show_cmd "$TASKQ" "$@")
  ((${#envs[@]} > 0)) && cmd="${envs[*]} $cmd"
  ((${#as[@]} > 0)) && cmd="(as nobody) $cmd"
  "${as[@]}" env "${envs[@]}" timeout -k 2 "$_case_timeout" "$bin" "$@" \
    <"$input" >"$_outf" 2>"$_errf" 3>&-
  rc=$?
  local raw="" after problems=()
  IFS= read -r -d '' raw <"$_errf"
  err=${raw%$'\n'}
  [[ $rc == "$want" ]] || problems+=("exit $rc, expected $want")
  if [[ -z $raw ]]; then
    problems+=("stderr is empty")
  elif [[ $raw != *$'\n' || $err == *$'\n'* ]]; then
    problems+=("stderr is not one line")
  fi
  [[ $err == "taskq: "* ]] || problems+=("stderr does not start with 'taskq: '")
  if [[ $err == *[[:cntrl:]]* ]]; then
    problems+=("stderr holds a control character")
  fi
  if [[ -n $needle && $err != *"$needle"* ]]; then
    problems+=("stderr lacks: $needle")
  fi
  after=$(_state)
  if [[ $after != "$_base" ]]; then
    problems+=("changed: $(diff <(echo "$_base") <(echo "$after") | grep '^[<>]' | head -4)")
    _base=$after
  fi
  if ((${#problems[@]} == 0)); then
    _ok "$cmd -> $rc"
  else
    _ko "case $_cases: $cmd" "${problems[@]}" "stderr: $err"
  fi
}

# cases < TABLE: runs one case per line (blank lines and # comments skipped).
cases() {
  local line needle code rest
  while IFS= read -r line; do
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    needle=""
    if [[ $line == *' #> '* ]]; then
      needle=${line#* #> }
      line=${line%% #> *}
    fi
    code=${line%%[[:space:]]*}
    rest=${line#"$code"}
    eval "local -a words=($rest)"
    one_case "$code" "$needle" "${words[@]}"
  done
}

# doc_cases COMMAND...: one line per case, "CODE DOCUMENT"; DOCUMENT is
# written to a file that is given as the last argument of COMMAND (or as
# its stdin when COMMAND ends with -).
doc_cases() {
  local code doc n=0
  while IFS= read -r line; do
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    code=${line%%[[:space:]]*}
    doc=${line#"$code"}
    doc=${doc#"${doc%%[![:space:]]*}"}
    n=$((n + 1))
    printf '%s\n' "$doc" >"$scratch/doc$n"
    if [[ ${*: -1} == - ]]; then
      one_case "$code" "" "STDIN=$scratch/doc$n" "$@"
    else
      one_case "$code" "" "$@" "$scratch/doc$n"
    fi
  done
}

_case_timeout=${TASKQ_TEST_TIMEOUT:-10}

# --- the scene: a task in every state, a live and a stale token ------------------

T0=2026-11-21T08:00:00Z
set_now $T0
main=$TASKQ_DB
R=$(add_task q --payload '{"a":1}' --label kind=img) # runnable
W=$(add_task w)                                       # leased
OLD=$(tq lease w -o json | jq -r .lease.token)        # then revoked: stale
tq release "$W" >/dev/null
TOK=$(tq lease w -o json | jq -r .lease.token) # the live token
C=$(add_task c)                                # completed
CT=$(tq lease c -o json | jq -r .lease.token)
tq done "$C" --lease "$CT" >/dev/null
P=$(add_task p) # paused
tq pause "$P" >/dev/null
K=$(add_task k) # killed
tq kill "$K" >/dev/null
F=$(add_task f) # failed
FT=$(tq lease f -o json | jq -r .lease.token)
tq fail "$F" --lease "$FT" --error boom --no-retry >/dev/null
S=$(add_task s) # sleeping
tq sleep "$S" --for 1h >/dev/null
tq schedule add nightly reports --every day >/dev/null
tq gate add pub site --keys docs >/dev/null
REV_R=$(field "$R" .rev)
LATER=2026-11-21T09:00:00Z # the live lease has expired by then
Q129=$(printf 'q%.0s' {1..129})
K129=$(printf 'k%.0s' {1..129})
printf '{"a":' >"$scratch/bad.json"
: >"$scratch/empty.json"
printf '1\n2\n{\n' >"$scratch/bad.jsonl"
printf '1\n' >"$scratch/one.jsonl"
mkdir "$scratch/folder"
printf '{"id":900,"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1}\n' \
  >"$scratch/valid.jsonl"
check "the scene: tasks R W C P K F S" test "$S" = 7

# --- commands, options, output formats -------------------------------------------

section "commands and options"
watch dump "$main"
cases <<'EOF'
2                                         #> command
2 ad q                                    #> 'ad'
2 lst                                     #> 'lst'
2 ADD q                                   #> 'ADD'
2 $'ad\nq'                                #> ad\nq
2 ''
2 queue                                   #> queue
2 queue lst                               #> 'queue lst'
2 db
2 db chek                                 #> 'db chek'
2 schedule
2 schedule ad n q --every day             #> 'schedule ad'
2 gate
2 gate bogus                              #> 'gate bogus'
2 --bogus list                            #> --bogus
2 list --bogus                            #> --bogus
2 list -x                                 #> -x
2 add q --payload 1 --colour red          #> --colour
2 list extra                              #> extra
2 stats extra
2 metrics extra
2 tick extra
2 export extra
2 events extra
2 db path extra
2 db check extra
2 queue list extra
2 schedule list extra
2 gate list extra
2 show $R extra
2 completion bash extra
2 --db
2 --db '' list
2 -o
2 -o '' list
2 -o xml list                             #> xml
2 --output=yaml list                      #> yaml
2 -o env list                             #> env
2 -o env stats
2 -o id stats
2 -o env show $R
2 -o table add q
2 -o env add q
2 -o env tx $scratch/empty.json
2 --worker '' lease q
2 add                                     #> queue
2 show
2 retry
2 why
2 wait
2 requeue
2 lease
2 run
2 progress
2 completion
2 import
2 send
2 send $R
2 queue pause
2 queue resume
2 queue set
2 queue redrive q
2 schedule add n
2 schedule add n q
2 schedule show
2 schedule rm
2 gate add g s                            #> --keys
2 gate show
2 db backup
2 add q --payload
2 add q --priority
2 add q --label
2 lease q --for
2 list --state
2 list --limit
2 fail $W --lease $TOK
2 done
2 done $W
2 TASKQ_ID=$W done
2 TASKQ_LEASE=$TOK heartbeat
EOF

# --- queue and other names ---------------------------------------------------------

section "queue, schedule and gate names"
watch dump "$main"
cases <<'EOF'
2 add ''
2 add 'a b'                               #> 'a b'
2 add $'a\nb'                             #> a\nb
2 add $'a\tb'
2 add $'a\rb'
2 add $'q\e[31m'
2 add é
2 add 'q*'
2 add 'q;x'
2 add "$Q129"
2 lease 'a b'
2 lease q ''
2 run 'a b' -- true
2 requeue 'a b'
2 list --queue 'a b'
2 stats --queue 'a b'
2 events --queue 'a b'
2 export --queue 'a b'
2 purge --queue 'a b'
2 tick --queue 'a b'
2 progress 'a b'
2 pause --queue 'a b'
2 kill --queue ''
2 resume --queue "$Q129"
2 queue pause 'a b'
2 queue resume "$Q129"
2 queue set 'a b' --max-running 1
2 queue redrive 'a b' q
2 queue redrive q 'a b'
2 queue redrive q q
2 fail $W --lease $TOK --error e --move-to 'a b'
2 schedule add '' q --every day
2 schedule add 'a b' q --every day
2 schedule add "$Q129" q --every day
2 schedule add n 'a b' --every day
2 schedule rm ''
2 gate add '' s --keys k
2 gate add 'g*' s --keys k
2 gate add g 'a b' --keys k
2 gate show ''
4 schedule add nightly reports --every day #> nightly
4 gate add pub site --keys docs           #> pub
3 schedule show nosuch                    #> nosuch
3 schedule pause nosuch
3 schedule resume nosuch
3 schedule rm nosuch
3 gate show nosuch                        #> nosuch
3 gate rm nosuch
EOF

# --- words other tools use ------------------------------------------------------

section "habit words"
watch dump "$main"
cases <<'EOF'
2 rm 1                                    #> did you mean 'kill' (stop tasks for good) or 'purge'
2 delete 1                                #> did you mean 'kill'
2 cancel 1                                #> did you mean 'kill'?
2 restart 1                               #> did you mean 'retry'
2 tail 1                                  #> did you mean 'logs'
2 log 1                                   #> did you mean 'logs'?
2 output 1                                #> did you mean 'logs'?
2 status                                  #> did you mean 'list'
2 ls                                      #> did you mean 'list'?
2 ps                                      #> did you mean 'list'?
2 RM 1                                    #> did you mean 'kill'
2 ad q                                    #> did you mean 'add'?
2 stats q                                 #> unexpected argument 'q' for stats; a queue is named with --queue: taskq stats --queue q
2 purge q                                 #> a queue is named with --queue: taskq purge --queue q
2 sleep 1 --for 5 minutes                 #> '--for 5 minutes': the shell split the duration; quote it: --for '5 minutes' (or --for 5minutes)
2 sleep 1 --for=2 h                       #> quote it: --for '2 h' (or --for 2h)
2 add q --delay 1.5 hours                 #> quote it: --delay '1.5 hours'
2 sleep --for 5 1 minutes                 #> 'minutes': the unit of a duration? quote the whole duration
EOF

# --- queues nobody uses -----------------------------------------------------------

section "queues nobody uses"
THUMBS=$(add_task thumbs)
watch dump "$main"
cases <<'EOF'
3 kill --queue thumb                      #> no queue 'thumb': it has no tasks, settings or history; did you mean 'thumbs'?
3 pause --queue thumb                     #> did you mean 'thumbs'?
3 resume --queue thumb --state paused     #> did you mean 'thumbs'?
3 sleep --queue thumb --for 1h            #> did you mean 'thumbs'?
3 release --queue thumb                   #> did you mean 'thumbs'?
3 retry --queue thumb --state failed      #> did you mean 'thumbs'?
3 requeue thumb                           #> did you mean 'thumbs'?
3 purge --queue thumb                     #> did you mean 'thumbs'?
3 queue resume thumb                      #> did you mean 'thumbs'?
3 queue redrive thumb thumbs              #> did you mean 'thumbs'?
3 kill --queue zzzzzzzz                   #> no queue 'zzzzzzzz': it has no tasks, settings or history (taskq queue list shows the queues)
2 run thumbs ./handler.sh --until-empty   #> './handler.sh' is a program, not a queue; to run it on each task: taskq run thumbs --until-empty -- ./handler.sh
2 run thumbs /bin/true                    #> to run it on each task: taskq run thumbs -- /bin/true
2 run ../x                                #> to run it on each task: taskq run QUEUE -- ../x
2 add thumbs echo hi                      #> to add it as a task: taskq add thumbs -- echo hi
EOF

# --- durations and times -------------------------------------------------------------

section "durations"
watch dump "$main"
cases <<'EOF'
2 add q --delay ''
2 add q --delay abc                       #> 'abc'
2 add q --delay -1
2 add q --delay 1.5ms                     #> '1.5ms'
2 add q --delay ' 5m'
2 add q --delay '5 fortnights'
2 add q --delay 5mm
2 add q --delay 1h-30m
2 add q --delay 1e3
2 add q --delay 0x10
2 add q --delay ' 5s'
2 add q --delay 99999999999999999999
2 add q --delay 9223372036854775807
2 add q --delay 100000000w
2 add q --delay $'5s\n'                   #> 5s\n
2 add q --delay 5S
2 add q --delay 1y
2 add q --broadcast --ttl x
2 add q --error-window 4x
2 add q --retry-delay -10m
2 add q --max-delay h
2 lease q --for ''
2 lease q --for 0
2 lease q --for 5y
2 lease q --wait=abc
2 lease q --wait=-1
2 heartbeat $W --lease $TOK --for x
2 heartbeat $W --lease $TOK --for 0
2 fail $W --lease $TOK --error e --retry-in x
2 release $W --lease $TOK --delay x
2 sleep $R --for x
2 sleep $R --for -1h
2 send $R sleep --for x
2 purge --older-than x
2 purge --older-than -1d
2 run q --for x -- true
2 run q --timeout x -- true
2 run q --grace -1 -- true
2 run q --release-delay x -- true
2 wait $R --timeout x
2 progress q --interval x
2 progress q --interval 0
2 queue set q --error-window x
2 queue set q --retry-delay 1.5ms
2 queue set q --max-delay ''
EOF

section "times"
watch dump "$main"
cases <<'EOF'
2 add q --at ''
2 add q --at tomorrow                     #> 'tomorrow'
2 add q --at 2026-11-21
2 add q --at 2026-11-21T08:00:00
2 add q --at 2026-13-01T00:00:00Z
2 add q --at 2026-02-30T00:00:00Z
2 add q --at 2026-11-21T25:00:00Z
2 add q --at 2026-11-21T08:60:00Z
2 add q --at 2026-11-21T08:00:60Z
2 add q --at 2026-11-21T08:00:00+25:00
2 add q --at 2026-11-21T08:00:00+0100
2 add q --at 1700000000
2 add q --at 10000-01-01T00:00:00Z
2 add q --at -0001-01-01T00:00:00Z
2 add q --at 9999-12-31T23:59:59-23:59
2 add q --at 0000-01-01T00:00:00+00:01
2 add q --at $'2026-11-21T08:00:00Z\n'
2 add q --delay 1h --at 2026-11-22T00:00:00Z
2 sleep $R --until x
2 sleep $R --until 2026-11-21
2 sleep $R --until 9999-12-31T23:59:59-01:00
2 sleep $R --for 1h --until 2026-11-22T00:00:00Z
2 send $R sleep --until bogus
2 events --since 2026-11-21T08:00:00
2 events --since ''
2 TASKQ_NOW=bogus list                    #> TASKQ_NOW
2 TASKQ_NOW=2026-11-21 add q
2 TASKQ_NOW=10000-01-01T00:00:00Z add q
2 TASKQ_NOW=9999-12-31T23:59:59-23:59 add q
EOF

# --- JSON ---------------------------------------------------------------------------

section "JSON values"
watch dump "$main"
cases <<'EOF'
2 add q --payload ''
2 add q --payload '{'
2 add q --payload '{"a":}'
2 add q --payload "{'a':1}"
2 add q --payload NaN
2 add q --payload Infinity
2 add q --payload -Infinity
2 add q --payload '[1,]'
2 add q --payload '{"a":1,}'
2 add q --payload '{"a":1}}'
2 add q --payload 01
2 add q --payload 1.
2 add q --payload .5
2 add q --payload +1
2 add q --payload 0x10
2 add q --payload '"open'
2 add q --payload $'"a\tb"'
2 add q --payload $'"\x01"'
2 add q --payload $'"\xff"'
2 add q --payload '"\x41"'
2 add q --payload '"\ud800"x'
2 add q --payload tru
2 add q --payload '{"a":1} {"b":2}'
2 add q --payload '/* c */ 1'
2 add q --payload $'{"a":\n}'
2 add q --payload hello                   #> --text
2 add q --text $'\xff'
2 add q --payload-file $scratch/bad.json
2 add q --payload-file $scratch/empty.json
2 add q --payload-file $scratch/missing.json #> missing.json
2 add q --payload-file $scratch/folder    #> directory
2 add q --payload 1 --text x
2 add q --payload 1 --payload-file $scratch/bad.json
2 add q --text x --jsonl $scratch/one.jsonl
2 heartbeat $W --lease $TOK --checkpoint '{'
2 heartbeat $W --lease $TOK --checkpoint ''
2 done $W --lease $TOK --result '{'
2 done $W --lease $TOK --result ''
2 done $W --lease $TOK --result undefined
2 schedule add n2 q --every day --payload '{'
2 schedule add n2 q --every day --payload 1 --text x
2 gate add g2 q --keys k --payload '['
2 gate add g2 q --keys k --text $'\xff'
EOF

section "add --jsonl"
watch dump "$main"
cases <<'EOF'
2 add q --jsonl $scratch/bad.jsonl        #> line 3
2 STDIN=$scratch/bad.jsonl add q --jsonl - #> line 3
2 add q --jsonl $scratch/missing.jsonl    #> missing.jsonl
2 add q --jsonl $scratch/folder           #> folder
2 add q --jsonl ''
2 add q --jsonl $scratch/one.jsonl --unique k
2 add q --jsonl $scratch/one.jsonl --root k=v
2 add q --jsonl $scratch/one.jsonl --broadcast
2 add q --jsonl $scratch/one.jsonl --label 'a b=1'
2 add q --jsonl $scratch/one.jsonl --delay x
3 add q --jsonl $scratch/one.jsonl --after 999
EOF

# --- labels and patterns ---------------------------------------------------------------

section "labels"
watch dump "$main"
cases <<'EOF'
2 add q --label ''
2 add q --label k                         #> 'k'
2 add q --label =v
2 add q --label 'k v=1'
2 add q --label 'k*=1'
2 add q --label 'k:x=1'
2 add q --label é=1
2 add q --label "$K129=1"
2 add q --label $'k=a\nb'                 #> a\nb
2 add q --label $'k=\x01'
2 add q --label $'k=\xff'
2 add q --root ''
2 add q --root k
2 add q --root 'a b=1'
2 add q --root k=v --broadcast
2 add q --trigger 'a b'
2 add q --trigger ''
2 add q --trigger 'k*'
2 add q --unique ''
2 add q --to ''
2 done $W --lease $TOK --sync ''
2 done $W --lease $TOK --sync k
2 done $W --lease $TOK --sync =v
2 schedule add n2 q --every day --label k
2 gate add g2 q --keys k --label =v
2 gate add g2 q --keys ''
2 gate add g2 q --keys 'a,,b'
2 gate add g2 q --keys 'a b'
2 gate add g2 q --keys 'k*'
EOF

section "--match patterns"
watch dump "$main"
cases <<'EOF'
2 list --match ''
2 list --match k                          #> 'k'
2 list --match =v
2 list --match 'a*b=1'
2 list --match '**=1'
2 list --match $'k=a\nb'
2 lease q --match k
2 lease q --match 'k**=1'
2 run q --match x -- true
2 pause --match k
2 kill --match =v
2 resume --match ''
2 release --match 'a b=1'
2 checkpoint --match k
2 sleep --match k --for 1h
2 send --match k pause
EOF

# --- schedules ---------------------------------------------------------------------

section "schedules: --every and --cron"
watch dump "$main"
cases <<'EOF'
2 schedule add n2 q --every ''
2 schedule add n2 q --every '3 hour'      #> 3 hour
2 schedule add n2 q --every hours
2 schedule add n2 q --every '0 days'
2 schedule add n2 q --every '20 seconds'
2 schedule add n2 q --every '8 years'
2 schedule add n2 q --every 'day at 25:00'
2 schedule add n2 q --every 'day at 8'
2 schedule add n2 q --every 'hour at 30'
2 schedule add n2 q --every 'hour at **:60'
2 schedule add n2 q --every 'week on Funday'
2 schedule add n2 q --every 'month on the 32nd'
2 schedule add n2 q --every 'month on the 0th'
2 schedule add n2 q --every '1 minutes'
2 schedule add n2 q --every '2 minute'
2 schedule add n2 q --every '-2 days'
2 schedule add n2 q --every '2.5 hours'
2 schedule add n2 q --every 'every day'
2 schedule add n2 q --every 'day at 08:00:00'
2 schedule add n2 q --every 'week on Wednesday at 24:00'
2 schedule add n2 q --every '99999999999999999999 days'
2 schedule add n2 q --every 'minute at 08:00'
2 schedule add n2 q --every $'day\x01'
2 schedule add n2 q --cron ''
2 schedule add n2 q --cron '* * * *'
2 schedule add n2 q --cron '* * * * * *'
2 schedule add n2 q --cron '60 * * * *'
2 schedule add n2 q --cron '* 24 * * *'
2 schedule add n2 q --cron '* * 0 * *'
2 schedule add n2 q --cron '* * 32 * *'
2 schedule add n2 q --cron '* * * 13 *'
2 schedule add n2 q --cron '* * * * 8'
2 schedule add n2 q --cron '*/0 * * * *'
2 schedule add n2 q --cron '5-1 * * * *'
2 schedule add n2 q --cron 'a * * * *'
2 schedule add n2 q --cron '0 0 30 2 *'
2 schedule add n2 q --cron '* * * FOO *'
2 schedule add n2 q --cron '1,,2 * * * *'
2 schedule add n2 q --cron '-1 * * * *'
2 schedule add n2 q --every day --cron '* * * * *'
2 schedule add n2 q --every day --priority x
EOF

# --- ids and integers ----------------------------------------------------------------

section "task ids"
watch dump "$main"
cases <<'EOF'
2 show ''
2 show 0
2 show -1
2 show +1
2 show 1.5
2 show 0x10
2 show ' 1'
2 show '1 '
2 show abc                                #> 'abc'
2 show 99999999999999999999
2 show $'1\n2'                            #> 1\n2
3 show 999                                #> 999
3 show 9223372036854775807
2 why 0
3 why 999
2 retry abc
3 retry 999
2 wait 0
3 wait 999
3 wait $R 999
2 pause 0
2 pause $R abc
3 pause $R 999
3 kill 999
3 resume $P 999
2 checkpoint x
3 checkpoint 999
2 send x pause
3 send 999 pause
3 send $R 999 kill
2 sleep 0 --for 1h
3 sleep 999 --for 1h
2 release abc
3 release 999
2 heartbeat 0 --lease x
3 heartbeat 999 --lease x
2 done abc --lease x
3 done 999 --lease x
2 fail 0 --lease x --error e
3 fail 999 --lease x --error e
2 TASKQ_ID=abc TASKQ_LEASE=x done
3 TASKQ_ID=999 TASKQ_LEASE=x done
2 add q --after x
2 add q --after '1,,2'
2 add q --after 0
2 add q --after ,
3 add q --after 999
3 add q --after "$R,999"
EOF

section "integers"
watch dump "$main"
cases <<'EOF'
2 add q --priority ''
2 add q --priority x                      #> 'x'
2 add q --priority 1.5
2 add q --priority 0x10
2 add q --priority 1e3
2 add q --priority +1
2 add q --priority ' 1'
2 add q --priority '1 '
2 add q --priority 99999999999999999999
2 add q --priority -99999999999999999999
2 add q --max-attempts 0
2 add q --max-attempts -1
2 add q --max-attempts x
2 add q --max-errors 0
2 add q --max-errors 1000001
2 list --limit 0
2 list --limit -1
2 list --limit x
2 list --limit 99999999999999999999
2 lease q --count 0
2 lease q --count x
2 lease w -o env --count 2
2 run q --concurrency 0 -- true
2 run q --concurrency x -- true
2 run q --max-tasks 0 -- true
2 queue set q --max-running -1
2 queue set q --max-running x
2 queue set q --max-attempts 0
2 queue set q --max-errors 0
2 schedule add n2 q --every day --priority 1.5
2 gate add g2 q --keys k --priority x
EOF

section "enumerations and combinations"
watch dump "$main"
cases <<'EOF'
2 list --state bogus                      #> 'bogus'
2 list --state ''
2 list --state RUNNABLE
2 pause --state bogus
2 purge --state bogus
2 purge --state runnable                  #> --force
2 purge --state completed,bogus
2 add q --backoff linear                  #> linear
2 queue set q --backoff ''
2 completion powershell                   #> powershell
2 completion ''
2 send $R complete
2 send $R error
2 send $R bogus
2 send $R ''
2 send $R sleep
2 send $R pause --for 1h
2 run q --checkpoint-signal FOO -- true
2 run q --checkpoint-signal 0 -- true
2 run q --checkpoint-signal 99 -- true
2 add q --ttl 1h
2 add q --broadcast --to w
2 add q --broadcast --after $R
2 add q --broadcast --unique k
2 fail $W --lease $TOK --error e --no-retry --move-to x
2 fail $W --lease $TOK --error e --no-retry --retry-in 1m
2 sleep $R
2 pause
2 pause $R --queue q
2 release $R --delay 1h
EOF

# --- wrong states and leases -----------------------------------------------------------

section "transitions refused (exit 4, nothing changes)"
watch dump "$main"
cases <<'EOF'
4 pause $C                                #> completed
4 resume $K                                #> it is killed; taskq retry
4 resume $F                                #> it is failed; taskq retry
4 resume $C                                #> it is completed; taskq retry
4 kill $F
4 sleep $C --for 1h
4 release $C
4 checkpoint $K
4 send $C run
4 send $F kill
4 send $K sleep --for 1h
4 retry $R
4 retry $P
4 retry $S
4 pause $R $C
4 kill $R $K
4 resume $P $F
4 sleep $R $C --for 1h
4 send $R $C pause
EOF

section "stale, forged and expired lease tokens (exit 4)"
watch dump "$main"
cases <<'EOF'
4 done $W --lease wrong
4 done $W --lease $OLD                    #> revoked
4 fail $W --lease forged --error e
4 heartbeat $W --lease forged
4 heartbeat $W --lease $OLD
4 release $W --lease forged
4 sleep $W --lease forged --for 1h
4 done $R --lease $TOK
4 done $R --lease x
4 done $C --lease $CT
4 fail $C --lease $CT --error e
4 heartbeat $C --lease $CT
4 release $C --lease $CT
4 done $F --lease $FT
4 done $W --lease $TOK --sync a=b         #> --sync
4 TASKQ_NOW=$LATER done $W --lease $TOK   #> expired
4 TASKQ_NOW=$LATER heartbeat $W --lease $TOK
4 TASKQ_NOW=$LATER fail $W --lease $TOK --error e
4 TASKQ_NOW=$LATER release $W --lease $TOK
4 TASKQ_ID=$W TASKQ_LEASE=$OLD done
4 TASKQ_ID=$W TASKQ_LEASE=$OLD sleep --for 1h
EOF

# --- tx documents --------------------------------------------------------------------------

section "tx documents"
watch dump "$main"
REV_R=$(field "$R" .rev)
REV_W=$(field "$W" .rev)
doc_cases tx <<EOF
2
2 x
2 []
2 null
2 {"create":[{"queue":"q"}]
2 {"bogus":[]}
2 {"create":{}}
2 {"create":[{}]}
2 {"create":[7]}
2 {"create":[{"queue":"a b"}]}
2 {"create":[{"queue":"q","payload":}]}
2 {"create":[{"queue":"q","labels":{"a b":"1"}}]}
2 {"create":[{"queue":"q","labels":["x"]}]}
2 {"create":[{"queue":"q","run_at":"soon"}]}
2 {"create":[{"queue":"q","run_at":"10000-01-01T00:00:00Z"}]}
2 {"create":[{"queue":"q","priority":"x"}]}
2 {"create":[{"queue":"q","priority":1.5}]}
2 {"create":[{"queue":"q","max_attempts":0}]}
2 {"create":[{"queue":"q","after":[0]}]}
2 {"create":[{"queue":"q","colour":1}]}
2 {"create":[{"queue":"q"}],"create":[]}
2 {"update":[{"id":$R}]}
2 {"update":[{"id":"$R","rev":$REV_R}]}
2 {"update":[{"id":$R,"rev":$REV_R,"queue":""}]}
2 {"update":[{"id":$R,"rev":$REV_R,"run_at":"9999-12-31T23:59:59-23:59"}]}
2 {"update":[{"id":99999999999999999999,"rev":1}]}
2 {"delete":[{"id":$R}],"update":[{"id":$R,"rev":$REV_R}]}
2 {"complete":[{"id":$W}]}
2 {"delete":[{"id":$W,"lease":5}]}
2 {"require":[{"id":$R}]}
4 {"require":[{"id":999,"rev":1}]}
4 {"require":[{"id":$R,"rev":99}],"create":[{"queue":"q"}]}
3 {"update":[{"id":999,"rev":1}],"create":[{"queue":"q"}]}
3 {"delete":[{"id":999}]}
3 {"complete":[{"id":999,"lease":"x"}]}
3 {"create":[{"queue":"q","after":[999]}]}
4 {"update":[{"id":$R,"rev":99,"priority":1}]}
4 {"delete":[{"id":$W}]}
4 {"delete":[{"id":$W,"lease":"$OLD"}]}
4 {"complete":[{"id":$W,"lease":"forged"}]}
4 {"complete":[{"id":$R,"lease":"$TOK"}]}
4 {"update":[{"id":$C,"rev":$(field "$C" .rev),"priority":1}]}
4 {"create":[{"queue":"q"}],"complete":[{"id":$W,"lease":"$OLD"}]}
EOF
doc_cases tx - <<EOF
2 {
2 {"create":[{"queue":"q","payload":NaN}]}
4 {"require":[{"id":$R,"rev":99}]}
EOF

# --- import lines --------------------------------------------------------------------------

section "import lines"
watch dump "$main"
g='"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1'
iid=900 # a new id per case, so that one wrongly imported line spoils no other case
doc_cases import <<EOF
2 x
2 []
2 {}
2 {"id":$((++iid)),$g
2 {"id":$((++iid)),$g,"colour":1}
2 {"id":$((++iid)),$g,"id":901}
2 {"id":"900",$g}
2 {"id":0,$g}
2 {"id":-1,$g}
2 {"id":$((++iid)),"queue":"a b","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":1}
2 {"id":$((++iid)),"queue":"n","state":"asleep","payload":1,"run_at":1,"created_at":1,"updated_at":1}
2 {"id":$((++iid)),"queue":"n","state":"fault","payload":1,"run_at":1,"created_at":1,"updated_at":1}
2 {"id":$((++iid)),"queue":"n","state":"completed","payload":1,"run_at":1,"created_at":1,"updated_at":1,"lease_token":"t","lease_worker":"w","lease_expires":1,"lease_for_ms":1}
2 {"id":$((++iid)),$g,"blockers":7}
2 {"id":$((++iid)),$g,"attempts":-1}
2 {"id":$((++iid)),$g,"labels":{"a b":"1"}}
2 {"id":$((++iid)),$g,"labels":["x"]}
2 {"id":$((++iid)),$g,"payload":"x","payload":1}
2 {"id":$((++iid)),"queue":"n","state":"runnable","payload":1,"run_at":-9223372036854775808,"created_at":1,"updated_at":1}
2 {"id":$((++iid)),"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":9223372036854775807,"updated_at":1}
2 {"id":$((++iid)),"queue":"n","state":"runnable","payload":1,"run_at":1,"created_at":1,"updated_at":253402300800000}
2 {"id":$((++iid)),$g,"events":[{"time":-9223372036854775808,"message":"add","from_state":null,"to_state":"runnable","actor":"a","detail":null}]}
2 {"id":$((++iid)),$g,"errors":[{"time":99999999999999999,"message":"x"}]}
2 {"id":$((++iid)),$g,"errors":[{"time":1}]}
2 {"id":$((++iid)),$g,"events":{}}
2 {"id":$((++iid)),$g,"after_ids":["1"]}
4 {"id":$R,$g}
EOF
printf '{"id":980,%s}\n{"id":980,%s}\n' "$g" "$g" >"$scratch/twice.jsonl"
for n in 982 984; do
  printf '{"id":%s,%s}\n{"id":%s,"queue":"n","state":"fault",%s}\n' $n "$g" $((n + 1)) \
    '"payload":1,"run_at":1,"created_at":1,"updated_at":1' >"$scratch/second$n.jsonl"
done
cases <<'EOF'
2 import $scratch/twice.jsonl             #> line 2
2 import $scratch/second982.jsonl         #> line 2
2 STDIN=$scratch/second984.jsonl import - #> line 2
2 import $scratch/missing.jsonl           #> missing.jsonl
2 import $scratch/folder                  #> folder
2 import ''
EOF

# --- files that are not a taskq database ---------------------------------------------------

# Files that are not a taskq database, missing files and folders, read-only
# files and a full disk: what SQLite files do (on PostgreSQL the server's
# own errors are another suite's business).
if sqlite_only; then
  section "not a database: text, binary, a foreign SQLite file, a newer schema"
  printf 'hello, not a database\n' >"$scratch/text.db"
  head -c 8192 /dev/urandom >"$scratch/random.db"
  sqlite3 "$scratch/foreign.db" 'CREATE TABLE t(x); INSERT INTO t VALUES (1);'
  sqlite3 "$scratch/clash.db" 'CREATE TABLE tasks(x); INSERT INTO tasks VALUES (1);'
  (export TASKQ_DB=$scratch/newer.db && tq add q >/dev/null)
  sqlite3 "$scratch/newer.db" 'PRAGMA journal_mode = DELETE; PRAGMA user_version = 9999;' >/dev/null
  for f in text random foreign clash newer; do
    watch dump "$main" file "$scratch/$f.db"
    cases <<EOF
5 --db $scratch/$f.db list                #> $f.db
5 --db $scratch/$f.db add q
5 --db $scratch/$f.db show 1
5 --db $scratch/$f.db lease q
5 --db $scratch/$f.db db check
5 --db $scratch/$f.db db migrate
5 TASKQ_DB=$scratch/$f.db stats
5 TASKQ_DB=$scratch/$f.db import $scratch/valid.jsonl
EOF
  done

  section "paths that are not a regular file: a folder, a fifo, a device"
  mkfifo "$scratch/fifo"
  for s in -journal -wal -shm; do
    [[ -e /dev/null$s ]] && : >"$scratch/.had-null$s"
  done
  watch dump "$main" file "$scratch/folder" file "$scratch/fifo" file /dev/null
  cases <<EOF
5 --db $scratch/folder list               #> folder
5 --db $scratch/folder add q
5 --db $scratch/folder db check
5 --db $scratch/fifo list                 #> fifo
5 --db $scratch/fifo add q
5 --db /dev/null list                     #> /dev/null
5 --db /dev/null add q
5 --db /dev/null db check
5 --db /dev/null schedule add n q --every day
EOF
  # A taskq that touched /dev/null left /dev/null-journal behind: remove what
  # the cases made (and only that).
  for s in -journal -wal -shm; do
    [[ -e /dev/null$s && ! -e $scratch/.had-null$s ]] && rm -f "/dev/null$s"
  done

  section "a database that does not exist"
  watch dump "$main" file "$scratch/none.db" file "$scratch/b.db" file "$scratch/nodir"
  cases <<EOF
5 --db $scratch/none.db db check          #> none.db
5 --db $scratch/none.db db backup $scratch/b.db
5 --db $scratch/none.db db vacuum
5 --db $scratch/nodir/x.db add q          #> nodir
EOF

  # --- read-only files and folders ---------------------------------------------------------

  section "read-only database (a read-only mount)"
  ro=$scratch/ro
  mkdir "$ro"
  if mount -t tmpfs -o size=8m tmpfs "$ro" 2>/dev/null; then
    tq db backup "$ro/t.db" >/dev/null
    mount -o remount,ro "$ro"
    watch file "$ro/t.db" file "$ro"
    cases <<EOF
5 --db $ro/t.db add q                     #> $ro/t.db
5 --db $ro/t.db pause $R
5 --db $ro/t.db kill --queue q
5 --db $ro/t.db done $W --lease $TOK
5 --db $ro/t.db import $scratch/valid.jsonl
5 --db $ro/t.db schedule add n2 q --every day
5 --db $ro/t.db db vacuum
5 --db $ro/new.db add q
5 --db $ro/sub/new.db add q
EOF
    umount "$ro"
  else
    echo "NOTE: read-only mount skipped (mount -t tmpfs failed: not root?)" >&3
  fi

  section "read-only file (mode 0444, as an unprivileged user)"
  if command -v setpriv >/dev/null && ((EUID == 0)); then
    nob=$scratch/nobody
    mkdir -m 0777 "$nob"
    chmod 0711 "$scratch"
    nobody_can_run
    tq db backup "$nob/t.db" >/dev/null
    sqlite3 "$nob/t.db" 'PRAGMA journal_mode = DELETE;' >/dev/null
    chmod 0444 "$nob/t.db"
    watch file "$nob/t.db" file "$nob"
    cases <<EOF
5 NOBODY --db $nob/t.db add q             #> $nob/t.db
5 NOBODY --db $nob/t.db pause $R          #> $nob/t.db
5 NOBODY --db $nob/t.db done $W --lease $TOK #> $nob/t.db
5 NOBODY --db $nob/t.db db vacuum         #> $nob/t.db
5 NOBODY --db $nob/t.db import $scratch/valid.jsonl #> $nob/t.db
5 NOBODY --db $nob/t.db add q             #> permission denied: you cannot write $nob/t.db (owner root, mode 0444); taskq needs write access to the database
EOF
    chmod 0400 "$nob/t.db"
    watch file "$nob/t.db" file "$nob"
    cases <<EOF
5 NOBODY --db $nob/t.db list              #> permission denied: you cannot read $nob/t.db (owner root, mode 0400)
EOF
    chmod 0700 "$scratch"
  else
    echo "NOTE: read-only file as another user skipped (needs root and setpriv)" >&3
  fi

  # --- a full disk -------------------------------------------------------------------------

  section "a full disk (a small tmpfs)"
  full=$scratch/full
  mkdir "$full"
  if mount -t tmpfs -o size=1m tmpfs "$full" 2>/dev/null; then
    (export TASKQ_DB=$full/t.db && tq add q >/dev/null && tq add q >/dev/null)
    head -c 400000 /dev/urandom | base64 -w0 | sed 's/.*/"&"/' >"$scratch/big.json"
    for i in $(seq 2000); do printf '"%0500d"\n' "$i"; done >"$scratch/many.jsonl"
    printf '{"create":[{"queue":"q","payload":%s}]}\n' "$(<"$scratch/big.json")" \
      >"$scratch/big-tx.json"
    # Fill what is left, then give nothing back.
    dd if=/dev/zero of="$full/filler" bs=4k 2>/dev/null
    watch dump "$full/t.db" file "$full/backup.db" file "$full/new.db"
    cases <<EOF
5 --db $full/t.db add q --payload-file $scratch/big.json
5 --db $full/t.db add q --jsonl $scratch/many.jsonl
5 --db $full/t.db tx $scratch/big-tx.json
5 --db $full/t.db db backup $full/backup.db
5 --db $full/new.db add q
EOF
    umount "$full"
  else
    echo "NOTE: full-disk cases skipped (mount -t tmpfs failed: not root?)" >&3
  fi
fi

# --- a byte-order mark: refused (2), or stripped (0) the same everywhere --------------------

section "a payload starting with a UTF-8 byte-order mark"
bom=$'\xef\xbb\xbf'
printf '%s{"a":1}\n' "$bom" >"$scratch/bom.json"
printf '{"id":900,%s,"payload":1}\n' '"queue":"n","state":"runnable","run_at":1,"created_at":1,"updated_at":1' |
  sed "s/^/$bom/" >"$scratch/bom-import.jsonl"
printf '%s{"create":[{"queue":"q","payload":1}]}\n' "$bom" >"$scratch/bom-tx.json"
for args in "add q --payload ${bom}{}" "add q --payload-file $scratch/bom.json" \
  "add q --jsonl $scratch/bom.json" "tx $scratch/bom-tx.json" \
  "import $scratch/bom-import.jsonl" "schedule add n q --every day --payload ${bom}1" \
  "gate add g q --keys k --payload ${bom}1"; do
  fresh_db
  tq add seed >/dev/null
  before=$(db_dump | md5sum)
  # shellcheck disable=SC2086
  "$TASKQ" $args >"$_outf" 2>"$_errf" 3>&-
  rc=$?
  err=$(<"$_errf")
  _cases=$((_cases + 1))
  exported=$("$TASKQ" export 2>&1)
  if [[ $rc == 2 && $(wc -l <"$_errf") == 1 && $err == "taskq: "* \
    && $(db_dump | md5sum) == "$before" ]]; then
    _ok "taskq $args -> 2 (refused)"
  elif [[ $rc == 0 ]] && jq -e . <<<"$exported" >/dev/null 2>&1 \
    && [[ $exported != *"$bom"* ]]; then
    _ok "taskq $args -> 0 (mark stripped)"
  else
    _ko "case $_cases: taskq $args" "exit $rc: expected 2 and nothing changed, or 0 with valid JSON stored" \
      "stderr: $err" "export: ${exported:0:200}"
  fi
done
export TASKQ_DB=$main

# --- valid edge values are accepted (the suite is not stricter than the contract) ----------

section "valid edge values are accepted"
fresh_db edges
digits=$(printf '9%.0s' {1..320})
for payload in "$digits" "-$digits.5e-99999" 1e309 -1e-400 '{"a":[1e400]}'; do
  _cases=$((_cases + 1))
  if id=$("$TASKQ" add q --payload "$payload" 2>"$_errf" 3>&-) \
    && [[ $("$TASKQ" show "$id" -o json 2>&1) == *"\"payload\":$payload,"* ]]; then
    _ok "a JSON number keeps every digit: ${payload:0:20}..."
  else
    _ko "case $_cases: taskq add q --payload ${payload:0:40}..." \
      "expected exit 0 and the payload stored as written" "stderr: $(<"$_errf")"
  fi
done
export TASKQ_DB=$main

echo "badinput: $_cases cases" >&3
