# Label matching (rescue's matcher,
# doc/reference/commands.md#labels-and-matching): `--match K=V` with an exact
# key, `*` for any value, `*` alone for any key, and `*` as a key prefix or
# suffix wildcard; the same patterns in lease, list and the bulk operator
# commands.

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

section "malformed patterns are usage errors"
for bad in 'a*b=1' '*a*=1' '**=1' 'noequals' '=v'; do
  expect_exit 2 "$TASKQ" list --match "$bad"
  expect_err_contains "invalid label pattern"
done

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
