# Refused and ignored flow requests (doc/flows.md#commands,
# doc/flows.md#flow-transitions): each gets its documented exit code and
# changes nothing, proved by hashing a dump of the whole database (db_dump:
# `sqlite3 .dump`, or on PostgreSQL every row of every table) before and after.
#   - a bad document of each kind: exit 2, one line on stderr, no flow;
#   - an unknown flow: exit 3;
#   - a request TaskFlow refuses (rerun --reset of a RUNNING flow, resume of
#     a finished one, ...): exit 4;
#   - one TaskFlow ignores (suspend of a SUCCESS flow, resume of a RUNNING
#     one, ...): exit 0 with a `taskq: note:` line on stderr.
# The flows are driven by hand with lease/done/fail, so that no worker
# runs in the background while the dumps are taken.

db_digest() { db_dump | sha256sum; }

# unchanged WHAT EXIT CMD...: CMD exits EXIT and the database is the same
# afterwards. $out, $err and $rc are CMD's.
unchanged() {
  local what=$1 want=$2 before after
  shift 2
  before=$(db_digest)
  expect_exit "$want" "$@"
  after=$(db_digest)
  expect_eq "$after" "$before" "database after $what"
}

# one_line: the last command's stderr is one line "taskq: ...".
one_line() {
  expect_err_format
  expect_eq "$(grep -c . <<<"$err")" 1 "lines on stderr of $cmd"
}

# refused_doc WHAT WORD DOC: `flow submit -` of DOC exits 2 with one line
# naming WORD, prints nothing, creates nothing; the same from a file.
refused_doc() {
  local what=$1 word=$2 doc=$3
  printf '%s' "$doc" >"$scratch/doc.json"
  unchanged "submit of $what" 2 "$TASKQ" flow submit "$scratch/doc.json"
  expect_out_empty
  one_line
  [[ -z $word ]] || expect_err_contains "$word"
  # The same document on stdin.
  local before after
  before=$(db_digest)
  cmd="taskq flow submit - <doc ($what)"
  "$TASKQ" flow submit - <"$scratch/doc.json" >"$scratch/o" 2>"$scratch/e" 3>&-
  expect_eq "$?" 2 "exit of $cmd"
  expect_eq "$(<"$scratch/o")" "" "stdout of $cmd"
  after=$(db_digest)
  expect_eq "$after" "$before" "database after $cmd"
}

# lease_one QUEUE: leases the next task of QUEUE; sets $tid and $tok.
lease_one() {
  local j
  j=$(tq lease "$1" -o json --for 10m) || return 1
  tid=$(jq -r .id <<<"$j")
  tok=$(jq -r .lease.token <<<"$j")
}

submit() {
  local id
  id=$(printf '%s\n' "$1" | tq flow submit -) || return 1
  if [[ ! $id =~ ^[0-9]+$ ]]; then
    _ko "flow submit prints the new id" "stdout: $id"
    return 1
  fi
  printf '%s\n' "$id"
}

fstate() { "$TASKQ" flow show "$1" -o json 2>&1 3>&- | jq -r .state 2>&1; }

# --- bad documents: exit 2, nothing created ---------------------------------------

section "a bad flow document of each kind: exit 2, one line, nothing created"
# A flow exists already, so that "nothing created" is about more than an
# empty database.
tq db migrate >/dev/null
submit '{"name": "seed", "atoms": [{"name": "s1", "execute": {"queue": "seedq"}}]}' >/dev/null
ok_atom='{"name": "a", "execute": {"queue": "q"}}'

refused_doc "bad JSON" "" '{"name": "x", "atoms": ['
refused_doc "an empty document" "" ''
refused_doc "a JSON array" "not an array" "[$ok_atom]"
refused_doc "a JSON string" "not a string" '"atoms"'
refused_doc "a JSON number" "not a number" '42'
refused_doc "trailing garbage" "" "{\"atoms\": [$ok_atom]} x"
refused_doc "an unknown top-level field" colour \
  "{\"name\": \"x\", \"colour\": \"red\", \"atoms\": [$ok_atom]}"
refused_doc "an unknown atom field" bogus \
  '{"atoms": [{"name": "a", "bogus": 1, "execute": {"queue": "q"}}]}'
refused_doc "an unknown field in execute" quue \
  '{"atoms": [{"name": "a", "execute": {"quue": "q"}}]}'
refused_doc "an unknown field in a nested flow" sideways \
  "{\"atoms\": [{\"flow\": {\"sideways\": true, \"atoms\": [$ok_atom]}}]}"
refused_doc "an unknown retry field" tries \
  "{\"retry\": {\"times\": 2, \"tries\": 3}, \"atoms\": [$ok_atom]}"
refused_doc "an unknown pattern" spiral \
  "{\"pattern\": \"spiral\", \"atoms\": [$ok_atom]}"
