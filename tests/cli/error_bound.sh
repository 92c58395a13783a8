# The error `run` stores for a failed handler (doc/reference/commands.md#run):
# its exit status and the tail of its stderr, the whole at most 2,000 bytes
# (core::k_max_error_bytes) of valid UTF-8, however long the stderr and
# wherever the bound falls inside a multi-byte character.

set_now 2026-11-21T08:00:00Z

# raw_sql SQL: runs SQL on $TASKQ_DB behind taskq's back (raw bytes out).
raw_sql() {
  if [[ $TASKQ_DB == postgresql://* ]]; then
    PGOPTIONS='-c search_path=taskq' psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$TASKQ_DB" -c "$1"
  else
    sqlite3 "$TASKQ_DB" "$1"
  fi
}
# stored_bytes ID: the byte length of task ID's stored error.
stored_bytes() {
  if [[ $backend == postgresql ]]; then
    raw_sql "SELECT octet_length(message) FROM task_errors WHERE task_id = $1"
  else
    raw_sql "SELECT length(CAST(message AS BLOB)) FROM task_errors WHERE task_id = $1"
  fi
}
# valid_utf8 FILE: FILE's bytes are valid UTF-8.
valid_utf8() {
  perl -MEncode -e 'local $/; my $b = <STDIN>;
    eval { Encode::decode("UTF-8", $b, Encode::FB_CROAK); 1 } or exit 1' <"$1"
}

# fails_with STATUS CHAR: a task whose handler writes 5,000 bytes of CHAR
# (one, two or three bytes each) to stderr on one line and exits STATUS;
# one run (exit 6: the task sleeps to retry), then its one stored error is
# checked.
fails_with() {
  local status=$1 char=$2 id n width
  width=$(printf %s "$char" | wc -c)
  id=$(add_task eb -- perl -e '
    binmode STDERR; my ($c, $s) = @ARGV;
    my $n = int(5000 / length($c)); print STDERR $c x $n; exit $s' "$char" "$status")
  expect_exit 6 "$TASKQ" run eb --until-empty
  expect_eq "$(state "$id")" sleeping "task $id sleeps after its error"
  n=$(stored_bytes "$id")
  check "exit $status, ${width}-byte characters: the stored error ($n bytes) is at most 2,000 bytes" \
    test "${n:-99999}" -le 2000
  check "and not much less: the tail fills the room left ($n bytes)" \
    test "${n:-0}" -ge 1997
  printf '%s' "$(raw_sql "SELECT message FROM task_errors WHERE task_id = $id")" >"err.$id"
  check "exit $status, ${width}-byte characters: the stored error is valid UTF-8" valid_utf8 "err.$id"
  expect_match "$(head -c 20 "err.$id")" "^exit status $status: " "it starts with the status"
  "$TASKQ" show "$id" -o json | jq -j '.errors[0].error' >"shown.$id"
  check "show -o json gives the same error" cmp -s "err.$id" "shown.$id"
}

section "5,000 bytes of stderr: status and tail together within 2,000 bytes"
fails_with 3 x
fails_with 255 x

section "the cut falls inside a multi-byte character: still valid UTF-8"
# 2,000 - len("exit status 3: ") = 1,985 bytes of room: odd, so a cut of
# two-byte characters falls inside one; 1,985 and 1,984 are not multiples
# of three either.
fails_with 3 $'\xc3\xa9'   # é
fails_with 3 $'\xe2\x82\xac'  # €
fails_with 42 $'\xe2\x82\xac'
