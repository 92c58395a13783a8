# taskq's tables in a schema of their own (doc/reference/postgresql.md#schema):
# a database taskq did not make is never written to by a read (exit 5, one
# line, nothing created); `add` creates schema taskq and nothing else; an
# application's own `tasks` table in public is never touched and taskq works
# beside it (db vacuum too leaves it alone); two schemas (?schema=NAME) in
# one database are two queues that do not see each other; a schema that
# holds what taskq did not make, or a half-made one, is exit 5 with one line
# and changes nothing; an older
# taskq's tables in public move into schema taskq with every task; and a
# least-privilege worker role (USAGE and DML only) runs add, lease and done.
#
# Runs only with TASKQ_TEST_BACKEND=postgresql (uses psql on the server the
# PG* variables name). TASKQ_BEFORE names an older taskq binary (one that
# made its tables in public) for one more upgrade; without it, the old
# layout is made with ?schema=public.

if [[ $backend != postgresql ]]; then
  section "skipped"
  check "skipped: PostgreSQL's schemas; run it with TASKQ_TEST_BACKEND=postgresql" true
  return 0
fi

set_now 2026-11-21T08:00:00Z

# The current database's name; psql on it as an application (its own
# search_path: public), and as it sees taskq's schema.
dbname() { printf '%s' "${TASKQ_DB##*/}"; }
app_sql() { psql -XAtq -v ON_ERROR_STOP=1 -d "$(dbname)" -c "$1" 3>&-; }
schemas() {
  app_sql "SELECT string_agg(nspname, ' ' ORDER BY nspname) FROM pg_namespace
           WHERE nspname NOT LIKE 'pg!_%' ESCAPE '!' AND nspname <> 'information_schema'"
}
tables_in() {
  app_sql "SELECT coalesce(string_agg(tablename, ' ' ORDER BY tablename), '')
           FROM pg_tables WHERE schemaname = '$1'"
}
# jlist FILTER: jq FILTER on the last command's JSON Lines, as one array.
jlist() { jq -rcs "$1" <<<"$out" 2>/dev/null || echo "<stdout is not JSON Lines: $out>"; }
one_line_error() {
  expect_err_format
  expect_eq "$(grep -c . <<<"$err")" 1 "lines on stderr of $cmd"
}
latest=$("$TASKQ" --db "$scratch/versions.db" db migrate)

section "an application's database with only customers: reads and workers create nothing"
fresh_db customers
app_sql "CREATE TABLE customers (id int PRIMARY KEY, name text);
         INSERT INTO customers VALUES (1, 'ada'), (2, 'bob')"
before=$(db_dump)
for c in "list" "stats" "lease q --worker w" "db check" "show 1" "export"; do
  # shellcheck disable=SC2086
  expect_exit 5 "$TASKQ" $c
  one_line_error
  expect_err_contains "no taskq schema taskq in database $TASKQ_DB (the first add creates it)"
  expect_eq "$(db_dump)" "$before" "nothing created by $c"
done

section "add creates schema taskq, and only it"
id=$(add_task q --payload '{"n": 1}')
expect_eq "$(schemas)" "public taskq" "schemas after add"
expect_eq "$(tables_in public)" "customers" "tables in public after add"
expect_eq "$(app_sql 'SELECT id, name FROM customers ORDER BY id')" $'1|ada\n2|bob' "customers untouched"
expect_contains "$(tables_in taskq)" "taskq_schema" "taskq's tables in schema taskq"
expect_exit 0 "$TASKQ" list -o id
expect_out "$id"
expect_exit 0 "$TASKQ" db check
expect_out "ok: schema version $latest, 1 tasks"

section "an application's own public.tasks: taskq works beside it, its rows unchanged"
fresh_db apptasks
app_sql "CREATE TABLE tasks (id serial PRIMARY KEY, title text NOT NULL, state text);
         INSERT INTO tasks (title, state) VALUES ('write report', 'open'), ('call bob', 'done')"
app_rows() { app_sql 'SELECT * FROM public.tasks ORDER BY id'; }
rows=$(app_rows)
before=$(db_dump)
expect_exit 5 "$TASKQ" list
one_line_error
expect_eq "$(db_dump)" "$before" "list changed nothing"
a=$(add_task q)
b=$(add_task q)
tok=$(tq lease q --worker w -o json | jq -r .lease.token)
expect_exit 0 "$TASKQ" done "$a" --lease "$tok"
expect_exit 0 "$TASKQ" list -o json
expect_eq "$(jlist '[.[] | "\(.id) \(.state)"] | join(",")')" "$a completed,$b runnable" "taskq's tasks"
expect_eq "$(app_rows)" "$rows" "the application's tasks rows"
expect_eq "$(tables_in public)" "tasks" "public holds only the application's table"
expect_exit 0 "$TASKQ" db check
expect_out "ok: schema version $latest, 2 tasks"
expect_exit 0 "$TASKQ" export
expect_eq "$(grep -c . <<<"$out")" 2 "export: taskq's two tasks, one a line"
# db vacuum: taskq's tables only (the statistics reach the view within a
# second or so).
vacuums() { app_sql "SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = '$1' AND relname = 'tasks'"; }
expect_exit 0 "$TASKQ" db vacuum
taskq_vacuumed() { (($(vacuums taskq) > 0)); }
check "db vacuum vacuumed taskq.tasks" wait_until 10 taskq_vacuumed
expect_eq "$(vacuums public)" 0 "vacuums of the application's public.tasks"

