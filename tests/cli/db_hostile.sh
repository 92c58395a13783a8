# The database file under hostile conditions: the clock of a write
# that waited for the lock, other programs' files, a damaged schema, a
# killed backup, folder modes, paths that are not files, read-only files.

# ms_of TIME: milliseconds since 1970 of an RFC 3339 time ("" when none).
ms_of() { date -u -d "$1" +%s%3N 2>/dev/null; }

# unchanged_files NAME ORIG: NAME is byte for byte ORIG, and SQLite left no
# file beside it.
unchanged_files() {
  check "$1 byte for byte unchanged" cmp -s "$1" "$2"
  local f
  for f in "$1-wal" "$1-shm" "$1-journal"; do
    check "no $f left" test ! -e "$f"
  done
}

# The lock is taken with the sqlite3 shell: SQLite only.
if sqlite_only; then
  section "a write decides with the time read once it holds the write lock"
  unset TASKQ_NOW
  fresh_db
  add_task q >/dev/null
  # Another process holds the write lock for 3 s (that is the scenario: the
  # lease waits on the busy timeout longer than it leases for).
  mkfifo lock.fifo
  sqlite3 "$TASKQ_DB" <lock.fifo >/dev/null 2>&1 &
  locker=$!
  exec 4>lock.fifo
  echo 'BEGIN IMMEDIATE; CREATE TEMP TABLE hold (x);' >&4
  check "the other writer holds the lock" wait_until 10 write_locked "$TASKQ_DB"
  (
    sleep 3
    echo 'ROLLBACK;' >&4
  ) &
  expect_exit 0 "$TASKQ" lease q --for 2s
  returned=$(now_ms)
  exec 4>&-
  wait "$locker"
  expect_jq "$out" '.lease != null' "the lease of a lease that waited"
  expires=$(ms_of "$(jout .lease.expires_at)")
  check "the lease ($(jout .lease.expires_at)) expires after lease returned" \
    test "${expires:-0}" -gt "$returned"
  # A lease that expires 2 s after it was written is live when lease returns.
  tok=$(jout .lease.token)
  id=$(jout .id)
  expect_exit 0 "$TASKQ" heartbeat "$id" --lease "$tok"
fi

section "TASKQ_NOW still freezes the time of a write"
set_now 2026-11-21T08:00:00Z
fresh_db
add_task q >/dev/null
expect_exit 0 "$TASKQ" lease q --for 2s
expect_time "$(jout .lease.expires_at)" 2026-11-21T08:00:02Z "frozen expiry"

