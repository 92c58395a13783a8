// The seam both backends stand on: what they spell differently (Db::Dialect),
// how long a writer waits, and what names a PostgreSQL server.
#include "storage/db.hpp"

#include "storage/task_store.hpp"

#include <cstdlib>
#include <string>
#include <string_view>

namespace taskq::storage {

namespace {
constexpr int k_default_busy_timeout_ms = 30000;
} // namespace

int busy_timeout_ms() {
  // TASKQ_BUSY_TIMEOUT (milliseconds) exists for tests of the "locked"
  // path; users rarely need it.
  if (const char* env = std::getenv("TASKQ_BUSY_TIMEOUT_MS")) {
    char* end = nullptr;
    const long value = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && value >= 0) {
      return static_cast<int>(value);
    }
  }
  return k_default_busy_timeout_ms;
}

// --- what the backends spell differently -----------------------------------

std::string Db::Dialect::json_object_rows(std::string_view expr) const {
  if (backend == Backend::postgresql) {
    return "jsonb_each_text(CAST(" + std::string(expr) + " AS jsonb))";
  }
  return "json_each(" + std::string(expr) + ")";
}

std::string Db::Dialect::json_array_rows(std::string_view expr) const {
  if (backend == Backend::postgresql) {
    return "jsonb_array_elements_text(CAST(" + std::string(expr)
           + " AS jsonb))";
  }
  return "json_each(" + std::string(expr) + ")";
}

std::string_view Db::Dialect::table_columns() const {
  if (backend == Backend::postgresql) {
    return "SELECT column_name, "
           "CAST(data_type IN ('bigint', 'integer', 'smallint') AS INTEGER), "
           "CAST(is_nullable = 'NO' AS INTEGER), "
           "CAST(is_nullable = 'NO' AND column_default IS NULL "
           "AND is_identity = 'NO' AS INTEGER) "
           "FROM information_schema.columns "
           "WHERE table_schema = current_schema() AND table_name = ?1 "
           "AND coalesce(identity_generation, '') <> 'ALWAYS' "
           "ORDER BY ordinal_position";
  }
  return "SELECT name, type = 'INTEGER', \"notnull\", "
         "\"notnull\" AND dflt_value IS NULL FROM pragma_table_info(?1) "
         "ORDER BY cid";
}

std::string_view Db::Dialect::bytewise() const {
  return backend == Backend::postgresql ? " COLLATE \"C\"" : "";
}

int Db::Dialect::bulk_rows() const {
  return backend == Backend::postgresql ? 512 : 64;
}

bool is_postgres_url(std::string_view path) {
  return path.starts_with("postgresql://") || path.starts_with("postgres://");
}

std::string redact_url(std::string_view url) {
  // scheme://[user[:password]@]host...: the password sits between the
  // first ':' after the scheme and the last '@' of the authority.
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) {
    return std::string(url);
  }
  const size_t start = scheme + 3;
  size_t end = url.find_first_of("/?", start);
  if (end == std::string_view::npos) {
    end = url.size();
  }
  const size_t at = url.rfind('@', end);
  std::string out(url);
  if (at != std::string_view::npos && at > start) {
    const size_t colon = url.find(':', start);
    if (colon != std::string_view::npos && colon < at) {
      out = std::string(url.substr(0, colon + 1)) + "***"
            + std::string(url.substr(at));
    }
  }
  // A password given as a query parameter: password=... up to '&'.
  for (size_t p = out.find("password="); p != std::string::npos;
       p = out.find("password=", p + 1)) {
    if (p > 0 && out[p - 1] != '?' && out[p - 1] != '&') {
      continue;
    }
    const size_t value = p + 9;
    const size_t stop = out.find('&', value);
    out.replace(value, (stop == std::string::npos ? out.size() : stop) - value,
                "***");
  }
  return out;
}

} // namespace taskq::storage
