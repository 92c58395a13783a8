#include "core/task_json.hpp"

#include "core/error_policy.hpp"

#include <algorithm>

namespace taskq::core {
namespace {

Json or_null(const std::string& s) {
  return s.empty() ? Json(nullptr) : Json(s);
}

} // namespace

std::string dump_json(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

// Appends `s` as a JSON string, as dump_json writes it: printable ASCII
// without a quote or backslash is written as it is, anything else goes
// through nlohmann's escaping.
void append_string(std::string& out, std::string_view s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return c >= 0x20 && c <= 0x7e && c != '"' && c != '\\';
  });
  if (!plain) {
    out += dump_json(Json(std::string(s)));
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

} // namespace

ObjectWriter& ObjectWriter::number(std::string_view key, int64_t value) {
  return raw(key, std::to_string(value));
}

ObjectWriter&
ObjectWriter::number_or_null(std::string_view key,
                             const std::optional<int64_t>& value) {
  return value ? number(key, *value) : raw(key, "null");
}

ObjectWriter& ObjectWriter::text(std::string_view key, std::string_view value) {
  raw(key, "");
  append_string(m_out, value);
  return *this;
}

ObjectWriter&
ObjectWriter::text_or_null(std::string_view key,
                           const std::optional<std::string>& value) {
  return value ? text(key, std::string_view(*value)) : raw(key, "null");
}

ObjectWriter& ObjectWriter::labels(std::string_view key, const Labels& value) {
  raw(key, "{");
  bool first = true;
  for (const auto& [k, v] : value) {
    if (!first) {
      m_out += ',';
    }
    first = false;
    append_string(m_out, k);
    m_out += ':';
    append_string(m_out, v);
  }
  m_out += '}';
  return *this;
}

std::string task_json(const Task& t, Time now,
                      const std::vector<Event>* events) {
  std::string lease = "null";
  if (t.leased(now)) {
    std::optional<std::string> started;
    if (t.lease_started) {
      started = format_time(*t.lease_started);
    }
    lease = ObjectWriter()
                .text("token", t.lease->token)
                .text("worker", t.lease->worker)
                .text("expires_at", format_time(t.lease->expires_at))
                .text_or_null("started_at", started)
                .raw("frozen", t.frozen ? "true" : "false")
                .finish();
  }
  std::string errors = "[";
  for (const auto& e : t.errors) {
    errors += errors.size() == 1 ? "" : ",";
    errors += ObjectWriter()
                  .text("time", format_time(e.time))
                  .text("error", e.message)
                  .finish();
  }
  errors += ']';
  ObjectWriter w;
  w.number("id", t.id)
      .number("rev", t.rev)
      .text("queue", t.queue)
      .text("state", to_string(t.state))
      .raw("payload", t.payload)
      .labels("labels", t.labels)
      .number("priority", t.priority)
      .number("attempts", t.attempts)
      .number("attempts_counted", t.attempts_counted())
      .number_or_null("max_attempts", t.max_attempts)
      .text("run_at", format_time(t.run_at))
      .text("created_at", format_time(t.created_at))
      .text("updated_at", format_time(t.updated_at))
      .raw("lease", lease)
      .raw("errors", errors)
      .text_or_null("last_error", t.errors.empty()
                                      ? std::nullopt
                                      : std::optional(t.errors.back().message))
      .raw("checkpoint", t.checkpoint.value_or("null"))
      .raw("result", t.result.value_or("null"))
      .text_or_null("reason",
                    t.reason.empty() ? std::nullopt : std::optional(t.reason))
      .number_or_null("retry_of", t.retry_of)
      .text_or_null("unique", t.unique_key)
      .raw("after", t.after.empty() ? "[]" : dump_json(Json(t.after)))
      .raw("waiting", t.waiting ? "true" : "false")
      .labels("root", t.root)
      .text_or_null("to", t.to_worker)
      .text_or_null("broadcast_until", t.broadcast_until ? std::optional(
                                           format_time(*t.broadcast_until))
                                                         : std::nullopt)
      .text_or_null("trigger", t.trigger)
      .text_or_null("schedule", t.schedule)
      .text_or_null("gate", t.gate)
      .labels("sync", t.sync)
      .raw("flow", t.flow.value_or("null"))
      .raw("command", t.command.empty() ? "null" : dump_json(Json(t.command)));
  if (t.state == TaskState::failed) {
    const FailureWords f = failure_words(t);
    const auto opt = [](const std::string& s) {
      return s.empty() ? std::nullopt : std::optional(s);
    };
    w.text_or_null("cause", opt(f.cause))
        .text_or_null("verdict", opt(f.verdict));
  } else {
    w.raw("cause", "null").raw("verdict", "null");
  }
  if (events != nullptr) {
    Json list = Json::array();
    for (const auto& e : *events) {
      list.push_back({{"time", format_time(e.time)},
                      {"message", e.message},
                      {"from", or_null(e.from)},
                      {"to", or_null(e.to)},
                      {"actor", or_null(e.actor)},
                      {"detail", or_null(e.detail)}});
    }
    w.field("events", list);
  }
  return w.finish();
}

FailureWords failure_words(const Task& t) {
  FailureWords w;
  const auto& errors = t.errors;
  const bool gave_up =
      !errors.empty() && errors.back().message == k_exceeded_error_rate;
  if (gave_up) {
    // The errors the policy counted: those since it last gave up.
    int64_t counted = 0;
    for (auto e = errors.rbegin() + 1;
         e != errors.rend() && e->message != k_exceeded_error_rate; ++e) {
      if (counted == 0) {
        w.cause = e->message;
      }
      ++counted;
    }
    w.verdict = "gave up after " + std::to_string(counted)
                + (counted == 1 ? " error" : " errors");
    return w;
  }
  if (!errors.empty() && errors.back().message == t.reason) {
    w.cause = t.reason; // failed for good at once (fail --no-retry)
    w.verdict = "not retried";
    return w;
  }
  w.cause =
      !t.reason.empty() || errors.empty() ? t.reason : errors.back().message;
  return w;
}

} // namespace taskq::core
