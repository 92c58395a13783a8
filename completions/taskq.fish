# fish completion for taskq
# Load with `taskq completion fish | source`, or install it:
#   taskq completion fish > ~/.config/fish/completions/taskq.fish

# The words before the cursor that are neither options nor option values:
# the command, its subcommand and its arguments (for run, those before --).
function __taskq_words
    set -l toks (commandline -opc)
    set -e toks[1]
    set -l cmd
    while set -q toks[1]
        switch $toks[1]
            case --db --worker -o --output --payload --text --payload-file \
                --jsonl --lines --fail-on --label --priority --delay --at --unique --max-attempts \
                --max-errors --error-window --retry-delay --backoff --max-delay \
                --for --match --count --lease --checkpoint --result --error \
                --move-to --retry-in --until --queue --state --limit --max-running \
                --concurrency --max-tasks --timeout --grace --release-delay \
                --prefetch --flush --checkpoint-signal --interval --after --root --to --ttl \
                --trigger --sync --every --cron --keys --since --older-than
                set -e toks[1]
            case '--'
                test "$cmd" = run; and return
            case '-*'
            case '*'
                set -q cmd[1]; or set cmd $toks[1]
                echo $toks[1]
        end
        set -e toks[1]
    end
end

# run QUEUE... -- CMD [ARG...]: true after the --, printing the handler's
# words before the cursor.
function __taskq_handler
    set -l toks (commandline -opc)
    set -l i (contains -i -- -- $toks); or return 1
    set -l words (__taskq_words)
    test "$words[1]" = run; or return 1
    set -e toks[1..$i]
    string escape -- $toks
    true
end

# What CMD and its arguments would complete to on a line of their own.
function __taskq_complete_handler
    set -l line (__taskq_handler); or return
    complete -C (string join ' ' -- $line (commandline -ct))
end

# __taskq_at WORD... [N]: the words typed so far start with WORD..., followed
# by exactly N more when N is given.
function __taskq_at
    set -l words (__taskq_words)
    set -l n
    if string match -qr '^\d+$' -- "$argv[-1]"
        set n $argv[-1]
        set -e argv[-1]
    end
    for i in (seq (count $argv))
        test "$words[$i]" = "$argv[$i]"; or return 1
    end
    test -z "$n"; or test (count $words) -eq (math (count $argv) + $n)
end

# Bulk form of an operator command: tasks chosen by --queue/--state/--match.
function __taskq_bulk
    string match -qr -- '^--(queue|state|match)' (commandline -opc)
end

# send ID... MESSAGE: after an id, more ids or the message.
function __taskq_send_more
    set -l words (__taskq_words)
    test "$words[1]" = send; and set -q words[2]; and not __taskq_bulk
    and not contains -- $words[-1] run pause sleep release checkpoint kill
end

# purge --state S,...: the states not typed yet, after those typed and a comma.
function __taskq_purge_states
    set -l typed (string replace -r -- '^--state=' '' (commandline -ct))
    set -l prefix (string match -r -- '^.*,' "$typed")
    set -l done (string split , -- "$prefix")
    for s in runnable sleeping paused fault completed failed killed
        contains -- $s $done; or echo "$prefix$s"
    end
end

# --state S,... of list, the bulk forms and retry: after the last comma,
# one of the states given (argv) not typed yet.
function __taskq_state_list
    set -l typed (string replace -r -- '^--state=' '' (commandline -ct))
    set -l prefix (string match -r -- '^.*,' "$typed")
    set -l done (string split , -- "$prefix")
    for s in $argv
        contains -- $s $done; or echo "$prefix$s"
    end
end

# Asks the taskq being completed for dynamic values (queue names, task ids),
# with the --db given on the line if any.
function __taskq_ask
    set -l toks (commandline -opc)
    set -l db
    for i in (seq 2 (count $toks))
        switch $toks[$i]
            case --db
                set db --db $toks[(math $i + 1)]
            case '--db=*'
                set db --db (string replace -- --db= '' $toks[$i])
        end
    end
    set -l cmd (string replace -r '^~/' ~/ -- $toks[1] $db)
    command -q $cmd[1]; and command $cmd $argv 2>/dev/null
