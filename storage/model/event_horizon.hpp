#pragma once

// Internal to storage/: how far the event stream (TaskStore::events in
// read_store.cpp) may read each of its tables, the ids of which all have
// committed or never will (EventCursor::horizon; the rule is in
// event_horizon.cpp).

#include "storage/log_types.hpp"
#include "storage/seam/db.hpp"

namespace taskq::storage::detail {

// Before a read's transaction: a horizon not known yet, or held by a gap
// that outlived a wake-up, is settled (on PostgreSQL by waiting for the
// write transactions in flight). On SQLite: the largest ids.
void settle_horizons(Db& db, EventCursor& cursor);

// In the read's transaction: moves each horizon over the ids that follow
// it without a gap (PostgreSQL; SQLite's were settled before). True when
// there may be more at once.
bool extend_horizons(Db& db, EventCursor& cursor);

} // namespace taskq::storage::detail