refused_doc "a duplicate atom name" "duplicate name 'a'" \
  "{\"atoms\": [$ok_atom, $ok_atom]}"
refused_doc "an atom named like a nested flow" "duplicate name 'a'" \
  "{\"atoms\": [$ok_atom, {\"flow\": {\"name\": \"a\", \"atoms\": [{\"name\": \"b\", \"execute\": {\"queue\": \"q\"}}]}}]}"
refused_doc "a retry named like an atom" "duplicate name 'a'" \
  "{\"retry\": {\"name\": \"a\", \"times\": 2}, \"atoms\": [$ok_atom]}"
refused_doc "a cycle of after" cycle \
  '{"pattern": "graph", "atoms": [
     {"name": "a", "execute": {"queue": "q"}, "after": ["b"]},
     {"name": "b", "execute": {"queue": "q"}, "after": ["a"]}]}'
refused_doc "a cycle of data flow" cycle \
  '{"atoms": [
     {"name": "a", "execute": {"queue": "q"}, "requires": ["pb"], "provides": "pa"},
     {"name": "b", "execute": {"queue": "q"}, "requires": ["pa"], "provides": "pb"}]}'
refused_doc "after naming no sibling" nowhere \
  '{"atoms": [{"name": "a", "execute": {"queue": "q"}, "after": ["nowhere"]}]}'
refused_doc "a missing symbol" "requires 'nope', which nothing provides" \
  '{"atoms": [{"name": "a", "execute": {"queue": "q"}, "requires": ["nope"]}]}'
refused_doc "a symbol provided twice" "symbol 'p' is provided by both" \
  '{"atoms": [
     {"name": "a", "execute": {"queue": "q"}, "provides": "p"},
     {"name": "b", "execute": {"queue": "q"}, "provides": "p"}]}'
refused_doc "a linear requirement provided only later" "'p'" \
  '{"pattern": "linear", "atoms": [
     {"name": "a", "execute": {"queue": "q"}, "requires": ["p"]},
     {"name": "b", "execute": {"queue": "q"}, "provides": "p"}]}'
refused_doc "an unordered sibling's symbol" unordered \
  '{"pattern": "unordered", "atoms": [
     {"name": "a", "execute": {"queue": "q"}, "requires": ["p"]},
     {"name": "b", "execute": {"queue": "q"}, "provides": "p"}]}'
refused_doc "an atom without execute" execute '{"atoms": [{"name": "a"}]}'
refused_doc "an execute without a queue" queue \
  '{"atoms": [{"name": "a", "execute": {"payload": 1}}]}'
refused_doc "an element neither atom nor flow" "" '{"atoms": [42]}'
refused_doc "a retry of no kind" "" \
  "{\"retry\": {\"name\": \"r\"}, \"atoms\": [$ok_atom]}"
refused_doc "a retry of two kinds" "" \
  "{\"retry\": {\"times\": 2, \"for_each\": [1, 2]}, \"atoms\": [$ok_atom]}"
refused_doc "times -1" times \
  "{\"retry\": {\"times\": -1}, \"atoms\": [$ok_atom]}"
refused_doc "times not a number" times \
  "{\"retry\": {\"times\": \"three\"}, \"atoms\": [$ok_atom]}"
refused_doc "for_each not an array" for_each \
  "{\"retry\": {\"for_each\": \"abc\"}, \"atoms\": [$ok_atom]}"
refused_doc "max_errors 0" max_errors \
  '{"atoms": [{"name": "a", "execute": {"queue": "q"}, "max_errors": 0}]}'
refused_doc "a bad retry_delay" retry_delay \
  '{"atoms": [{"name": "a", "execute": {"queue": "q"}, "retry_delay": "soon"}]}'
refused_doc "priority not an integer" priority \
  '{"atoms": [{"name": "a", "execute": {"queue": "q"}, "priority": "high"}]}'
expect_exit 0 "$TASKQ" flow list -o json
expect_eq "$(grep -c . <<<"$out")" 1 "flows after the bad documents"

section "bad arguments: exit 2"
unchanged "submit without a file" 2 "$TASKQ" flow submit
expect_err_format
unchanged "submit of a missing file" 2 "$TASKQ" flow submit "$scratch/no-such.json"
expect_err_format
expect_err_contains no-such.json
unchanged "show abc" 2 "$TASKQ" flow show abc
expect_err_format
unchanged "wait --timeout bogus" 2 "$TASKQ" flow wait 1 --timeout bogus
expect_err_format
unchanged "list --state BOGUS" 2 "$TASKQ" flow list --state BOGUS
expect_err_format
unchanged "rerun --bogus" 2 "$TASKQ" flow rerun 1 --bogus
expect_err_format

# --- unknown flows: exit 3 -------------------------------------------------------------

section "an unknown flow: exit 3"
for c in show wait suspend resume rerun "rerun --reset"; do
  # shellcheck disable=SC2086 # "rerun --reset" is two words
  unchanged "flow $c 999999" 3 "$TASKQ" flow $c 999999
  one_line
  expect_err_contains 999999
  expect_out_empty