end

# The ids of the tasks the command being completed can act on, newest first
# (taskq __ids COMMAND; complete -k keeps that order).
function __taskq_ids
    set -l words (__taskq_words)
    __taskq_ask __ids $words[1]
end

complete -c taskq -f

# Global options, anywhere on the line.
set -l global 'not __taskq_handler'
complete -c taskq -n $global -l db -r -F -d 'Database file'
complete -c taskq -n $global -l worker -x -d 'Worker name'
complete -c taskq -n "$global; and not __taskq_at events; and not __taskq_at flow" -s o -l output -x -a 'table json id env' -d 'Output format'
complete -c taskq -n '__taskq_at events' -s o -l output -x -a 'table json' -d 'Output format'
# Each flow command prints its own formats.
complete -c taskq -n '__taskq_at flow 0; or __taskq_at flow list' -s o -l output -x -a 'table json id' -d 'Output format'
complete -c taskq -n '__taskq_at flow submit' -s o -l output -x -a 'id json' -d 'Output format'
complete -c taskq -n '__taskq_at flow; and not __taskq_at flow 0; and not __taskq_at flow list; and not __taskq_at flow submit' -s o -l output -x -a 'table json' -d 'Output format'
complete -c taskq -n $global -l help -d 'Show help'
complete -c taskq -n '__taskq_at 0' -l version -d 'Show the version'

# Commands, with their summaries, from taskq itself (`taskq __command-table`:
# NAME TAB SUMMARY, one a line, as fish shows a candidate and its
# description), so this script lists none.
complete -c taskq -n '__taskq_at 0' -a '(__taskq_ask __command-table)'

# Arguments.
set -l queues '(__taskq_ask queue list -o id)'
set -l tasks '(__taskq_ids)'
set -l messages 'run pause sleep release checkpoint kill'
complete -c taskq -n '__taskq_at add 0; or __taskq_at lease; or __taskq_at queue set 0' -a $queues
complete -c taskq -n '__taskq_at run; and not __taskq_handler; or __taskq_at progress 0; or __taskq_at requeue 0' -a $queues
complete -c taskq -n __taskq_handler -a '(__taskq_complete_handler)'
complete -c taskq -k -n '__taskq_at wait' -a $tasks
complete -c taskq -k -n '__taskq_at heartbeat 0; or __taskq_at done 0; or __taskq_at fail 0' -a $tasks
complete -c taskq -k -n '__taskq_at retry; or __taskq_at show 0; or __taskq_at why 0' -a $tasks
for cmd in release sleep pause resume kill checkpoint
    complete -c taskq -k -n "__taskq_at $cmd" -a $tasks
end
complete -c taskq -k -n '__taskq_at send 0; and not __taskq_bulk' -a $tasks
complete -c taskq -n '__taskq_at send 0; and __taskq_bulk' -a $messages
complete -c taskq -k -n __taskq_send_more -a "$messages $tasks"
complete -c taskq -n '__taskq_at queue 0' -a list -d 'List queues'
complete -c taskq -n '__taskq_at queue 0' -a show -d 'Show a queue: settings and counts'
complete -c taskq -n '__taskq_at queue 0' -a set -d 'Configure a queue'
complete -c taskq -n '__taskq_at queue 0' -a pause -d 'Stop leasing from a queue'
complete -c taskq -n '__taskq_at queue 0' -a resume -d 'Lease from a queue again'
complete -c taskq -n '__taskq_at queue 0' -a redrive -d 'Move the tasks of a dead-letter queue to another'
complete -c taskq -n '__taskq_at queue show 0; or __taskq_at queue pause 0; or __taskq_at queue resume 0' -a $queues
complete -c taskq -n '__taskq_at queue redrive 0; or __taskq_at queue redrive 1' -a $queues
complete -c taskq -n '__taskq_at db 0' -a 'check path migrate backup vacuum'
complete -c taskq -n '__taskq_at db backup 0' -F
complete -c taskq -n '__taskq_at tx 0; or __taskq_at import 0' -F
complete -c taskq -n '__taskq_at export' -l queue -x -a $queues -d 'Only tasks of this queue'

