#pragma once

// The schema of taskq's tables, as a PostgreSQL URL chooses it
// (storage/pg/schema_url.cpp).

#include <string>
#include <string_view>
#include <utility>

namespace taskq::storage::pg {

// The schema holding taskq's tables when the URL names none.
constexpr std::string_view k_default_schema = "taskq";

// A schema's name as taskq accepts it: a lower-case identifier, which
// needs no quoting anywhere, and none of the server's own (pg_...).
bool valid_schema_name(std::string_view name);

// The URL without its `schema=NAME` (taskq's, which libpq would refuse),
// and the schema it names (the last; a bad name is a usage error). Else
// the first of a search_path set in the URL's options (how a schema was
// chosen before), else the default.
std::pair<std::string, std::string> split_schema(const std::string& url);

// `begin` (a BEGIN and what follows it) with the schema set as the
// search_path right after the BEGIN: every transaction names it itself, so
// the schema needs no session state (one step towards a pooler that hands
// a connection from client to client between transactions; the prepared
// statements and LISTEN still keep session state).
std::string with_schema(std::string_view begin, const std::string& schema);

} // namespace taskq::storage::pg
