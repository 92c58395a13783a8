// How far the event stream may read each of its tables so that a cursor
// never moves past an id still in flight (storage/model/event_horizon.hpp).
#include "storage/model/event_horizon.hpp"

#include "core/reconnect.hpp"
#include "storage/model/locks.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <string>

namespace taskq::storage::detail {

namespace {

// The event stream reads three tables by id: events, tasks (a creation is
// its row) and flow_events, in EventCursor::horizon's order.
constexpr std::array<const char*, 3> k_id_tables{"events", "tasks",
                                                 "flow_events"};

// Ids read ahead per table when moving a horizon.
constexpr int64_t k_id_window = 1000;

// The barrier (writers_barrier_sql, storage/model/locks.hpp) waits until
// every PostgreSQL write transaction in flight has ended: each holds the
// writers' key shared from its BEGIN to its end, so taking it exclusively
// waits for exactly those. A transaction of its own, ended at once:
// writers wait for it only while it waits.
// Every writer that begins meanwhile waits behind it, so it waits 1 s at
// most: a writer in flight for longer (a bulk add) is waited for at the
// next barrier, k_barrier_pause later, the follower holding its gap.
constexpr int64_t k_barrier_pause_ms = 5000;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t max_id(Db& db, const char* table) {
  Statement st(db, std::string("SELECT coalesce(max(id), 0) FROM ") + table);
  st.step();
  return st.get_int(0);
}

bool id_exists(Db& db, const char* table, int64_t id) {
  Statement st(db, std::string("SELECT 1 FROM ") + table + " WHERE id = ?1");
  st.bind(1, id);
  return st.step();
}

// Moves `h` over the ids of `table` that follow it without a gap, at most
// k_id_window of them (true: there may be more at once). A missing id
// that a larger one follows stops it: h.gap.
bool extend(Db& db, const char* table, EventCursor::Horizon& h) {
  Statement st(db, std::string("SELECT id FROM ") + table
                       + " WHERE id > ?1 ORDER BY id LIMIT ?2");
  st.bind(1, h.final).bind(2, k_id_window);
  h.gap = 0;
  int64_t rows = 0;
  while (st.step()) {
    ++rows;
    const int64_t id = st.get_int(0);
    if (id != h.final + 1) {
      h.gap = h.final + 1;
      return false;
    }
    h.final = id;
  }
  return rows == k_id_window;
}

} // namespace

// How the stream stays exact when PostgreSQL's writers commit out of id
// order (one transaction takes event id 9, another 10 and commits first):
// each table is read only up to its horizon, the ids that all have
// committed or never will, so a cursor never moves past an id still in
// flight. The horizon moves over ids that follow it without a gap; a gap
// (a transaction in flight, or one that rolled back) holds it until the
// next read, after a wake-up, which the gap's commit sends. A gap that is
// still there then is settled by the barrier above: once every writer
// then in flight has ended, an id that was given out before it and is
// still missing never appears, so the horizon moves to the largest id
// seen before the barrier. Ids come from sequences of cache 1 that a
// rollback does not give back, and a write transaction holds the barrier's
// key before it takes one. The first read settles the same way, once, the
// ids already in the tables (history holds gaps: rollbacks, purged tasks).
// On SQLite the one writer commits in id order (a snapshot sees every id
// up to its largest): the horizon is the largest id.
void settle_horizons(Db& db, EventCursor& cursor) {
  const bool unsettled =
      std::any_of(cursor.horizon.begin(), cursor.horizon.end(),
                  [](const EventCursor::Horizon& h) { return h.final < 0; });
  if (db.dialect().commits_in_id_order() || !(unsettled || cursor.held())) {
    return;
  }
  const std::array<int64_t*, 3> at{&cursor.event_id, &cursor.task_id,
                                   &cursor.flow_event_id};
  std::array<int64_t, 3> top{};
  bool barrier = false;
  {
    Transaction tx(db, Transaction::Kind::read);
    for (size_t i = 0; i < k_id_tables.size(); ++i) {
      const EventCursor::Horizon& h = cursor.horizon[i];
      top[i] = max_id(db, k_id_tables[i]);
      if (h.final < 0) {
        barrier = barrier || top[i] > *at[i];
      } else if (h.gap != 0 && !cursor.more) {
        // The gap outlived a wake-up (a read cut short by its batch is
        // made again at once: no wake-up came between).
        barrier = barrier || !id_exists(db, k_id_tables[i], h.gap);
      }
    }
  }
  if (barrier) {
    if (steady_ms() < cursor.barrier_after_ms) {
      return; // the last one timed out: the gaps are held a while longer
    }
    try {
      db.exec(writers_barrier_sql().c_str(),
              "cannot wait for the writers in flight");
    } catch (const Error& e) {
      db.rollback(); // a failed statement leaves the transaction open
      if (e.kind() != ErrorKind::unavailable
          || dynamic_cast<const ConnectionLost*>(&e) != nullptr) {
        throw;
      }
      // The lock timeout: a writer in flight for long. Its ids are held
      // back, and the rest with them, until a later barrier.
      cursor.barrier_after_ms = steady_ms() + k_barrier_pause_ms;
      return;
    }
  }
  for (size_t i = 0; i < k_id_tables.size(); ++i) {
    EventCursor::Horizon& h = cursor.horizon[i];
    if (h.final < 0 || barrier) {
      h = {std::max({h.final, top[i], *at[i]}), 0};
    }
  }
}

bool extend_horizons(Db& db, EventCursor& cursor) {
  const std::array<int64_t, 3> at{cursor.event_id, cursor.task_id,
                                  cursor.flow_event_id};
  bool more = false;
  for (size_t i = 0; i < k_id_tables.size(); ++i) {
    EventCursor::Horizon& h = cursor.horizon[i];
    if (db.dialect().commits_in_id_order()) {
      h = {std::max(max_id(db, k_id_tables[i]), at[i]), 0};
    } else {
      more = extend(db, k_id_tables[i], h) || more;
    }
  }
  return more;
}

} // namespace taskq::storage::detail