complete -c taskq -n '__taskq_at completion 0' -a 'bash zsh fish'
complete -c taskq -n '__taskq_at schedule 0' -a add -d 'Add a schedule'
complete -c taskq -n '__taskq_at schedule 0' -a list -d 'List schedules'
complete -c taskq -n '__taskq_at schedule 0' -a show -d 'Show a schedule'
complete -c taskq -n '__taskq_at schedule 0' -a pause -d 'Stop a schedule emitting'
complete -c taskq -n '__taskq_at schedule 0' -a resume -d 'Let a schedule emit again'
complete -c taskq -n '__taskq_at schedule 0' -a rm -d 'Remove a schedule'
complete -c taskq -n '__taskq_at gate 0' -a add -d 'Add a gate'
complete -c taskq -n '__taskq_at gate 0' -a list -d 'List gates'
complete -c taskq -n '__taskq_at gate 0' -a show -d 'Show a gate'
complete -c taskq -n '__taskq_at gate 0' -a rm -d 'Remove a gate'
complete -c taskq -n '__taskq_at schedule add 1; or __taskq_at gate add 1' -a $queues
for cmd in show pause resume rm
    complete -c taskq -n "__taskq_at schedule $cmd 0" -a '(__taskq_ask schedule list -o id)'
end
complete -c taskq -n '__taskq_at gate show 0; or __taskq_at gate rm 0' -a '(__taskq_ask gate list -o id)'
complete -c taskq -n '__taskq_at flow 0' -a submit -d 'Submit a flow document'
complete -c taskq -n '__taskq_at flow 0' -a list -d 'List flows'
complete -c taskq -n '__taskq_at flow 0' -a show -d 'Show a flow, its atoms and its event history'
complete -c taskq -n '__taskq_at flow 0' -a wait -d 'Wait until a flow finishes'
complete -c taskq -n '__taskq_at flow 0' -a suspend -d 'Suspend a running flow'
complete -c taskq -n '__taskq_at flow 0' -a resume -d 'Resume a suspended flow'
complete -c taskq -n '__taskq_at flow 0' -a rerun -d 'Run a finished flow again'
complete -c taskq -n '__taskq_at flow submit 0' -F
for cmd in show wait suspend resume rerun
    complete -c taskq -n "__taskq_at flow $cmd 0" -a '(__taskq_ask flow list -o id)'
end

# Command options.
set -l add '__taskq_at add'
complete -c taskq -n $add -l payload -x -d 'JSON payload'
complete -c taskq -n $add -l text -x -d 'Payload as a JSON string'
complete -c taskq -n $add -l payload-file -r -F -d 'Read the JSON payload from a file'
complete -c taskq -n $add -l jsonl -r -F -d 'Add one task per JSON line (- for stdin)'
complete -c taskq -n $add -l lines -r -F -d 'Add one task per line, its text the payload (- for stdin)'
complete -c taskq -n $add -l label -x -d 'Label the task (K=V)'
complete -c taskq -n $add -l priority -x -d 'Higher is leased first'
complete -c taskq -n $add -l delay -x -d 'Make it due later'
complete -c taskq -n $add -l at -x -d 'Make it due at a time'
complete -c taskq -n $add -l unique -x -d 'Add nothing while an unfinished task has this key'
complete -c taskq -k -n $add -l after -x -a $tasks -d 'Wait until these tasks are completed (ID,...)'
complete -c taskq -n $add -l root -x -d 'Obsolete while an unfinished task has these labels (K=V,...)'
complete -c taskq -n $add -l to -x -d 'Deliver to this worker only'
complete -c taskq -n $add -l broadcast -d 'Deliver once to every worker of the queue'
complete -c taskq -n $add -l ttl -x -d 'How long a broadcast is delivered'
complete -c taskq -n $add -l trigger -x -d 'The gate keys it covers when it completes (K1,K2,...)'
set -l policy '__taskq_at add; or __taskq_at queue set'
complete -c taskq -n $policy -l max-attempts -x -d 'Pause after this many leases'
complete -c taskq -n $policy -l max-errors -x -d 'Fail after this many errors in the window'
complete -c taskq -n $policy -l error-window -x -d 'Window in which errors count'
complete -c taskq -n $policy -l retry-delay -x -d 'Delay before a retry'
complete -c taskq -n $policy -l backoff -x -a 'constant exponential' -d 'Retry delay growth'
complete -c taskq -n $policy -l max-delay -x -d 'Longest exponential retry delay'
complete -c taskq -n '__taskq_at queue set' -l max-running -x -d 'Lease at most this many at once'
complete -c taskq -n '__taskq_at queue set; or __taskq_at queue pause' -l create -d 'A queue no task has used yet'

