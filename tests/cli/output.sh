# Job output (doc/watching.md, "Job output"): `run` keeps each attempt's stdout and
# stderr in the database, bounded to their last part (--keep-output), flushed
# while the handler runs; `logs` prints it (--follow live); show, purge,
# export/import, db check and done/fail --output-file know of it; run --tag
# prefixes lines.

# now_ms, wait_until, alive and gone come from tests/cli/run.

mib=1048576
head -c $((5 * mib)) /dev/urandom >big.bin
cat >loud.sh <<EOF
#!/bin/sh
cat "$scratch/big.bin"
echo 'first line' >&2
echo 'second line' >&2
echo 'third line' >&2
exit 3
EOF
chmod +x loud.sh

section "a handler that prints 5 MiB and 3 lines on stderr, then fails"
id=$(add_task loud --max-errors 1)
"$TASKQ" run loud --until-empty -- ./loud.sh >run.out 2>run.err 3>&-
check "run passed its stdout through, all of it" cmp -n $((5 * mib)) run.out big.bin
expect_contains "$(<run.err)" $'first line\nsecond line\nthird line' \
  "run passed its stderr through"
expect_eq "$(state "$id")" failed "the task failed"
expect_contains "$(field "$id" '[.errors[].error] | join(" ")')" "third line" \
  "the error keeps the stderr tail"
expect_exit 0 "$TASKQ" logs "$id" --stdout
"$TASKQ" logs "$id" --stdout >kept.bin 2>/dev/null 3>&-
tail -c "$mib" big.bin >want.bin
check "logs --stdout: the last 1 MiB, byte for byte" cmp kept.bin want.bin
expect_err_contains "the first 4.0 MiB of stdout dropped (kept the last 1.0 MiB)"
expect_exit 0 "$TASKQ" logs "$id" --stderr
expect_out $'first line\nsecond line\nthird line'
"$TASKQ" logs "$id" >both.out 2>both.err 3>&-
check "logs: stdout's part to stdout" cmp both.out want.bin
expect_contains "$(<both.err)" $'first line\nsecond line\nthird line' \
  "logs: stderr's lines to stderr"
expect_exit 0 "$TASKQ" show "$id" -o json
expect_eq "$(jout '[.output[] | "\(.attempt) \(.stream) \(.kept) \(.printed)"] | join(",")')" \
  "1 stderr 34 34,1 stdout $mib $((5 * mib))" "show -o json: output per attempt and stream"
expect_exit 0 "$TASKQ" show "$id"
expect_match "$out" "1 +stdout +1.0 MiB +5.0 MiB" "show: the table of output"
expect_exit 0 "$TASKQ" logs "$id" -o json --stderr
expect_eq "$(jq -sc 'map(.data) | join("")' <<<"$out")" \
  '"first line\nsecond line\nthird line\n"' "logs -o json: the data as strings"
expect_eq "$(jq -sr '.[0] | [.task, .attempt, .stream, .offset] | @tsv' <<<"$out")" \
  "$id	1	stderr	0" "logs -o json: task, attempt, stream, offset"
expect_exit 0 "$TASKQ" db check

section "logs of an unknown task, a task without output, a bad --attempt"
expect_exit 3 "$TASKQ" logs 999999
expect_err_contains "no task 999999"
quiet=$(add_task quiet)
expect_exit 0 "$TASKQ" logs "$quiet"
expect_out_empty
expect_err_contains "has not run yet"
expect_exit 3 "$TASKQ" logs "$id" --attempt 2
expect_exit 2 "$TASKQ" logs "$id" --attempt 0
expect_exit 2 "$TASKQ" logs "$id" --stdout --stderr
expect_exit 2 "$TASKQ" run loud --keep-output 1X -- ./loud.sh
expect_err_contains "--keep-output"

section "logs --follow shows a line within 1 s of the handler printing it"
mkfifo ready go
cat >slow.sh <<EOF
#!/bin/bash
echo "early line"
echo started >"$scratch/ready"
# A read that opens the FIFO before the last writer closed it gets end of
# file at once: read again until a line comes.
until read -r _ <"$scratch/go"; do :; done
echo "late line"
date +%s%N >"$scratch/printed_at"
until read -r _ <"$scratch/go"; do :; done
echo "last words" >&2
exit 0
EOF
chmod +x slow.sh
fid=$(add_task slow)
"$TASKQ" run slow --until-empty -- ./slow.sh >slow.out 2>slow.err 3>&- &
runner=$!
read -r _ <ready
"$TASKQ" logs "$fid" --follow >follow.out 2>follow.err 3>&- &
follower=$!
check "the follower shows what was printed before it started" \
  wait_until 10 grep -q "early line" follow.out
