#pragma once

// How long a command waits for a database server's answer (PostgreSQL:
// SQLite has no server to wait for). Every wait for the server is bounded:
// a connection that stops answering (a NAT or a middlebox that drops the
// flow without a reset) counts as lost past the bound, exactly as one the
// server closed (storage/pg/wire.cpp; doc/reference/postgresql.md,
// "A silent network"). These settings are the process's: a command sets
// them before it opens its store.

#include "core/duration.hpp"

#include <chrono>
#include <optional>

namespace taskq::storage {

// The bound of one exchange with the server (a statement sent and its
// answer read; a connection made) when the URL's answer_timeout= does not
// say: a one-shot command's and a waiter's. `run` sets its own, inside its
// lease (worker::answer_timeout_for()).
inline constexpr core::Millis k_default_answer_timeout{30 * 1000};

// Sets the bound for the connections and exchanges made from now on.
void set_answer_timeout(core::Millis bound);
core::Millis answer_timeout();

// Whether the server ends a transaction of this process left idle for
// twice the bound (idle_in_transaction_session_timeout), for connections
// made from now on: `run`, whose transactions never wait for anything but
// the server, and whose server process, were it cut off mid-transaction,
// would hold its tasks' row locks, and the queue, until the server's own
// keepalives noticed (two hours by default). Not a one-shot command's: a
// bulk add reads its input inside its transaction.
// The same connections have their prepared statements planned once
// (plan_cache_mode = force_generic_plan): a worker runs the same few
// statements for ever, and the server kept planning its lease anew (custom
// plans), which cost as much as running it.
void set_idle_transactions_ended(bool on);
bool idle_transactions_ended();

// No wait for the server goes on past `at` (`run` stopping: the end of its
// --grace), or past k_stop_allowance when it begins later, so that a live
// server still takes what is written after it; std::nullopt: none.
void set_wait_limit(std::optional<std::chrono::steady_clock::time_point> at);

// A descriptor that becomes readable when the process is asked to stop
// (a signalfd of the stop signals, blocked, that storage never reads: the
// signal stays pending for its owner): it ends the wait for the server
// under way within k_stop_allowance, so that a signal is answered whatever
// the network does. -1: none.
inline constexpr core::Millis k_stop_allowance{250};
void set_wait_interrupt(int fd);

} // namespace taskq::storage
