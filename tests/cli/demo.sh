# scripts/demo (what `scripts/setup demo` runs) works in a database of its
# own in a temporary folder that it deletes, and never writes to the
# user's default database: nothing appears under $HOME, $XDG_DATA_HOME or
# the TASKQ_DB it was given, and its temporary folder is gone after.

# It makes its own SQLite database whatever the backend: one run is enough.
if ! sqlite_only; then
  section "skipped"
  check "skipped: scripts/demo always runs on a SQLite file of its own" true
  return 0
fi

demo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)/demo
mkdir -p home xdg tmp
section "demo"
# The user's own settings must not leak in: TASKQ_DB names a file the demo
# must not create.
expect_exit 0 env HOME="$scratch/home" XDG_DATA_HOME="$scratch/xdg" \
  TMPDIR="$scratch/tmp" TASKQ_DB="$scratch/mine.db" bash "$demo"
expect_contains "$out" "database: $scratch/tmp/taskq-demo." "the demo names its own database"
expect_contains "$out" "flow show" "the demo ran to its end"
check "nothing under HOME" test -z "$(ls -A home)"
check "nothing under XDG_DATA_HOME" test -z "$(ls -A xdg)"
check "the TASKQ_DB it was given is not created" test ! -e mine.db
check "its temporary folder is deleted" test -z "$(ls -A tmp)"

section "default location unset"
# With XDG_DATA_HOME unset the default is ~/.local/share/taskq: still untouched.
expect_exit 0 env -u XDG_DATA_HOME -u TASKQ_DB HOME="$scratch/home" \
  TMPDIR="$scratch/tmp" bash "$demo"
check "nothing under ~/.local/share/taskq" test ! -e home/.local/share/taskq
check "its temporary folder is deleted" test -z "$(ls -A tmp)"
