#include "cli/command_table.hpp"

#include "cli/commands.hpp"

namespace taskq::cli {

namespace {

// In the order `taskq --help` lists them: by what a user does with them,
// the everyday ones first, each summary short enough for one row there.
// A command's own --help says the rest.
constexpr CommandRow k_commands[] = {
    {"add", "Produce", "add a task: taskq add QUEUE -- CMD [ARG...]",
     register_produce},
    {"tx", "Produce", "create, update, delete tasks in one transaction",
     register_tx},
    {"run", "Run", "work queues: lease each task, run its command",
     register_run},
    {"wait", "Run", "block until tasks finish (exit 6 if one failed)",
     register_run},
    {"lease", "Run", "lease the next task, for a worker of your own",
     register_lease},
    {"heartbeat", "Run", "extend a lease (and hear an operator's request)",
     register_heartbeat},
    {"done", "Run", "complete the leased task", register_done},
    {"fail", "Run", "report an error on the leased task", register_fail},
    {"list", "Watch", "list tasks, oldest first", register_inspect},
    {"logs", "Watch", "print what a task's command printed", register_logs},
    {"top", "Watch", "a live full-screen view of queues and tasks",
     register_top},
    {"serve", "Watch", "a web view of queues, tasks, history and errors",
     register_serve},
    {"show", "Watch", "a task with its errors and event log", register_inspect},
    {"why", "Watch", "why a task is not running now", register_inspect},
    {"stats", "Watch", "counts per queue and state, completion rates",
     register_inspect},
    {"progress", "Watch", "a queue's progress: done of total, rate, ETA",
     register_run},
    {"workers", "Watch", "the workers seen recently, with their tasks",
     register_inspect},
    {"events", "Watch", "the event log (--follow waits for more)",
     register_events},
    {"metrics", "Watch", "Prometheus metrics", register_inspect},
    {"retry", "Operate",
     "run ended tasks again as new tasks, or a sleeping one now",
     register_operate},
    {"kill", "Operate", "stop tasks for good", register_operate},
    {"pause", "Operate", "stop tasks until resumed", register_operate},
    {"freeze", "Operate", "stop a running command where it is (SIGSTOP)",
     register_operate},
    {"continue", "Operate", "let a frozen command go on (SIGCONT)",
     register_operate},
    {"resume", "Operate", "make paused or sleeping tasks runnable",
     register_operate},
    {"sleep", "Operate", "put tasks to sleep until a time", register_operate},
    {"release", "Operate", "take tasks back from their workers",
     register_operate},
    {"requeue", "Operate", "make a queue's delayed tasks due now",
     register_operate},
    {"purge", "Operate", "delete finished tasks with their history",
     register_operate},
    {"checkpoint", "Operate", "ask a running task's worker to save its state",
     register_operate},
    {"send", "Operate", "send an operator message to tasks", register_operate},
    {"queue", "Operate", "queue settings: limits, error policy, pause",
     register_queue},
    {"schedule", "Schedules and flows", "add a task to a queue at every tick",
     register_schedule},
    {"gate", "Schedules and flows", "add a task once tasks with keys completed",
     register_schedule},
    {"tick", "Schedules and flows", "emit the tasks of due schedules now",
     register_schedule},
    {"flow", "Schedules and flows", "graphs of atoms with data flow and revert",
     register_flow},
    {"db", "Database", "check, migrate, back up the database; its path",
     register_db},
    {"export", "Database", "print every task and flow as JSON Lines",
     register_transfer},
    {"import", "Database", "add the tasks and flows of an export",
     register_transfer},
    {"completion", "Shell", "print the completion script for a shell",
     register_completion},
    {"help", "Shell", "print a command's help: taskq help COMMAND", nullptr},
    {"__ids", "", "the task ids completion offers after a command",
     register_completion},
    {"__command-table", "", "the commands completion offers, with summaries",
     nullptr},
};

} // namespace

std::span<const CommandRow> command_table() {
  return k_commands;
}

const CommandRow* command_row(std::string_view name) {
  for (const CommandRow& row : k_commands) {
    if (row.name == name) {
      return &row;
    }
  }
  return nullptr;
}

} // namespace taskq::cli
