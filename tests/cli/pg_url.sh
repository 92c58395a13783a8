# PostgreSQL URLs (doc/reference/postgresql.md#connecting): a string that starts
# like a PostgreSQL URL but is none is refused with exit 2 and nothing is
# made of it; the scheme is read in any case; no password libpq could read
# in a URL is ever printed (db path, -o json, every error: a failed connect,
# a missing database, a refused password), whatever its form: in the user
# information with unencoded '/', '?', '@', ':', or as a query parameter
# with a percent-encoded or upper-case key, repeated; and a server that
# accepts and never answers is exit 5 after the connect timeout (10 s by
# default; connect_timeout= or PGCONNECT_TIMEOUT change it).
#
# The URL parsing, the failed connects and the timeout need no server and
# run on both backends; connecting, missing databases and refused passwords
# run with TASKQ_TEST_BACKEND=postgresql.

set_now 2026-11-21T08:00:00Z

# Secrets in two pieces, so that a password libpq splits (at an unencoded
# '/', say) is checked piece by piece.
s1=Xq7kP
s2=Zv9wR
# no_secret: neither stream of the last command holds a piece of a secret.
no_secret() {
  expect_not_contains "$out$err" "$s1" "output of $cmd"
  expect_not_contains "$out$err" "$s2" "output of $cmd"
}
one_line_error() {
  expect_err_format
  expect_eq "$(grep -c . <<<"$err")" 1 "lines on stderr of $cmd"
}

section "a string that starts like a PostgreSQL URL but is none: exit 2, nothing made"
mkdir "$scratch/empty"
cd "$scratch/empty" || exit 1
for bad in "postgresql:tq" "postgres:/x" "postgresql//h/db" "POSTGRES:tq" \
  "Postgresql:u:$s1@h/db" "pgsql://u:$s1@h/db" "postgresql:/u:$s1@h/db"; do
  for c in "add q" "list" "db path" "db migrate"; do
    # shellcheck disable=SC2086
    expect_exit 2 "$TASKQ" --db "$bad" $c
    one_line_error
    expect_err_contains "postgresql://"
    no_secret
    # shellcheck disable=SC2086
    expect_exit 2 env TASKQ_DB="$bad" "$TASKQ" $c
    one_line_error
    no_secret
  done
  expect_eq "$(ls -A)" "" "nothing was made of $bad"
done
expect_eq "$PWD" "$scratch/empty" "the working folder"
check "no folder postgresql was made" test ! -e "$scratch/empty/postgresql"
cd "$scratch" || exit 1
# A file name that only starts with the word is a file.
expect_exit 0 "$TASKQ" --db "$scratch/postgresql.db" add q
check "postgresql.db is a file" test -f "$scratch/postgresql.db"

section "db path never prints a password, whatever the URL's form"
for url in \
  "postgresql://tq:$s1$s2@h/db" \
  "postgresql://tq:$s1/$s2@h/db" \
  "postgresql://tq:$s1?$s2@h/db" \
  "postgresql://tq:$s1@$s2@h/db" \
  "postgresql://tq:$s1:$s2@h/db" \
  "postgresql://tq:$s1/$s2?x=1@h/db" \
  "postgresql://tq@h/db?user=tq&pass%77ord=$s1$s2" \
  "postgresql://tq@h/db?%70assword=$s1$s2" \
  "postgresql://tq@h/db?%70%41%53%53word=$s1$s2" \
  "postgresql://tq@h/db?PASSWORD=$s1$s2" \
  "postgresql://tq@h/db?password=$s1&password=$s2" \
  "postgresql://tq@h/db?sslpassword=$s1$s2" \
  "POSTGRESQL://tq:$s1$s2@h/db" \
  "Postgres://tq@h/db?password=$s1$s2" \
  "postgresql://tq:$s1/$s2@h:5432/db?pass%77ord=$s1&PassWord=$s2"; do
  expect_exit 0 "$TASKQ" --db "$url" db path
  no_secret
  expect_contains "$out" "***" "db path of $url"
  expect_exit 0 "$TASKQ" --db "$url" db path -o json
  no_secret
  expect_exit 0 env TASKQ_DB="$url" "$TASKQ" db path
  no_secret
done
expect_exit 0 "$TASKQ" --db "postgresql://tq:$s1/$s2@h/db" db path
expect_out "postgresql://tq:***@h/db"
expect_exit 0 "$TASKQ" --db "postgresql://h/db?user=tq&pass%77ord=$s1" db path
expect_out "postgresql://h/db?user=tq&pass%77ord=***"
expect_exit 0 "$TASKQ" --db "POSTGRESQL://tq:$s1@h/db" db path -o json
expect_jq "$out" '.path == "POSTGRESQL://tq:***@h/db"'

