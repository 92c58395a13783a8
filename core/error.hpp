#pragma once

#include <stdexcept>
#include <string>

namespace taskq {

// What went wrong, in the terms of the exit codes
// (doc/reference/invocation.md#exit-codes).
enum class ErrorKind {
  usage,       // 2: malformed input
  not_found,   // 3: no such task, queue, schedule
  conflict,    // 4: refused transition, lost lease, failed precondition
  unavailable, // 5: database cannot be opened, is locked, corrupt, too new
  internal,    // 1: anything else
};

// The one exception type storage and cli throw; core answers with values.
class Error : public std::runtime_error {
public:
  Error(ErrorKind kind, const std::string& message)
      : std::runtime_error(message), m_kind(kind) {}
  ErrorKind kind() const noexcept { return m_kind; }

private:
  ErrorKind m_kind;
};

} // namespace taskq
