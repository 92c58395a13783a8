# Help that fits a terminal: `taskq help` lists the commands grouped by what
# a user does with them, everyday ones first, and every command's and
# subcommand's --help (and `taskq help`) fits 80 columns.

# too_wide TEXT: its lines over 80 columns, each prefixed with its length.
too_wide() { awk 'length > 80 { print length ": " $0 }' <<<"$1"; }

section "taskq help: grouped, everyday commands first"
expect_exit 0 "$TASKQ" help
overview=$out
expect_eq "$(too_wide "$overview")" "" "lines of taskq help over 80 columns"
headings=$(grep -E '^[A-Z][a-z ]*:$' <<<"$overview" | tr '\n' '|')
expect_eq "$headings" \
  "Options:|Produce:|Run:|Watch:|Operate:|Schedules and flows:|Database:|Shell:|Example:|" \
  "the headings of taskq help, in order"
listed=$(help_commands | tr '\n' ' ')
expect_eq "$(help_commands | head -n 3 | tr '\n' ' ')" "add tx run " \
  "taskq help starts with add, then run"
expect_not_contains "$overview" "Other:" "every command is in a group"
expect_not_contains "$listed" "__ids" "the hidden command stays hidden"
# One line per command, its name and a summary.
while read -r name; do
  rows=$(grep -cE "^  $name  " <<<"$overview")
  expect_eq "$rows" 1 "one row for $name in taskq help"
done < <(help_commands)
expect_exit 0 "$TASKQ" --help
expect_eq "$out" "$overview" "taskq --help is taskq help"

section "every --help within 80 columns"
# walk CMD...: checks CMD's --help and `taskq help CMD`, then its
# subcommands'.
walked=0
walk() {
  local text sub
  text=$("$TASKQ" "$@" --help)
  expect_eq "$(too_wide "$text")" "" "lines of taskq $* --help over 80 columns"
  expect_exit 0 "$TASKQ" help "$@"
  expect_eq "$(too_wide "$out")" "" "lines of taskq help $* over 80 columns"
  walked=$((walked + 1))
  for sub in $(help_commands "$@"); do
    [[ $# -eq 0 && $sub == help ]] && continue
    walk "$@" "$sub"
  done
}
walk
check "the walk reached every command and subcommand ($walked)" \
  test "$walked" -gt 60

section "wrapped, not cut"
# A long description is wrapped at a space, its continuation in the
# description's column.
expect_exit 0 "$TASKQ" run --help
expect_contains "$out" $'\n  --keep-output SIZE      store the last SIZE bytes' \
  "run --help: --keep-output's description starts in its column"
expect_contains "$(tr -s ' \n' '  ' <<<"$out")" \
  "for taskq logs (default 1M; 64K, 2M; 0: none)" \
  "run --help: --keep-output's description is whole"

# One list of the commands (cli/command_table.cpp): the binary's command
# tree, as CLI11 has it, is the truth; `taskq __command-table` checks the table
# against it (every command a row, every row a command, each registered
# alone by its row's function, for the quick start-up) and prints it. The
# help overview, taskq(1) and the completion scripts (which ask
# `taskq __command-table`: tests/cli/completions.sh) list exactly those.
section "one command table: help, taskq(1), the tree"
expect_exit 0 "$TASKQ" __command-table
table=$(cut -f1 <<<"$out" | tr '\n' ' ')
check "taskq __command-table lists the commands (${table:0:40}...)" \
  test "$(wc -w <<<"$table")" -gt 30
expect_eq "$(help_commands | tr '\n' ' ')" "$table" \
  "the commands of taskq help, in order, are the table's"
expect_not_contains "$table" "__" "no hidden command is listed"
expect_eq "$(awk -F'\t' 'NF != 2 || $2 == ""' <<<"$out")" "" \
  "every command has a summary"
# The commands taskq(1) has an entry for (=item B<taskq NAME>, under
# =head1 COMMANDS), and its =head2 headings, in order.
pod=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../doc/man" && pwd)/taskq.1.pod
man_commands=$(awk '/^=head1 /{ on = ($2 == "COMMANDS") }
  on && /^=item B<taskq [^ >]+>/ { sub(/^=item B<taskq /, ""); sub(/>.*/, ""); print }' \
  "$pod" | tr '\n' ' ')
expect_eq "$man_commands" "$table" \
  "the commands of taskq(1), in order, are the table's"
man_headings=$(awk '/^=head1 /{ on = ($2 == "COMMANDS") }
  on && /^=head2 / { sub(/^=head2 /, ""); print $0 ":" }' "$pod" | tr '\n' '|')
help_headings=$(grep -E '^[A-Z][a-z ]*:$' <<<"$overview" |
  grep -vE '^(Options|Example):$' | tr '\n' '|')
expect_eq "$man_headings" "$help_headings" \
  "the command groups of taskq(1) are taskq help's"
