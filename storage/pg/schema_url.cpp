#include "storage/pg/schema_url.hpp"

#include "core/error.hpp"
#include "storage/db.hpp"
#include "storage/task_store.hpp"

#include <algorithm>

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

// The URL without its `schema=NAME` (taskq's, which libpq would refuse),
// and the schema it names (the last; a bad name is a usage error). Else
// the first of a search_path set in the URL's options (how a schema was
// chosen before), else the default.
std::pair<std::string, std::string> split_schema(const std::string& url) {
  std::string rest;
  std::string schema(k_default_schema);
  const size_t query = url.find('?');
  if (query == std::string::npos) {
    return {url, schema};
  }
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
          schema = first;
        }
      }
    }
    if (param.starts_with("schema=")) {
      named = true;
      schema = percent_decode(param.substr(7));
      if (!valid_schema_name(schema)) {
        // The value itself is not quoted: in a URL whose password holds
        // an unencoded "?schema=", it would be a part of the password.
        throw Error(ErrorKind::usage,
                    "invalid schema in database URL " + redact_url(url)
                        + ": a schema is lower-case letters, digits and '_' "
                          "(at most 63, not starting with a digit or pg_)");
      }
    }
    if (!param.starts_with("schema=") && !param.empty()) {
      rest += sep;
      rest += param;
      sep = '&';
    }
    at = end + 1;
  }
  return {rest, schema};
}

std::string with_schema(std::string_view begin, const std::string& schema) {
  const size_t end = std::min(begin.find(';'), begin.size());
  return std::string(begin.substr(0, end)) + "; SET LOCAL search_path TO "
         + schema + std::string(begin.substr(end));
}

} // namespace taskq::storage::pg
