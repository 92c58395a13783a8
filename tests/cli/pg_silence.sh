# A server that falls silent (doc/reference/postgresql.md): the network
# between taskq and PostgreSQL stops carrying bytes, and nothing closes the
# connection, so no error ever comes. Each wait for the server's answer is
# bounded (the URL's answer_timeout=DURATION; for `run` without it a third
# of --for, at most 30 s); past it the connection counts as lost, as a closed
# one does (tests/cli/pg_restart.sh): `run` says so once, connects again and
# works on, every task completed exactly once; SIGTERM during the silence
# ends `run` after --grace (within 3 s more: a loaded machine's slack);
# `wait`, `events --follow` and `lease --wait` notice and go on; a silence
# that heals is ridden out; a statement the server is still working on is
# no silence; a server session the cut left inside a transaction does not
# hold its locks for ever; and the same through PgBouncer.
#
# The silence is made by tests/pg/silent_proxy.cpp ($TASKQ_TEST_PROXY, set
# by ctest), in front of a private cluster (tests/pg/cluster in the scratch
# folder, as pg_restart.sh does): SIGUSR1 cuts every connection open at that
# moment for ever (never read, written or closed; its kernel still ACKs and
# answers keepalives, so TCP sees nothing wrong), SIGUSR2 pauses them all,
# SIGHUP heals a pause. taskq goes through the proxy over TCP; the test's
# own looks (psql, `events`) go to the server's Unix socket directly.

if [[ $backend != postgresql ]]; then
  section "skipped"
  check "skipped: a silent server; run it with TASKQ_TEST_BACKEND=postgresql" true
  return 0
fi