complete -c taskq -n '__taskq_at lease' -l for -x -d 'Lease duration'
complete -c taskq -n '__taskq_at lease' -l match -x -d 'Only tasks with matching labels (K=V)'
complete -c taskq -n '__taskq_at lease' -l count -x -d 'Lease up to this many tasks'
complete -c taskq -n '__taskq_at lease' -l wait -d 'Wait for an eligible task (--wait=DUR: at most DUR)'
complete -c taskq -n '__taskq_at lease' -s q -l quiet -d 'Say nothing when there is nothing to lease'

set -l run '__taskq_at run; and not __taskq_handler'
complete -c taskq -n $run -l for -x -d 'Lease duration'
complete -c taskq -n $run -l concurrency -x -d 'Run up to this many handlers at once'
complete -c taskq -n $run -l max-tasks -x -d 'Lease at most this many tasks, then exit'
complete -c taskq -n $run -l until-empty -d 'Exit when nothing is eligible'
complete -c taskq -n $run -l timeout -x -d 'Stop a handler after'
complete -c taskq -n $run -l grace -x -d 'Between SIGTERM and SIGKILL when stopping a handler'
complete -c taskq -n $run -l release-delay -x -d 'When a handler exits 75, make its task due after'
complete -c taskq -n $run -l stream -d 'Start the command once and feed it one JSON task per line'
complete -c taskq -n $run -l prefetch -x -d 'With --stream, lease this many tasks ahead; record outcomes in batches'
complete -c taskq -n $run -l flush -x -d 'With --prefetch, record a batch at most this long after its first outcome'
complete -c taskq -n $run -l result-stdout -d "Store the handler's stdout as the result"
complete -c taskq -n $run -l match -x -d 'Only tasks with matching labels (K=V)'
complete -c taskq -n $run -l checkpoint-signal -x -a 'USR1 USR2 HUP INT QUIT TERM' -d 'Signal for a checkpoint request'
complete -c taskq -n $run -s v -l verbose -d 'One line per task on stderr'
complete -c taskq -n $run -s q -l quiet -d 'Print nothing when no task was leased'
complete -c taskq -n $run -l fail-on -x -a 'failed retry never' -d 'Which outcomes make run exit 6'
complete -c taskq -n '__taskq_at wait' -l timeout -x -d 'Give up after'
complete -c taskq -n '__taskq_at progress' -l interval -x -d 'Time between lines when not on a terminal'

set -l worker '__taskq_at heartbeat; or __taskq_at done; or __taskq_at fail; or __taskq_at release; or __taskq_at sleep'
complete -c taskq -n $worker -l lease -x -d 'Lease token (default $TASKQ_LEASE)'
complete -c taskq -n '__taskq_at heartbeat' -l for -x -d 'Extend the lease by'
complete -c taskq -n '__taskq_at heartbeat' -l checkpoint -x -d 'Store saved progress (JSON)'
complete -c taskq -n '__taskq_at done' -l result -x -d 'Result of the task (JSON)'
complete -c taskq -n '__taskq_at done' -l sync -x -d 'Store K=V on its schedule, for the next task'
complete -c taskq -n '__taskq_at fail' -l error -x -d 'What went wrong'
complete -c taskq -n '__taskq_at fail' -l no-retry -d 'Fail for good now'
complete -c taskq -n '__taskq_at fail' -l move-to -x -a $queues -d 'Move it to a dead-letter queue'
complete -c taskq -n '__taskq_at fail' -l retry-in -x -d 'Retry after'
complete -c taskq -n '__taskq_at release' -l delay -x -d 'Make it due later'
complete -c taskq -n '__taskq_at sleep; or __taskq_at send' -l until -x -d 'Sleep until a time'
complete -c taskq -n '__taskq_at sleep; or __taskq_at send' -l for -x -d 'Sleep for a duration'