done

# --- a flow in each state ----------------------------------------------------------------

# RUNNING: its one atom's task waits in queue `run` (nobody leases it).
running=$(submit '{"name": "running", "atoms": [{"name": "r1", "execute": {"queue": "run"}}]}')
# SUCCESS: its one atom's task completed.
success=$(submit '{"name": "success", "atoms": [{"name": "s1", "execute": {"queue": "suc"}, "provides": "out"}]}')
lease_one suc && tq done "$tid" --lease "$tok" --result '"done"' >/dev/null
# REVERTED: its one atom's task failed for good.
reverted=$(submit '{"name": "reverted", "atoms": [{"name": "v1", "execute": {"queue": "rev"}}]}')
lease_one rev && tq fail "$tid" --lease "$tok" --no-retry --error broken >/dev/null
# FAILURE: b fails, then a's revert fails.
failure=$(submit '{"name": "failure", "pattern": "linear", "atoms": [
  {"name": "f1", "execute": {"queue": "fai"}, "revert": {"queue": "fai"}},
  {"name": "f2", "execute": {"queue": "fai"}}]}')
lease_one fai && tq done "$tid" --lease "$tok" >/dev/null
lease_one fai && tq fail "$tid" --lease "$tok" --no-retry --error broken >/dev/null
lease_one fai && tq fail "$tid" --lease "$tok" --no-retry --error "revert broken" >/dev/null
# SUSPENDING: two unordered atoms, one leased, then suspended.
suspending=$(submit '{"name": "suspending", "pattern": "unordered", "atoms": [
  {"name": "g1", "execute": {"queue": "sus"}},
  {"name": "g2", "execute": {"queue": "sus"}}]}')
lease_one sus
tq flow suspend "$suspending" >/dev/null
# SUSPENDED: one atom, suspended before anyone leased it.
suspended=$(submit '{"name": "suspended", "atoms": [{"name": "d1", "execute": {"queue": "spd"}}]}')
tq flow suspend "$suspended" >/dev/null

section "the scene: a flow in each state"
expect_eq "$(fstate "$running")" RUNNING "flow $running"
expect_eq "$(fstate "$success")" SUCCESS "flow $success"
expect_eq "$(fstate "$reverted")" REVERTED "flow $reverted"
expect_eq "$(fstate "$failure")" FAILURE "flow $failure"
expect_eq "$(fstate "$suspending")" SUSPENDING "flow $suspending"
expect_eq "$(fstate "$suspended")" SUSPENDED "flow $suspended"

# --- refused: exit 4 ------------------------------------------------------------------------

section "requests TaskFlow refuses: exit 4, nothing changed"
refused() { # refused ID STATE ARGS...: flow ARGS... of flow ID (in STATE) exits 4
  local id=$1 st=$2
  shift 2
  unchanged "flow $* of a $st flow" 4 "$TASKQ" flow "$@"
  one_line
  expect_err_contains "$id"
  expect_out_empty
  expect_eq "$(fstate "$id")" "$st" "state after the refused flow $*"
}
refused "$running" RUNNING rerun "$running" --reset
refused "$suspending" SUSPENDING rerun "$suspending" --reset
refused "$failure" FAILURE rerun "$failure" --reset
refused "$suspended" SUSPENDED rerun "$suspended" --reset
refused "$success" SUCCESS resume "$success"
expect_err_contains "rerun"
refused "$reverted" REVERTED resume "$reverted"
refused "$failure" FAILURE resume "$failure"
refused "$suspending" SUSPENDING resume "$suspending"

# --- ignored: exit 0 and a note -------------------------------------------------------------

section "requests TaskFlow ignores: exit 0, a note on stderr, nothing changed"
ignored() { # ignored ID STATE ARGS...
  local id=$1 st=$2
  shift 2
  unchanged "flow $* of a $st flow" 0 "$TASKQ" flow "$@"
  expect_match "$err" '^taskq: note: ' "stderr of $cmd"
  expect_eq "$(grep -c . <<<"$err")" 1 "lines on stderr of $cmd"
  expect_contains "$err" "$id" "stderr of $cmd"
  if [[ -n $out ]]; then
    expect_out "flow $id: $st"
  fi
  expect_eq "$(fstate "$id")" "$st" "state after the ignored flow $*"
}
ignored "$success" SUCCESS suspend "$success"
ignored "$reverted" REVERTED suspend "$reverted"
ignored "$failure" FAILURE suspend "$failure"
ignored "$suspended" SUSPENDED suspend "$suspended"
ignored "$suspending" SUSPENDING suspend "$suspending"
ignored "$running" RUNNING resume "$running"
ignored "$running" RUNNING rerun "$running"

section "the refused and ignored requests left the atoms' tasks alone"
expect_exit 0 "$TASKQ" db check
