# Commands that wait ride out a PostgreSQL restart (doc/workers.md, "When
# the database server goes away"; doc/postgresql.md): `run` keeps its
# handlers running across `pg_ctl restart -m immediate`, says once that the
# connection is lost and once that it is back, records every outcome and
# exits 0; `lease --wait`, `wait` and `events --follow` go on as if nothing
# happened, `events --follow` without repeating or skipping an event; a
# server that stays down past --reconnect-for ends `run` with SIGTERM to its
# handlers, its summary, and exit 5. On SQLite only the option's parsing.
#
# The restarts are done on a private cluster (tests/pg/cluster, started in
# the scratch folder), never on the shared one other suites use.

section "--reconnect-for is checked"
tq add q -- true >/dev/null
expect_exit 2 "$TASKQ" run q --reconnect-for soon -- true
expect_err_contains "--reconnect-for"
expect_exit 2 "$TASKQ" lease q --wait --reconnect-for -1s
expect_exit 2 "$TASKQ" wait 1 --reconnect-for x
expect_exit 2 "$TASKQ" events --follow --reconnect-for x
expect_exit 0 "$TASKQ" run q --until-empty --reconnect-for forever
expect_out "leased 1: 1 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked"

if [[ $backend != postgresql ]]; then
  section "skipped"
  check "skipped: server restarts; run it with TASKQ_TEST_BACKEND=postgresql" true
  return 0
fi

