# The README's tour: its first ```sh block after "## A tour", run as it
# stands, top to bottom, by bash (and by zsh when installed) with errexit
# and pipefail, in a folder of its own, with `taskq` on the PATH being
# $TASKQ and TASKQ_DB the suite's database. Every command must succeed; the
# shell worker's `if` must have leased and completed a task.

readme=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/README.md
awk '/^## A tour/ { tour = 1; next }
     tour && /^```sh$/ { inblock = 1; next }
     inblock && /^```$/ { exit }
     inblock { print }' "$readme" >tour.sh

section "extracted"
check "README.md has a tour block of commands" grep -q '^taskq ' tour.sh

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
  expect_exit 0 "$TASKQ" list --queue thumbs --state completed -o id
  check "the shell worker and run completed the 4 thumbs tasks" \
    test "$(wc -l <<<"$out")" -eq 4
  expect_exit 0 "$TASKQ" db check
done
