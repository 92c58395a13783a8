// Watching a lease a handler holds: its heartbeats (at heartbeat_every of
// the lease, worker/policy.hpp), which tell the engine when the lease is
// lost (an operator's message, an expiry) and its handler must be stopped.
#pragma once

#include "core/task.hpp"
#include "core/time.hpp"
#include "storage/task_store.hpp"

#include <optional>
#include <string>

namespace taskq::worker {

// What one heartbeat of a held lease found.
struct Beat {
  enum class Kind {
    extended,    // the lease runs on; `result` is the store's answer
    lost,        // an operator took it, or it expired: revoke the handler
    unreachable, // the database did not answer (said on stderr): the
                 // next heartbeat tries again
  } kind = Kind::extended;
  storage::HeartbeatResult result;
};

// Extends the lease of `task` (leased) by `lease_for`, saving
// `checkpoint` when given. Other errors than a lost lease or an
// unavailable database are thrown.
Beat heartbeat(storage::TaskStore& store, const core::Task& task,
               core::Millis lease_for,
               const std::optional<std::string>& checkpoint, core::Time now);

} // namespace taskq::worker