section "two schemas in one database: two queues that do not see each other"
fresh_db two
base=$TASKQ_DB
a_db="$base?schema=team_a"
b_db="$base?schema=team_b"
expect_exit 0 "$TASKQ" --db "$a_db" add q --payload '"a"'
expect_exit 0 "$TASKQ" --db "$b_db" add q --payload '"b1"'
expect_exit 0 "$TASKQ" --db "$b_db" add q --payload '"b2"'
expect_eq "$(schemas)" "public team_a team_b" "schemas"
expect_exit 0 "$TASKQ" --db "$a_db" list -o json
expect_eq "$(jlist '[.[].payload] | join(",")')" "a" "team_a's tasks"
expect_exit 0 "$TASKQ" --db "$b_db" list -o json
expect_eq "$(jlist '[.[].payload] | join(",")')" "b1,b2" "team_b's tasks"
expect_exit 0 "$TASKQ" --db "$a_db" lease q --worker w -o json
expect_eq "$(jout .payload)" "a" "team_a leases its own task"
expect_exit 75 "$TASKQ" --db "$a_db" lease q --worker w
expect_exit 5 "$TASKQ" --db "$base" list
one_line_error
expect_err_contains "no taskq schema taskq"
expect_exit 0 "$TASKQ" --db "$b_db" db path
expect_out "$b_db"
for db in "$a_db" "$b_db"; do
  expect_exit 0 "$TASKQ" --db "$db" db check
  expect_match "$out" "^ok: schema version $latest"
done
# A schema chosen the older way, with the search_path in libpq's options.
expect_exit 0 "$TASKQ" --db "$base?options=-csearch_path%3Dlegacy" add q --payload '"l"'
expect_exit 0 "$TASKQ" --db "$base?schema=legacy" list -o json
expect_eq "$(jlist '[.[].payload] | join(",")')" "l" "options=-csearch_path=legacy is schema legacy"
expect_eq "$(schemas)" "legacy public team_a team_b" "schemas"
for bad in Team_A "a-b" 1st pg_x ""; do
  expect_exit 2 "$TASKQ" --db "$base?schema=$bad" list
  one_line_error
  expect_err_contains "invalid schema in database URL"
done
# The bad value is not quoted: here it is a part of the password.
expect_exit 2 "$TASKQ" --db "postgresql://u:pa?schema=Se/cret@h/db" list
one_line_error
expect_not_contains "$err" "cret" "stderr of $cmd"

section "a schema taskq that taskq did not make, or a half-made one: exit 5, nothing changed"
fresh_db foreign
app_sql "CREATE SCHEMA taskq; CREATE TABLE taskq.tasks (x int); INSERT INTO taskq.tasks VALUES (7)"
before=$(db_dump)
for c in "add q" "list" "db migrate"; do
  # shellcheck disable=SC2086
  expect_exit 5 "$TASKQ" $c
  one_line_error
  expect_err_contains "its schema taskq holds tables taskq did not make"
  expect_eq "$(db_dump)" "$before" "nothing changed by $c"
done
fresh_db halfmade
add_task q >/dev/null
app_sql "DELETE FROM taskq.taskq_schema WHERE version = $latest"
before=$(db_dump)
for c in "list" "add q"; do
  # shellcheck disable=SC2086
  expect_exit 5 "$TASKQ" $c
  one_line_error
  expect_err_contains "is not as taskq's migrations left it"
  expect_eq "$(db_dump)" "$before" "nothing changed by $c"
done

# old_layout: the tasks of an older taskq's database in public: three tasks,
# one completed, one leased, one with labels; an application's table beside.
old_layout() { # old_layout TASKQ-COMMAND...
  "$@" add q --payload '{"n": 1}' >/dev/null &&
    "$@" add q --label k=v >/dev/null &&
    "$@" add r >/dev/null &&
    "$@" lease q --worker w -o json >"$scratch/lease.json" &&
    "$@" done 1 --lease "$(jq -r .lease.token "$scratch/lease.json")" >/dev/null &&
    "$@" lease q --worker w >/dev/null &&
    app_sql "CREATE TABLE customers (id int PRIMARY KEY); INSERT INTO customers VALUES (1)"
}
tasks_of() { app_sql "SELECT id, queue, state, payload FROM $1.tasks ORDER BY id"; }
states() { jq -cs '[.[] | [.id, .state]]' 2>&1; }