check "the follower keeps following while the attempt runs" alive "$follower"
echo go >go
check "the late line arrives" wait_until 10 grep -q "late line" follow.out
seen=$(now_ms)
printed=$(($(<printed_at) / 1000000))
check "it arrived within 1 s of being printed (took $((seen - printed)) ms)" \
  test $((seen - printed)) -lt 1000
check "the follower is still there" alive "$follower"
echo go >go
check "the follower exits when the attempt ends" wait_until 10 gone "$follower"
wait "$follower"
expect_eq "$?" 0 "the follower's exit status"
wait "$runner"
expect_eq "$(<follow.out)" $'early line\nlate line' "the follower's stdout"
expect_contains "$(<follow.err)" "last words" "the follower's stderr"
expect_eq "$(state "$fid")" completed "the followed task completed"

section "--attempt N selects an attempt; the default is the latest"
cat >twice.sh <<'EOF'
#!/bin/sh
echo "attempt $TASKQ_ATTEMPT out"
echo "attempt $TASKQ_ATTEMPT err" >&2
[ "$TASKQ_ATTEMPT" -ge 2 ]
EOF
chmod +x twice.sh
tid=$(add_task twice --retry-delay 0s)
"$TASKQ" run twice --until-empty -- ./twice.sh >/dev/null 2>&1 3>&-
expect_eq "$(state "$tid")" completed "completed at the second attempt"
expect_exit 0 "$TASKQ" logs "$tid" --attempt 1 --stdout
expect_out "attempt 1 out"
expect_exit 0 "$TASKQ" logs "$tid" --attempt 2 --stderr
expect_out "attempt 2 err"
expect_exit 0 "$TASKQ" logs "$tid" --stdout
expect_out "attempt 2 out"
expect_exit 0 "$TASKQ" show "$tid" -o json
expect_eq "$(jout '[.output[] | "\(.attempt)\(.stream)"] | join(",")')" \
  "1stderr,1stdout,2stderr,2stdout" "show lists both attempts' output"

section "--keep-output SIZE bounds what is kept; 0 keeps nothing"
cat >mid.sh <<EOF
#!/bin/sh
head -c 300000 "$scratch/big.bin"
EOF
chmod +x mid.sh
k=$(add_task mid)
"$TASKQ" run mid --until-empty --keep-output 64K -- ./mid.sh >/dev/null 2>&1 3>&-
"$TASKQ" logs "$k" --stdout >k.bin 2>/dev/null 3>&-
head -c 300000 big.bin | tail -c 65536 >k.want
check "the last 64 KiB kept" cmp k.bin k.want
none=$(add_task mid)
"$TASKQ" run mid --until-empty --keep-output 0 -- ./mid.sh >none.out 2>/dev/null 3>&-
check "with 0, stdout still passed through" cmp -n 300000 none.out big.bin
expect_exit 0 "$TASKQ" logs "$none"
expect_out_empty
expect_err_contains "has no output"
expect_exit 0 "$TASKQ" show "$none" -o json
expect_eq "$(jout '.output | length')" 0 "show: no output"

section "binary bytes survive, NULs and invalid UTF-8 included"
printf '#!/bin/sh\nprintf "a\\000b\\377\\376\\n\\001\\200end"\n' >bin.sh
chmod +x bin.sh
printf 'a\000b\377\376\n\001\200end' >bin.want
b=$(add_task bin)
"$TASKQ" run bin --until-empty -- ./bin.sh >/dev/null 2>&1 3>&-
"$TASKQ" logs "$b" --stdout >bin.got 2>/dev/null 3>&-
check "the bytes, exactly" cmp bin.got bin.want
expect_exit 0 "$TASKQ" logs "$b" -o json
expect_eq "$(jq -c .data <<<"$out")" $'"a\\u0000b\uFFFD\uFFFD\\n\\u0001\uFFFDend"' \
  "-o json: invalid bytes as U+FFFD"

