# Checks the soak's event log, one task at a time (tests/soak/run).
#
# Input: `taskq events -o json` as tab-separated
#   ID TIME TASK MESSAGE ACTOR DETAIL
# (ID 0 for the add event, which has none), sorted by task, then by event id,
# the order in which the writes committed. Times are RFC 3339 UTC, with
# milliseconds unless they are 0 (`...:31Z`); ms() gives them all three
# digits, and then they compare as strings.
#
# For each task it replays the leases: a lease is held from its `lease` event
# until an event that ends it (`expire`, `complete`, `release`, `error`,
# `sleep`, `pause`, `kill`). It reports, on stdout, one line per violation:
#   - a `lease` while the previous lease had not ended (two live leases);
#   - a `lease` or a second `complete` after the task completed;
#   - an `expire` earlier than the deadline its lease event gave (heartbeats
#     extend a lease without an event, so that deadline is a lower bound),
#     or naming another worker than the holder;
#   - a `complete` with no lease held, by another worker than the holder, or
#     (for shell workers, which never heartbeat, so the deadline is exact)
#     at or after the lease's deadline;
#   - a task with no `complete`, or more than one.
# With -v pairs=FILE it writes "TASK ACTOR" for every lease and with
# -v completes_file=FILE "TASK ACTOR" for every complete, for the cross-checks
# against the workers' own records. The last stdout line is the summary:
#   summary TASKS LEASES EXPIRES COMPLETES TWICE NEVER RELEASES OTHER
# With -v retries=1 (tests/multihost/run, whose handlers are SIGKILLed and
# whose queue retries every failure at once) a failed attempt is expected
# too: an `error` by the holder of the live lease ends it, then taskq's
# `sleep` (the retry) and, when the task is leased again, taskq's `run`
# (woke up), in that order; anything else of theirs is a violation. The
# summary then has a ninth field, the number of such errors:
#   summary TASKS LEASES EXPIRES COMPLETES TWICE NEVER RELEASES OTHER ERRORS
BEGIN {
  FS = "\t"
  tasks = leases = expires = completes = twice = never = releases = other = 0
  errors = 0
  cur = ""
}

function ms(t) {
  if (t !~ /\.[0-9][0-9][0-9]Z$/) sub(/Z$/, ".000Z", t)
  return t
}

function bad(msg) {
  print "task " cur ": " msg
}

function finish_task() {
  if (cur == "") return
  tasks++
  if (ncomplete == 0) {
    never++
    bad("never completed (" nlease " leases, last event " last ")")
  } else if (ncomplete > 1) {
    twice++
    bad("completed " ncomplete " times")
  }
}

$3 != cur {
  finish_task()
  cur = $3
  held = 0; holder = ""; until = ""; ncomplete = 0; nlease = 0; last = ""
  resting = ""
}

{
  id = $1; t = ms($2); msg = $4; actor = $5; detail = $6
  last = msg " at " t
}

msg == "add" { next }

msg == "lease" {
  leases++; nlease++
  if (resting != "") bad("leased by " actor " at " t " while " resting)
  if (pairs != "") print cur, actor > pairs
  if (ncomplete > 0) bad("leased by " actor " at " t " after it completed")
  if (held) {
    bad("leased by " actor " at " t " while the lease of " holder \
        " (until " until ") had not ended: two live leases")
  }
  held = 1; holder = actor; until = ""
  if (match(detail, /until [^ ,]+/)) until = ms(substr(detail, RSTART + 6, RLENGTH - 6))
  if (until == "") bad("lease event without a deadline: " detail)
  next
}

msg == "expire" {
  expires++
  if (!held) {
    bad("expire at " t " with no lease held")
  } else {
    if (t < until) bad("lease of " holder " expired at " t ", before its deadline " until)
    if (detail != "lease of " holder " expired")
      bad("expire at " t " says '" detail "' but the holder was " holder)
  }
  held = 0
  next
}

msg == "complete" {
  completes++; ncomplete++
  if (completes_file != "") print cur, actor > completes_file
  if (!held) {
    bad("completed by " actor " at " t " with no lease held")
  } else {
    if (actor != holder) bad("completed by " actor " at " t " but leased by " holder)
    if (holder ~ /^sh/ && t >= until)
      bad("completed by " actor " at " t ", at or after its lease's deadline " until)
  }
  held = 0
  next
}

msg == "release" { releases++; held = 0; next }
retries && msg == "error" && actor != "taskq" {
  errors++
  if (!held) {
    bad("error by " actor " at " t " with no lease held")
  } else if (actor != holder) {
    bad("error by " actor " at " t " but leased by " holder)
  }
  held = 0; resting = "in fault (no retry decided)"
  next
}
retries && msg == "sleep" && actor == "taskq" && resting ~ /^in fault/ {
  resting = "sleeping (not woken)"
  next
}
retries && msg == "run" && actor == "taskq" && resting ~ /^sleeping/ {
  resting = ""
  next
}
msg == "error" || msg == "sleep" || msg == "pause" || msg == "kill" {
  other++; held = 0
  bad("unexpected '" msg "' event at " t " by " actor ": " detail)
  next
}
{
  other++
  bad("unexpected '" msg "' event at " t " by " actor ": " detail)
}

END {
  finish_task()
  if (retries) {
    print "summary", tasks, leases, expires, completes, twice, never, releases, other, errors
  } else {
    print "summary", tasks, leases, expires, completes, twice, never, releases, other
  }
}