section "a failed connect prints no password, whatever the URL's form"
# No server: a socket folder that does not exist, and a TCP port nobody
# listens on.
nosock="host=$scratch/no-such-folder&port=1"
for url in \
  "postgresql://tq:$s1$s2@127.0.0.1:1/db" \
  "postgresql://tq:$s1/$s2@127.0.0.1:1/db" \
  "postgresql://tq:$s1/$s2@/db?$nosock" \
  "postgresql://tq:$s1/$s2?x=1@127.0.0.1:1/db" \
  "postgresql://tq:$s1?$s2@/db?$nosock" \
  "postgresql://tq:$s1@$s2@/db?$nosock" \
  "postgresql://tq:$s1:$s2@/db?$nosock" \
  "postgresql:///db?$nosock&user=tq&pass%77ord=$s1$s2" \
  "postgresql:///db?$nosock&%70assword=$s1$s2" \
  "postgresql:///db?$nosock&PASSWORD=$s1$s2" \
  "postgresql:///db?$nosock&password=$s1&password=$s2" \
  "postgresql:///db?$nosock&password=$s1%zz$s2" \
  "postgresql:///db?$nosock&password=$s1%20$s2%20" \
  "postgresql:///db?$nosock&password%3D$s1$s2" \
  "POSTGRESQL://tq:$s1$s2@/db?$nosock" \
  "postgresql://tq:$s1$s2@[::1/db"; do
  for c in "list" "add q" "db check"; do
    # shellcheck disable=SC2086
    expect_exit 5 "$TASKQ" --db "$url" $c
    one_line_error
    expect_err_contains "cannot connect to database "
    no_secret
  done
  expect_exit 5 env TASKQ_DB="$url" "$TASKQ" wait 1 --timeout 2s
  one_line_error
  no_secret
done
expect_eq "$(find "$scratch" -maxdepth 1 -iname '*postgres*' ! -name 'postgresql.db*' | wc -l)" 0 \
  "no file made of a URL (postgresql.db is the one asked for)"

section "a server that accepts and never answers: exit 5 after the connect timeout"
# A silent listener: accepts connections, reads nothing, says nothing.
# shellcheck disable=SC2016
timeout 120 perl -MIO::Socket::INET -e '
  my $s = IO::Socket::INET->new(Listen => 16, LocalAddr => "127.0.0.1",
    LocalPort => 0, Proto => "tcp") or die "listen: $!";
  open(my $f, ">", "$ARGV[0].tmp") or die; print $f $s->sockport, "\n";
  close $f; rename("$ARGV[0].tmp", $ARGV[0]) or die;
  my @held; while (my $c = $s->accept) { push @held, $c }' \
  "$scratch/silent.port" &
silent=$!
check "the silent listener listens" wait_until 10 test -s "$scratch/silent.port"
silent_url="postgresql://tq:$s1@127.0.0.1:$(<"$scratch/silent.port")/db"
# timed WANT LOW_MS HIGH_MS CMD...: CMD exits WANT after LOW_MS to HIGH_MS.
timed() {
  local want=$1 low=$2 high=$3 t0 ms
  shift 3
  t0=$(now_ms)
  expect_exit "$want" "$@"
  ms=$(($(now_ms) - t0))
  check "$cmd took ${ms} ms (${low} to ${high})" test "$ms" -ge "$low" -a "$ms" -le "$high"
}
timed 5 1500 6000 "$TASKQ" --db "$silent_url?connect_timeout=2" list
one_line_error
expect_err_contains "timeout expired"
no_secret
timed 5 1500 6000 env PGCONNECT_TIMEOUT=2 "$TASKQ" --db "$silent_url" list
one_line_error
expect_err_contains "timeout expired"
# The URL's own wins over the default, also with an upper-case scheme.
timed 5 1500 6000 "$TASKQ" --db "POSTGRESQL${silent_url#postgresql}?connect_timeout=2" add q
one_line_error
no_secret
# Nothing given: the default, 10 s.
timed 5 9000 14000 env -u PGCONNECT_TIMEOUT "$TASKQ" --db "$silent_url" list
one_line_error
expect_err_contains "timeout expired"
no_secret
kill "$silent" 2>/dev/null
wait "$silent" 2>/dev/null

if [[ $backend != postgresql ]]; then
  section "skipped"
  check "skipped: connecting with each URL form; run it with TASKQ_TEST_BACKEND=postgresql" true
  return 0
fi

# The current database, and a URL of it with the server's socket or host
# and port as libpq's variables give them.
dbname() { printf '%s' "${TASKQ_DB##*/}"; }
at=""
[[ -n ${PGHOST:-} ]] && at+="host=$PGHOST"
[[ -n ${PGPORT:-} ]] && at+="${at:+&}port=$PGPORT"
user=${PGUSER:-$(id -un)}

