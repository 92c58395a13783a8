# JSON and text from outside taskq: JSON text from outside taskq is
# checked by one RFC 8259 validator (core::json_error) wherever it enters,
# a byte-order mark is refused there, numbers of any size keep every digit
# end to end, `lease -o env` is eval-safe for every payload (a NUL inside a
# string payload included), and a handler's stored error stays within its
# bound after UTF-8 repair.

set_now 2026-11-21T08:00:00Z

# db_digest: the whole database as SQL text, hashed, to prove a refused
# input changed nothing.
db_digest() { db_dump | sha256sum; }

# payload_of ID: the payload's exact text in `show -o json` (jq would round
# big numbers). The payload is the fifth field and followed by "labels".
payload_of() {
  "$TASKQ" show "$1" -o json 2>&1 | sed -n 's/.*"state":"[a-z]*","payload":\(.*\),"labels":.*/\1/p'
}

# env_payload ENV_TEXT SHELL: sets $envp to TASKQ_PAYLOAD after SHELL
# evals the text, exactly (an x guards trailing newlines), or EVAL-FAILED.
env_payload() {
  envp=$("$2" -c 'eval "$1" || exit 9; printf %s "$TASKQ_PAYLOAD"; printf x' _ "$1") ||
    envp=EVAL-FAILEDx
  envp=${envp%x}
}

big=$(printf '7%.0s' {1..400}) # 400 digits
neg="-$(printf '9%.0s' {1..320}).$(printf '1%.0s' {1..50})e-400"

section "a NUL in a string payload: lease -o env stays eval-safe (defect 1)"
id=$(add_task nul --payload '"a\u0000b"')
expect_exit 0 "$TASKQ" lease nul -o env
env_text=$out
# A shell variable cannot hold NUL: the payload comes as its JSON text.
for sh in sh bash; do
  env_payload "$env_text" "$sh"
  expect_eq "$envp" '"a\u0000b"' "TASKQ_PAYLOAD after $sh evals lease -o env"
done
tok=$(bash -c 'eval "$1"; printf %s "$TASKQ_LEASE"' _ "$env_text")
expect_exit 0 "$TASKQ" done "$id" --lease "$tok"
expect_eq "$(state "$id")" completed "the worker could finish the task"

section "the documented worker loop survives a NUL payload"
mkdir -p worker
cat >worker/work.sh <<'EOF'
eval "$("$TASKQ" lease "$1" -o env)" || exit 0
printf '%s' "$TASKQ_PAYLOAD" >>got
"$TASKQ" done
EOF
add_task loop --payload '"x\u0000y"' >/dev/null
add_task loop --text after >/dev/null
(cd worker && bash work.sh loop && bash work.sh loop && bash work.sh loop 2>/dev/null)
expect_eq "$(cat worker/got)" '"x\u0000y"after' "both tasks reached the worker"
expect_exit 75 "$TASKQ" lease loop

