#!/usr/bin/env python3
# A persistent handler for `taskq run QUEUE --stream -- ./handler.py`:
# one JSON task per line on stdin, one JSON outcome per line on stdout.
import json, sys

for line in sys.stdin:
    msg = json.loads(line)
    if "task" not in msg:          # {"cancel": {...}}: nothing runs long here
        continue
    task = msg["task"]
    try:
        n = task["payload"]["n"]
        answer = {"id": task["id"], "done": {"square": n * n}}
    except Exception as e:         # a failure goes to the retry policy
        answer = {"id": task["id"], "fail": repr(e)}
    print(json.dumps(answer), flush=True)
