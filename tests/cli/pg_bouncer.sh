# taskq through PgBouncer in transaction pooling mode (doc/reference/
# postgresql.md, "Through PgBouncer"): with ?pool=transaction every command
# works through the pooler (no named prepared statements, no startup
# options, no session settings); waiting wakes within a second without
# LISTEN, or at once with a direct listener (?listen=HOST:PORT); and 300
# worker processes drain 2000 tasks through a pool of 20 server
# connections on a server with max_connections = 100, each task completed
# exactly once. The URL's own parameters are checked on both backends.
#
# PgBouncer (Debian's pgbouncer) and the server it fronts (tests/pg/cluster
# in the scratch folder) are the suite's own, stopped at its end.

section "pool= and listen= are checked before any connection"
expect_exit 2 "$TASKQ" --db 'postgresql://127.0.0.1:1/x?pool=statement' list
expect_err_contains "pool=transaction"
expect_exit 2 "$TASKQ" --db 'postgresql://127.0.0.1:1/x?listen=' list
expect_err_contains "listen="
expect_exit 2 "$TASKQ" --db 'postgresql://127.0.0.1:1/x?listen=h:1' list
expect_err_contains "needs pool=transaction"

if [[ $backend != postgresql ]]; then
  section "skipped"
  check "skipped: PgBouncer; run it with TASKQ_TEST_BACKEND=postgresql" true
  return 0
fi
if ! command -v pgbouncer >/dev/null && [[ ! -x /usr/sbin/pgbouncer ]]; then
  section "skipped"
  echo "pg_bouncer.sh: pgbouncer is not installed (apt-get install pgbouncer)" >&3
  check "skipped: pgbouncer is not installed" true
  return 0
fi
pgbouncer_bin=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)

