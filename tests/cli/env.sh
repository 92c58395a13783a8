# The environment: `lease -o env` for shell workers
# (doc/reference/commands.md#lease), the TASKQ_ID/TASKQ_LEASE defaults of
# the worker commands, TASKQ_WORKER, and the default database path
# (doc/reference/invocation.md#database).

set_now 2026-11-21T08:00:00Z

# A shell worker as doc/workers.md shows it. It runs in its own folder so that a
# payload that escapes its quotes leaves a `pwned` file behind.
mkdir -p worker
cat >worker/work.sh <<'EOF'
eval "$("$TASKQ" lease "$1" -o env)" || exit 99
printf '%s' "$TASKQ_PAYLOAD" >got.payload
# Exported, not just set: a child process sees the variables.
bash -c 'printf "%s\n" "$TASKQ_ID" "$TASKQ_LEASE" "$TASKQ_QUEUE" \
  "$TASKQ_ATTEMPT"' >got.vars
"$TASKQ" done
EOF

# run_worker QUEUE: runs worker/work.sh on QUEUE as a check; afterwards
# $payload is what the worker got in TASKQ_PAYLOAD and $vars the rest.
run_worker() {
  rm -f worker/got.payload worker/got.vars
  (cd worker && expect_exit 0 bash work.sh "$1")
  payload=$(
    cat worker/got.payload 2>/dev/null
    printf x
  )
  payload=${payload%x} # keep trailing newlines
  vars=$(cat worker/got.vars 2>/dev/null)
}

section "lease -o env prints exported assignments"
id=$(add_task plain --text hello)
expect_exit 0 "$TASKQ" lease plain -o env
for var in TASKQ_ID TASKQ_LEASE TASKQ_QUEUE TASKQ_ATTEMPT TASKQ_PAYLOAD; do
  check "lease -o env exports $var" grep -q "^export $var=" <<<"$out"
done
expect_eq "$(eval "$out" && printf '%s' "$TASKQ_ID/$TASKQ_QUEUE/$TASKQ_PAYLOAD")" \
  "$id/plain/hello" "TASKQ_ID/TASKQ_QUEUE/TASKQ_PAYLOAD after eval"
tq release "$id" --lease "$(eval "$out" && printf '%s' "$TASKQ_LEASE")" >/dev/null

# Strings that break naive quoting; each must reach the worker unchanged.
payloads=(
  "it's"
  'say "hi"'
  $'two\nlines\n'
  '$(touch pwned)'
  '`touch pwned`'
  '${HOME} $HOME !! \$ \n \\'
  "naïve café — 日本語 🎉"
  $'\'"$(touch pwned)"\'`touch pwned`\'\n;touch pwned #'
  "'; touch pwned; echo '"
  ''
  ' leading and trailing spaces '
  $'tab\there\r\n'
)
for i in "${!payloads[@]}"; do
  p=${payloads[$i]}
  section "lease -o env survives eval of payload $i"
  q=env$i
  id=$(add_task "$q" --text "$p")
  run_worker "$q"
  expect_eq "$payload" "$p" "TASKQ_PAYLOAD after eval"
  mapfile -t v <<<"$vars"
  expect_eq "${v[0]:-} ${v[2]:-} ${v[3]:-}" "$id $q 1" \
    "TASKQ_ID TASKQ_QUEUE TASKQ_ATTEMPT"
  expect_ne "${v[1]:-}" "" "TASKQ_LEASE" # the bare done proves it right
  check "no pwned file" test ! -e worker/pwned -a ! -e pwned
  expect_eq "$(state "$id")" completed "state after the worker's bare done"
done

section "TASKQ_PAYLOAD is the JSON text of a non-string payload"
json='{"cmd":"$(touch pwned)","q":"it'\''s \"x\" `id`","u":"é\n"}'
id=$(add_task envjson --payload "$json")
run_worker envjson
expect_jq "$payload" ". == $json" "TASKQ_PAYLOAD as JSON"
check "no pwned file" test ! -e worker/pwned -a ! -e pwned
expect_eq "$(state "$id")" completed

section "-o env on an empty queue makes eval fail"
expect_exit 0 bash -c 'eval "$("$TASKQ" lease nothing -o env)" || echo none'
expect_out none
(cd worker && expect_exit 99 bash work.sh nothing)

