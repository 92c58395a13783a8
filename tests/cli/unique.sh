# taskq add --unique KEY (doc/reference/commands.md#unique-tasks): while an
# unfinished task of the same queue has the key, add creates nothing, prints
# the existing id and says so on stderr; race-free under concurrent adds.

section "a second add with the key prints the first task's id"
fresh_db
expect_exit 0 "$TASKQ" add q --unique nightly --payload '{"n":1}'
first=$out
expect_eq "$err" "" "stderr of the first add"
expect_exit 0 "$TASKQ" add q --unique nightly --payload '{"n":2}'
expect_out "$first"
expect_err_contains "task $first has the unique key 'nightly'"
expect_err_contains "added nothing"
expect_eq "$(count_tasks)" 1 "tasks after the duplicate add"
expect_eq "$(field "$first" .payload)" '{"n":1}' "the first task is untouched"
expect_exit 0 "$TASKQ" add q --unique nightly -o json
expect_json "$out" .id "$first"
expect_exit 0 "$TASKQ" add other --unique nightly
check "another queue has its own keys" test "$out" != "$first"

section "the key is free again once its task is finished"
expect_exit 0 "$TASKQ" kill "$first"
expect_exit 0 "$TASKQ" add q --unique nightly
second=$out
check "a new task after the kill" test "$second" -gt "$first"
tok=$(tq lease q | jq -r .lease.token)
expect_exit 0 "$TASKQ" add q --unique nightly
expect_out "$second"
expect_exit 0 "$TASKQ" done "$second" --lease "$tok"
expect_exit 0 "$TASKQ" add q --unique nightly
check "a new task after done" test "$out" -gt "$second"

section "8 concurrent adders of one key create exactly one task"
fresh_db
for i in 1 2 3 4 5 6 7 8; do
  "$TASKQ" add race --unique once --payload "$i" >"add.$i.out" 2>"add.$i.err" &
done
wait
expect_eq "$("$TASKQ" list --queue race -o id | wc -l)" 1 "tasks in the queue"
winner=$("$TASKQ" list --queue race -o id)
expect_eq "$(cat add.[1-8].out | sort -u)" "$winner" "every adder printed the one id"
expect_eq "$(cat add.[1-8].err | grep -c 'added nothing')" 7 "adders told they added nothing"
expect_not_contains "$(cat add.[1-8].err)" "locked" "no adder saw a locked database"

# raw_sql SQL: runs SQL on $TASKQ_DB behind taskq's back.
raw_sql() {
  if [[ $TASKQ_DB == postgresql://* ]]; then
    PGOPTIONS='-c search_path=taskq' psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$TASKQ_DB" -c "$1"
  else
    sqlite3 "$TASKQ_DB" "$1"
  fi
}

# refused SQL: SQL fails (the database refuses it).
refused() { ! raw_sql "$1" 2>/dev/null; }

section "two unfinished tasks of one key: the database itself refuses it"
fresh_db
expect_exit 0 "$TASKQ" add q --unique k
expect_exit 0 "$TASKQ" add q
plain=$out
check "a second unfinished holder of k is refused" \
  refused "UPDATE tasks SET unique_key = 'k' WHERE id = $plain"
expect_eq "$(field "$plain" .unique)" null "the second task keeps no key"

section "upgrading a database that holds duplicates keeps the oldest holder"
# Schema 10 had a plain index: made here as it was, with a duplicate that
# the writers' lock kept out but that must not fail the upgrade.
fresh_db
expect_exit 0 "$TASKQ" add q --unique k
finished=$out
tok=$(tq lease q --worker w -o json | jq -r .lease.token)
expect_exit 0 "$TASKQ" done "$finished" --lease "$tok"
expect_exit 0 "$TASKQ" add q --unique k
older=$out
expect_exit 0 "$TASKQ" add q
later=$out
if [[ $TASKQ_DB == postgresql://* ]]; then
  rewind="DELETE FROM taskq_schema WHERE version >= 11"
else
  rewind="PRAGMA user_version = 10"
fi
# Schema 12's column goes too, so that the upgrade runs 11 and 12 again.
raw_sql "DROP INDEX events_errors; ALTER TABLE tasks DROP COLUMN attempts_base; DROP INDEX tasks_unique_key; CREATE INDEX tasks_unique ON tasks (queue, unique_key) WHERE unique_key IS NOT NULL AND state NOT IN ('completed', 'failed', 'killed'); UPDATE tasks SET unique_key = 'k' WHERE id = $later; $rewind"
expect_eq "$(raw_sql "SELECT count(*) FROM tasks WHERE unique_key = 'k' AND state = 'runnable'")" 2 \
  "two unfinished holders of k before the upgrade"
expect_exit 0 "$TASKQ" list -o id
expect_eq "$(count_tasks)" 3 "every task kept"
expect_eq "$(field "$older" .unique)" k "the older holder keeps its key"
expect_eq "$(field "$later" .unique)" null "the later one loses it"
expect_eq "$(field "$finished" .unique)" k "a finished task keeps its key"
expect_exit 0 "$TASKQ" db check
expect_exit 0 "$TASKQ" add q --unique k
expect_out "$older"

section "a task moved to a queue whose holder has its key drops the key"
# fail --move-to and queue redrive move a task to another queue; its key
# goes along unless an unfinished task there holds it already (then the
# move still happens, without the key).
fresh_db
expect_exit 0 "$TASKQ" add main --unique k
first=$out
tok=$(tq lease main --worker w -o json | jq -r .lease.token)
expect_exit 0 "$TASKQ" fail "$first" --lease "$tok" --error e --move-to dlq
expect_eq "$(field "$first" .queue)" dlq "the first moved to dlq"
expect_eq "$(field "$first" .unique)" k "keeping its key (dlq had no holder)"
expect_exit 0 "$TASKQ" add main --unique k
second=$out
check "main takes the key again" test "$second" != "$first"
tok=$(tq lease main --worker w -o json | jq -r .lease.token)
expect_exit 0 "$TASKQ" fail "$second" --lease "$tok" --error e --move-to dlq
expect_eq "$(field "$second" .queue)" dlq "the second moved to dlq too"
expect_eq "$(field "$second" .unique)" null "without the key its first holder has there"
expect_exit 0 "$TASKQ" add main --unique k
third=$out
expect_exit 0 "$TASKQ" queue redrive dlq main
expect_eq "$(field "$first" .queue)" main "redrive moved the first back"
expect_eq "$(field "$first" .unique)" null "without the key main's holder has"
expect_eq "$(field "$third" .unique)" k "main's holder keeps it"
expect_exit 0 "$TASKQ" db check

section "bad input changes nothing"
fresh_db
tq db migrate >/dev/null # count_tasks reads it (a missing one is exit 5)
expect_exit 2 "$TASKQ" add q --unique ''
expect_exit 2 "$TASKQ" add q --unique k --jsonl /dev/null
expect_err_format
expect_exit 2 "$TASKQ" add q --unique $'\xff'
expect_exit 2 "$TASKQ" add q --unique $'a\nb'
expect_err_format
expect_exit 2 "$TASKQ" add q --unique $'tab\there'
expect_eq "$(count_tasks)" 0 "tasks after refused adds"
