# The transition table (doc/reference/task.md#transition-table, Metafora's,
# exactly) for the six operator messages, from every state a task can be seen
# in. A refused message exits 4, names the message and the state, and changes
# nothing.

set_now 2026-11-21T08:00:00Z

# make_in STATE QUEUE: prints the id of a new task of QUEUE brought to STATE.
make_in() {
  local want=$1 q=$2 id tok
  id=$(add_task "$q") || return 1
  case $want in
  runnable) ;;
  sleeping) tq sleep "$id" --for 1h >/dev/null ;;
  paused) tq pause "$id" >/dev/null ;;
  killed) tq kill "$id" >/dev/null ;;
  completed | failed)
    tok=$(tq lease "$q" | jq -r .lease.token)
    if [[ $want == completed ]]; then
      tq done "$id" --lease "$tok" >/dev/null
    else
      tq fail "$id" --lease "$tok" --error boom --no-retry >/dev/null
    fi
    ;;
  esac
  printf '%s\n' "$id"
}

states=(runnable sleeping paused completed failed killed)
messages=(run pause sleep release checkpoint kill)

# next[STATE,MESSAGE]: the new state; no entry means refused.
declare -A next=(
  [runnable,run]=runnable [runnable,pause]=paused [runnable,sleep]=sleeping
  [runnable,release]=runnable [runnable,checkpoint]=runnable
  [runnable,kill]=killed
  [sleeping,run]=runnable [sleeping,pause]=paused [sleeping,sleep]=sleeping
  [sleeping,release]=sleeping [sleeping,checkpoint]=sleeping
  [sleeping,kill]=killed
  [paused,run]=runnable [paused,pause]=paused [paused,sleep]=sleeping
  [paused,release]=paused [paused,checkpoint]=paused [paused,kill]=killed
)

# command_for MESSAGE: the dedicated operator command that sends MESSAGE.
command_for() {
  case $1 in
  run) echo resume ;;
  *) echo "$1" ;;
  esac
}

section "every state reached by the scene builder"
for st in "${states[@]}"; do
  id=$(make_in "$st" "scene-$st")
  expect_eq "$(state "$id")" "$st" "scene state"
done

for form in send command; do
  for st in "${states[@]}"; do
    for msg in "${messages[@]}"; do
      section "$form: $msg from $st"
      id=$(make_in "$st" "$form-$st-$msg")
      before=$(snapshot "$id")
      if [[ $form == send ]]; then
        args=(send "$id" "$msg")
      else
        args=("$(command_for "$msg")" "$id")
      fi
      [[ $msg == sleep ]] && args+=(--for 2h)
      want=${next[$st,$msg]:-}
      if [[ -n $want ]]; then
        expect_exit 0 "$TASKQ" "${args[@]}"
        expect_out_empty
        expect_eq "$(state "$id")" "$want" "state after $msg from $st"
      else
        expect_exit 4 "$TASKQ" "${args[@]}"
        expect_err_format
        # resume is the run message under another name; either may be used.
        if [[ $form == send || $msg != run ]]; then
          expect_err_word "$msg"
        fi
        expect_err_word "$st"
        expect_eq "$(snapshot "$id")" "$before" "task after refused $msg"
      fi
    done
  done
done

section "run makes a sleeping or paused task due now"
for st in sleeping paused; do
  id=$(make_in "$st" "wake-$st")
  expect_exit 75 "$TASKQ" lease "wake-$st"
  expect_exit 0 "$TASKQ" send "$id" run
  expect_exit 0 "$TASKQ" lease "wake-$st"
  expect_json "$out" .id "$id" "leased after run from $st"
done

section "sleep --until holds the task until exactly that time"
id=$(add_task until)
expect_exit 0 "$TASKQ" sleep "$id" --until 2026-11-21T09:30:00Z
expect_eq "$(state "$id")" sleeping
expect_time "$(field "$id" .run_at)" 2026-11-21T09:30:00Z "wake time"
set_now 2026-11-21T09:29:59Z
expect_exit 75 "$TASKQ" lease until
set_now 2026-11-21T09:30:00Z
expect_exit 0 "$TASKQ" lease until
expect_json "$out" .id "$id"
set_now 2026-11-21T08:00:00Z

section "send sleep takes --until as well as --for"
id=$(add_task sendsleep)
expect_exit 0 "$TASKQ" send "$id" sleep --until 2026-11-21T10:00:00Z
expect_time "$(field "$id" .run_at)" 2026-11-21T10:00:00Z "wake time"
expect_exit 0 "$TASKQ" send "$id" sleep --for 30m
expect_time "$(field "$id" .run_at)" 2026-11-21T08:30:00Z "wake time re-slept"

section "release and checkpoint never change a sleeping task's wake time"
id=$(make_in sleeping keep)
wake=$(field "$id" .run_at)
expect_exit 0 "$TASKQ" release "$id"
expect_exit 0 "$TASKQ" checkpoint "$id"
expect_eq "$(field "$id" .run_at)" "$wake" "wake time"
expect_eq "$(state "$id")" sleeping

section "send accepts only the six operator messages"
id=$(add_task onlysix)
before=$(snapshot "$id")
expect_exit 2 "$TASKQ" send "$id" explode
expect_eq "$(snapshot "$id")" "$before" "task after unknown message"
# complete and error come only from the lease holder, via done/fail.
for msg in complete error; do
  "$TASKQ" send "$id" "$msg" >/dev/null 2>&1
  rc=$?
  check "send $msg is refused (exit $rc)" test "$rc" = 2 -o "$rc" = 4
  expect_eq "$(snapshot "$id")" "$before" "task after send $msg"
done

section "worker messages on terminal tasks are refused"
id=$(add_task term)
tok=$(tq lease term | jq -r .lease.token)
tq kill "$id" >/dev/null
before=$(snapshot "$id")
expect_exit 4 "$TASKQ" done "$id" --lease "$tok"
expect_exit 4 "$TASKQ" fail "$id" --lease "$tok" --error late
expect_exit 4 "$TASKQ" release "$id" --lease "$tok"
expect_exit 4 "$TASKQ" heartbeat "$id" --lease "$tok"
expect_eq "$(snapshot "$id")" "$before" "killed task after worker writes"