cluster=${_suite%/*}/../pg/cluster
pgc=$scratch/pgc
# The pooler's folder: PgBouncer refuses to run as root, so as root it runs
# as the cluster's owner, who must read its configuration and write its log.
bdir=$(mktemp -d "${TMPDIR:-/tmp}/taskq-bouncer.XXXXXX")
as_owner() {
  if [[ $(id -u) == 0 ]]; then
    (cd / && runuser -u postgres -- "$@" 3>&-)
  else
    (cd / && "$@" 3>&-)
  fi
}
_bouncer_stop() {
  if [[ -s $bdir/pgbouncer.pid ]]; then
    kill "$(<"$bdir/pgbouncer.pid")" 2>/dev/null
  fi
  bash "$cluster" stop "$pgc" >/dev/null 2>&1 3>&-
  rm -rf "$bdir"
}
trap '_bouncer_stop; _finish' EXIT

bash "$cluster" start "$pgc" >/dev/null 3>&- || {
  check "private cluster started" false
  return 0
}
data=$(sed -n 's/^data=//p' "$pgc/state")
port=$(sed -n 's/^port=//p' "$pgc/state")
bindir=${TASKQ_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
psql_p() { psql -XAtq -h "$data" -p "$port" -U postgres -d "${2:-bq}" -c "$1" 3>&-; }
# A default server's connection limit (the shared cluster has more).
psql_p "ALTER SYSTEM SET max_connections = 100" postgres >/dev/null
as_owner "$bindir/pg_ctl" -D "$data/pgdata" -l "$data/server.log" restart -m fast -w -t 60 >/dev/null 2>&1
expect_eq "$(psql_p 'SHOW max_connections' postgres)" 100 "the server's max_connections"
createdb -h "$data" -p "$port" -U postgres bq 3>&-

# A pool of 20 server connections for any number of clients; any user is
# taken for postgres (trusted by the throwaway cluster).
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
max_client_conn = 2000
max_db_connections = 20
logfile = $bdir/pgbouncer.log
pidfile = $bdir/pgbouncer.pid
admin_users = postgres
INI
[[ $(id -u) == 0 ]] && chown -R postgres: "$bdir"
as_owner "$pgbouncer_bin" -d "$bdir/pgbouncer.ini" >/dev/null 2>&1
bouncing() { psql -XAtq -h 127.0.0.1 -p "$bport" -U postgres -d bq -c 'SELECT 1' >/dev/null 2>&1 3>&-; }
check "pgbouncer accepts connections" wait_until 20 bouncing

direct="postgresql://127.0.0.1:$bport/bq"
pooled="$direct?pool=transaction"
listened="$pooled&listen=127.0.0.1:$port"
# The server connections that LISTEN (a listener's last query).
listeners() { psql_p "SELECT count(*) FROM pg_stat_activity WHERE query = 'LISTEN taskq'"; }
listening() { (($(listeners) >= $1)); }
# pgbouncer's clients of database bq (its admin console).
clients() {
  psql -XAtq -h 127.0.0.1 -p "$bport" -U postgres -d pgbouncer -c 'SHOW CLIENTS' 3>&- |
    awk -F'|' '$3 == "bq"' | wc -l
}

section "without pool=transaction, PgBouncer refuses taskq's startup options"
expect_exit 5 "$TASKQ" --db "$direct" list
expect_err_contains "options"

# The server logs every statement for the next sections: a named prepared
# statement shows as "execute s1", an unnamed one as "execute <unnamed>".
psql_p "ALTER SYSTEM SET log_statement = 'all'" >/dev/null
psql_p "SELECT pg_reload_conf()" >/dev/null
named() { grep -c 'execute s[0-9]' "$data/server.log"; }

export TASKQ_DB=$pooled
section "the commands work through the pooler"
a=$(tq add q --text one)
b=$(tq add q --text two)
expect_exit 0 "$TASKQ" lease q -o json
expect_json "$out" .id "$a" "the task leased"
expect_exit 0 "$TASKQ" done "$a" --lease "$(jout .lease.token)"
expect_eq "$(state "$a")" completed "done through the pooler"
expect_exit 0 "$TASKQ" run q --until-empty -- true
expect_out "leased 1: 1 completed, 0 failed for good, 0 will retry, 0 released, 0 revoked"
expect_eq "$(state "$b")" completed "run through the pooler"
cat >stream.sh <<'SH'
#!/bin/sh
while IFS= read -r line; do
  id=$(printf '%s' "$line" | jq -r .task.id)
  printf '{"id":%s,"done":true}\n' "$id"
done
SH
chmod +x stream.sh
s=$(tq add s --text x)
expect_exit 0 "$TASKQ" run s --stream --until-empty -- ./stream.sh
expect_eq "$(state "$s")" completed "run --stream through the pooler"
tx_doc() { "$TASKQ" tx <<<"$1"; }
expect_exit 0 tx_doc "{\"complete\":[],\"create\":[{\"queue\":\"t\"},{\"queue\":\"t\"}]}"
expect_json "$out" '.created | length' 2 "tasks a tx created"
expect_exit 0 "$TASKQ" list --queue t -o id
expect_eq "$(grep -c . <<<"$out")" 2 "tasks in queue t"
w=$(tq add v -- true)
"$TASKQ" wait "$w" --timeout 20s >wait.out 2>wait.err 3>&- &
waitpid=$!
# From the start of history: a follower from "now" may begin after the
# completion below (its first read races with the run).
"$TASKQ" events --follow --since 2000-01-01T00:00:00Z -o json >follow.out 2>follow.err 3>&- &
followpid=$!
expect_exit 0 "$TASKQ" run v --until-empty -- true
check "wait returns when the task completes" wait_until 10 gone "$waitpid"
wait "$waitpid"
expect_eq "$?" 0 "wait's exit status"
check "events --follow shows the completion" \
  wait_until 10 grep -q "\"task\":$w,.*\"to\":\"completed\"" follow.out
kill "$followpid" 2>/dev/null
wait "$followpid" 2>/dev/null
expect_eq "$(listeners)" 0 "server connections that LISTEN (none through the pooler)"
expect_eq "$(named)" 0 "named prepared statements run through the pooler"
check "the server logged the unnamed ones" grep -q 'execute <unnamed>' "$data/server.log"
# Straight to the server, without pool=, a statement run a third time is
# prepared once (so the check above could fail).
for i in 1 2 3 4; do tq add n --text "$i" >/dev/null; done
expect_exit 0 env TASKQ_DB="postgresql:///bq?host=$data&port=$port" \
  "$TASKQ" run n --until-empty -- true
check "named prepared statements without pool=" test "$(named)" -gt 0
psql_p "ALTER SYSTEM RESET log_statement" >/dev/null
psql_p "SELECT pg_reload_conf()" >/dev/null

section "lease --wait wakes within a second or so without LISTEN"
"$TASKQ" lease w --wait 30s -o id >lease.out 2>lease.err 3>&- &
leasepid=$!
check "lease --wait is a client of the pooler" wait_until 10 test "$(clients)" -ge 1
check "it waits" alive "$leasepid"
expect_eq "$(listeners)" 0 "server connections that LISTEN"
id=$(tq add w --text x)
added=$(now_ms)
check "lease --wait leased it" wait_until 10 gone "$leasepid"
took=$(($(now_ms) - added))
wait "$leasepid"
expect_eq "$?" 0 "lease --wait's exit status"
expect_eq "$(<lease.out)" "$id" "the task lease --wait leased"
# The pool's timer looks each second; without it, lease --wait would sleep
# out its 30 s. 5 s leaves a loaded machine its slack.
check "it woke within seconds of the add (took ${took} ms)" test "$took" -lt 5000

section "with ?listen= the waiting process LISTENs on the server itself"
TASKQ_DB=$listened "$TASKQ" lease l --wait 30s -o id >lease.out 2>lease.err 3>&- &
leasepid=$!
check "lease --wait listens on the server" wait_until 10 listening 1
id=$(tq add l --text x)
added=$(now_ms)
check "lease --wait leased it" wait_until 10 gone "$leasepid"
took=$(($(now_ms) - added))
wait "$leasepid"
expect_eq "$?" 0 "lease --wait's exit status"
expect_eq "$(<lease.out)" "$id" "the task lease --wait leased"
# Without the notification it would have looked after a second (the pool's
# timer, or the listener's own look: storage/seam/change_feed.hpp).
check "it woke on the notification, before a second (took ${took} ms)" \
  test "$took" -lt 1000
expect_exit 5 env TASKQ_DB="$pooled&listen=127.0.0.1:1" "$TASKQ" lease l --wait 1s
expect_err_contains "listen= address 127.0.0.1:1"

section "300 workers drain 2000 tasks through a pool of 20"
cat >count.sh <<'SH'
#!/bin/bash
while IFS= read -r line; do
  [[ $line =~ \"task\":\{\"id\":([0-9]+) ]] || exit 3
  echo "${BASH_REMATCH[1]}" >>"$IDS"
  printf '{"id":%s,"done":true}\n' "${BASH_REMATCH[1]}"
done
SH
chmod +x count.sh
export IDS=$scratch/ids
: >"$IDS"
seq 2000 | sed 's/.*/{"n":&}/' >many.jsonl
tq add fleet --jsonl many.jsonl >/dev/null
mkdir fleet
pids=()
for i in $(seq 300); do
  # Half of them lease 4 at a time.
  prefetch=()
  ((i % 2 == 0)) && prefetch=(--prefetch 4)
  "$TASKQ" run fleet --stream "${prefetch[@]}" --until-empty -- ./count.sh \
    >"fleet/$i.out" 2>"fleet/$i.err" 3>&- &
  pids+=("$!")
done
failed=0
for p in "${pids[@]}"; do
  wait "$p" || failed=$((failed + 1))
done
expect_eq "$failed" 0 "workers that exited non-zero"
expect_eq "$(cat fleet/*.err | grep -c 'too many clients')" 0 "'too many clients' errors"
expect_eq "$(cat fleet/*.err | grep -c .)" 0 "lines the workers wrote on stderr"
expect_eq "$(sort -n "$IDS" | uniq | wc -l)" 2000 "tasks the handlers ran"
expect_eq "$(sort -n "$IDS" | uniq -d | wc -l)" 0 "tasks run twice"
expect_eq "$(psql_p "SELECT count(*) FROM taskq.tasks WHERE queue = 'fleet' AND state = 'completed'")" \
  2000 "tasks completed"
completions=$(awk '{n += $2} END {print n}' < <(sed -n 's/^leased \([0-9]*\): \([0-9]*\) completed.*/\1 \2/p' fleet/*.out))
expect_eq "$completions" 2000 "completions the workers counted"

# A worker whose listen= connection goes and cannot come back (here the
# server refuses TCP from now on; the pooler reaches it through its Unix
# socket) still hears an operator: busy handlers or not, it looks at the
# database every 250 ms. Before, it slept until its next heartbeat (100 s
# by default). Last: the server's rules stay changed.
section "the listen= connection gone for good while the handlers work: a kill is heard"
silent_handler deaf.sh sdeaf
did=$(tq add deaf -- sh -c 'trap "touch deaf.termed; exit 1" TERM; touch deaf.started; while :; do sleep 0.02; done')
sid=$(tq add sdeaf)
TASKQ_DB=$listened "$TASKQ" run deaf --until-empty >deaf.out 2>deaf.err 3>&- &
runpid=$!
TASKQ_DB=$listened "$TASKQ" run sdeaf --stream --until-empty --grace 1s -- ./deaf.sh \
  >sdeaf.out 2>sdeaf.err 3>&- &
srunpid=$!
# Each listens from its start: its handler has a task only after that.
check "run's handler started" wait_until 20 test -e deaf.started
check "run --stream's handler has its task" wait_until 20 test -e "sdeaf.started.$sid"
sed -i '1i host all all 127.0.0.1/32 reject' "$data/pgdata/pg_hba.conf"
expect_eq "$(psql_p 'SELECT pg_reload_conf()')" t "the server's rules reloaded"
expect_eq "$(psql_p "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE query = 'LISTEN taskq'")" \
  2 "listening connections cut"
expect_exit 0 "$TASKQ" kill "$did" "$sid"
check "the kill reached run's handler" wait_until 10 test -e deaf.termed
check "the kill reached run --stream's handler" wait_until 10 test -e "sdeaf.cancelled.$sid"
wait "$runpid"
expect_eq "$?" 0 "run's exit status"
expect_eq "$(<deaf.out)" "leased 1: 0 completed, 0 failed for good, 0 will retry, 0 released, 1 revoked" "run's summary"
wait "$srunpid"
expect_eq "$?" 0 "run --stream's exit status"
expect_eq "$(<sdeaf.out)" "leased 1: 0 completed, 0 failed for good, 0 will retry, 0 released, 1 revoked" "run --stream's summary"