cluster=${_suite%/*}/../pg/cluster
pgc=$scratch/pgc
bash "$cluster" start "$pgc" >/dev/null 3>&- || {
  check "private cluster started" false
  return 0
}
data=$(sed -n 's/^data=//p' "$pgc/state")
port=$(sed -n 's/^port=//p' "$pgc/state")
bindir=${TASKQ_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
pgctl() {
  if [[ $(id -u) == 0 ]]; then
    (cd / && runuser -u postgres -- "$bindir/pg_ctl" -D "$data/pgdata" "$@" 3>&-)
  else
    (cd / && "$bindir/pg_ctl" -D "$data/pgdata" "$@" 3>&-)
  fi
}
restart() { pgctl restart -m immediate -w -t 60 >/dev/null 2>&1; }
psql_p() { psql -XAtq -h "$data" -p "$port" -U postgres -d rc -c "$1" 3>&-; }
createdb -h "$data" -p "$port" -U postgres rc 3>&-
# A commit survives an immediate restart (the shared cluster trades that
# for speed): what a worker wrote before the restart is still there after.
psql -XAtq -h "$data" -p "$port" -U postgres -d rc \
  -c "ALTER SYSTEM SET synchronous_commit = on" -c "SELECT pg_reload_conf()" \
  >/dev/null 3>&-
export TASKQ_DB="postgresql:///rc?host=$data&port=$port"
# The connections that wait for a NOTIFY (a listener's last query).
listeners() { psql_p "SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN taskq'"; }
listening() { (($(listeners) >= $1)); }
lines() { [[ -f $1 ]] && (($(grep -c . "$1") >= $2)); }

section "run: handlers keep running across an immediate restart"
for i in 1 2 3; do tq add r -- sh -c "touch started.\$TASKQ_ID; until [ -e go ]; do sleep 0.02; done" >/dev/null; done
"$TASKQ" run r --until-empty --concurrency 2 >run.out 2>run.err 3>&- &
runpid=$!
check "two handlers started" wait_until 20 test -e started.1 -a -e started.2
restart
check "run reconnected" wait_until 20 grep -q "connected to the database again" run.err
check "its handlers still run" alive "$runpid"
touch go
wait "$runpid"
expect_eq "$?" 0 "run's exit status"
expect_eq "$(<run.out)" "leased 3: 3 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked" "run's summary"
expect_eq "$(grep -c "lost the connection" run.err)" 1 "lines saying the connection is lost"
expect_eq "$(grep -c "connected to the database again" run.err)" 1 "lines saying it is back"
expect_eq "$(grep -c . run.err)" 2 "lines on run's stderr"
expect_exit 0 "$TASKQ" list --queue r --state completed -o id
expect_out "$(printf '1\n2\n3')"

section "run --stream: a handler keeps its task across a restart"
cat >stream.sh <<'SH'
#!/bin/sh
while IFS= read -r line; do
  id=$(printf '%s' "$line" | jq -r .task.id)
  touch "sstarted.$id"
  until [ -e sgo ]; do sleep 0.02; done
  printf '{"id":%s,"done":true}\n' "$id"
done
SH
chmod +x stream.sh
for i in 1 2; do tq add s >/dev/null; done
"$TASKQ" run s --stream --until-empty -- ./stream.sh >srun.out 2>srun.err 3>&- &
runpid=$!
# (ids after a crash restart may have jumped: any id will do)
check "the handler has its first task" wait_until 20 compgen -G 'sstarted.*' >/dev/null
restart
check "run --stream reconnected" wait_until 20 grep -q "connected to the database again" srun.err
touch sgo
wait "$runpid"
expect_eq "$?" 0 "run --stream's exit status"
expect_eq "$(<srun.out)" "leased 2: 2 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked" "run --stream's summary"
expect_eq "$(grep -c "connecting again" srun.err)" 1 "lines saying the connection is lost"
expect_eq "$(grep -c . srun.err)" 2 "lines on run --stream's stderr"

section "lease --wait started before a restart gets a task added after it"
"$TASKQ" lease w --wait 60s -o id >lease.out 2>lease.err 3>&- &
leasepid=$!
check "lease --wait listens" wait_until 20 listening 1
restart
id=$(tq add w -- true)
wait "$leasepid"
expect_eq "$?" 0 "lease --wait's exit status"
expect_eq "$(<lease.out)" "$id" "the task lease --wait leased"
expect_eq "$(grep -c "connected to the database again" lease.err)" 1 "lease --wait says it is back"

section "wait returns when the task completes after a restart"
id=$(tq add v -- true)
"$TASKQ" wait "$id" >wait.out 2>wait.err 3>&- &
waitpid=$!
check "wait listens" wait_until 20 listening 1
restart
check "wait reconnected" wait_until 20 grep -q "connected to the database again" wait.err
check "wait still waits" alive "$waitpid"
expect_exit 0 "$TASKQ" run v --until-empty
wait "$waitpid"
expect_eq "$?" 0 "wait's exit status"
expect_contains "$(<wait.out)" "completed" "wait's output"

section "progress goes on after a restart"
tq add p -- true >/dev/null
"$TASKQ" progress p --interval 200ms >prog.out 2>prog.err 3>&- &
progpid=$!
check "progress printed its first line" wait_until 20 lines prog.out 1
restart
check "progress reconnected" wait_until 20 grep -q "connected to the database again" prog.err
check "progress still runs" alive "$progpid"
expect_exit 0 "$TASKQ" run p --until-empty
wait "$progpid"
expect_eq "$?" 0 "progress's exit status"
expect_eq "$(grep -c "connecting again" prog.err)" 1 "lines saying the connection is lost"
expect_eq "$(grep -c . prog.err)" 2 "lines on progress's stderr"

section "events --follow goes on after a restart, without repeating or skipping"
psql -XAtq -h "$data" -p "$port" -U postgres -d postgres -c "CREATE DATABASE ev" 3>&-
export TASKQ_DB="postgresql:///ev?host=$data&port=$port"
id=$(tq add e -- true)
tq pause "$id" >/dev/null
"$TASKQ" events --follow --since 2000-01-01T00:00:00Z -o json >ev.out 2>ev.err 3>&- &
evpid=$!
check "the first events printed" wait_until 20 lines ev.out 2
check "events --follow listens" wait_until 20 listening 1
restart
tq resume "$id" >/dev/null
tq pause "$id" >/dev/null
check "the events after the restart printed" wait_until 20 lines ev.out 4
# Each event once, none left out: what the follower printed is what the
# log holds. Ids only grow (a crash may make PostgreSQL's sequence jump
# ahead, never back); a creation has none (it lives on the task's row).
expect_exit 0 "$TASKQ" events --since 2000-01-01T00:00:00Z -o json
expect_eq "$(<ev.out)" "$out" "the events followed, against the log"
ids=$(jq -r '.id // empty' ev.out | tr '\n' ' ')
check "three event ids, increasing ($ids)" \
  jq -se '[.[] | .id // empty] | length == 3 and . == (sort | unique)' ev.out >/dev/null
expect_eq "$(grep -c "connected to the database again" ev.err)" 1 "events --follow says it is back"
kill "$evpid"
wait "$evpid" 2>/dev/null
export TASKQ_DB="postgresql:///rc?host=$data&port=$port"

section "top keeps its last view while the server is away"
if command -v tmux >/dev/null; then
  # top in a tmux window (as tests/cli/top.sh drives it); its stderr and
  # exit status go to files, the screen is read with capture-pane.
  tmx() { tmux -f /dev/null -S "$scratch/tmux.sock" "$@" 3>&-; }
  shown() { tmx capture-pane -p -t "$1" 2>/dev/null; }
  shows() { [[ $(shown "$1") == *"$2"* ]]; }
  gone() { ! tmx has-session -t "$1" 2>/dev/null; }
  start_top() { # NAME ARGS...
    local name=$1
    shift
    tmx new-session -d -s "$name" -x 120 -y 40 -e "TASKQ_DB=$TASKQ_DB" \
      -e "HOME=$HOME" \
      "$TASKQ top $* 2>$scratch/$name.err; echo \$? >$scratch/$name.rc"
  }
  tq add topq -- true >/dev/null
  start_top top1
  check "top shows the queue" wait_until 30 shows top1 topq
  pgctl stop -m immediate -w >/dev/null 2>&1
  check "top says on its status line that it connects again" \
    wait_until 20 shows top1 "database: connecting again for up to 5m: lost the connection"
  check "its last view stays on screen" shows top1 topq
  check "top is still running" tmx has-session -t top1
  pgctl start -w -t 60 -o "-p $port" -l "$data/server.log" >/dev/null 2>&1
  tq add topback -- true >/dev/null
  check "top shows what was added once the server is back" \
    wait_until 30 shows top1 topback
  check "the status line no longer says it is lost" \
    wait_until 10 eval '! shows top1 "database: connecting again"'
  tmx send-keys -t top1 q
  check "q ends top" wait_until 10 gone top1
  expect_eq "$(<top1.rc)" 0 "top's exit status"
  expect_eq "$(<top1.err)" "" "top wrote nothing on stderr beneath its screen"

  start_top top2 --reconnect-for 1s
  check "top (--reconnect-for 1s) shows the queue" wait_until 30 shows top2 topq
  pgctl stop -m immediate -w >/dev/null 2>&1
  check "top ends past --reconnect-for" wait_until 30 gone top2
  expect_eq "$(<top2.rc)" 5 "its exit status"
  expect_contains "$(<top2.err)" "taskq: top: lost the connection" "it says why on stderr"
  expect_contains "$(<top2.err)" "not back within --reconnect-for" "and that it gave up"
  pgctl start -w -t 60 -o "-p $port" -l "$data/server.log" >/dev/null 2>&1
  tmx kill-server >/dev/null 2>&1
else
  check "skipped: top across a restart needs tmux" true
fi

section "run started while the server is down waits for it"
sid=$(tq add late -- true)
pgctl stop -m immediate -w >/dev/null 2>&1
"$TASKQ" run late --until-empty >late.out 2>late.err 3>&- &
runpid=$!
check "run says it connects again" wait_until 20 grep -q "connecting again for up to 5m" late.err
check "run is still waiting" alive "$runpid"
pgctl start -w -t 60 -o "-p $port" -l "$data/server.log" >/dev/null 2>&1
wait "$runpid"
expect_eq "$?" 0 "run's exit status"
expect_eq "$(<late.out)" "leased 1: 1 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked" "run's summary"
expect_contains "$(<late.err)" "connected to the database again" "run says it is back"
expect_exit 0 "$TASKQ" list --queue late --state completed -o id
expect_out "$sid"
# A refused login is no outage: exit 5 at once, the other commands as before.
expect_exit 5 "$TASKQ" --db "postgresql:///no_such_db?host=$data&port=$port" run late --until-empty -- true
expect_err_contains "does not exist"
pgctl stop -m immediate -w >/dev/null 2>&1
expect_exit 5 "$TASKQ" list
expect_exit 5 "$TASKQ" run late --until-empty --reconnect-for 0 -- true
pgctl start -w -t 60 -o "-p $port" -l "$data/server.log" >/dev/null 2>&1

section "a server down past --reconnect-for: SIGTERM, summary, exit 5"
did=$(tq add d -- sh -c 'trap "touch termed; exit 1" TERM; touch started.d; while :; do sleep 0.02; done')
"$TASKQ" run d --until-empty --reconnect-for 1s --grace 5s >down.out 2>down.err 3>&- &
runpid=$!
check "its handler started" wait_until 20 test -e started.d
pgctl stop -m immediate -w >/dev/null 2>&1
wait "$runpid"
expect_eq "$?" 5 "run's exit status"
check "the handler got SIGTERM" test -e termed
expect_contains "$(<down.out)" "leased 1:" "run's summary"
expect_eq "$(grep -c "connecting again" down.err)" 1 "lines saying the connection is lost"
expect_contains "$(<down.err)" "past --reconnect-for" "run says why it stops"
pgctl start -w -t 60 -o "-p $port" -l "$data/server.log" >/dev/null 2>&1
# The server back: the task is still there, to be leased again.
expect_exit 0 "$TASKQ" list --queue d -o id
expect_out "$did"

# A worker's listening connection can go alone (a server's backend
# terminated, a pooler's listen= host restarted) while its handlers work and
# it wants no more tasks: it listens again, and hears an operator meanwhile.
# Before, it waited on nothing but its handlers until its next heartbeat
# (a third of the lease: 100 s by default), deaf to a kill.
# (the newest: a waiter of an earlier section may still be on its way out)
listener_pid() { psql_p "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN taskq' ORDER BY backend_start DESC LIMIT 1"; }
cut_listener() { psql_p "SELECT count(pg_terminate_backend($1))"; }
listens_anew() { [[ -n $(psql_p "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN taskq' AND pid <> $1") ]]; }
section "run: a listener cut while a handler works: a kill is heard, it listens again"
# A handler that writes a line every 20 ms: its output wakes the wait
# far more often than any look is due.
kid=$(tq add cut -- sh -c 'trap "touch cut.termed; exit 1" TERM; touch cut.started; while :; do echo busy; sleep 0.02; done')
"$TASKQ" run cut --until-empty >cut.out 2>cut.err 3>&- &
runpid=$!
check "its handler started" wait_until 20 test -e cut.started
check "run listens" wait_until 20 listening 1
lpid=$(listener_pid)
expect_eq "$(cut_listener "$lpid")" 1 "listening connections cut"
check "run listens again" wait_until 20 listens_anew "$lpid"
expect_exit 0 "$TASKQ" kill "$kid"
check "the kill reached the handler" wait_until 10 test -e cut.termed
wait "$runpid"
expect_eq "$?" 0 "run's exit status"
expect_eq "$(tail -n 1 cut.out)" "leased 1: 0 completed, 0 failed for good, 0 will retry, 0 released, 1 revoked" "run's summary"
expect_not_contains "$(<cut.err)" "connecting again" "run's stderr (its main connection was never lost)"

section "run --stream: a listener cut while a handler works: a kill is heard, it listens again"
silent_handler cut.sh scut
k1=$(tq add scut)
"$TASKQ" run scut --stream --until-empty --grace 1s -- ./cut.sh >scut.out 2>scut.err 3>&- &
runpid=$!
check "the handler has its task" wait_until 20 test -e "scut.started.$k1"
check "run --stream listens" wait_until 20 listening 1
lpid=$(listener_pid)
expect_eq "$(cut_listener "$lpid")" 1 "listening connections cut"
check "run --stream listens again" wait_until 20 listens_anew "$lpid"
expect_exit 0 "$TASKQ" kill "$k1"
check "the handler got the cancel" wait_until 10 test -e "scut.cancelled.$k1"
wait "$runpid"
expect_eq "$?" 0 "run --stream's exit status"
expect_eq "$(<scut.out)" "leased 1: 0 completed, 0 failed for good, 0 will retry, 0 released, 1 revoked" "run --stream's summary"
expect_eq "$(grep -c "connecting again" scut.err)" 0 "run --stream never lost its main connection"

bash "$cluster" stop "$pgc" >/dev/null 3>&-
