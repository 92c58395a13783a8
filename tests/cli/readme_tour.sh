# The README's five-minute loop: its first ```sh block after "## Five
# minutes with taskq", run as it stands, top to bottom, by bash (and by zsh
# when installed) with errexit and pipefail, in a folder of its own, with
# `taskq` on the PATH being $TASKQ and TASKQ_DB the suite's database. Every
# command must succeed (run's exit status is the block's to report); two
# commands complete, one fails for good and its retry waits.

readme=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/README.md
awk '/^## Five minutes with taskq/ { tour = 1; next }
     tour && /^```sh$/ { inblock = 1; next }
     inblock && /^```$/ { exit }
     inblock { print }' "$readme" >tour.sh

section "extracted"
check "README.md has a five-minute loop" grep -q '^taskq run ' tour.sh

mkdir -p bin
ln -s "$TASKQ" bin/taskq

# tour SHELL DIR: runs tour.sh in DIR (fresh) with SHELL; its trace goes to
# DIR/trace so that a failure names the command.
tour() {
  local sh=$1 dir=$2
  mkdir -p "$dir"
  (cd "$dir" && PATH=$scratch/bin:$PATH "$sh" -c \
    'set -e -x; set -o pipefail; . ../tour.sh' >out 2>trace)
}

for sh in bash zsh; do
  command -v "$sh" >/dev/null || continue
  section "$sh"
  if [[ $sh == zsh ]]; then
    fresh_db # a second run starts from an empty database too
  fi
  if tour "$sh" "$scratch/$sh"; then
    _ok "the tour runs top to bottom in $sh"
  else
    _ko "the tour runs top to bottom in $sh" "exit $?" \
      "last lines of its trace: $(tail -n 8 "$scratch/$sh/trace")"
  fi
  expect_exit 0 "$TASKQ" list --queue jobs --state completed -o id
  expect_eq "$(tr '\n' ' ' <<<"$out")" "1 2 " "run completed the two good commands"
  expect_exit 0 "$TASKQ" list --queue jobs --state failed -o id
  expect_eq "$out" 3 "the third failed for good (--max-errors 1)"
  expect_exit 0 "$TASKQ" show 4 -o json
  expect_json "$out" .retry_of 3 "task 4 is the retry of task 3"
  expect_json "$out" .state runnable "the retry waits for a worker"
  check "the loop printed task 1's output" grep -qx 'hello, world' "$scratch/$sh/out"
  expect_exit 0 "$TASKQ" db check
done
