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
