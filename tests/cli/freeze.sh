# Freeze and continue (doc/reference/commands.md#freeze-and-continue):
# `freeze ID` stops a running command where it is (SIGSTOP to its process
# group) while `run` keeps its lease alive with heartbeats, and `continue
# ID` lets it go on (SIGCONT), its work kept; `list`, `show` and the event
# log show it frozen. `pause` of a frozen command still stops it. Every
# mistake is refused with its exit code and changes nothing.
#
# Background workers are started through perl so that SIGINT is not ignored.
# Every wait for another process is a bounded poll, never a bare sleep.

db_digest() { db_dump | sha256sum; }

# refused CODE WHAT CMD...: CMD exits CODE with one line on stderr,
# "taskq: ...", and the database is the same afterwards.
refused() {
  local code=$1 what=$2 before
  shift 2
  before=$(db_digest)
  expect_exit "$code" "$@"
  expect_err_format
  expect_eq "$(grep -c . <<<"$err")" 1 "lines on stderr of $what"
  expect_eq "$(db_digest)" "$before" "database after $what"
}

file_has() { [[ -s $1 ]]; }
# proc_state PID: the one-letter state of a process (T: stopped).
proc_state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }
stopped() { [[ $(proc_state "$1") == T ]]; }
not_stopped() { [[ $(proc_state "$1") == [RSD] ]]; }
lease_expiry() { field "$1" .lease.expires_at; }

# refused_live CODE WHAT ID CMD...: as refused, for task ID that a worker
# is running (its heartbeats write meanwhile): its events are the same
# afterwards, and it is frozen or not as before.
refused_live() {
  local code=$1 what=$2 id=$3 before
  shift 3
  before=$(field "$id" '[.events, .lease.frozen]')
  expect_exit "$code" "$@"
  expect_err_format
  expect_eq "$(grep -c . <<<"$err")" 1 "lines on stderr of $what"
  expect_eq "$(field "$id" '[.events, .lease.frozen]')" "$before" "task $id's events after $what"
}
expiry_past() { [[ $(lease_expiry "$1") != "$2" ]]; }

mkdir -p got
export GOT=$scratch/got