proxy_bin=${TASKQ_TEST_PROXY:-${TASKQ%/*}/tests/taskq_silent_proxy}
if [[ ! -x $proxy_bin ]]; then
  check "TASKQ_TEST_PROXY names the built taskq_silent_proxy ($proxy_bin)" false
  return 0
fi
leases_awk=${_suite%/*}/../soak/leases.awk
cluster=${_suite%/*}/../pg/cluster
pgc=$scratch/pgc
proxies=()
bg_pids=()
bdir=""
_silence_stop() {
  local p
  for p in "${bg_pids[@]}"; do
    kill -KILL "$p" 2>/dev/null
  done
  for p in "${proxies[@]}"; do
    kill -TERM "$p" 2>/dev/null
  done
  if [[ -n $bdir ]]; then
    [[ -s $bdir/pgbouncer.pid ]] && kill "$(<"$bdir/pgbouncer.pid")" 2>/dev/null
    rm -rf "$bdir"
  fi
  bash "$cluster" stop "$pgc" >/dev/null 2>&1 3>&-
}
trap '_silence_stop; _finish' EXIT

bash "$cluster" start "$pgc" >/dev/null 3>&- || {
  check "private cluster started" false
  return 0
}
data=$(sed -n 's/^data=//p' "$pgc/state")
port=$(sed -n 's/^port=//p' "$pgc/state")
# psql_d DB SQL: one statement on DB, straight to the server's socket.
psql_d() { psql -XAtq -h "$data" -p "$port" -U postgres -d "$1" -c "$2" 3>&-; }
# new_db NAME: a new database on the private cluster; TASKQ_DB becomes its
# direct URL, $via the same database through the proxy (plus "?" or "&"
# and the URL parameters given after NAME).
new_db() {
  createdb -h "$data" -p "$port" -U postgres "$1" 3>&-
  export TASKQ_DB="postgresql:///$1?host=$data&port=$port"
  via="postgresql://postgres@127.0.0.1:$pport/$1${2:+?$2}"
}

# --- time: every bound is asserted, never slept out -------------------------

now_us() { echo "${EPOCHREALTIME//[.,]/}"; }
# await_by DEADLINE_US CMD...: polls CMD every 0.05 s until it succeeds;
# false once the clock passes DEADLINE_US (microseconds since 1970).
await_by() {
  local deadline=$1
  shift
  until "$@"; do
    (($(now_us) < deadline)) || return 1
    sleep 0.05
  done
}
# await MS CMD...: the same, for at most MS milliseconds from now.
await() {
  local deadline=$(($(now_us) + $1 * 1000))
  shift
  await_by "$deadline" "$@"
}
# ms_since US: milliseconds since US.
ms_since() { echo $((($(now_us) - $1) / 1000)); }
has() { [[ -f $1 ]] && grep -q -- "$2" "$1"; }
# by_cut MS WHAT CMD...: CMD comes true at most MS milliseconds after the
# cut ($cut_at); the check says when it did.
by_cut() {
  local ms=$1 what=$2 rc=0
  shift 2
  await_by $((cut_at + ms * 1000)) "$@" || rc=1
  check "$what within $ms ms of the cut (after $(ms_since "$cut_at") ms)" test "$rc" = 0
}
count() { grep -c -- "$2" "$1" 2>/dev/null; }

# --- the proxy ------------------------------------------------------------------

# start_proxy NAME TARGET: a proxy to TARGET, its stderr in NAME.err; sets
# $proxy (its pid) and $pport.
start_proxy() {
  "$proxy_bin" --to "$2" --port-file "$scratch/$1.port" 2>"$scratch/$1.err" 3>&- &
  proxy=$!
  proxies+=("$proxy")
  if ! await 10000 test -s "$scratch/$1.port"; then
    check "the proxy $1 wrote its port" false
    return 1
  fi
  pport=$(<"$scratch/$1.port")
}
# signal_proxy SIG NAME: sends SIG to proxy NAME ($proxy) and waits until it
# said it acted (on its stderr); sets $sent (when kill returned, µs).
signal_proxy() {
  local before
  before=$(grep -c . "$scratch/$2.err")
  kill "-$1" "$proxy"
  sent=$(now_us)
  check "the proxy took SIG$1" await 5000 more_lines "$scratch/$2.err" "$before"
}
more_lines() { (($(grep -c . "$1") > $2)); }
start_proxy proxy "$data/.s.PGSQL.$port" || return 0

# --- what the database says -------------------------------------------------------

# db_name: TASKQ_DB's database; completed: how many of its tasks are
# completed (read directly).
db_name() { local d=${TASKQ_DB#postgresql:///}; echo "${d%%\?*}"; }
completed() { psql_d "$(db_name)" "SELECT count(*) FROM taskq.tasks WHERE state = 'completed'"; }
all_completed() { [[ $(completed) == "$1" ]]; }
completed_at_least() { (($(completed) >= $1)); }
# stuck: what holds the database while tasks are not completed (for a
# failure's message): sessions idle in a transaction, and tasks' states.
stuck() {
  psql_d "$(db_name)" "SELECT 'session ' || pid || ' ' || state || ' ' || application_name || ': ' || left(query, 60) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'"
  psql_d "$(db_name)" "SELECT 'tasks ' || state || ': ' || count(*) FROM taskq.tasks GROUP BY state"
}
# completed_once N: the event log (read directly) replayed by the soak's
# tests/soak/leases.awk: N tasks, each completed exactly once, never two live
# leases at a time, every complete by the lease's holder. (A write
# transaction left open by a cut holds `events` back: it then prints
# nothing, storage/model/event_horizon.cpp.)
completed_once() {
  if ! timeout -k 5 60 "$TASKQ" events -o json >events.json 2>events.err 3>&-; then
    check "taskq events read the log: $(<events.err)" false
  fi
  jq -r '[(.id // 0), .time, .task, .message, .actor, (.detail // "")] | @tsv' events.json |
    sort -t $'\t' -k3,3n -k1,1n >events.tsv
  awk -f "$leases_awk" events.tsv >leases.out
  local tasks leases expires twice never releases
  read -r _ tasks leases expires _ twice never releases _ \
    < <(grep '^summary ' leases.out)
  expect_eq "${tasks:-?}" "$1" "tasks in the event log"
  expect_eq "${twice:-?}" 0 "tasks completed twice"
  expect_eq "${never:-?}" 0 "tasks never completed"
  expect_eq "$(grep -v '^summary ' leases.out | head -5)" "" \
    "violations of the event log ($leases leases, $expires expiries, $releases releases)"
}
# completes_by WORKER: complete events by WORKER (read directly, by psql:
# a session left in a transaction by a cut may hold what taskq would wait
# for).
completes_by() {
  psql_d "$(db_name)" "SELECT count(*) FROM taskq.events WHERE message = 'complete' AND actor = '$1'"
}
# recorded_or_said ID FILE: task ID's end was recorded (its last event is
# not its lease), or FILE says it was not.
recorded_or_said() {
  [[ $(psql_d "$(db_name)" "SELECT message FROM taskq.events WHERE task_id = $1 ORDER BY id DESC LIMIT 1") != lease ]] ||
    grep -q "task $1: .*not recorded" "$2"
}
# stop_worker PID NAME: SIGTERM, then it must exit 0.
stop_worker() {
  kill -TERM "$1" 2>/dev/null
  bg_finish "$1" "$2"
  expect_eq "$rc" 0 "$2's exit status after SIGTERM"
  ((rc == 0)) || printf '     its stderr: %s\n' "$err" >&3
}
# only_outage_lines FILE: FILE says nothing but the two lines of an outage.
# An outcome whose COMMIT reached the server when the cut took its answer
# is written again, refused by its lease token, and found recorded
# (worker::recorded_before): it is not said "not recorded".
only_outage_lines() {
  expect_eq "$(grep -v -e 'lost the connection' -e 'connected to the database again' "$1")" "" \
    "lines of $1 other than lost/connected again"
}

# A persistent handler that takes 20 ms a task, so that a few hundred
# tasks last seconds.
cat >slow_stream.pl <<'PL'
#!/usr/bin/perl
use strict;
use warnings;
$| = 1;
while (my $line = <STDIN>) {
  next unless $line =~ /^\{"task":\{"id":(\d+)/;
  select(undef, undef, undef, 0.02);
  print "{\"id\":$1,\"done\":null}\n";
}
PL
chmod +x slow_stream.pl
# add_many QUEUE N: N tasks in one `add --jsonl` (directly).
add_many() { seq "$2" | sed 's/.*/{"n":&}/' | tq add "$1" --jsonl - >/dev/null; }

section "run workers cut off for ever notice within the bound and work on"
# No answer_timeout: run's bound is a third of --for, 2 s.
new_db s1
add_many q 300
PGAPPNAME=cut-run bg_run w1 --db "$via" --worker w1 run q --for 6s --grace 3s -- sh -c 'sleep 0.01'
w1=$bg
PGAPPNAME=cut-stream bg_run w2 --db "$via" --worker w2 run q --stream --for 6s -- ./slow_stream.pl
w2=$bg
check "the workers complete tasks" await 20000 completed_at_least 30
signal_proxy USR1 proxy
cut_at=$sent
expect_match "$(tail -n 1 proxy.err)" '^silent_proxy: cut [2-9][0-9]* connections for ever$' "the proxy's report"
# What each had done by the cut (both wait until they notice, so a moment
# later is the same).
before1=$(completes_by w1) before2=$(completes_by w2)
# 2 s of bound, 2 s of slack for a loaded machine.
by_cut 4000 "run says it lost the connection" has w1.err "lost the connection"
by_cut 4000 "run --stream says it lost the connection" has w2.err "lost the connection"
by_cut 8000 "run connected again" has w1.err "connected to the database again"
by_cut 8000 "run --stream connected again" has w2.err "connected to the database again"
if ! await 30000 all_completed 300; then
  check "all 300 tasks completed (after the cut: $(completed)); $(stuck)" false
fi
check "run still runs" alive "$w1"
check "run --stream still runs" alive "$w2"
check "run completed tasks after the cut (by then $before1)" test "$(completes_by w1)" -gt "$before1"
check "run --stream completed tasks after the cut (by then $before2)" test "$(completes_by w2)" -gt "$before2"
completed_once 300
stop_worker "$w1" w1
expect_eq "$(count w1.err "lost the connection")" 1 "run: lines saying the connection is lost"
expect_eq "$(count w1.err "connected to the database again")" 1 "run: lines saying it is back"
only_outage_lines w1.err
stop_worker "$w2" w2
expect_eq "$(count w2.err "lost the connection")" 1 "run --stream: lines saying the connection is lost"
expect_eq "$(count w2.err "connected to the database again")" 1 "run --stream: lines saying it is back"
only_outage_lines w2.err
expect_contains "$(<w1.err)" "taskq: run: lost the connection to database" "run's line"
expect_contains "$(<w1.err)" "; connecting again for up to" "run's line"

section "a session cut inside a transaction does not hold the queue"
# What a cut can leave on the server: a session of taskq's, idle in the
# middle of a transaction, whose locks (a task's row, say) stay held while
# the proxy keeps the connection open; `events` is held back by it too.
# Made on purpose here (section 1 meets it by chance): the lease's read of
# its candidates (FOR UPDATE, with more statements to follow in its
# transaction) waits for psql's lock on the tasks table, the connection is
# cut, the lock is released, and the answer goes nowhere.
new_db s7
add_many q 20
PGAPPNAME=locker psql -XAtq -h "$data" -p "$port" -U postgres -d s7 -c "BEGIN" \
  -c "LOCK TABLE taskq.tasks IN EXCLUSIVE MODE" -c "SELECT pg_sleep(60)" \
  >/dev/null 2>&1 3>&- &
locker=$!
tasks_locked() { [[ $(psql_d s7 "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'tasks' AND l.mode = 'ExclusiveLock' AND l.granted") == 1 ]]; }
check "psql holds the tasks table" await 10000 tasks_locked
PGAPPNAME=zombie-run bg_run w7 --db "$via" --worker w7 run q --for 6s -- true
w7=$bg
# sessions STATE: run's sessions in STATE (a pg_stat_activity condition).
sessions() { psql_d s7 "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'zombie-run' AND $1"; }
waits_for_lock() { (($(sessions "wait_event_type = 'Lock'") >= 1)); }
idle_in_tx() { (($(sessions "state LIKE 'idle in transaction%'") >= 1)); }
check "run's transaction waits for the lock" await 20000 waits_for_lock
signal_proxy USR1 proxy
cut_at=$sent
psql_d s7 "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'locker'" >/dev/null
wait "$locker"
check "the cut session is left idle in its transaction (the scene)" await 5000 idle_in_tx
# 2 s of bound (the lock is gone by then), 2 s of slack.
by_cut 4000 "run says it lost the connection" has w7.err "lost the connection"
if ! await 20000 all_completed 20; then
  check "all 20 tasks completed (now: $(completed)); $(stuck)" false
fi
no_idle_tx() { (($(psql_d s7 "SELECT count(*) FROM pg_stat_activity WHERE datname = 's7' AND state LIKE 'idle in transaction%'") == 0)); }
check "no session is left idle in a transaction" await 5000 no_idle_tx
completed_once 20
stop_worker "$w7" w7
only_outage_lines w7.err

section "SIGTERM during the silence ends run soon after --grace"
# The default --for (5m): run's bound is then 30 s, so only the stop can
# end its waits in time. Handler a ignores SIGTERM (it needs the SIGKILL
# after --grace); b ends after the silence begins, so that run is waiting
# for the server to record it when SIGTERM comes. First with every
# connection paused, new ones too (nothing can be recorded: run says so),
# then cut for ever (a new connection would pass: run may record, or say
# it did not).
# sigterm_scene DB SIG: the scene above, silenced by SIG; sets $a, $b,
# $took (ms from SIGTERM to run's end) and run's $err.
sigterm_scene() {
  new_db "$1"
  rm -f pid.a started.b go.b ended.b
  a=$(tq add g --sh 'trap "" TERM; echo $$ >pid.a; exec sleep 60')
  b=$(tq add g --sh 'touch started.b; until [ -e go.b ]; do sleep 0.02; done; touch ended.b')
  PGAPPNAME=term-run bg_run "$1" --db "$via" run g --concurrency 2 --grace 2s
  local w=$bg termed
  check "both handlers started" await 20000 test -s pid.a -a -e started.b
  signal_proxy "$2" proxy
  touch go.b
  check "handler b ended" await 5000 test -e ended.b
  sleep 0.2 # run reaps b and sends its outcome into the silence
  check "run is still running" alive "$w"
  kill -TERM "$w"
  termed=$(now_us)
  check "run exits after SIGTERM" await 10000 gone "$w"
  took=$(ms_since "$termed")
  bg_finish "$w" "$1"
  # Measured: 2.5 s paused, 2.3 s cut for ever, 4.2 s once beside
  # multihost. The bound asserted, --grace + 3 s, leaves a loaded machine
  # its slack and still tells a run that acted on SIGTERM from one that
  # waited for its answer bound (30 s with the default --for).
  check "run exited within --grace 2s + 3 s (took ${took} ms)" test "$took" -le 5000
  check "it gave handler a its --grace first (took ${took} ms)" test "$took" -ge 1900
  check "handler a is gone (SIGKILL)" gone "$(<pid.a)"
  echo "note: run's exit status after SIGTERM, silenced by SIG$2: $rc" >&3
}
sigterm_scene s2 USR2
expect_contains "$(grep "^taskq: task $a: " s2.err)" "not recorded" "what run says of task $a (a)"
expect_contains "$(grep "^taskq: task $b: " s2.err)" "not recorded" "what run says of task $b (b)"
signal_proxy HUP proxy
sigterm_scene s2b USR1
check "task $a: recorded, or said not to be" recorded_or_said "$a" s2b.err
check "task $b: recorded, or said not to be" recorded_or_said "$b" s2b.err

section "waiters notice and go on"
new_db s3 answer_timeout=2s
id=$(tq add v -- true)
PGAPPNAME=sil-wait bg_run wt --db "$via" wait "$id"
wt=$bg
PGAPPNAME=sil-events bg_run ev --db "$via" events --follow --since 2000-01-01T00:00:00Z -o json
ev=$bg
PGAPPNAME=sil-lease bg_run ls --db "$via" lease q2 --wait 60s -o id
ls=$bg
PGAPPNAME=sil-progress bg_run pr --db "$via" progress v --interval 0.2s
pr=$bg
# listening APP: APP's connection waits for a NOTIFY (its last query).
listening() { [[ $(psql_d s3 "SELECT count(*) FROM pg_stat_activity WHERE application_name = '$1' AND query = 'LISTEN taskq'") -ge 1 ]]; }
check "wait listens" await 20000 listening sil-wait
check "events --follow listens" await 20000 listening sil-events
check "lease --wait listens" await 20000 listening sil-lease
check "events --follow printed the add" await 10000 has ev.out '"message":"add"'
check "progress printed a line" await 10000 has pr.out "0/1"
signal_proxy USR1 proxy
cut_at=$sent
expect_exit 0 "$TASKQ" run v --until-empty
new=$(tq add q2 -- true)
# 2 s of bound, 3 s of slack.
by_cut 5000 "wait returned" gone "$wt"
bg_finish "$wt" wt
expect_eq "$rc" 0 "wait's exit status"
((rc == 0)) || printf '     its stderr: %s\n' "$err" >&3
by_cut 5000 "lease --wait leased the new task" gone "$ls"
bg_finish "$ls" ls
expect_eq "$rc" 0 "lease --wait's exit status"
((rc == 0)) || printf '     its stderr: %s\n' "$err" >&3
expect_eq "$out" "$new" "the task lease --wait leased"
by_cut 5000 "events --follow printed the completion" grep -q "\"task\":$id,.*\"to\":\"completed\"" ev.out
by_cut 5000 "progress saw the queue done" gone "$pr"
bg_finish "$pr" pr
expect_eq "$rc" 0 "progress's exit status"
expect_contains "$out" "1/1" "progress's last line"
for f in wt.err ls.err ev.err pr.err; do
  expect_contains "$(<$f)" "connected to the database again" "$f"
done
# Each event once, none left out (as pg_restart.sh checks across a
# restart): once it printed as many as the log holds (the lease last).
logged() { "$TASKQ" events --since 2000-01-01T00:00:00Z -o json 3>&-; }
caught_up() { (($(grep -c . ev.out) >= $(logged | grep -c .))); }
check "events --follow printed every event" await 5000 caught_up
kill -TERM "$ev"
bg_finish "$ev" ev
expect_exit 0 logged
expect_eq "$(<ev.out)" "$out" "the events followed, against the log"

section "a short cut that heals is ridden out"
# First a pause shorter than the bound (1 s against 3 s: --for 9s): nothing
# to say, the held bytes go through at the heal. Then one longer (3.5 s):
# the workers give up their connections, whose held bytes (a COMMIT, say)
# reach the server only after the heal, while they work on new ones; an
# outcome written again after such a COMMIT is refused by its lease token
# and found recorded, not said otherwise.
new_db s4
add_many q 400
PGAPPNAME=pause-run bg_run w4 --db "$via" --worker w4 run q --for 9s --grace 3s -- sh -c 'sleep 0.01'
w4=$bg
PGAPPNAME=pause-stream bg_run w5 --db "$via" --worker w5 run q --stream --for 9s -- ./slow_stream.pl
w5=$bg
check "the workers complete tasks" await 20000 completed_at_least 20
signal_proxy USR2 proxy
sleep 1 # the length of the outage, not a wait for a result
signal_proxy HUP proxy
paused=$(completed)
check "work goes on after a 1 s pause" await 10000 completed_at_least $((paused + 20))
expect_eq "$(cat w4.err w5.err)" "" "a pause shorter than the bound: nothing said"
signal_proxy USR2 proxy
paused=$(completed)
sleep 3.5 # the length of the outage, not a wait for a result
signal_proxy HUP proxy
if ! await 30000 all_completed 400; then
  check "all 400 tasks completed (at the pause: $paused; now: $(completed)); $(stuck)" false
fi
check "run still runs" alive "$w4"
check "run --stream still runs" alive "$w5"
completed_once 400
stop_worker "$w4" w4
stop_worker "$w5" w5
for w in w4 w5; do
  expect_eq "$(count $w.err "lost the connection")" "$(count $w.err "connected to the database again")" \
    "$w: as many lines saying it is back as saying it is lost"
  only_outage_lines $w.err
done

section "a slow but live statement is not cut"
# The server is at work (waiting for a lock) past answer_timeout=1s: that
# is no silence. taskq's lock_timeout (TASKQ_BUSY_TIMEOUT_MS) outlasts the
# 3 s the lock is held.
new_db s5 answer_timeout=1s
tq add q -- true >/dev/null
psql -XAtq -h "$data" -p "$port" -U postgres -d s5 -c "BEGIN" \
  -c "LOCK TABLE taskq.tasks IN EXCLUSIVE MODE" -c "SELECT pg_sleep(3)" \
  -c "COMMIT" >locker.out 2>&1 3>&- &
locker=$!
locked() { [[ $(psql_d s5 "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'tasks' AND l.mode = 'ExclusiveLock' AND l.granted") == 1 ]]; }
check "the lock is held" await 10000 locked
started=$(now_us)
expect_exit 0 env TASKQ_BUSY_TIMEOUT_MS=20000 "$TASKQ" --db "$via" add q -- true
took=$(ms_since "$started")
expect_eq "$err" "" "add's stderr"
check "add waited for the lock, past the bound (took ${took} ms)" test "$took" -ge 1500
wait "$locker"
expect_eq "$?" 0 "the locking session's exit status ($(<locker.out))"
expect_eq "$(psql_d s5 "SELECT count(*) FROM taskq.tasks")" 2 "tasks added"

section "through PgBouncer"
pgbouncer_bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
if [[ ! -x $pgbouncer_bin ]]; then
  echo "pg_silence.sh: pgbouncer is not installed (apt-get install pgbouncer)" >&3
  check "skipped: pgbouncer is not installed" true
  return 0
fi
# As pg_bouncer.sh starts it: as root it runs as the cluster's owner.
bdir=$(mktemp -d "${TMPDIR:-/tmp}/taskq-bouncer.XXXXXX")
as_owner() {
  if [[ $(id -u) == 0 ]]; then
    (cd / && runuser -u postgres -- "$@" 3>&-)
  else
    (cd / && "$@" 3>&-)
  fi
}
bport=$port
while ss -Htan | awk '{print $4}' | grep -q ":$bport\$"; do
  bport=$((20000 + RANDOM % 30000))
done
cat >"$bdir/pgbouncer.ini" <<INI
[databases]
* = host=$data port=$port user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = 20
max_client_conn = 500
logfile = $bdir/pgbouncer.log
pidfile = $bdir/pgbouncer.pid
INI
[[ $(id -u) == 0 ]] && chown -R postgres: "$bdir"
as_owner "$pgbouncer_bin" -d "$bdir/pgbouncer.ini" >/dev/null 2>&1
createdb -h "$data" -p "$port" -U postgres s6 3>&-
bouncing() { psql -XAtq -h 127.0.0.1 -p "$bport" -U postgres -d s6 -c 'SELECT 1' >/dev/null 2>&1 3>&-; }
check "pgbouncer accepts connections" await 20000 bouncing
start_proxy bproxy "127.0.0.1:$bport" || return 0
export TASKQ_DB="postgresql:///s6?host=$data&port=$port"
add_many q 200
bg_run w6 --db "postgresql://postgres@127.0.0.1:$pport/s6?pool=transaction" \
  --worker w6 run q --for 6s --grace 3s -- sh -c 'sleep 0.01'
w6=$bg
check "the worker completes tasks" await 20000 completed_at_least 20
signal_proxy USR1 bproxy
cut_at=$sent
by_cut 4000 "run says it lost the connection" has w6.err "lost the connection"
by_cut 8000 "run connected again" has w6.err "connected to the database again"
if ! await 30000 all_completed 200; then
  check "all 200 tasks completed (after the cut: $(completed)); $(stuck)" false
fi
completed_once 200
stop_worker "$w6" w6
only_outage_lines w6.err
