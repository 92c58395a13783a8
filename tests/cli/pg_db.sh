# `taskq db ...` and connection failures on PostgreSQL (exit 5 of
# doc/reference/invocation.md#exit-codes; doc/reference/postgresql.md): check,
# migrate, path (never a password), vacuum and backup (exit 2, pointing to
# pg_dump); an unreachable server, a missing database or role, a refused
# password and a server that goes away are exit 5 with one line that holds no
# password; so is a schema newer than the binary.
#
# Runs only with TASKQ_TEST_BACKEND=postgresql (uses psql on the server the
# PG* variables name).

if [[ $backend != postgresql ]]; then
  section "skipped"
  check "skipped: PostgreSQL's db commands; run it with TASKQ_TEST_BACKEND=postgresql" true
  return 0
fi

set_now 2026-11-21T08:00:00Z

# The current database's name, and psql on it.
dbname() { printf '%s' "${TASKQ_DB##*/}"; }
# taskq's tables are in its schema (taskq), which psql's search_path names.
sql() { PGOPTIONS='-c search_path=taskq' psql -XAtq -v ON_ERROR_STOP=1 -d "$(dbname)" -c "$1"; }

# A URL of the current database holding a password (the server's own when
# PGPASSWORD gives one, so that it is accepted; trust auth accepts any),
# with the server's socket or host and port as libpq's variables give them.
pw=${PGPASSWORD:-secret-pw-42}
pw_enc=$(jq -rn --arg p "$pw" '$p | @uri')
user=${PGUSER:-$(id -un)}
url_with() { # url_with DB [PASSWORD [USER]]
  local q=""
  [[ -n ${PGHOST:-} ]] && q+="host=$PGHOST"
  [[ -n ${PGPORT:-} ]] && q+="${q:+&}port=$PGPORT"
  printf 'postgresql://%s:%s@/%s%s' "${3:-$user}" "${2:-$pw_enc}" "$1" "${q:+?$q}"
}
url=$(url_with "$(dbname)")

# no_secret: neither stream of the last command holds the password.
no_secret() {
  expect_not_contains "$out$err" "$pw" "output of $cmd"
  [[ $pw_enc == "$pw" ]] || expect_not_contains "$out$err" "$pw_enc" "output of $cmd"
}

# one_line_error: the last command failed with one line on stderr.
one_line_error() {
  expect_err_format
  expect_eq "$(grep -c . <<<"$err")" 1 "lines on stderr of $cmd"
}

section "db path never prints a password"
expect_exit 0 "$TASKQ" --db "$url" db path
no_secret
expect_out "$(url_with "$(dbname)" '***')"
expect_exit 0 env TASKQ_DB="$url" "$TASKQ" db path
no_secret
expect_exit 0 "$TASKQ" --db "postgresql:///$(dbname)?password=$pw_enc&application_name=x" db path
no_secret
expect_out "postgresql:///$(dbname)?password=***&application_name=x"
expect_exit 0 "$TASKQ" db path
expect_out "$TASKQ_DB"

section "db migrate and db check on a new database"
expect_exit 0 "$TASKQ" --db "$url" db migrate
latest=$("$TASKQ" --db "$scratch/versions.db" db migrate)
expect_out "$latest"
expect_eq "$(sql 'SELECT max(version) FROM taskq_schema')" "$latest" \
  "taskq_schema records the version SQLite's migrations reach"
expect_exit 0 "$TASKQ" db migrate
expect_out "$latest"
expect_eq "$(sql 'SELECT count(*) FROM taskq_schema')" "$latest" "each migration recorded once"
expect_exit 0 "$TASKQ" --db "$url" db check
no_secret
expect_out "ok: schema version $latest, 0 tasks"
id=$(add_task q --label k=v)
add_task q >/dev/null
tok=$(tq lease q --worker w -o json | jq -r .lease.token)
tq done "$id" --lease "$tok" >/dev/null
expect_exit 0 "$TASKQ" db check
expect_out "ok: schema version $latest, 2 tasks"

section "db vacuum on PostgreSQL"
tq purge --queue q >/dev/null
expect_exit 0 "$TASKQ" --db "$url" db vacuum
no_secret
expect_out_empty
expect_exit 0 "$TASKQ" list -o id
expect_out $((id + 1))
expect_exit 0 "$TASKQ" db check

section "db backup on PostgreSQL points to pg_dump"
expect_exit 2 "$TASKQ" --db "$url" db backup "$scratch/b.db"
one_line_error
no_secret
expect_err_contains "pg_dump"
check "no file was written" test ! -e "$scratch/b.db"

section "db check finds what differs from taskq's schema and rules"
sql 'DROP INDEX tasks_ready'
expect_exit 5 "$TASKQ" --db "$url" db check
one_line_error
no_secret
expect_err_contains "index tasks_ready is missing from the schema"
expect_exit 0 "$TASKQ" db migrate # migrate does not repair by hand-made changes
expect_exit 5 "$TASKQ" db check
fresh_db
id=$(add_task q)
sql 'ALTER TABLE tasks ADD COLUMN colour TEXT'
expect_exit 5 "$TASKQ" db check
one_line_error
expect_err_contains "table tasks differs from schema version $latest"
fresh_db
id=$(add_task q)
sql "UPDATE tasks SET state = 'fault' WHERE id = $id"
expect_exit 5 "$TASKQ" db check
one_line_error
expect_err_contains "fault"