set -l select '__taskq_at list; or __taskq_at release; or __taskq_at sleep; or __taskq_at pause;
    or __taskq_at resume; or __taskq_at kill; or __taskq_at checkpoint; or __taskq_at send'
complete -c taskq -n "$select; or __taskq_at stats" -l queue -x -a $queues -d 'Only tasks of this queue'
complete -c taskq -n '__taskq_at events; or __taskq_at purge' -l queue -x -a $queues -d 'Only tasks of this queue'
complete -c taskq -n $select -l state -x -a '(__taskq_state_list runnable sleeping paused completed failed killed running ready)' -d 'Only tasks in these states (S,...)'
complete -c taskq -n "$select; or __taskq_at retry" -l match -x -d 'Only tasks with matching labels (K=V)'
complete -c taskq -n '__taskq_at list' -l state -x -a '(__taskq_state_list erred)' -d 'Only tasks in these states (S,...)'
complete -c taskq -n '__taskq_at list' -l limit -x -d 'List at most this many'
complete -c taskq -n '__taskq_at list' -l newest -d 'Newest first'
complete -c taskq -n '__taskq_at retry' -l queue -x -a $queues -d 'Retry the tasks of this queue'
complete -c taskq -n '__taskq_at retry' -l state -x -a '(__taskq_state_list failed killed completed)' -d 'Retry the tasks in these states (S,...)'
complete -c taskq -n '__taskq_at retry' -l again -d 'Retry even a task whose retry is unfinished'
complete -c taskq -n '__taskq_at workers' -l since -x -d 'Seen within this long (default 1h)'
complete -c taskq -n '__taskq_at events' -l since -x -d 'Only events at or after a time'
complete -c taskq -n '__taskq_at events' -s f -l follow -d 'Keep printing new events as they happen'

set -l purge '__taskq_at purge'
complete -c taskq -n $purge -l state -x -a '(__taskq_purge_states)' -d 'Only these states (S,...)'
complete -c taskq -n $purge -l older-than -x -d 'Only tasks finished at least this long ago'
complete -c taskq -n $purge -l force -d 'Also delete unfinished tasks'
complete -c taskq -n $purge -l dry-run -d 'Print how many would go; delete nothing'

# What schedules and gates emit, and when.
complete -c taskq -n '__taskq_at schedule add' -l every -x -d 'Interval (15 minutes, day at 08:00, ...)'
complete -c taskq -n '__taskq_at schedule add' -l cron -x -d 'Cron expression, in UTC (m h dom mon dow)'
complete -c taskq -n '__taskq_at schedule add' -l trigger -x -d 'The gate keys each task it emits covers (K1,K2,...)'
complete -c taskq -n '__taskq_at gate add' -l keys -x -d 'The trigger keys it waits for (K1,K2,...)'
set -l emit '__taskq_at schedule add; or __taskq_at gate add'
complete -c taskq -n $emit -l payload -x -d 'JSON payload of each task it emits'
complete -c taskq -n $emit -l text -x -d 'Payload as a JSON string'
complete -c taskq -n $emit -l label -x -d 'Label each task it emits (K=V)'
complete -c taskq -n $emit -l priority -x -d 'Priority of each task it emits'
complete -c taskq -n '__taskq_at tick' -l queue -x -a $queues -d 'Only the schedules of this queue'

# Flows.
complete -c taskq -n '__taskq_at flow list' -l state -x -a 'PENDING RUNNING SUCCESS FAILURE REVERTED SUSPENDING SUSPENDED RESUMING' -d 'Only flows in this state'
complete -c taskq -n '__taskq_at flow wait' -l timeout -x -d 'Give up after (exit 75)'
complete -c taskq -n '__taskq_at flow rerun' -l reset -d 'Reset every atom and the store first'
