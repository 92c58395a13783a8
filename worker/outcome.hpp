// What a handler's end makes of its task's outcome, beyond core::judge.
#pragma once

#include "worker/policy.hpp"

#include <cstddef>
#include <optional>
#include <string>

namespace taskq::worker {

// What a handler printed, as a task result (--result-stdout): its JSON when
// stdout is one JSON value, else a JSON string of the text (one final
// newline dropped, invalid UTF-8 replaced).
std::string result_from_stdout(std::string text);

// Group commit of `run --stream` outcomes: with --prefetch above 1 they
// wait to be written in one transaction with the next lease; otherwise
// each is written at once.
struct FlushState {
  int prefetch = 1;      // --prefetch
  bool stopping = false; // `run` is stopping
  size_t pending = 0;    // outcomes waiting
  // The first waiting outcome's deadline: it came --flush ago.
  std::optional<Instant> flush_at;
  // Nothing is leased and unsent, and every handler is free: no lease
  // comes before the next outcome, so waiting would only delay it.
  bool idle = false;
};
// Whether the waiting outcomes are to be written now (at `now`).
bool flush_due(const FlushState& s, Instant now);

} // namespace taskq::worker