# The command: says its pid, counts its starts, then works until told to
# finish (a file appears), and says it finished. One process that never
# forks (perl's select to wait), so that its state is T once stopped (a
# shell caught in vfork shows D).
work=(perl -e '
  my ($dir, $id) = ($ENV{GOT}, $ENV{TASKQ_ID});
  sub put { open(my $f, $_[0], "$dir/$_[1].$id") or die; print $f "$_[2]\n"; close $f }
  put(">", "pid", $$);
  put(">>", "log", "start");
  select(undef, undef, undef, 0.02) until -e "$dir/go.$id";
  put(">>", "log", "finished");')

section "freeze stops the command, run keeps its lease; continue lets it finish"
id=$(add_task frz -- "${work[@]}")
waiting=$(add_task other --payload 1)
bg_run worker run frz --until-empty --for 1s -v
worker=$bg
wait_until 10 file_has "got/pid.$id" || _ko "the command started" "no pid file"
pid=$(<"got/pid.$id")
expect_exit 0 "$TASKQ" freeze "$id"
expect_out_empty # as pause and kill: nothing on success (the ids were named)
check "its process is stopped (SIGSTOP)" wait_until 10 stopped "$pid"
expect_exit 0 "$TASKQ" show "$id"
expect_contains "$out" "state:       frozen" "show's state"
expect_exit 0 "$TASKQ" show "$id" -o json
expect_json "$out" .lease.frozen true "show -o json: the lease is frozen"
expect_json "$out" '.events[-1] | [.message, .from, .to]' '["freeze","runnable","runnable"]' "the event"
expect_match "$(jout '.events[-1].detail')" '^frozen by .* \(SIGSTOP\); .* keeps the lease$' "the event's detail"
expect_exit 0 "$TASKQ" list --queue frz
expect_eq "$(awk -v id="$id" '$1 == id {print $3}' <<<"$out")" frozen "list's state"
expires=$(lease_expiry "$id")
check "the worker's heartbeats keep the lease alive while frozen" \
  wait_until 10 expiry_past "$id" "$expires"
expires=$(lease_expiry "$id")
check "and again (the 1s lease is renewed, not lost)" \
  wait_until 10 expiry_past "$id" "$expires"
expect_eq "$(state "$id") $(proc_state "$pid")" "runnable T" "still leased, still stopped"
expect_exit 0 "$TASKQ" continue "$id"
expect_out_empty
check "its process runs again (SIGCONT)" wait_until 10 not_stopped "$pid"
expect_exit 0 "$TASKQ" show "$id" -o json
expect_json "$out" .lease.frozen false "continued: not frozen"
expect_json "$out" '.events[-1].message' continue "the event"
expect_exit 0 "$TASKQ" show "$id"
expect_contains "$out" "state:       running" "show's state after continue"
expect_exit 0 "$TASKQ" events --queue frz -o json
expect_eq "$(jq -sc '[.[] | select(.task == '"$id"') | .message | select(. == "freeze" or . == "continue")]' <<<"$out")" \
  '["freeze","continue"]' "events: the freeze and the continue"
touch "got/go.$id"
bg_finish "$worker" worker
expect_eq "$rc" 0 "run's exit"
expect_eq "$(state "$id")" completed
expect_eq "$(cat "got/log.$id")" $'start\nfinished' "one start: the work was kept"
expect_contains "$err" "task $id: frozen (SIGSTOP), lease kept" "run -v says it froze"
expect_contains "$err" "task $id: continued (SIGCONT)" "run -v says it continued"

section "pause of a frozen command stops it (its work is lost)"
id=$(add_task frz2 -- "${work[@]}")
bg_run worker2 run frz2 --until-empty --for 1s --grace 5s
worker=$bg
wait_until 10 file_has "got/pid.$id" || _ko "the command started" "no pid file"
pid=$(<"got/pid.$id")
expect_exit 0 "$TASKQ" freeze "$id"
check "its process is stopped" wait_until 10 stopped "$pid"
expect_exit 0 "$TASKQ" pause "$id"
check "the frozen command ends (SIGTERM, then SIGCONT)" wait_until 10 gone "$pid"
bg_finish "$worker" worker2
expect_eq "$(state "$id")" paused
expect_eq "$(cat "got/log.$id")" start "it never finished"

section "refused: what is not running, not frozen, already frozen, no such task"
id=$(add_task frz3 -- "${work[@]}")
refused 4 "freeze of a runnable task" "$TASKQ" freeze "$id"
expect_eq "$err" "taskq: task $id is not running (it is runnable): only a running command can be frozen" "the refusal"
refused 4 "continue of a runnable task" "$TASKQ" continue "$id"
expect_err_contains "only a running command can be continued"
refused 4 "freeze of a runnable task and a missing one" "$TASKQ" freeze "$waiting" 999999
expect_err_contains "task $waiting is not running"
refused 3 "freeze of a missing task" "$TASKQ" freeze 999999
expect_err_contains "999999"
refused 2 "freeze without ids" "$TASKQ" freeze
refused 2 "freeze of a word" "$TASKQ" freeze x
bg_run worker3 run frz3 --until-empty --for 1s
worker=$bg
wait_until 10 file_has "got/pid.$id" || _ko "the command started" "no pid file"
pid=$(<"got/pid.$id")
refused_live 4 "continue of a running, unfrozen task" "$id" "$TASKQ" continue "$id"
expect_eq "$err" "taskq: task $id is not frozen" "the refusal"
expect_exit 0 "$TASKQ" freeze "$id" -o json
expect_json "$out" '[.id, .lease.frozen]' "[$id,true]" "freeze -o json: the task, frozen"
check "its process is stopped" wait_until 10 stopped "$pid"
refused_live 4 "freeze of a frozen task" "$id" "$TASKQ" freeze "$id"
expect_eq "$err" "taskq: task $id is already frozen (taskq continue $id continues it)" "the refusal"
refused_live 4 "continue of a frozen and a runnable task (all or nothing)" \
  "$id" "$TASKQ" continue "$id" "$waiting"
expect_eq "$(proc_state "$pid")" T "still stopped"
expect_exit 0 "$TASKQ" continue "$id" "$id" -o id
expect_out "$id" # -o id: each task changed, once
check "its process runs again" wait_until 10 not_stopped "$pid"
touch "got/go.$id"
bg_finish "$worker" worker3
expect_eq "$(state "$id")" completed

section "help says what happens to a running command"
expect_exit 0 "$TASKQ" pause --help
expect_contains "$out" "its work is lost: resume starts it over" "pause --help"
expect_contains "$out" "freeze" "pause --help names freeze"
expect_exit 0 "$TASKQ" freeze --help
expect_contains "$out" "SIGSTOP" "freeze --help"
expect_exit 0 "$TASKQ" continue --help
expect_contains "$out" "SIGCONT" "continue --help"