section "export and import carry the output, byte for byte"
expect_exit 0 "$TASKQ" export
printf '%s\n' "$out" >first.jsonl
expect_eq "$(jq -r "select(.id == $b) | .output[0].data" first.jsonl)" \
  "$(base64 -w0 <bin.want)" "exported as base64"
src=$TASKQ_DB
fresh_db copy
expect_exit 0 "$TASKQ" import "$scratch/first.jsonl"
"$TASKQ" logs "$b" --stdout >bin.copy 2>/dev/null 3>&-
check "the binary output, imported" cmp bin.copy bin.want
"$TASKQ" logs "$id" --stdout >kept.copy 2>/dev/null 3>&-
check "the 1 MiB kept, imported" cmp kept.copy want.bin
expect_exit 0 "$TASKQ" export
printf '%s\n' "$out" >second.jsonl
check "export -> import -> export: identical" cmp first.jsonl second.jsonl
expect_exit 0 "$TASKQ" db check
bad=$(jq -c "select(.id == $b) | .output[0].data = \"not base64!\"" first.jsonl)
fresh_db refuse
printf '%s\n' "$bad" >bad.jsonl
expect_exit 2 "$TASKQ" import "$scratch/bad.jsonl"
expect_err_contains "output: 'data' must be base64 text"
export TASKQ_DB=$src

section "purge deletes a task's output with it"
expect_exit 0 "$TASKQ" purge --queue loud
expect_exit 3 "$TASKQ" logs "$id"
expect_exit 0 "$TASKQ" db check
if sqlite_only; then
  expect_eq "$(sqlite3 "$TASKQ_DB" "SELECT count(*) FROM task_output WHERE task_id = $id")" \
    0 "no output rows left"
  section "db check flags output whose task is gone"
  sqlite3 "$TASKQ_DB" "INSERT INTO task_output (task_id, attempt, stream, pos, data) \
    VALUES (424242, 1, 'stdout', 0, x'00')"
  expect_exit 5 "$TASKQ" db check
  expect_contains "$out$err" "1 deleted task(s) whose output is still kept" "db check names it"
  sqlite3 "$TASKQ_DB" "DELETE FROM task_output WHERE task_id = 424242"
fi

section "done/fail --output-file attach a file to the attempt"
printf 'from a shell worker\n' >note.txt
d=$(add_task shell)
tok=$(tq lease shell -o json | jq -r .lease.token)
expect_exit 0 "$TASKQ" done "$d" --lease "$tok" --output-file note.txt
expect_exit 0 "$TASKQ" logs "$d"
expect_out "from a shell worker"
f=$(add_task shell --max-errors 1)
tok=$(tq lease shell -o json | jq -r .lease.token)
head -c $((2 * mib)) big.bin >two.bin
expect_exit 0 "$TASKQ" fail "$f" --lease "$tok" --error broke --output-file two.bin
"$TASKQ" logs "$f" >f.bin 2>/dev/null 3>&-
tail -c "$mib" two.bin >f.want
check "its last 1 MiB" cmp f.bin f.want
expect_exit 2 "$TASKQ" done "$d" --lease "$tok" --output-file no-such-file
expect_err_contains "cannot read no-such-file"

section "run --tag prefixes each line with its task id; stored output is not"
cat >tag.sh <<'EOF'
#!/bin/sh
printf 'one\ntwo\npartial'
echo 'warn' >&2
EOF
chmod +x tag.sh
t1=$(add_task tag)
t2=$(add_task tag)
"$TASKQ" run tag --until-empty --concurrency 2 --tag -- ./tag.sh >tag.out 2>tag.err 3>&-
for t in "$t1" "$t2"; do
  expect_eq "$(grep -c "^$t	" tag.out)" 3 "task $t: 3 tagged lines on stdout"
  check "task $t: its unfinished line ended and tagged" grep -qx "$t	partial" tag.out
  check "task $t: its stderr tagged" grep -qx "$t	warn" tag.err
  expect_exit 0 "$TASKQ" logs "$t" --stdout
  expect_eq "$out" $'one\ntwo\npartial' "task $t: stored untagged"
done
