#pragma once

// Internal to storage/pg: what a PostgreSQL connection writes after the
// fact, to spare round trips. The events rows of the open write
// transaction wait for its next UPDATE of tasks, which carries them as a
// data-modifying WITH in the same statement (riding()), or else for its
// next statement that names the events table or for its COMMIT, and go in
// one INSERT with it; the wake-ups of waiting
// processes (NOTIFY) its commits owe go at most once per core::k_wake_every
// (core/wake_throttle.hpp).

#include "core/wake_throttle.hpp"
#include "storage/pg/libpq.hpp"
#include "storage/pg/statement.hpp"
#include "storage/seam/db.hpp"

#include <chrono>
#include <functional>
#include <libpq-fe.h>
#include <optional>
#include <string>
#include <vector>

namespace taskq::storage::pg {

class WriteBehind {
public:
  // --- events rows ---
  // Keeps `row`; true when so many are kept that they should go now.
  bool keep(Db::EventRow row);
  bool empty() const { return m_events.empty(); }
  void drop() { m_events.clear(); }
  // The rows kept, as one INSERT ending with "; " ("" for none), no longer
  // kept; throws Error(internal) when `conn` cannot quote a value.
  std::string take_sql(PGconn* conn);

  // The rows kept riding `p`: `p` with them as a leading data-modifying
  // WITH (their INSERT's parameters after p's), for a statement that may
  // carry them: an UPDATE of tasks that reads no events (the INSERT's rows
  // are not visible to the rest of its statement), with no WITH of its
  // own, and at most k_riders rows kept; or a statement that says where
  // in its own INSERT INTO events they go (Db::k_kept_events_here): there,
  // as a first arm of its SELECT (UNION ALL), written before its own rows.
  // std::nullopt: it may not (none kept, too many, or another statement).
  // A worker's turn logs its done and its next lease, and the lease's
  // statement carries both: one statement less than an INSERT at the
  // COMMIT.
  // The riders' statement text depends only on `p` and the number of rows,
  // so it is prepared as p is (PgDb::run).
  std::optional<Prepared> riding(const Prepared& p) const;
  // The rows' values, in riding()'s parameter order, as text (NULL:
  // std::nullopt), no longer kept.
  std::vector<std::optional<std::string>> take_values();

  // --- wake-ups ---
  // What ends the open write transaction after take_sql(): a COMMIT, and
  // the NOTIFY of its own transaction (k_commit_write) when the write
  // changed rows and no wake-up went out within core::k_wake_every (a
  // quiet write's: core::k_quiet_wake_every, and its NOTIFY says it is
  // quiet, k_commit_write_quiet).
  const char* commit_sql(bool changed, bool quiet);
  // The commit that commit_sql() ended did not come back committed: what
  // was owed before it is owed still.
  void commit_failed() { m_wakes = m_before; }
  std::optional<std::chrono::steady_clock::time_point> wake_due() const {
    return m_wakes.due();
  }
  // Sends the owed wake-up once due, on an idle `conn` (inside a
  // transaction its commit sends it); on a broken connection it stays
  // owed (core::WakeThrottle::postpone) and goes once the connection is
  // back. `closing`: the connection is about to close, send what is owed
  // now.
  // `exec` sends a statement and returns its answer (nullptr: none came);
  // what it throws (ConnectionLost: no answer within the bound) is thrown
  // on, the wake-up still owed.
  void wake_owed(PGconn* conn,
                 const std::function<libpq::Result(const char*)>& exec,
                 bool closing = false);

private:
  std::vector<Db::EventRow> m_events;
  core::WakeThrottle m_wakes;
  core::WakeThrottle m_before; // m_wakes before the last commit_sql()
};

} // namespace taskq::storage::pg
