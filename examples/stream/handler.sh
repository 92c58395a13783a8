#!/bin/sh
# A persistent handler for `taskq run QUEUE --stream -- ./handler.sh`:
# reads one JSON task per line, answers one JSON outcome per line (needs jq).
while IFS= read -r line; do
  id=$(printf '%s' "$line" | jq -r '.task.id // empty')
  [ -n "$id" ] || continue # a cancel line: each task here is short
  url=$(printf '%s' "$line" | jq -r '.task.payload.url')
  if curl -fsS -o /dev/null "$url" 2>/dev/null; then
    printf '{"id":%s,"done":null}\n' "$id"
  else
    printf '{"id":%s,"fail":"cannot fetch %s"}\n' "$id" "$url"
  fi
done