section "an older taskq's tables in public move into schema taskq, every task kept"
fresh_db upgrade
check "made the old layout with ?schema=public" old_layout "$TASKQ" --db "$TASKQ_DB?schema=public"
old=$(tasks_of public)
old_states=$("$TASKQ" --db "$TASKQ_DB?schema=public" list -o json | states)
expect_eq "$(schemas)" "public" "no schema taskq before"
expect_exit 0 "$TASKQ" list -o json
expect_eq "$(states <<<"$out")" "$old_states" "every task, as it was"
expect_eq "$(tasks_of taskq)" "$old" "the tasks' rows, moved"
expect_eq "$(tables_in public)" "customers" "public keeps only the application's table"
expect_exit 0 "$TASKQ" db check
expect_out "ok: schema version $latest, 3 tasks"
expect_exit 0 "$TASKQ" add q
expect_out 4

before_bin=${TASKQ_BEFORE:-/work/bb-before/taskq}
if [[ -x $before_bin ]]; then
  section "an older taskq binary's database (TASKQ_BEFORE) upgrades the same way"
  fresh_db before
  check "made the old layout with $before_bin" old_layout "$before_bin"
  old=$(tasks_of public)
  old_states=$("$before_bin" list -o json | states)
  old_version=$(app_sql 'SELECT max(version) FROM public.taskq_schema')
  expect_exit 0 "$TASKQ" list -o json
  expect_eq "$(states <<<"$out")" "$old_states" "every task, as it was"
  expect_eq "$(tasks_of taskq)" "$old" "the tasks' rows, moved"
  expect_eq "$(tables_in public)" "customers" "public keeps only the application's table"
  expect_eq "$(app_sql 'SELECT max(version) FROM taskq.taskq_schema')" "$latest" "migrated on from version $old_version"
  expect_exit 0 "$TASKQ" db check
  expect_out "ok: schema version $latest, 3 tasks"
fi

section "a public that holds a half-made old layout: exit 5, nothing moved"
fresh_db oldhalf
check "made the old layout" old_layout "$TASKQ" --db "$TASKQ_DB?schema=public"
app_sql "DROP TABLE public.gates"
before=$(db_dump)
expect_exit 5 "$TASKQ" list
one_line_error
expect_err_contains "schema public holds a half-made taskq schema"
expect_eq "$(db_dump)" "$before" "nothing moved"

section "least privilege: a worker role with USAGE and DML only"
fresh_db roles
app_sql "CREATE ROLE tq_owner_$$ LOGIN; CREATE ROLE tq_worker_$$ LOGIN;
         CREATE SCHEMA taskq AUTHORIZATION tq_owner_$$;
         REVOKE CREATE ON SCHEMA public FROM PUBLIC"
owner_db="$TASKQ_DB?user=tq_owner_$$"
worker_db="$TASKQ_DB?user=tq_worker_$$"
expect_exit 0 "$TASKQ" --db "$owner_db" db migrate
expect_out "$latest"
app_sql "SET ROLE tq_owner_$$;
         GRANT USAGE ON SCHEMA taskq TO tq_worker_$$;
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA taskq TO tq_worker_$$;
         GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA taskq TO tq_worker_$$;
         ALTER DEFAULT PRIVILEGES IN SCHEMA taskq
           GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO tq_worker_$$;
         ALTER DEFAULT PRIVILEGES IN SCHEMA taskq
           GRANT USAGE, SELECT ON SEQUENCES TO tq_worker_$$"
# A table a later upgrade makes (as the owner) is the worker's too.
app_sql "SET ROLE tq_owner_$$; CREATE TABLE taskq.later_$$ (n int)"
check "the worker may write a table made after the grants" \
  psql -XAtq -d "$(dbname)" -U "tq_worker_$$" -c "INSERT INTO taskq.later_$$ VALUES (1)"
app_sql "SET ROLE tq_owner_$$; DROP TABLE taskq.later_$$"
w=$(TASKQ_DB=$worker_db add_task q)
expect_exit 0 "$TASKQ" --db "$worker_db" lease q --worker w -o json
expect_exit 0 "$TASKQ" --db "$worker_db" done "$w" --lease "$(jout .lease.token)"
expect_exit 0 "$TASKQ" --db "$worker_db" list -o json
expect_eq "$(jlist '[.[] | "\(.id) \(.state)"] | join(",")')" "$w completed" "the worker's task"
expect_exit 0 "$TASKQ" db check # its scratch schema needs CREATE on the database
expect_out "ok: schema version $latest, 1 tasks"
expect_eq "$(tables_in public)" "" "nothing in public"
dropdb --if-exists --force -- "$(dbname)" 3>&-
psql -XAtq -d postgres -c "DROP ROLE tq_owner_$$; DROP ROLE tq_worker_$$" 3>&- >/dev/null
