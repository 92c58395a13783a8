#include "worker/supervise.hpp"

#include <array>
#include <csignal>
#include <cstdio>
#include <string>

namespace taskq::worker {

bool catches_signal(pid_t pid, int signal) {
  std::FILE* f =
      std::fopen(("/proc/" + std::to_string(pid) + "/status").c_str(), "r");
  if (f == nullptr) {
    return true;
  }
  std::optional<bool> caught;
  std::array<char, 256> line{};
  while (!caught && std::fgets(line.data(), line.size(), f) != nullptr) {
    unsigned long long mask = 0;
    if (std::sscanf(line.data(), "SigCgt: %llx", &mask) == 1) {
      caught = ((mask >> (signal - 1)) & 1U) != 0;
    }
  }
  std::fclose(f);
  return caught.value_or(true);
}

SignalAsks signal_asks(int signal, bool stopping) {
  if (signal == SIGCHLD) {
    return SignalAsks::reap;
  }
  return stopping ? SignalAsks::kill : SignalAsks::stop;
}

std::optional<Instant> Restarts::died(Instant started, Instant now) {
  if (now - started >= k_healthy) {
    backoff = core::Millis{0};
    deaths = 0;
  }
  if (deaths == 0 || now - first_death > k_dying_window) {
    deaths = 0;
    first_death = now;
  }
  if (++deaths >= k_max_deaths) {
    return std::nullopt;
  }
  const Instant at = now + backoff;
  backoff = backoff.count() == 0
                ? core::Millis{k_first_backoff}
                : std::min(core::Millis{k_max_backoff}, backoff * 2);
  return at;
}

} // namespace taskq::worker
