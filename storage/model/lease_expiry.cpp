// Leases that ran out: reclaiming them, and counting the live ones (the
// two reads a lease and `--max-running` make of a queue's leases).
#include "storage/model/lease_expiry.hpp"

#include "storage/model/rows.hpp"
#include "storage/model/state_writer.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage::detail {

using core::TaskState;
using core::Time;

// Makes expired leases of `queue` plain unleased tasks again, so they are
// back in the ready index. Costs O(log n) per expired lease. The UPDATE
// repeats the test: a heartbeat that extended the lease, or another
// leaser that reclaimed it, since the SELECT wins (PostgreSQL re-checks
// the WHERE on the row's newest version once it holds the row).
void reclaim_expired(Db& db, const std::string& queue, Time now) {
  std::vector<std::pair<int64_t, std::string>> expired;
  {
    Statement st(db, "SELECT id, lease_worker FROM tasks WHERE queue = ?1 AND "
                     "lease_token IS NOT NULL AND lease_expires <= ?2 "
                     "ORDER BY lease_expires, id");
    st.bind(1, queue).bind(2, to_unix_ms(now));
    while (st.step()) {
      expired.emplace_back(st.get_int(0), st.get_text(1));
    }
  }
  for (const auto& [id, worker] : expired) {
    Statement clear(db,
                    "UPDATE tasks SET lease_token = NULL, lease_worker = NULL, "
                    "lease_expires = NULL, rev = rev + 1 WHERE id = ?1 AND "
                    "lease_token IS NOT NULL AND lease_expires <= ?2");
    clear.bind(1, id).bind(2, to_unix_ms(now)).run();
    if (clear.changes() == 0) {
      continue;
    }
    db.wake_soon(); // leasable again
    bump_queue_counter(db, queue, QueueCounter::leases_expired);
    log_event(db, id, now, "expire", TaskState::runnable, TaskState::runnable,
              k_system_actor, "lease of " + worker + " expired");
  }
}

int64_t count_running(Db& db, const std::string& queue, Time now) {
  Statement st(db, "SELECT count(*) FROM tasks WHERE queue = ?1 AND "
                   "lease_token IS NOT NULL AND lease_expires > ?2");
  st.bind(1, queue).bind(2, to_unix_ms(now));
  st.step();
  return st.get_int(0);
}

} // namespace taskq::storage::detail
