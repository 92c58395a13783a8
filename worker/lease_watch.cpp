#include "worker/lease_watch.hpp"

#include "core/error.hpp"
#include "core/reconnect.hpp"

#include <cstdio>

namespace taskq::worker {

Beat heartbeat(storage::TaskStore& store, const core::Task& task,
               core::Millis lease_for,
               const std::optional<std::string>& checkpoint, core::Time now) {
  Beat beat;
  try {
    beat.result =
        store.heartbeat(task.id, task.lease->token, lease_for, checkpoint, now);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::conflict || e.kind() == ErrorKind::not_found) {
      beat.kind = Beat::Kind::lost;
    } else if (dynamic_cast<const ConnectionLost*>(&e) != nullptr) {
      throw; // the engine connects again (worker/reconnect.hpp)
    } else if (e.kind() == ErrorKind::unavailable) {
      std::fprintf(stderr, "taskq: task %lld: heartbeat: %s\n",
                   static_cast<long long>(task.id), e.what());
      beat.kind = Beat::Kind::unreachable;
    } else {
      throw;
    }
  }
  return beat;
}

} // namespace taskq::worker
