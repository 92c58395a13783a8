# The database file (doc/reference/invocation.md#database, exit code 5, `taskq
# db ...`): where it lives, how it is created, and what happens when it is not
# ours.

set_now 2026-11-21T08:00:00Z

section "db path names the database in use"
expect_exit 0 "$TASKQ" db path
expect_out "$TASKQ_DB"
expect_exit 0 "$TASKQ" db path --db "$scratch/elsewhere.db"
expect_out "$scratch/elsewhere.db"
expect_exit 0 "$TASKQ" --db "$scratch/elsewhere.db" db path
expect_out "$scratch/elsewhere.db"
expect_exit 0 env TASKQ_DB="$scratch/env.db" "$TASKQ" db path
expect_out "$scratch/env.db"
expect_exit 0 env TASKQ_DB="$scratch/env.db" "$TASKQ" db path --db "$scratch/flag.db"
expect_out "$scratch/flag.db" # --db wins over TASKQ_DB

section "reading a missing database exits 5 and creates nothing"
# On PostgreSQL the harness has made the (empty) database already: taskq's
# schema is what is missing, and reads create none of it.
if sqlite_only; then
  missing="no database at $TASKQ_DB (the first add creates it)"
else
  missing="no taskq schema taskq in database $TASKQ_DB (the first add creates it)"
  before=$(db_dump)
fi
expect_exit 5 "$TASKQ" list
expect_err_contains "$missing"
expect_exit 5 "$TASKQ" list -o id
expect_out_empty
expect_exit 5 "$TASKQ" stats
expect_exit 5 "$TASKQ" show 1
if sqlite_only; then
  check "no database file after reads" test ! -e "$TASKQ_DB"
else
  expect_eq "$(db_dump)" "$before" "nothing created by the reads"
fi

# Files, their modes and folders: SQLite only.
if sqlite_only; then
  section "the first write creates the file, mode 0600, and the default folders"
  # doc/reference/invocation.md#database: an explicit path's folder is never
  # created.
  expect_exit 5 "$TASKQ" --db "$scratch/deep/er/new.db" add q
  expect_err_contains "$scratch/deep/er"
  check "no folder created" test ! -e "$scratch/deep"
  expect_exit 0 env -u TASKQ_DB XDG_DATA_HOME="$scratch/deep/er" "$TASKQ" add q
  check "database file created" test -f "$scratch/deep/er/taskq/taskq.db"
  expect_eq "$(stat -c %a "$scratch/deep/er/taskq/taskq.db")" 600 \
    "mode of the new file"
fi
id=$(add_task q)
if sqlite_only; then
  expect_eq "$(stat -c %a "$TASKQ_DB")" 600 "mode of the default test database"
  # The umask must not widen it.
  expect_exit 0 bash -c 'umask 000; "$TASKQ" --db "$1" add q' _ "$scratch/open.db"
  expect_eq "$(stat -c %a "$scratch/open.db")" 600 "mode under umask 000"
fi

section "db check, migrate on a good database"
expect_exit 0 "$TASKQ" db check
expect_exit 0 "$TASKQ" db migrate
expect_exit 0 "$TASKQ" db migrate
expect_exit 0 "$TASKQ" show "$id"

# The rest is about files: a backup to a file (on PostgreSQL, pg_dump),
# files that are not taskq databases, PRAGMA user_version, a torn file.
if sqlite_only; then
  section "db backup writes a database that passes db check"
  tok=$(tq lease q | jq -r .lease.token)
  tq done "$id" --lease "$tok" >/dev/null
  other=$(add_task q2 --payload '{"x":[1,2]}')
  expect_exit 0 "$TASKQ" db backup backup.db
  check "backup file exists" test -s backup.db
  expect_exit 0 "$TASKQ" --db backup.db db check
  expect_exit 0 "$TASKQ" --db backup.db show "$id" -o json
  expect_eq "$out" "$(snapshot "$id")" "task $id in the backup"
  expect_exit 0 "$TASKQ" --db backup.db show "$other" -o json
  expect_eq "$out" "$(snapshot "$other")" "task $other in the backup"
  expect_exit 0 "$TASKQ" --db backup.db list -o id
  expect_eq "$(sort -n <<<"$out" | tr '\n' ' ')" \
    "$("$TASKQ" list -o id | sort -n | tr '\n' ' ')" "ids in the backup"
  # The backup is a copy: writing to it leaves the original alone.
  expect_exit 0 "$TASKQ" --db backup.db kill "$other"
  expect_eq "$(state "$other")" runnable "original after a write to the backup"

  section "a file that is not a database is refused with exit 5"
  echo hello >x.db
  for args in "list" "add q" "show 1" "stats" "db check" "db migrate"; do
    # shellcheck disable=SC2086 # args are words
    expect_exit 5 "$TASKQ" --db x.db $args
    expect_err_format
    # sqlite's own "file is not a database" alone has no context.
    expect_ne "$err" "taskq: file is not a database" "stderr of $cmd"
  done
  expect_eq "$(cat x.db)" hello "x.db after the refused commands"

  section "a database with a newer schema is refused with exit 5"
  expect_exit 0 "$TASKQ" --db new.db add q
  newer_id=$out
  sqlite3 new.db 'PRAGMA user_version=999'
  for args in "list" "add q" "show $newer_id" "kill $newer_id" "lease q" \
    "stats" "db check" "db migrate"; do
    # shellcheck disable=SC2086 # args are words
    expect_exit 5 "$TASKQ" --db new.db $args
    expect_err_format
    expect_match "$err" '[Ss]chema|[Vv]ersion|newer' "stderr of $cmd"
  done
  expect_eq "$(sqlite3 new.db 'PRAGMA user_version')" 999 \
    "schema version after the refused commands"
  expect_eq "$(sqlite3 new.db "SELECT state FROM tasks WHERE id = $newer_id")" \
    runnable "task state in the newer database"

  section "a path that cannot be opened as a database is refused with exit 5"
  mkdir -p adir.db
  expect_exit 5 "$TASKQ" --db adir.db add q
  expect_err_format
  expect_exit 5 "$TASKQ" --db adir.db list

  section "a truncated database is found by db check"
  # Enough tasks for the tables to span many pages, so half the file holds
  # b-tree pages that db check must notice are missing.
  for i in $(seq 1 300); do
    printf '{"i":%d,"pad":"%0200d"}\n' "$i" 0
  done >many.jsonl
  expect_exit 0 "$TASKQ" --db corrupt.db add q --jsonl many.jsonl
  # Move everything from the WAL into the main file first, so that cutting
  # the main file loses pages for sure.
  sqlite3 corrupt.db 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
  check "no WAL left" test ! -s corrupt.db-wal
  truncate -s $(($(stat -c %s corrupt.db) / 2)) corrupt.db
  expect_exit 5 "$TASKQ" --db corrupt.db db check
  expect_err_format
fi
