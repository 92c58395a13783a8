#include "storage/pg/schema_url.hpp"

#include "core/error.hpp"
#include "storage/pg/tx_sql.hpp"
#include "storage/seam/db.hpp"
#include "storage/seam/server_wait.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <cctype>

namespace taskq::storage::pg {

bool valid_schema_name(std::string_view name) {
  if (name.empty() || name.size() > 63 || name.starts_with("pg_")
      || (name[0] >= '0' && name[0] <= '9')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

UrlParts split_url(const std::string& url) {
  UrlParts parts;
  parts.schema = std::string(k_default_schema);
  const size_t query = url.find('?');
  if (query == std::string::npos) {
    parts.url = url;
    return parts;
  }
  std::string& rest = parts.url;
  rest = url.substr(0, query);
  char sep = '?';
  bool named = false;
  for (size_t at = query + 1; at <= url.size();) {
    const size_t end = std::min(url.find('&', at), url.size());
    const std::string_view param(url.data() + at, end - at);
    if (param.starts_with("options=") && !named) {
      const std::string options = percent_decode(param.substr(8));
      const size_t path = options.find("search_path=");
      if (path != std::string::npos) {
        const size_t from = path + 12;
        const size_t to =
            std::min(options.find_first_of(", ", from), options.size());
        if (const std::string first = options.substr(from, to - from);
            valid_schema_name(first)) {
          parts.schema = first;
        }
      }
    }
    // Values are not quoted in errors: in a URL whose password holds an
    // unencoded "?schema=", they would be a part of the password.
    const bool ours = param.starts_with("schema=") || param.starts_with("pool=")
                      || param.starts_with("listen=")
                      || param.starts_with("answer_timeout=");
    if (param.starts_with("schema=")) {
      named = true;
      parts.schema = percent_decode(param.substr(7));
      if (!valid_schema_name(parts.schema)) {
        throw Error(ErrorKind::usage,
                    "invalid schema in database URL " + redact_url(url)
                        + ": a schema is lower-case letters, digits and '_' "
                          "(at most 63, not starting with a digit or pg_)");
      }
    } else if (param.starts_with("pool=")) {
      const std::string mode = percent_decode(param.substr(5));
      if (mode != "transaction" && mode != "session") {
        throw Error(ErrorKind::usage,
                    "invalid pool= in database URL " + redact_url(url)
                        + ": expected pool=transaction (through a pooler in "
                          "transaction mode) or pool=session");
      }
      parts.pooled = mode == "transaction";
    } else if (param.starts_with("listen=")) {
      parts.listen = percent_decode(param.substr(7));
      if (parts.listen.empty() || parts.listen == ":") {
        throw Error(ErrorKind::usage, "empty listen= in database URL "
                                          + redact_url(url)
                                          + ": expected listen=HOST:PORT");
      }
    } else if (param.starts_with("answer_timeout=")) {
      const std::string text = percent_decode(param.substr(15));
      std::optional<core::Millis> d;
      if (!text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
            return c >= '0' && c <= '9';
          })) {
        d = text.size() <= 9
                ? std::optional(core::Millis{std::stoll(text) * 1000})
                : std::nullopt;
      } else {
        d = core::parse_duration(text);
      }
      if (!d || d->count() < 0) {
        throw Error(ErrorKind::usage,
                    "invalid answer_timeout= in database URL " + redact_url(url)
                        + ": expected a duration (e.g. 30s, 500ms; 0 waits "
                          "for ever)");
      }
      parts.answer_timeout = *d;
    }
    if (!ours && !param.empty()) {
      rest += sep;
      rest += param;
      sep = '&';
    }
    at = end + 1;
  }
  if (!parts.listen.empty() && !parts.pooled) {
    throw Error(ErrorKind::usage,
                "listen= in database URL " + redact_url(url)
                    + " needs pool=transaction (without a pooler, taskq "
                      "listens on its own connection's server)");
  }
  return parts;
}

std::pair<std::string, std::string> split_schema(const std::string& url) {
  UrlParts parts = split_url(url);
  return {std::move(parts.url), std::move(parts.schema)};
}

std::string with_pool(std::string url, const UrlParts& parts) {
  char sep = url.find('?') == std::string::npos ? '?' : '&';
  if (parts.answer_timeout) {
    url += sep;
    url += "answer_timeout=" + std::to_string(parts.answer_timeout->count())
           + "ms";
    sep = '&';
  }
  if (!parts.pooled) {
    return url;
  }
  url += sep;
  url += "pool=transaction";
  if (!parts.listen.empty()) {
    url += "&listen=";
    // Encoded again: '&', '%' and '#' would end or change the parameter.
    constexpr std::string_view k_hex = "0123456789ABCDEF";
    for (const char c : parts.listen) {
      const auto b = static_cast<unsigned char>(c);
      if (std::isalnum(b) != 0 || c == '.' || c == '-' || c == '_' || c == ':'
          || c == '/' || c == '[' || c == ']') {
        url += c;
      } else {
        url += '%';
        url += k_hex[b >> 4];
        url += k_hex[b & 15];
      }
    }
  }
  return url;
}

std::pair<std::string, std::string> listen_host_port(std::string_view value) {
  std::string_view host = value;
  std::string_view port;
  if (value.starts_with('[')) { // [IPv6]:PORT
    const size_t close = value.find(']');
    if (close != std::string_view::npos) {
      host = value.substr(1, close - 1);
      if (value.substr(close + 1).starts_with(':')) {
        port = value.substr(close + 2);
      }
    }
  } else if (const size_t colon = value.rfind(':');
             colon != std::string_view::npos) {
    host = value.substr(0, colon);
    port = value.substr(colon + 1);
  }
  return {std::string(host), std::string(port)};
}

std::string with_schema(std::string_view begin, const std::string& schema,
                        std::string_view settings) {
  const size_t end = std::min(begin.find(';'), begin.size());
  std::string rest(begin.substr(end));
  if (!settings.empty()) {
    // After the search_path's own "; ": the settings end with one.
    rest = "; " + std::string(settings)
           + std::string(rest.starts_with("; ") ? rest.substr(2) : rest);
    if (rest.ends_with("; ")) {
      rest.erase(rest.size() - 2);
    }
  }
  return std::string(begin.substr(0, end)) + "; SET LOCAL search_path TO "
         + schema + rest;
}

namespace {

// The session settings as (name, value), the search_path last.
std::vector<std::pair<std::string, std::string>>
settings_of(const std::string& schema, core::Millis idle) {
  std::vector<std::pair<std::string, std::string>> out{
      {"lock_timeout", std::to_string(busy_timeout_ms())},
      {"client_min_messages", "warning"},
      {"bytea_output", "hex"}};
  if (idle.count() > 0) {
    out.emplace_back("idle_in_transaction_session_timeout",
                     std::to_string(idle.count()));
    // A worker's: it runs the same few statements for ever, each planned
    // once when it is prepared (the lease's custom plans cost more to make
    // than to run, and the server kept making them).
    out.emplace_back("plan_cache_mode", "force_generic_plan");
  }
  out.emplace_back("search_path", schema);
  return out;
}

} // namespace

std::string session_settings(std::string_view set, std::string_view sep,
                             const std::string& schema, core::Millis idle) {
  std::string out;
  for (const auto& [name, value] : settings_of(schema, idle)) {
    out += (out.empty() ? "" : std::string(sep)) + std::string(set) + name + "="
           + value;
  }
  return out;
}

std::string local_settings(bool pooled, const std::string& schema,
                           core::Millis idle) {
  if (!pooled) {
    return {};
  }
  std::string out = session_settings("SET LOCAL ", "; ", schema, idle);
  out.erase(out.rfind("; SET LOCAL search_path="));
  return out + "; ";
}

std::string with_schema_write(const std::string& schema, bool pooled,
                              core::Millis idle) {
  std::string sets;
  auto settings = settings_of(schema, idle);
  if (!pooled) {
    settings.erase(settings.begin(), settings.end() - 1); // the search_path
  }
  for (const auto& [name, value] : settings) {
    sets += "set_config('" + name + "', '" + value + "', true), ";
  }
  std::string out = k_begin_write;
  const size_t lock = out.find("pg_advisory_xact_lock_shared");
  return out.insert(lock, sets);
}

namespace {

// with_tasks_locked()'s statement, its rows those of `condition`.
std::string tasks_locked(std::string_view begin_write,
                         const std::string& schema,
                         const std::string& condition) {
  // "BEGIN; SELECT <clock> FROM (<lock> OFFSET 0) AS l" becomes
  // "BEGIN; SELECT CASE WHEN l.n >= 0 THEN <clock> END FROM (SELECT
  // (<rows>) AS n FROM (<lock> OFFSET 0) AS a OFFSET 0) AS l": the rows are
  // locked as the middle SELECT's value, once the innermost one has taken
  // the write lock, and the clock read after. The outer SELECT reads that
  // value: a column nothing reads is planned away (PostgreSQL 15 gave it
  // as NULL, and no row was locked).
  constexpr std::string_view tail = " OFFSET 0) AS l";
  const size_t select = begin_write.find("SELECT ") + 7;
  const size_t from = begin_write.find(" FROM (");
  return std::string(begin_write.substr(0, select)) + "CASE WHEN l.n >= 0 THEN "
         + std::string(begin_write.substr(select, from - select))
         + " END FROM (SELECT (SELECT count(*) FROM (SELECT 1 FROM " + schema
         + ".tasks WHERE " + condition
         + " ORDER BY id FOR UPDATE) AS r) AS n FROM ("
         + std::string(begin_write.substr(
             from + 7, begin_write.size() - (from + 7) - tail.size()))
         + " OFFSET 0) AS a" + std::string(tail);
}

std::string id_list(const std::vector<int64_t>& ids) {
  std::string list;
  for (const int64_t id : ids) {
    list += (list.empty() ? "" : ",") + std::to_string(id);
  }
  return list;
}

constexpr std::string_view k_begin = "BEGIN; ";

} // namespace

std::string with_tasks_locked(std::string_view begin_write,
                              const std::string& schema,
                              const std::vector<int64_t>& ids) {
  return tasks_locked(begin_write, schema, "id IN (" + id_list(ids) + ")");
}

std::string prepare_tasks_locked(std::string_view begin_write,
                                 const std::string& schema) {
  const std::string begin = tasks_locked(begin_write, schema, "id = ANY($1)");
  return "PREPARE " + std::string(k_tasks_locked_name) + "(bigint[]) AS "
         + begin.substr(k_begin.size());
}

std::string execute_tasks_locked(const std::vector<int64_t>& ids) {
  return std::string(k_begin) + "EXECUTE " + std::string(k_tasks_locked_name)
         + "('{" + id_list(ids) + "}')";
}

core::Millis answer_bound(const UrlParts& parts) {
  return parts.answer_timeout.value_or(answer_timeout());
}

core::Millis idle_limit(core::Millis bound) {
  return idle_transactions_ended() ? 2 * bound : core::Millis{0};
}

libpq::ConnectParams connect_params_for(const std::string& url,
                                        const std::string& schema, bool pooled,
                                        core::Millis bound) {
  const std::string options =
      session_settings("-c ", " ", schema, idle_limit(bound));
  const bool own = url.find("options=") != std::string::npos;
  return libpq::connect_params(url, own || pooled ? nullptr : options.c_str(),
                               bound);
}

} // namespace taskq::storage::pg
