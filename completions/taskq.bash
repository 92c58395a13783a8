# bash completion for taskq
# Load with `source <(taskq completion bash)`, or install it:
#   taskq completion bash > /etc/bash_completion.d/taskq

# Prints the dynamic values `taskq ARGS...` lists (the commands, queue
# names, task ids: `taskq __ids COMMAND` prints those COMMAND can act on,
# newest first),
# asking the taskq being completed, with the --db given on the line if any
# (the caller's db array).
_taskq_ask() {
    local bin=${COMP_WORDS[0]/#\~/$HOME}
    "$bin" "${db[@]}" "$@" 2>/dev/null
}

_taskq() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local cmd='' sub='' npos=0 last='' bulk='' handler='' eq='' i w words=''
    local messages="run pause sleep release checkpoint kill"
    local -a db=()
    COMPREPLY=()
    # COMP_WORDBREAKS splits `--opt=value` into `--opt`, `=`, `value`.
    if [[ $cur == = ]]; then
        cur= eq=1
    elif [[ $prev == = ]]; then
        prev=${COMP_WORDS[COMP_CWORD-2]} eq=1
    fi

    # Find the command, subcommand and positional count before the cursor,
    # skipping option values.
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        case $w in
        --db | --worker | -o | --output | --payload | --text | --payload-file | \
            --jsonl | --lines | --label | --priority | --delay | --at | --max-attempts | --unique | \
            --fail-on | --max-errors | --error-window | --retry-delay | --backoff | \
            --max-delay | --for | --match | --count | --lease | --checkpoint | \
            --result | --error | --move-to | --retry-in | --until | --queue | \
            --state | --limit | --max-running | --concurrency | --max-tasks | \
            --timeout | --grace | --release-delay | --checkpoint-signal | \
            --prefetch | --flush | --interval | --after | --root | --to | --ttl | --trigger | --sync | \
            --every | --cron | --keys | --since | --older-than)
            [[ ${COMP_WORDS[i+1]} == = ]] && ((i++))
            ((i++))
            ((i < COMP_CWORD)) && [[ $w == --db ]] &&
                db=(--db "${COMP_WORDS[i]/#\~/$HOME}")
            [[ $w == --@(queue|state|match) ]] && bulk=1
            ;;
        --db=*) db=("$w") ;;
        --queue=* | --state=* | --match=*) bulk=1 ;;
        --)
            # taskq run QUEUE... -- CMD [ARG...]: the rest is the handler's.
            if [[ $cmd == run ]]; then
                handler=$((i + 1))
                break
            fi
            ;;
        -*) ;;
        *)
            if [[ -z $cmd ]]; then
                cmd=$w
            elif [[ -z $sub && $cmd == @(queue|db|completion|schedule|gate|flow) ]]; then
                sub=$w
            else
                ((++npos))
                last=$w
            fi
            ;;
        esac
    done

    # After run's --: CMD is a command (or a file), its arguments whatever
    # CMD's own completion (bash-completion's, when loaded) or the shell
    # would offer; never taskq's.
    if [[ $handler ]]; then
        if declare -F _command_offset >/dev/null; then
            _command_offset "$handler"
        elif ((handler == COMP_CWORD)); then
            compopt -o filenames
            mapfile -t COMPREPLY < <(compgen -d -c -- "$cur")
        else
            compopt -o default
        fi
        return
    fi

    # lease QUEUE... --wait [DUR]: DUR is after --wait=, or after a --wait
    # that follows the queues.
    [[ $prev == --wait && $cur != -* ]] && ((npos || eq)) && return

    case $prev in
    --db | --payload-file | --jsonl | --lines)
        compopt -o default
        return
        ;;
    -o | --output)
        words="table json id env"
        [[ $cmd == events ]] && words="table json"
        [[ $cmd == @(tx|export) ]] && words="json"
        [[ $cmd == import ]] && words="table"
        if [[ $cmd == flow ]]; then
            case $sub in
            submit) words="id json" ;;
            list | '') words="table json id" ;;
            *) words="table json" ;;
            esac
        fi
        ;;
    --backoff) words="constant exponential" ;;
    --state)
        if [[ $cmd == flow ]]; then
            words="PENDING RUNNING SUCCESS FAILURE REVERTED SUSPENDING
                SUSPENDED RESUMING"
        else
            # --state S,...: after the last comma, a state not typed yet.
            local typed=${cur%"${cur##*,}"} s states
            case $cmd in
            purge) states="runnable sleeping paused fault completed failed killed" ;;
            retry) states="failed killed completed" ;;
            list) states="runnable sleeping paused completed failed killed running ready erred" ;;
            *) states="runnable sleeping paused completed failed killed running ready" ;;
            esac
            for s in $states; do
                [[ ,$typed == *,$s,* ]] || words+=" $s"
            done
            mapfile -t COMPREPLY < <(compgen -P "$typed" -W "$words" -- "${cur##*,}")
            return
        fi
        ;;
    --queue | --move-to) words=$(_taskq_ask queue list -o id) ;;
    --after) words=$(_taskq_ask __ids add) ;;
    --checkpoint-signal) words="USR1 USR2 HUP INT QUIT TERM" ;;
    --fail-on) words="failed retry never" ;;
    --worker | --payload | --text | --label | --priority | --delay | --at | \
        --unique | --max-attempts | --max-errors | --error-window | --retry-delay | \
        --max-delay | --for | --match | --count | --lease | --checkpoint | \
        --result | --error | --retry-in | --until | --limit | --max-running | \
        --concurrency | --max-tasks | --timeout | --grace | --release-delay | \
        --prefetch | --flush | --interval | --root | --to | --ttl | --trigger | --sync | --every | \
        --cron | --keys | --since | --older-than)
        return
        ;;
    *)
        if [[ $cur == -* ]]; then
            local bulkopts="--queue --state --match"
            case $cmd in
            add) words="--payload --text --payload-file --jsonl --lines --label
                --priority --delay --at --unique --max-attempts --max-errors
                --error-window --retry-delay --backoff --max-delay --after --root
                --to --broadcast --ttl --trigger" ;;
            lease) words="--for --match --count --wait -q --quiet" ;;
            run) words="--for --concurrency --max-tasks --until-empty --timeout
                --grace --release-delay --result-stdout --match
                --checkpoint-signal -v --verbose -q --quiet --fail-on
                --stream --prefetch --flush" ;;
            wait) words="--timeout" ;;
            progress) words="--interval" ;;
            heartbeat) words="--lease --for --checkpoint" ;;
            done) words="--lease --result --sync" ;;
            fail) words="--lease --error --no-retry --move-to --retry-in" ;;
            release) words="--lease --delay $bulkopts" ;;
            sleep) words="--until --for --lease $bulkopts" ;;
            send) words="--until --for $bulkopts" ;;
            pause | resume | kill | checkpoint) words=$bulkopts ;;
            list) words="--queue --state --match --limit --newest" ;;
            retry) words="$bulkopts --again" ;;
            workers) words="--since" ;;
            stats) words="--queue" ;;
            events) words="--queue --since -f --follow" ;;
            export) words="--queue" ;;
            purge) words="--queue --state --older-than --force --dry-run" ;;
            queue)
                case $sub in
                set) words="--create --max-running --max-attempts --max-errors
                    --error-window --retry-delay --backoff --max-delay" ;;
                pause) words="--create" ;;
                esac
                ;;
            schedule) [[ $sub == add ]] && words="--every --cron --payload
                --text --label --priority --trigger" ;;
            gate) [[ $sub == add ]] && words="--keys --payload --text --label
                --priority" ;;
            tick) words="--queue" ;;
            flow)
                case $sub in
                list) words="--state" ;;
                wait) words="--timeout" ;;
                rerun) words="--reset" ;;
                esac
                ;;
            '') words="--version" ;;
            esac
            words+=" --db --worker -o --output --help"
        else
            case $cmd/$sub/$npos in
            //0)
                # The commands from taskq itself (`taskq __command-table`: NAME
                # TAB SUMMARY, one a line), so this script lists none.
                while IFS=$'\t' read -r w _; do
                    words+=" $w"
                done < <(_taskq_ask __command-table)
                ;;
            queue//0) words="list show set pause resume redrive" ;;
            db//0) words="check path migrate backup vacuum" ;;
            completion//0) words="bash zsh fish" ;;
            schedule//0) words="add list show pause resume rm" ;;
            gate//0) words="add list show rm" ;;
            flow//0) words="submit list show wait suspend resume rerun" ;;
            schedule/add/1 | gate/add/1) words=$(_taskq_ask queue list -o id) ;;
            schedule/show/0 | schedule/pause/0 | schedule/resume/0 | schedule/rm/0)
                words=$(_taskq_ask schedule list -o id) ;;
            gate/show/0 | gate/rm/0) words=$(_taskq_ask gate list -o id) ;;
            flow/show/0 | flow/wait/0 | flow/suspend/0 | flow/resume/0 | flow/rerun/0)
                words=$(_taskq_ask flow list -o id) ;;
            db/backup/0 | tx//0 | import//0 | flow/submit/0)
                compopt -o default
                return
                ;;
            add//0 | lease//* | run//* | progress//0 | requeue//0 | queue/set/0 | \
                queue/show/0 | queue/pause/0 | queue/resume/0 | queue/redrive/0 | \
                queue/redrive/1)
                words=$(_taskq_ask queue list -o id) ;;
            send//0) [[ $bulk ]] && words=$messages ||
                words=$(_taskq_ask __ids send) ;;
            send//*) # send ID... MESSAGE: ids until a message
                [[ $bulk || $last == @(${messages// /|}) ]] ||
                    words="$messages $(_taskq_ask __ids send)" ;;
            heartbeat//0 | done//0 | fail//0 | retry//* | show//0 | why//0 | \
                wait//* | release//* | sleep//* | pause//* | resume//* | kill//* | \
                checkpoint//*)
                # The ids of the tasks the command can act on, newest first.
                words=$(_taskq_ask __ids "$cmd")
                compopt -o nosort 2>/dev/null ;;
            esac
        fi
        ;;
    esac
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
}

complete -F _taskq taskq
