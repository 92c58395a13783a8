// cli::task_json, the task's JSON form (`show -o json`, `lease -o json`,
// the lines `run --stream` writes): it writes plain fields itself rather
// than through nlohmann, for speed. Its text must be exactly what
// nlohmann's dump (invalid UTF-8 replaced) gives for the same task built
// as a Json object, field by field: the reference below. The input's
// bytes fill the task's string fields (any bytes: quotes, control
// characters, invalid UTF-8) and choose which optional fields are set.
#include "cli/output.hpp"
#include "core/task.hpp"
#include "core/time.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "fuzz.hpp"

namespace core = taskq::core;
namespace cli = taskq::cli;
using Json = cli::Json;

namespace {

Json or_null(const std::optional<std::string>& s) {
  return s ? Json(*s) : Json(nullptr);
}

Json labels_json(const core::Labels& labels) {
  Json out = Json::object();
  for (const auto& [k, v] : labels) {
    out[k] = v;
  }
  return out;
}

// The task's JSON form built as one Json value, as task_json built it
// before it wrote fields itself.
std::string reference(const core::Task& t, core::Time now) {
  Json lease = nullptr;
  if (t.leased(now)) {
    lease = {{"token", t.lease->token},
             {"worker", t.lease->worker},
             {"expires_at", core::format_time(t.lease->expires_at)},
             {"started_at", t.lease_started
                                ? Json(core::format_time(*t.lease_started))
                                : Json(nullptr)},
             {"frozen", t.frozen}};
  }
  Json errors = Json::array();
  for (const auto& e : t.errors) {
    errors.push_back(
        {{"time", core::format_time(e.time)}, {"error", e.message}});
  }
  Json out = {
      {"id", t.id},
      {"rev", t.rev},
      {"queue", t.queue},
      {"state", std::string(core::to_string(t.state))},
      {"payload", Json::parse(t.payload)},
      {"labels", labels_json(t.labels)},
      {"priority", t.priority},
      {"attempts", t.attempts},
      // The attempts the limit counts: those since its count started
      // afresh (a resume), never below 0.
      {"attempts_counted",
       t.attempts >= t.attempts_base ? t.attempts - t.attempts_base : 0},
      {"max_attempts", t.max_attempts ? Json(*t.max_attempts) : Json(nullptr)},
      {"run_at", core::format_time(t.run_at)},
      {"created_at", core::format_time(t.created_at)},
      {"updated_at", core::format_time(t.updated_at)},
      {"lease", lease},
      {"errors", errors},
      {"last_error",
       t.errors.empty() ? Json(nullptr) : Json(t.errors.back().message)},
      {"checkpoint", nullptr},
      {"result", nullptr},
      {"reason", t.reason.empty() ? Json(nullptr) : Json(t.reason)},
      {"retry_of", t.retry_of ? Json(*t.retry_of) : Json(nullptr)},
      {"unique", or_null(t.unique_key)},
      {"after", t.after},
      {"waiting", t.waiting},
      {"root", labels_json(t.root)},
      {"to", or_null(t.to_worker)},
      {"broadcast_until", t.broadcast_until
                              ? Json(core::format_time(*t.broadcast_until))
                              : Json(nullptr)},
      {"trigger", or_null(t.trigger)},
      {"schedule", or_null(t.schedule)},
      {"gate", or_null(t.gate)},
      {"sync", labels_json(t.sync)},
      {"flow", nullptr},
      {"command", t.command.empty() ? Json(nullptr) : Json(t.command)},
      {"cause", nullptr},
      {"verdict", nullptr}};
  // A failed task's cause and the policy's verdict: their words come from
  // failure_words; what is checked here is how they are written.
  if (t.state == core::TaskState::failed) {
    const cli::FailureWords f = cli::failure_words(t);
    if (!f.cause.empty()) {
      out["cause"] = f.cause;
    }
    if (!f.verdict.empty()) {
      out["verdict"] = f.verdict;
    }
  }
  return cli::dump_json(out);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  taskq::fuzz::Bytes in(data, size);
  const uint32_t set = static_cast<uint32_t>(in.u64());
  // The rest of the input, cut into pieces at each 0xff byte.
  std::vector<std::string> pieces(1);
  for (const char c : in.rest()) {
    if (static_cast<uint8_t>(c) == 0xff) {
      pieces.emplace_back();
    } else {
      pieces.back() += c;
    }
  }
  size_t next = 0;
  const auto piece = [&]() -> std::string {
    return next < pieces.size() ? pieces[next++] : std::string();
  };
  const auto bit = [&](int i) { return (set >> i) & 1U; };

  const core::Time now{core::Millis(1'700'000'000'000)};
  core::Task t;
  t.id = static_cast<int64_t>(set);
  t.rev = -static_cast<int64_t>(set >> 3);
  t.queue = piece();
  t.state = static_cast<core::TaskState>(set % 7);
  t.labels[piece()] = piece();
  if (bit(3)) {
    t.labels[piece()] = piece();
  }
  t.priority = bit(4) ? -5 : 9'000'000'000;
  t.attempts = set >> 20;
  if (bit(5)) {
    t.max_attempts = set >> 8;
  }
  t.run_at = now - core::Millis(set);
  t.created_at = core::k_min_time;
  t.updated_at = core::k_max_time;
  if (bit(6)) {
    t.lease =
        core::Lease{piece(), piece(), now + core::Millis(bit(7) ? 1 : -1)};
    if (bit(8)) {
      t.lease_started = now;
    }
  }
  if (bit(9)) {
    t.errors.push_back({now, piece()});
    t.errors.push_back({now, piece()});
  }
  t.reason = piece();
  if (bit(10)) {
    t.retry_of = 7;
  }
  if (bit(11)) {
    t.unique_key = piece();
  }
  if (bit(12)) {
    t.after = {1, static_cast<int64_t>(set)};
  }
  t.waiting = bit(13);
  if (bit(14)) {
    t.root[piece()] = piece();
  }
  if (bit(15)) {
    t.to_worker = piece();
  }
  if (bit(16)) {
    t.broadcast_until = now;
  }
  if (bit(17)) {
    t.trigger = piece();
  }
  if (bit(18)) {
    t.schedule = piece();
  }
  if (bit(19)) {
    t.gate = piece();
  }
  if (bit(20)) {
    t.sync[piece()] = piece();
  }
  if (bit(21)) {
    t.command = {piece(), piece()};
  }
  if (bit(22)) {
    t.attempts_base = bit(23) ? t.attempts + 1 : t.attempts / 2;
  }
  FUZZ_REQUIRE(cli::task_json(t, now) == reference(t, now));
  return 0;
}