section "an upper-case scheme connects to the server"
fresh_db
db=$(dbname)
expect_exit 0 "$TASKQ" --db "POSTGRESQL://$user:$s1@/$db?$at" add q --label via=upper
no_secret
id=$out
expect_exit 0 "$TASKQ" --db "Postgres:///$db?$at" list -o id
expect_out "$id"
# The server's database holds it (by the suite's own lower-case URL).
expect_exit 0 "$TASKQ" list -o id
expect_out "$id"
check "no file named after the URL" test -z "$(find "$scratch" -maxdepth 1 -iname 'postgres*:*')"
# The change feed's own connection (a waiting command's LISTEN) reads the
# same URL.
listening() {
  [[ $(psql -XAtq -d "$db" -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db' AND query = 'LISTEN taskq' AND pid <> pg_backend_pid()") -ge 1 ]]
}
unset TASKQ_NOW
"$TASKQ" --db "POSTGRESQL://$user:$s1@/$db?$at" wait "$id" --timeout 20s \
  >"$scratch/wait.out" 2>"$scratch/wait.err" &
waiter=$!
check "wait on an upper-case URL listens" wait_until 10 listening
tok=$(tq lease q --worker w -o json | jq -r .lease.token)
tq done "$id" --lease "$tok" >/dev/null
wait "$waiter"
expect_eq "$?" 0 "exit status of wait on an upper-case URL"
out=$(<"$scratch/wait.out") err=$(<"$scratch/wait.err") cmd="taskq wait $id"
no_secret
set_now 2026-11-21T08:00:00Z

section "connecting with a password in any form prints none of it"
# The test cluster trusts every login: each form connects.
for url in \
  "postgresql://$user:$s1$s2@/$db?$at" \
  "postgresql://$user:$s1?$s2@/$db?$at" \
  "postgresql://$user:$s1:$s2@/$db?$at" \
  "postgresql:///$db?$at&user=$user&pass%77ord=$s1$s2" \
  "postgresql:///$db?$at&%70assword=$s1&password=$s2" \
  "POSTGRESQL://$user:$s1$s2@/$db?$at"; do
  for c in "list" "add q" "db check" "db path"; do
    # shellcheck disable=SC2086
    expect_exit 0 "$TASKQ" --db "$url" $c
    no_secret
  done
done

section "a missing database prints no password, whatever the URL's form"
# With an unencoded '/' in the password libpq reads what follows it as the
# database's name, which the server quotes back.
missing=taskq_no_such_db_$$
for url in \
  "postgresql://$user:$s1/$s2@/$db?$at" \
  "postgresql://$user:$s1$s2@/$missing?$at" \
  "postgresql://$user:$s1@$s2@/$missing?$at" \
  "postgresql:///$missing?$at&pass%77ord=$s1$s2" \
  "POSTGRESQL://$user:$s1/$s2@/$missing?$at"; do
  for c in "list" "add q"; do
    # shellcheck disable=SC2086
    expect_exit 5 "$TASKQ" --db "$url" $c
    one_line_error
    expect_err_word "exist"
    no_secret
  done
done

section "a refused password prints none of it, whatever the URL's form"
if pg_password_cluster 5434; then
  on="host=$auth&port=5434"
  expect_exit 0 "$TASKQ" --db "POSTGRESQL://taskq:$good@/postgres?$on" add q
  expect_not_contains "$out$err" "$good" "output of $cmd"
  for url in \
    "postgresql://taskq:$s1$s2@/postgres?$on" \
    "postgresql://taskq:$s1?$s2@/postgres?$on" \
    "postgresql://taskq:$s1:$s2@/postgres?$on" \
    "postgresql://taskq:$s1@$s2@/postgres?$on" \
    "postgresql://taskq:$s1/$s2@/postgres?$on" \
    "postgresql:///postgres?$on&user=taskq&pass%77ord=$s1$s2" \
    "postgresql:///postgres?$on&user=taskq&%70assword=$s1$s2" \
    "postgresql:///postgres?$on&user=taskq&password=$s1&password=$s2" \
    "POSTGRESQL://taskq:$s1$s2@/postgres?$on"; do
    for c in "list" "add q" "db check"; do
      # shellcheck disable=SC2086
      expect_exit 5 "$TASKQ" --db "$url" $c
      one_line_error
      expect_err_contains "cannot connect to database "
      no_secret
    done
  done
  expect_exit 5 "$TASKQ" --db "postgresql:///postgres?$on&user=taskq&pass%77ord=$s1$s2" list
  expect_err_contains "password authentication failed for user \"taskq\""
  pg_password_cluster_stop
fi
