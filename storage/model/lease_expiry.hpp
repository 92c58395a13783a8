#pragma once

// Internal to storage/: expired leases (storage/model/lease_expiry.cpp),
// which every lease reclaims first and reads count.

#include "core/time.hpp"
#include "storage/seam/db.hpp"

#include <cstdint>
#include <string>

namespace taskq::storage::detail {

// Makes the expired leases of `queue` plain unleased tasks again, back in
// the ready index, each logged and counted (storage/model/lease_expiry.cpp).
void reclaim_expired(Db& db, const std::string& queue, core::Time now);

// How many tasks of `queue` hold a live lease.
int64_t count_running(Db& db, const std::string& queue, core::Time now);

} // namespace taskq::storage::detail
