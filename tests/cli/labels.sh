# Label matching (rescue's matcher,
# doc/reference/commands.md#labels-and-matching): `--match K=V` with an exact
# key, `*` for any value, `*` alone for any key, a key with one `*` at its
# start, end or both matched as a part of a key, and `*=*` for every task;
# the same patterns in lease, list and the bulk operator commands.

set_now 2026-11-21T08:00:00Z

fresh_db
img=$(add_task lab --label media.kind=image --label team=a)
vid=$(add_task lab --label media.kind=video --label team=b)
txt=$(add_task lab --label doc.kind=text)
bare=$(add_task lab)

ids_matching() {
  tq list --queue lab -o id "$@" | sort -n | tr '\n' ' ' | sed 's/ $//'
}

section "list --match: exact keys, any value, key wildcards"
expect_eq "$(ids_matching --match media.kind=image)" "$img" "exact key and value"
expect_eq "$(ids_matching --match 'media.kind=*')" "$img $vid" "any value"
expect_eq "$(ids_matching --match 'media.*=video')" "$vid" "key prefix"
expect_eq "$(ids_matching --match '*.kind=text')" "$txt" "key suffix"
expect_eq "$(ids_matching --match '*.kind=*')" "$img $vid $txt" \
  "key suffix, any value"
expect_eq "$(ids_matching --match '*=b')" "$vid" "any key with value b"
expect_eq "$(ids_matching --match '*.kind=*' --match team=a)" "$img" \
  "every pattern must match"
expect_eq "$(ids_matching --match kind=image)" "" \
  "a key is not matched by a part of it"
expect_eq "$(ids_matching --match 'media.kind=im*')" "" \
  "a value is matched exactly (only * alone is a wildcard)"
expect_eq "$(ids_matching)" "$img $vid $txt $bare" "no --match: every task"
expect_eq "$(ids_matching --match '*=*')" "$img $vid $txt $bare" \
  "*=* matches every task, the unlabelled one too"
expect_eq "$(ids_matching --match '*=*' --match team=b)" "$vid" \
  "*=* beside another pattern asks nothing more"

section "malformed patterns are usage errors"
before=$(db_dump)
for bad in 'a*b=1' 'a**=1' '**=1' '***=1' 'noequals' '=v'; do
  expect_exit 2 "$TASKQ" list --match "$bad"
  expect_err_contains "invalid label pattern"
  expect_exit 2 "$TASKQ" kill --queue lab --match "$bad"
done
expect_eq "$(db_dump)" "$before" "refused patterns changed nothing"

section "bulk operator commands take the same patterns"
expect_exit 0 "$TASKQ" pause --queue lab --match '*.kind=*' --match 'team=*'
expect_eq "$(state "$img")/$(state "$vid")/$(state "$txt")/$(state "$bare")" \
  paused/paused/runnable/runnable "pause --match '*.kind=*' --match 'team=*'"
expect_exit 0 "$TASKQ" resume --queue lab --match 'media.*=video'
expect_eq "$(state "$img")/$(state "$vid")" paused/runnable \
  "resume --match 'media.*=video'"

section "lease --match with a key wildcard"
expect_exit 75 "$TASKQ" lease lab --match 'media.*=image'
expect_exit 0 "$TASKQ" lease lab --match '*.kind=video'
expect_eq "$(jout .id)" "$vid" "the video task leased"
expect_exit 0 "$TASKQ" lease lab --match '*.kind=*'
expect_eq "$(jout .id)" "$txt" "the text task leased"
expect_exit 75 "$TASKQ" lease lab --match '*.kind=*'

section "a key with * at either end or both matches a part of a key"
fresh_db
own=$(add_task lab --label task.rescue.io/worker=w1)
api=$(add_task lab --label v2.api.io/route=users)
plain=$(add_task lab --label rescue=yes)
expect_eq "$(ids_matching --match '*rescue.io*=*')" "$own" \
  "*rescue.io* finds task.rescue.io/worker"
expect_eq "$(ids_matching --match '*.api.io/*=users')" "$api" \
  "*.api.io/* finds v2.api.io/route"
expect_eq "$(ids_matching --match 'rescue*=*')" "$own $plain" \
  "a trailing * matches the rest anywhere in the key"
expect_eq "$(ids_matching --match '*rescue=*')" "$own $plain" \
  "a leading * too"
expect_eq "$(ids_matching --match 'rescue=*')" "$plain" \
  "without a *, the key is matched whole"
