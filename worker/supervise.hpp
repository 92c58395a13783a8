// Supervising handler processes: whether a process catches a signal, and
// how a `run --stream` handler that died is started again.
#pragma once

#include "core/time.hpp"
#include "worker/policy.hpp"

#include <optional>
#include <sys/types.h>

namespace taskq::worker {

// Whether process `pid` has a handler for `signal` (SigCgt in
// /proc/PID/status). A checkpoint request is sent only then: the default
// action of SIGUSR1 is to terminate, which would fail a task that an
// operator only asked to save its progress. True when it cannot tell.
bool catches_signal(pid_t pid, int signal);

// What a signal that reached `run` asks of it: SIGCHLD only that the
// handlers that ended be reaped; another (SIGTERM, SIGINT, SIGHUP) that it
// stop, giving its handlers their grace, or, once it is stopping, that
// they be killed now. Callers reap first in every case, so that a handler
// that ended before the signal is judged by how it ended, not as one the
// shutdown stopped.
enum class SignalAsks { reap, stop, kill };
SignalAsks signal_asks(int signal, bool stopping);

// A stream handler's deaths in a row (without an outcome between them)
// and its restart back-off: none at first, then k_first_backoff, doubling
// up to k_max_backoff; a handler that lived k_healthy starts again without
// one. k_max_deaths deaths within k_dying_window end the run.
struct Restarts {
  core::Millis backoff{0};
  int deaths = 0; // in a row, without an outcome between them
  Instant first_death{};

  // It gave an outcome: its deaths are no longer in a row.
  void answered() { deaths = 0; }
  // It died `now`, having started at `started`: when it starts again, or
  // std::nullopt when it keeps dying (`deaths` times since `first_death`).
  std::optional<Instant> died(Instant started, Instant now);
};

} // namespace taskq::worker