section "TASKQ_ID and TASKQ_LEASE are the defaults of the worker commands"
id=$(add_task defaults)
lease=$(tq lease defaults)
export TASKQ_ID=$id TASKQ_LEASE
TASKQ_LEASE=$(jq -r .lease.token <<<"$lease")
expect_exit 0 "$TASKQ" heartbeat --checkpoint '{"step":1}'
expect_eq "$(field "$id" .checkpoint)" '{"step":1}' "checkpoint via env"
expect_exit 0 "$TASKQ" release
expect_eq "$(field "$id" .lease)" null "lease after release via env"
TASKQ_LEASE=$(tq lease defaults | jq -r .lease.token)
expect_exit 0 "$TASKQ" fail --error "via env"
expect_eq "$(state "$id")" sleeping "state after fail via env"
set_now 2026-11-21T08:10:00Z
TASKQ_LEASE=$(tq lease defaults | jq -r .lease.token)
expect_exit 0 "$TASKQ" sleep --for 5m
expect_eq "$(state "$id")" sleeping "state after a worker's sleep via env"
set_now 2026-11-21T08:15:00Z
TASKQ_LEASE=$(tq lease defaults | jq -r .lease.token)
# An explicit --lease wins over TASKQ_LEASE.
expect_exit 4 "$TASKQ" done --lease wrong-token
expect_exit 0 "$TASKQ" done --result '"ok"'
expect_jq "$(snapshot "$id")" '.state == "completed" and .result == "ok"'
# An explicit id wins over TASKQ_ID.
other=$(add_task defaults)
TASKQ_LEASE=$(tq lease defaults | jq -r .lease.token)
expect_exit 0 "$TASKQ" done "$other"
expect_eq "$(state "$other")" completed "task named on the command line"
unset TASKQ_ID TASKQ_LEASE

section "worker identity: --worker, TASKQ_WORKER, HOSTNAME:PID"
add_task who >/dev/null
add_task who >/dev/null
add_task who >/dev/null
expect_exit 0 env TASKQ_WORKER=w-env "$TASKQ" lease who
expect_json "$out" .lease.worker w-env
expect_exit 0 env TASKQ_WORKER=w-env "$TASKQ" lease who --worker w-flag
expect_json "$out" .lease.worker w-flag
expect_exit 0 "$TASKQ" lease who
expect_match "$(jout .lease.worker)" "^$(hostname):[0-9]+\$" "default worker"

section "operator events are recorded under TASKQ_WORKER when set"
id=$(add_task ops)
expect_exit 0 env TASKQ_WORKER=alice "$TASKQ" pause "$id"
expect_json "$(snapshot "$id")" '.events[-1].actor' alice
expect_exit 0 env USER=carol "$TASKQ" resume "$id"
expect_json "$(snapshot "$id")" '.events[-1].actor' "carol@$(hostname)" \
  "default operator"

section "TASKQ_NOW freezes the clock for every decision"
expect_exit 0 env TASKQ_NOW=2030-01-02T03:04:05Z "$TASKQ" add clock
id=$out
expect_time "$(field "$id" .created_at)" 2030-01-02T03:04:05Z created_at
expect_exit 75 "$TASKQ" lease clock # it is not 2030 yet at TASKQ_NOW
expect_exit 0 env TASKQ_NOW=2030-01-02T03:04:05.250Z "$TASKQ" lease clock
expect_exit 0 env TASKQ_NOW=2030-01-02T04:04:05+01:00 "$TASKQ" add clock
expect_time "$(field "$out" .created_at)" 2030-01-02T03:04:05Z \
  "created_at from a TASKQ_NOW with an offset"

# The default database is an SQLite file: its path and mode.
if sqlite_only; then
  section "the default database is \$XDG_DATA_HOME/taskq/taskq.db, mode 0600"
  (
    unset TASKQ_DB
    expect_exit 0 "$TASKQ" db path
    expect_out "$XDG_DATA_HOME/taskq/taskq.db"
    check "no default database before the first write" \
      test ! -e "$XDG_DATA_HOME/taskq/taskq.db"
    expect_exit 0 "$TASKQ" add q
    check "default database created" test -f "$XDG_DATA_HOME/taskq/taskq.db"
    expect_eq "$(stat -c %a "$XDG_DATA_HOME/taskq/taskq.db")" 600 "its mode"
    expect_exit 0 "$TASKQ" list -o id
    expect_eq "$(grep -c . <<<"$out")" 1 "tasks in the default database"
  )

  section "without XDG_DATA_HOME it is ~/.local/share/taskq/taskq.db"
  (
    unset TASKQ_DB XDG_DATA_HOME
    expect_exit 0 "$TASKQ" db path
    expect_out "$HOME/.local/share/taskq/taskq.db"
    expect_exit 0 "$TASKQ" add q
    check "fallback database created" test -f "$HOME/.local/share/taskq/taskq.db"
    expect_eq "$(stat -c %a "$HOME/.local/share/taskq/taskq.db")" 600 "its mode"
  )
fi
