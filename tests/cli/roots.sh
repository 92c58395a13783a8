# Root tasks, `add --root K=V,...` (doc/reference/commands.md#root-tasks,
# rescue Root): while another unfinished task has all these labels, the task is
# obsolete. `add` discards it (exit 0, nothing on stdout, a note on stderr); a
# task that becomes obsolete after it was added is never leased: the lease that
# meets it kills it, with the reason.

set_now 2026-11-21T08:00:00Z

section "add discards a task whose root task is unfinished"
fresh_db
r=$(add_task sync --label tenant=acme --label kind=full)
expect_exit 0 "$TASKQ" add partial --root tenant=acme,kind=full
expect_out_empty
expect_err_contains "not added"
expect_match "$err" "task $r([^0-9]|$)" "stderr names the root task"
expect_err_format
expect_exit 0 "$TASKQ" add partial --root tenant=acme -o json
expect_out_empty
expect_err_contains "not added"
expect_exit 0 "$TASKQ" add partial --root kind=full --root tenant=acme
expect_out_empty
expect_eq "$(count_tasks)" 1 "tasks after the discarded adds"
expect_exit 0 "$TASKQ" list --queue partial -o id
expect_out_empty

section "a root matches only when the task has all its labels"
expect_exit 0 "$TASKQ" add partial --root tenant=acme,kind=delta
expect_match "$out" '^[0-9]+$' "a new id"
kept=$out
expect_json "$(snapshot "$kept")" .root '{"kind":"delta","tenant":"acme"}'
expect_exit 0 "$TASKQ" add partial --root tenant=other
expect_match "$out" '^[0-9]+$' "a new id"
expect_eq "$(count_tasks)" 3 "tasks"

section "a task's own labels do not make it obsolete"
self=$(add_task selfq --label grp=1 --root grp=1)
expect_exit 0 "$TASKQ" lease selfq
expect_json "$out" .id "$self" "leased"

section "a task that becomes obsolete later is killed at lease, never leased"
fresh_db
x=$(add_task work --root tenant=beta --priority 9)
y=$(add_task work)
expect_json "$(snapshot "$x")" .state runnable "the task before its root exists"
root=$(add_task other --label tenant=beta --label extra=1)
expect_exit 0 "$TASKQ" lease work --worker w1
expect_json "$out" .id "$y" "the lease skips the obsolete task"
expect_exit 0 "$TASKQ" show "$x" -o json
expect_json "$out" .state killed "the obsolete task"
expect_json "$out" .reason "obsoleted by task $root"
expect_json "$out" .attempts 0 "attempts of the obsolete task"
expect_json "$out" .lease null "lease of the obsolete task"
expect_json "$out" '[.events[] | select(.message == "lease")] | length' 0 \
  "lease events of the obsolete task"
expect_exit 75 "$TASKQ" lease work --worker w2
expect_eq "$(state "$root")" runnable "the root task is untouched"

section "alone in its queue, the obsolete task is killed and lease exits 75"
z=$(add_task lonely --root tenant=gamma)
root=$(add_task other --label tenant=gamma)
expect_exit 75 "$TASKQ" lease lonely
expect_eq "$(state "$z")" killed "the obsolete task"
expect_eq "$(field "$z" .reason)" "obsoleted by task $root" "reason"

section "once the root task is finished, the task is not obsolete"
fresh_db
root=$(add_task roots --label job=nightly)
expect_exit 0 "$TASKQ" add follow --root job=nightly
expect_out_empty
expect_exit 0 "$TASKQ" lease roots
tok=$(jout .lease.token)
expect_exit 0 "$TASKQ" add follow --root job=nightly
expect_out_empty
expect_err_contains "not added"
expect_exit 0 "$TASKQ" done "$root" --lease "$tok"
expect_exit 0 "$TASKQ" add follow --root job=nightly
expect_match "$out" '^[0-9]+$' "added once the root task completed"
late=$out
expect_exit 0 "$TASKQ" lease follow
expect_json "$out" .id "$late" "leased"
killed_root=$(add_task roots --label job=weekly)
tq kill "$killed_root" >/dev/null
expect_exit 0 "$TASKQ" add follow --root job=weekly
expect_match "$out" '^[0-9]+$' "added once the root task was killed"

section "a root task that finishes before the lease leaves the task alone"
fresh_db
w=$(add_task rq --root phase=migrate)
root=$(add_task maint --label phase=migrate)
tq kill "$root" >/dev/null
expect_exit 0 "$TASKQ" lease rq
expect_json "$out" .id "$w" "leased: its root task is terminal"

section "root labels may hold commas in values"
fresh_db
expect_exit 0 "$TASKQ" add q --root files=a.png,b.png,owner=ann
expect_json "$(snapshot "$out")" .root '{"files":"a.png,b.png","owner":"ann"}'

section "bad --root values exit 2 and change nothing"
fresh_db
add_task q --label a=1 >/dev/null
for bad in '' '=x' 'novalue' ',a=1' 'bad key=1' $'a=\x01'; do
  expect_exit 2 "$TASKQ" add q --root "$bad"
  expect_err_format
done
printf '1\n' >one.jsonl
expect_exit 2 "$TASKQ" add q --root a=2 --jsonl one.jsonl
expect_err_contains "--root"
expect_exit 2 "$TASKQ" add q --root a=2 --broadcast
expect_eq "$(count_tasks)" 1 "tasks after the refused adds"