section "lease -o env round-trips payloads through sh and bash"
payloads=(
  '"a\u0000b"'
  '"\u0000"'
  '"it'\''s \u0000 $(touch pwned) `touch pwned` '\''"'
  '"\u0000\n'\''\n"'
  '"no nul: it'\''s $(touch pwned)\n"'
  '"caf\u00e9 \ud83c\udf89 \u0007"'
  "$big"
  "[1e309,$neg]"
  '{"k":"\u0000","n":0}'
  '""'
  'null'
)
for p in "${payloads[@]}"; do
  q=rt$RANDOM
  id=$(add_task "$q" --payload "$p")
  stored=$(payload_of "$id")
  # What TASKQ_PAYLOAD must be: a string's contents unless they hold NUL.
  if [[ $stored == \"* && $stored != *'\u0000'* ]]; then
    want=$(jq -j . <<<"$stored"; printf x)
    want=${want%x}
  else
    want=$stored
  fi
  expect_exit 0 "$TASKQ" lease "$q" -o env
  for sh in sh bash; do
    (cd worker && env_payload "$out" "$sh" &&
      expect_eq "$envp" "$want" "TASKQ_PAYLOAD of $p via $sh")
  done
  check "no pwned file" test ! -e worker/pwned -a ! -e pwned
done

section "run gives a handler the same TASKQ_PAYLOAD as lease -o env"
id=$(add_task runnul --payload '"p\u0000q"')
expect_exit 0 "$TASKQ" run runnul --until-empty -- \
  sh -c 'printf %s "$TASKQ_PAYLOAD" >runnul.env; cat >runnul.stdin'
expect_eq "$(cat runnul.env)" '"p\u0000q"' "TASKQ_PAYLOAD in run"
expect_eq "$(od -An -c runnul.stdin | tr -s ' ')" " p \\0 q" \
  "stdin holds the decoded string, NUL and all"
expect_eq "$(state "$id")" completed

section "a byte-order mark is refused wherever JSON enters (defect 2)"
fresh_db
bom=$'\xef\xbb\xbf'
id=$(add_task bom)
tok=$(tq lease bom -o json | jq -r .lease.token)
printf '%s{"a":1}' "$bom" >bom.json
printf '%s{"queue":"q"}\n' "$bom" >bom.jsonl
printf '%s{"create":[{"queue":"q"}]}' "$bom" >bomtx.json
before=$(db_digest)
# expect_refused WHAT CMD...: exit 2, one taskq: line naming WHAT and the
# byte-order mark.
expect_refused() {
  local what=$1
  shift
  expect_exit 2 "$@"
  expect_err_format
  expect_eq "$(grep -c '' <<<"$err")" 1 "lines on stderr of $cmd"
  expect_err_contains "$what"
  expect_err_contains "byte-order mark"
}
expect_refused "--payload" "$TASKQ" add q --payload "$bom\"x\""
expect_refused "--payload" "$TASKQ" add q --payload "$bom"'{"a":1}'
expect_refused "bom.json" "$TASKQ" add q --payload-file bom.json
expect_refused "line 1 of bom.jsonl" "$TASKQ" add q --jsonl bom.jsonl
expect_refused "line 1 of stdin" bash -c '"$TASKQ" add q --jsonl - <bom.jsonl'
expect_refused "bomtx.json" "$TASKQ" tx bomtx.json
expect_refused "on stdin" bash -c '"$TASKQ" tx <bomtx.json'
expect_refused "--result" "$TASKQ" done "$id" --lease "$tok" --result "$bom"1
expect_refused "--checkpoint" "$TASKQ" heartbeat "$id" --lease "$tok" \
  --checkpoint "$bom"1
expect_refused "--payload" "$TASKQ" schedule add s q --every '1 hour' \
  --payload "$bom"1
"$TASKQ" export >good.jsonl
{
  printf '%s' "$bom"
  cat good.jsonl
} >bom-export.jsonl
expect_refused "line 1 of bom-export.jsonl" "$TASKQ" --db fresh.db import bom-export.jsonl
expect_exit 0 "$TASKQ" --db fresh.db list -o id
expect_out_empty
expect_eq "$(db_digest)" "$before" "no refused input changed the database"
# A BOM inside a string is a character like any other.
expect_exit 0 "$TASKQ" add q --text "${bom}x"
expect_exit 0 "$TASKQ" show "$out" -o json
expect_eq "$(jq -r .payload <<<"$out")" "${bom}x" "a BOM inside a string"

section "a handler's stdout that starts with a BOM is stored as a string"
id=$(add_task bomout)
expect_exit 0 "$TASKQ" run bomout --until-empty --result-stdout -- \
  printf '\357\273\277{"a":1}'
expect_exit 0 "$TASKQ" show "$id" -o json
expect_eq "$(jq -r '.result | type' <<<"$out")" string "the result's type"
expect_eq "$(jq -r .result <<<"$out")" "$bom"'{"a":1}' "the result"
expect_exit 0 "$TASKQ" export
expect_exit 0 jq -e . <<<"$out"

section "other malformed JSON is refused with a reason, on one line"
before=$(db_digest)
for bad in '01' '[1,]' '"a' $'"tab\there"' '"\uD800"' '"\uDC00x"' '1 2' \
  '{"a" 1}' 'NaN' '' $'\n[\n1\n'; do
  expect_exit 2 "$TASKQ" add q --payload "$bad"
  expect_err_format
  expect_eq "$(grep -c '' <<<"$err")" 1 "lines on stderr of $cmd"
  expect_err_contains "invalid JSON for --payload: "
done
printf '"\xc0\xaf"' >overlong.json
expect_exit 2 "$TASKQ" add q --payload-file overlong.json
expect_err_contains "invalid JSON for overlong.json: overlong UTF-8"
printf '"\xed\xa0\x80"' >surrogate.json
expect_exit 2 "$TASKQ" add q --payload-file surrogate.json
expect_err_contains "surrogate"
printf '{"queue":"q"}\n{"queue":"q"\n' >bad.jsonl
expect_exit 2 "$TASKQ" add q --jsonl bad.jsonl
expect_err_contains "invalid JSON on line 2 of bad.jsonl: the text ends inside an object; nothing was added"
expect_exit 2 bash -c '"$TASKQ" tx <<<"{\"create\":[{\"queue\":\"q\"}]"'
expect_err_contains "tx: the document on stdin is not valid JSON: the text ends inside an object"
expect_eq "$(db_digest)" "$before" "no refused input changed the database"

section "numbers of any size keep every digit end to end (defect 10)"
fresh_db
a=$(add_task big --payload "$big")
b=$(add_task big --payload '1e309')
c=$(add_task big --payload "{\"n\":[$neg, 1E+999999999, -0.0e-0]}")
printf '{"n":%s}\n' "$big" >big.json
d=$(add_task big --payload-file big.json)
expect_eq "$(payload_of "$a")" "$big" "a 400-digit payload"
expect_eq "$(payload_of "$b")" 1e309 "1e309"
expect_eq "$(payload_of "$c")" "{\"n\":[$neg,1E+999999999,-0.0e-0]}" \
  "a payload of extreme numbers"
expect_eq "$(payload_of "$d")" "{\"n\":$big}" "--payload-file"
expect_exit 0 "$TASKQ" list -o json
expect_contains "$out" "\"payload\":$big," "list -o json"
expect_contains "$out" '"payload":1e309,' "list -o json"
expect_exit 0 "$TASKQ" list
expect_contains "$out" "1e309" "list's table"
printf '{"queue":"jl","payload":%s}\n{"queue":"jl","payload":1e309}\n' \
  "$big" >big.jsonl
expect_exit 0 "$TASKQ" add jl --jsonl big.jsonl
expect_exit 0 "$TASKQ" list --queue jl -o json
expect_contains "$out" "\"payload\":{\"queue\":\"jl\",\"payload\":$big}" \
  "add --jsonl"
expect_exit 0 "$TASKQ" tx <<<"{\"create\":[{\"queue\":\"tx\",\"payload\":$big}],
  \"update\":[{\"id\":$b,\"rev\":1,\"payload\":[1e309, $big]}]}"
expect_eq "$(payload_of "$(jout '.created[0]')")" "$big" "tx create"
expect_eq "$(payload_of "$b")" "[1e309,$big]" "tx update"
tok=$(tq lease big -o json | jq -r .lease.token)
expect_exit 0 "$TASKQ" heartbeat "$a" --lease "$tok" --checkpoint "$big"
expect_exit 0 "$TASKQ" lease big -o env # the env form of a big payload
expect_exit 0 "$TASKQ" done "$a" --lease "$tok" --result '{"r":1e309}'
expect_exit 0 "$TASKQ" show "$a" -o json
expect_contains "$out" "\"checkpoint\":$big," "the checkpoint"
expect_contains "$out" '"result":{"r":1e309}' "the result"
id=$(add_task bigrun)
expect_exit 0 "$TASKQ" run bigrun --until-empty --result-stdout -- \
  printf '%s\n' "[$big, 1e309]"
expect_exit 0 "$TASKQ" show "$id" -o json
expect_contains "$out" "\"result\":[$big,1e309]" "a handler's JSON stdout"

section "export and import carry big numbers byte for byte"
expect_exit 0 "$TASKQ" export
first=$out
expect_contains "$first" "\"payload\":$big," "export"
printf '%s\n' "$first" >all.jsonl
expect_exit 0 "$TASKQ" --db copy.db import all.jsonl
expect_exit 0 "$TASKQ" --db copy.db export
expect_eq "$out" "$first" "export of the import is the same bytes"

section "a 200,000-deep payload works through tx, show, list and export"
fresh_db
deep=$(printf '[%.0s' {1..200000})1e309$(printf ']%.0s' {1..200000})
printf '%s' "$deep" >deep.json
expect_exit 0 "$TASKQ" add deep --payload-file deep.json
id=$out
expect_eq "$(payload_of "$id")" "$deep" "show -o json"
printf '{"update":[{"id":%s,"rev":1,"payload":{"d":%s}}]}' "$id" "$deep" >deeptx.json
expect_exit 0 "$TASKQ" tx deeptx.json
expect_eq "$(payload_of "$id")" "{\"d\":$deep}" "after tx"
expect_exit 0 "$TASKQ" list -o json
expect_contains "$out" "\"payload\":{\"d\":$deep}," "list -o json"
expect_exit 0 "$TASKQ" export
printf '%s\n' "$out" >deep.jsonl
expect_exit 0 "$TASKQ" --db deepcopy.db import deep.jsonl
expect_exit 0 "$TASKQ" --db deepcopy.db show "$id" -o json
expect_contains "$out" "\"payload\":{\"d\":$deep}," "after export and import"

section "a handler's stored error stays within its bound (defect 11)"
fresh_db
id=$(add_task noisy)
expect_exit 6 "$TASKQ" run noisy --until-empty -- \
  sh -c 'head -c 5000 /dev/zero | tr "\0" "\377" >&2; exit 1'
err_text=$(field "$id" '.errors[0].error')
bytes=$(printf '%s' "$err_text" | wc -c)
status="exit status 1: "
check "the stored error is at most 2000 bytes + its status ($bytes)" \
  test "$bytes" -le $((2000 + ${#status}))
expect_match "$err_text" '^exit status 1: ' "the error"
check "the stored error is valid UTF-8" \
  bash -c 'printf %s "$1" | iconv -f UTF-8 -t UTF-8 >/dev/null' _ "$err_text"
