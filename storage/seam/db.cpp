// The seam both backends stand on: what they spell differently (Db::Dialect),
// how long a writer waits, and what names a PostgreSQL server (its URLs:
// which strings are one, and where they hold a password).
#include "storage/seam/db.hpp"

#include "core/error.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

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

std::string_view Db::Dialect::count_slot() const {
  return backend == Backend::postgresql ? "txid_current() % 64" : "0";
}

bool Db::Dialect::commits_in_id_order() const {
  return backend == Backend::sqlite;
}

bool Db::Dialect::tries_again() const {
  return backend == Backend::postgresql;
}

// --- PostgreSQL URLs ---------------------------------------------------------
//
// libpq reads a URI only when its scheme is postgresql:// or postgres:// in
// lower case (any other spelling it takes for a database's name); taskq
// takes the scheme in any case and hands libpq the lower-case spelling.

namespace {

char lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Whether `text` starts with `prefix` (in lower case), in any case.
bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) {
    return false;
  }
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (lower(text[i]) != prefix[i]) {
      return false;
    }
  }
  return true;
}

// The length of the URL's scheme and its "://"; 0: no PostgreSQL URL.
size_t scheme_length(std::string_view url) {
  for (const std::string_view scheme : {"postgresql://", "postgres://"}) {
    if (starts_with_nocase(url, scheme)) {
      return scheme.size();
    }
  }
  return 0;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Whether url[i] starts a percent-encoded byte (%XY, either case of hex).
bool encoded_at(std::string_view url, size_t i) {
  return url[i] == '%' && i + 2 < url.size() && hex_value(url[i + 1]) >= 0
         && hex_value(url[i + 2]) >= 0;
}

// Whether a query parameter's key names a secret: libpq's password and
// sslpassword, whatever the case and percent-encoding of the key (libpq
// decodes keys too, and trims the spaces around them).
bool secret_key(std::string_view raw_key) {
  std::string key = percent_decode(raw_key);
  for (char& c : key) {
    c = lower(c);
  }
  return key.find("password") != std::string::npos;
}

bool key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
         || (c >= '0' && c <= '9') || c == '_' || c == '%';
}

} // namespace

std::string percent_decode(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (encoded_at(text, i)) {
      out += static_cast<char>(hex_value(text[i + 1]) * 16
                               + hex_value(text[i + 2]));
      i += 3;
    } else {
      out += text[i++];
    }
  }
  return out;
}

bool is_postgres_url(std::string_view path) {
  return scheme_length(path) > 0;
}

std::string libpq_url(std::string_view url) {
  std::string out(url);
  for (size_t i = 0; i < scheme_length(url); ++i) {
    out[i] = lower(out[i]);
  }
  return out;
}

void check_db_name(std::string_view path) {
  if (is_postgres_url(path)) {
    return;
  }
  // What is quoted back: the scheme alone, never what may follow it.
  size_t shown = 0;
  for (const std::string_view name : {"postgresql", "postgres"}) {
    if (shown == 0 && starts_with_nocase(path, name)) {
      const std::string_view after = path.substr(name.size());
      shown = after.starts_with(':')    ? name.size() + 1
              : after.starts_with("//") ? name.size() + 2
                                        : 0;
    }
  }
  // Any other scheme://: pgsql://, mysql://, file://...
  const auto letter = [](char c) { return lower(c) >= 'a' && lower(c) <= 'z'; };
  size_t k = 0;
  while (k < path.size()
         && (letter(path[k])
             || (k > 0
                 && ((path[k] >= '0' && path[k] <= '9') || path[k] == '+'
                     || path[k] == '-' || path[k] == '.')))) {
    ++k;
  }
  if (shown == 0 && k > 0 && path.substr(k).starts_with("://")) {
    shown = k + 3;
  }
  if (shown == 0) {
    return;
  }
  throw Error(ErrorKind::usage,
              "invalid database '" + std::string(path.substr(0, shown))
                  + "...': a PostgreSQL URL starts with postgresql:// or "
                    "postgres://, and a file name may not start like a URL");
}

std::vector<UrlSpan> url_secrets(std::string_view url) {
  std::vector<UrlSpan> spans;
  const size_t start = scheme_length(url);
  if (start == 0) {
    return spans;
  }
  constexpr size_t none = std::string_view::npos;
  // The query: from the first '?' followed by key=.
  size_t query = none;
  for (size_t q = url.find('?', start); q != none && query == none;
       q = url.find('?', q + 1)) {
    size_t k = q + 1;
    while (k < url.size() && key_char(url[k])) {
      ++k;
    }
    if (k > q + 1 && k < url.size() && url[k] == '=') {
      query = q;
    }
  }
  // The password: from the first ':' of the user information to its '@'.
  // libpq ends the user information at the first '@' when no '/' comes
  // before it; a password written with '@', '/' or '?' unencoded ends at a
  // later '@' (the last one before the query): whichever hides more.
  const size_t first = url.find_first_of("@/", start);
  size_t end = first != none && url[first] == '@' ? first : none;
  // A bracketed (IPv6) host's ':' are no password's.
  const size_t colon = start < url.size() && url[start] == '[' && end == none
                           ? url.find(':', url.find(']', start))
                           : url.find(':', start);
  // Where libpq sees no user information, a ':' before the first '/' is a
  // port's; when what follows it is no port (digits), it was a password's
  // holding a '/' or '?' (libpq could not connect anyway): it ends at the
  // URL's last '@', even one past a '?key='.
  bool port = true;
  if (end == none && colon != none && colon < first) {
    const size_t stop = std::min(url.find_first_of(",/?", colon), url.size());
    for (size_t i = colon + 1; i < stop; ++i) {
      port = port && url[i] >= '0' && url[i] <= '9';
    }
  }
  const size_t last = url.substr(0, port ? query : none).rfind('@');
  if (last != none && last >= start && (end == none || last > end)) {
    end = last;
  }
  if (end != none && colon != none && colon < end) {
    spans.push_back({colon + 1, end});
  }
  // Each parameter whose key names a password, its value up to the next
  // '&'; looked for after every '?' and '&', wherever libpq's reading of
  // the URL puts its query.
  for (size_t p = url.find_first_of("?&", start); p != none;
       p = url.find_first_of("?&", p + 1)) {
    const size_t stop = std::min(url.find('&', p + 1), url.size());
    const size_t eq = url.find('=', p + 1);
    if (eq != none && eq < stop) {
      if (secret_key(url.substr(p + 1, eq - p - 1))) {
        spans.push_back({eq + 1, stop});
      }
    } else if (secret_key(url.substr(p + 1, stop - p - 1))) {
      spans.push_back({p + 1, stop});
    }
  }
  std::sort(spans.begin(), spans.end(), [](const UrlSpan& a, const UrlSpan& b) {
    return a.begin < b.begin;
  });
  std::vector<UrlSpan> merged;
  for (const UrlSpan& s : spans) {
    if (!merged.empty() && s.begin <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, s.end);
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

std::string redact_url(std::string_view url) {
  std::string out;
  size_t at = 0;
  for (const UrlSpan& s : url_secrets(url)) {
    out += url.substr(at, s.begin - at);
    out += "***";
    at = s.end;
  }
  out += url.substr(at);
  return out;
}

} // namespace taskq::storage
