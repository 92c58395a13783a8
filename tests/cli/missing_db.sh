# No silent new databases (doc/reference/invocation.md#database): a command
# that only reads or works on a SQLite file that does not exist exits 5, says
# so, and creates nothing (the folder's listing is the same before and after);
# the commands that add something create it; an explicit --db whose folder does
# not exist is refused by every command, never a created folder tree.
# On PostgreSQL, where the server's database exists, the same holds for
# taskq's schema in it.

set_now 2026-11-24T09:00:00Z

# The commands that only read or work on a database; those that add.
read_cmds=$(cat <<'EOF_CMDS'
list
list -o json
show 1
stats
why 1
metrics
events
export
wait 1
progress q
lease q
lease q --wait 1s
run q --until-empty -- true
tick
heartbeat 1 --lease t
done 1 --lease t
fail 1 --lease t --error e
pause 1
resume --queue q
sleep 1 --for 1h
kill 1
release 1
checkpoint 1
send 1 pause
retry 1
requeue q
purge
queue list
queue resume q
queue redrive a b
schedule list
schedule show s
schedule pause s
schedule rm s
gate list
gate rm g
flow list
flow show 1
flow wait 1
flow suspend 1
db check
db backup copy.db
db vacuum
EOF_CMDS
)
add_cmds=$(cat <<'EOF_CMDS'
add q
add q --jsonl /dev/null
tx -
schedule add s q --every hour
gate add g q --keys a
queue set q --max-running 2
queue pause q
db migrate
EOF_CMDS
)

if sqlite_only; then
  mkdir -p d
  db=$PWD/d/taskq.db

  section "reading or working on a missing database exits 5, creates nothing"
  while read -r line; do
    read -ra words <<<"$line"
    before=$(find "$scratch/d" | sort)
    expect_exit 5 "$TASKQ" --db "$db" "${words[@]}" </dev/null
    expect_eq "$err" "taskq: no database at $db (the first add creates it)" \
      "stderr of taskq $line"
    expect_eq "$(find "$scratch/d" | sort)" "$before" "files after taskq $line"
  done <<<"$read_cmds"
  check "no file at all in d/" test -z "$(ls -A d)"
  expect_exit 0 "$TASKQ" --db "$db" db path
  expect_out "$db"

  section "the commands that add something create it"
  n=0
  while read -r line; do
    n=$((n + 1))
    read -ra words <<<"${line//@/$n}"
    rm -f "$db" "$db-wal" "$db-shm"
    expect_exit 0 "$TASKQ" --db "$db" "${words[@]}" <<<'{"create":[{"queue":"t"}]}'
    check "taskq $line created the database" test -f "$db"
  done <<<"$add_cmds"
  rm -f "$db" "$db-wal" "$db-shm"
  printf '{"name": "f", "pattern": "linear", "atoms": [{"name": "a", "execute": {"queue": "fq"}}]}\n' >flow.json
  expect_exit 0 "$TASKQ" --db "$db" flow submit flow.json
  check "flow submit created the database" test -f "$db"
  "$TASKQ" --db "$db" export >dump.jsonl
  rm -f "$db" "$db-wal" "$db-shm"
  expect_exit 0 "$TASKQ" --db "$db" import dump.jsonl
  check "import created the database" test -f "$db"

  section "an explicit --db in a missing folder: refused, no folder made"
  for line in "add q" "list" "lease q" "db migrate" "queue set q --max-running 1"; do
    read -ra words <<<"$line"
    before=$(find "$scratch" -path "$scratch/.*" -prune -o -print | sort)
    expect_exit 5 "$TASKQ" --db "$scratch/no/such/taskq.db" "${words[@]}"
    expect_err_format
    expect_exit 5 env TASKQ_DB="$scratch/no/such/taskq.db" "$TASKQ" "${words[@]}"
    expect_eq "$(find "$scratch" -path "$scratch/.*" -prune -o -print | sort)" "$before" \
      "files after taskq $line in a missing folder"
  done
  check "no folder no/" test ! -e "$scratch/no"

  section "the default location's folders are created by add only"
  home=$scratch/fresh-home
  mkdir "$home"
  expect_exit 5 env -u TASKQ_DB HOME="$home" XDG_DATA_HOME= "$TASKQ" list
  check "list made no folder" test -z "$(ls -A "$home")"
  expect_exit 0 env -u TASKQ_DB HOME="$home" XDG_DATA_HOME= "$TASKQ" add q
  check "add made the default database" test -f "$home/.local/share/taskq/taskq.db"
else
  # A server's database exists: taskq's schema in it is what is missing
  # (doc/postgresql.md#a-shared-server).
  section "PostgreSQL: reading or working on a database without taskq's schema exits 5, creates nothing"
  before=$(db_dump)
  while read -r line; do
    read -ra words <<<"$line"
    expect_exit 5 "$TASKQ" "${words[@]}" </dev/null
    expect_eq "$err" "taskq: no taskq schema taskq in database $TASKQ_DB (the first add creates it)" \
      "stderr of taskq $line"
    expect_eq "$(db_dump)" "$before" "database after taskq $line"
  done <<<"$read_cmds"

  section "PostgreSQL: the commands that add something create the schema"
  n=0
  while read -r line; do
    n=$((n + 1))
    read -ra words <<<"${line//@/$n}"
    fresh_db "adds$n"
    expect_exit 0 "$TASKQ" "${words[@]}" <<<'{"create":[{"queue":"t"}]}'
    expect_contains "$(db_dump)" "column taskq.tasks.id" "taskq $line created the schema"
  done <<<"$add_cmds"
fi
