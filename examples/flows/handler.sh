#!/bin/sh
# One handler for every step of deploy.json: taskq run sets TASKQ_ATOM,
# TASKQ_ACTION (execute or revert) and TASKQ_ARGS (the symbols the atom
# requires, as JSON; a revert also gets "result" and "failures").
# What it prints on stdout is the atom's result (run --result-stdout).
set -eu
arg() { printf "%s" "$TASKQ_ARGS" | jq -cr ".$1"; }
case "$TASKQ_ACTION:$TASKQ_ATOM" in
execute:build)
  echo "\"web-$(arg version).tar.gz\"" ;;
execute:upload)
  mirror=$(arg mirror)
  if [ "$mirror" = mirror-a ]; then # mirror-a is down today
    echo "upload to $mirror: connection refused" >&2
    exit 1
  fi
  echo "\"https://$mirror.example.org/$(arg artifact)\"" ;;
revert:upload)
  echo "unpublishing $(arg result) after: $(arg failures)" >&2 ;;
execute:announce)
  echo "\"announced $(arg url)\"" ;;
esac