# From here on: SQLite files (other programs' files, PRAGMAs, a schema damaged
# with the sqlite3 shell, a backup to a file, folder and file modes, paths that
# are not files, a read-only file).
if sqlite_only; then
  section "another program's database is refused with exit 5 and left untouched"
  sqlite3 other.sqlite "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
    INSERT INTO notes VALUES (1, 'hello');"
  cp other.sqlite other.orig
  for args in "list" "add q" "show 1" "stats" "lease q" "db check" "db migrate" \
    "db vacuum" "db backup other.bak"; do
    # shellcheck disable=SC2086 # args are words
    expect_exit 5 "$TASKQ" --db other.sqlite $args
    expect_err_format
    expect_err_contains other.sqlite
    expect_err_contains "not a taskq database"
    unchanged_files other.sqlite other.orig
  done
  check "no backup made of it" test ! -e other.bak

  # A table name taskq uses, in another program's file.
  sqlite3 clash.sqlite "CREATE TABLE tasks (id INTEGER PRIMARY KEY, what TEXT);
    PRAGMA user_version = 2;"
  cp clash.sqlite clash.orig
  expect_exit 5 "$TASKQ" --db clash.sqlite add q
  expect_err_format
  unchanged_files clash.sqlite clash.orig

  # Another program's database in WAL mode: no -wal/-shm left either.
  sqlite3 walled.sqlite 'PRAGMA journal_mode = WAL; CREATE TABLE t (x);' \
    >/dev/null
  cp walled.sqlite walled.orig
  expect_exit 5 "$TASKQ" --db walled.sqlite list
  unchanged_files walled.sqlite walled.orig

  # Another program's WAL with commits not yet checkpointed: closing must not
  # checkpoint them into its file (nor remove its WAL).
  sqlite3 pending.sqlite '.dbconfig no_ckpt_on_close on' \
    'PRAGMA journal_mode = WAL;' 'CREATE TABLE t (x); INSERT INTO t VALUES (1);' \
    >/dev/null
  check "the other program left its WAL" test -s pending.sqlite-wal
  cp pending.sqlite pending.orig
  cp pending.sqlite-wal pending.wal.orig
  expect_exit 5 "$TASKQ" --db pending.sqlite list
  check "pending.sqlite byte for byte unchanged" cmp -s pending.sqlite pending.orig
  check "its WAL byte for byte unchanged" cmp -s pending.sqlite-wal pending.wal.orig
  expect_eq "$(sqlite3 pending.sqlite 'SELECT count(*) FROM t')" 1 "its rows"

  # Marked as another program's, even without tables.
  sqlite3 marked.sqlite 'PRAGMA application_id = 42;'
  cp marked.sqlite marked.orig
  expect_exit 5 "$TASKQ" --db marked.sqlite add q
  unchanged_files marked.sqlite marked.orig

  section "an empty file is initialised, and taskq's files carry its mark"
  : >empty.db
  expect_exit 0 "$TASKQ" --db empty.db add q
  expect_exit 0 "$TASKQ" --db empty.db db check
  expect_eq "$(sqlite3 empty.db 'PRAGMA application_id')" 1953721201 \
    "application_id of a new database"
  expect_eq "$(sqlite3 empty.db 'PRAGMA journal_mode')" wal "journal mode"
  # A database made before the mark: known by its version and tables.
  sqlite3 empty.db 'PRAGMA application_id = 0;'
  expect_exit 0 "$TASKQ" --db empty.db list -o id
  expect_out 1
  expect_exit 0 "$TASKQ" --db empty.db add q

  section "db check verifies the whole schema"
  fresh_db
  add_task q >/dev/null
  expect_exit 0 "$TASKQ" db check
  # The planner's statistics are not a change to the schema.
  sqlite3 "$TASKQ_DB" 'ANALYZE'
  expect_exit 0 "$TASKQ" db check
  # Everything into the main file, so that copying it copies the database.
  sqlite3 "$TASKQ_DB" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
  cp "$TASKQ_DB" schema.orig
  changes=(
    "events|DROP TABLE events"
    "events_time|DROP INDEX events_time"
    "tasks|ALTER TABLE tasks ADD COLUMN extra TEXT"
    "mine|CREATE INDEX mine ON tasks (payload)"
    "mine|CREATE TRIGGER mine AFTER INSERT ON tasks BEGIN SELECT 1; END"
    "tasks_ready|DROP INDEX tasks_ready; CREATE INDEX tasks_ready ON tasks (queue)"
  )
  for pair in "${changes[@]}"; do
    fresh_db
    cp schema.orig "$TASKQ_DB"
    sqlite3 "$TASKQ_DB" "${pair#*|}"
    expect_exit 5 "$TASKQ" db check
    expect_err_format
    expect_err_word "${pair%%|*}"
  done
  # Several problems make one readable line, without the SQL of each object.
  fresh_db
  cp schema.orig "$TASKQ_DB"
  sqlite3 "$TASKQ_DB" 'DROP INDEX events_time; DROP INDEX tasks_ready'
  expect_exit 5 "$TASKQ" db check
  expect_err_contains "missing from the schema; index"
  expect_not_contains "$err" '\n' "stderr of db check (no escaped newline)"
  expect_not_contains "$err" "CREATE" "stderr of db check (no SQL)"
  # A command that meets the damage says so, as exit 5, naming the file.
  fresh_db
  cp schema.orig "$TASKQ_DB"
  sqlite3 "$TASKQ_DB" 'DROP TABLE events'
  expect_exit 5 "$TASKQ" lease q
  expect_err_format
  expect_err_contains "$TASKQ_DB"

  section "a killed backup leaves no file at the target"
  fresh_db big
  # About 40 MB, so that the copy is still under way when it is killed.
  for i in $(seq 1 400); do
    printf '{"i":%d,"pad":"%0100000d"}\n' "$i" 0
  done >big.jsonl
  tq add q --jsonl big.jsonl >/dev/null
  rm big.jsonl
  # Killed by the kernel once it has written 8 MB of the 40 (SIGXFSZ: no
  # handler runs, as with kill -9), at a known point of the copy.
  expect_exit 153 bash -c 'ulimit -f 8192; "$TASKQ" db backup big.bak; exit $?'
  check "no file at the target after a backup killed half-way" test ! -e big.bak
  temp_appears() { compgen -G '.big.bak.taskq-backup-*' >/dev/null; }
  check "the half-written copy was a temporary file" temp_appears
  rm -f .big.bak.taskq-backup-*
  # kill -9 as soon as the temporary file appears: at whatever point the copy
  # has reached, the target is absent or a whole backup.
  "$TASKQ" db backup big.bak 2>/dev/null &
  backup=$!
  check "the backup writes a temporary file first" wait_until 10 temp_appears
  kill -9 "$backup" 2>/dev/null
  wait "$backup" 2>/dev/null
  if [[ -e big.bak ]]; then
    expect_exit 0 "$TASKQ" --db big.bak db check
    expect_contains "$out" "400 tasks" "db check of a backup that finished"
    rm big.bak
  else
    check "no file at the target after kill -9" test ! -e big.bak
  fi
  rm -f .big.bak.taskq-backup-*
  expect_exit 0 "$TASKQ" db backup big.bak
  expect_exit 0 "$TASKQ" --db big.bak db check
  expect_contains "$out" "400 tasks" "db check of the backup"
  expect_eq "$(stat -c %a big.bak)" 600 "mode of the backup"
  check "no temporary file left" test -z "$(compgen -G '.big.bak.taskq-backup-*')"
  expect_exit 2 "$TASKQ" db backup big.bak
  expect_err_contains "exists"

  section "folders taskq creates are 0700 under any umask"
  expect_exit 0 env -u TASKQ_DB XDG_DATA_HOME="$scratch/u0/v0" \
    bash -c 'umask 000; "$TASKQ" add q'
  expect_eq "$(stat -c %a "$scratch/u0")" 700 "mode of a new folder"
  expect_eq "$(stat -c %a "$scratch/u0/v0")" 700 "mode of a new subfolder"
  expect_eq "$(stat -c %a "$scratch/u0/v0/taskq")" 700 "mode of taskq's folder"
  expect_eq "$(stat -c %a "$scratch/u0/v0/taskq/taskq.db")" 600 "mode of the file"
  expect_exit 0 bash -c 'umask 000; "$TASKQ" db backup "$1"' _ \
    "$scratch/u1/b.db"
  expect_eq "$(stat -c %a "$scratch/u1")" 700 "mode of a backup's new folder"

  section "a path that is not a regular file is refused before SQLite opens it"
  mkfifo fifo.db
  mkdir folder.db
  for path in fifo.db folder.db /dev/null; do
    had_journal=no
    [[ -e $path-journal ]] && had_journal=yes
    for args in "list" "add q" "db check"; do
      # shellcheck disable=SC2086 # args are words
      expect_exit 5 "$TASKQ" --db "$path" $args
      expect_err_format
      expect_err_contains "$path"
    done
    if [[ $had_journal == no ]]; then
      check "no $path-journal" test ! -e "$path-journal"
    fi
  done
  check "the fifo is still a fifo" test -p fifo.db
  check "the folder is still empty" test -z "$(ls -A folder.db)"

  section "a read-only database: the error names the file"
  if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
    chmod o+x "$scratch" # for the other user
    mkdir -p ro
    tq --db ro/r.db add q >/dev/null
    # The file and its -wal and -shm readable, not writable, by the user.
    chmod 755 ro
    chmod 644 ro/r.db*
    as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    for args in "add q" "lease q" "kill 1"; do
      # shellcheck disable=SC2086 # args are words
      expect_exit 5 as_nobody "$TASKQ" --db ro/r.db $args
      expect_err_format
      expect_err_contains ro/r.db
      expect_eq "$(wc -l <<<"$err")" 1 "lines of the message"
    done
    expect_exit 0 as_nobody "$TASKQ" --db ro/r.db list -o id
    expect_out 1
  fi
fi