section "a schema newer than this taskq is exit 5, and nothing changes"
fresh_db
id=$(add_task q)
url=$(url_with "$(dbname)")
sql "INSERT INTO taskq_schema (version, name) VALUES (99, 'from the future')"
before=$(sql 'SELECT id, state, rev FROM tasks ORDER BY id')
for c in "db check" "db migrate" "list" "add q" "lease q" "show $id" "export" "db vacuum"; do
  # shellcheck disable=SC2086 # each command's words
  expect_exit 5 "$TASKQ" --db "$url" $c
  one_line_error
  no_secret
  expect_err_contains "schema version 99 is newer than this taskq understands ($latest)"
done
expect_exit 0 "$TASKQ" --db "$url" db path
expect_eq "$(sql 'SELECT id, state, rev FROM tasks ORDER BY id')" "$before" "no task changed"
expect_eq "$(sql 'SELECT max(version) FROM taskq_schema')" 99 "the schema table is untouched"

section "connection failures are exit 5, one line, no password"
fresh_db
bad_port=$(PGPORT=1 url_with "$(dbname)")
for target in \
  "$bad_port" \
  "postgresql://$user:$pw_enc@127.0.0.1:1/$(dbname)" \
  "$(url_with "taskq_no_such_database_$$")" \
  "$(url_with "$(dbname)" "$pw_enc" "taskq_no_such_role_$$")" \
  "postgresql://$user:$pw_enc@[::1/$(dbname)" \
  "postgresql://$user@/$(dbname)?password=$pw_enc%zz"; do
  for c in "list" "add q" "db check" "db migrate" "db vacuum" "export"; do
    # shellcheck disable=SC2086
    expect_exit 5 "$TASKQ" --db "$target" $c
    one_line_error
    no_secret
  done
  expect_err_contains "cannot connect to database "
done
expect_exit 5 "$TASKQ" --db "$(url_with "taskq_no_such_database_$$")" list
expect_err_contains "taskq_no_such_database_$$"
expect_err_word "exist"
expect_exit 5 env TASKQ_DB="$bad_port" "$TASKQ" wait 1 --timeout 5s
one_line_error
no_secret
expect_exit 5 env TASKQ_DB="$bad_port" "$TASKQ" events --follow
one_line_error
no_secret

section "a server that goes away: waiting commands with --reconnect-for 0 end with exit 5"
# (By default they connect again: tests/cli/pg_restart.sh.)
fresh_db
id=$(add_task q)
db=$(dbname)
# listening: a backend of taskq's database waits in LISTEN.
listening() {
  [[ $(psql -XAtq -d "$db" -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db' AND query = 'LISTEN taskq' AND pid <> pg_backend_pid()") -ge 1 ]]
}
cut_off() {
  psql -XAtq -d "$db" -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '$db' AND backend_type = 'client backend' AND pid <> pg_backend_pid()" >/dev/null 2>&1
}
for c in "wait $id --reconnect-for 0" "events --follow --reconnect-for 0" \
  "run idle --reconnect-for 0 -- true"; do
  unset TASKQ_NOW
  # shellcheck disable=SC2086
  "$TASKQ" --db "$(url_with "$db")" $c >gone.out 2>gone.err &
  pid=$!
  check "$c waits" wait_until 10 listening
  cut_off
  wait "$pid"
  rc=$?
  out=$(<gone.out) err=$(<gone.err) cmd="taskq $c"
  expect_eq "$rc" 5 "exit status of $c when the server goes away"
  # A waiting command may have said a note first (its queue has no tasks
  # yet, no worker leases from it): the error is one line besides them.
  expect_err_format
  expect_eq "$(grep -v -e '^taskq: note: ' -e '^taskq: no worker has leased' \
    <<<"$err" | grep -c .)" 1 "error lines on stderr of $cmd"
  no_secret
  expect_err_contains "lost the connection"
  set_now 2026-11-21T08:00:00Z
done

section "a refused password is exit 5, one line, without the password"
if pg_password_cluster 5433; then
  bad=wrong-pw-$$
  at="host=$auth&port=5433"
  expect_exit 0 "$TASKQ" --db "postgresql://taskq:$good@/postgres?$at" add q
  expect_out 1
  for c in "list" "add q" "db check" "db path"; do
    # shellcheck disable=SC2086
    expect_exit 0 "$TASKQ" --db "postgresql://taskq:$good@/postgres?$at" $c
    expect_not_contains "$out$err" "$good" "output of $cmd"
  done
  for c in "list" "add q" "db check" "db migrate" "db vacuum" "export" "wait 1"; do
    # shellcheck disable=SC2086
    expect_exit 5 "$TASKQ" --db "postgresql://taskq:$bad@/postgres?$at" $c
    one_line_error
    expect_err_contains "password authentication failed for user \"taskq\""
    expect_not_contains "$out$err" "$bad" "output of $cmd"
    # shellcheck disable=SC2086
    expect_exit 5 "$TASKQ" --db "postgresql://taskq@/postgres?$at&password=$bad" $c
    expect_err_contains "password authentication failed"
    expect_not_contains "$out$err" "$bad" "output of $cmd"
  done
  expect_exit 5 env PGPASSWORD="$bad" "$TASKQ" --db "postgresql://taskq@/postgres?$at" list
  one_line_error
  expect_not_contains "$err" "$bad" "stderr of $cmd"
  expect_exit 5 env -u PGPASSWORD "$TASKQ" --db "postgresql://taskq@/postgres?$at" list
  one_line_error
  expect_err_contains "no password supplied"
  pg_password_cluster_stop
fi
