#pragma once

// The tasks page's filters as the URL carries them, and the Selector they
// make: the same for a page, its count and a bulk action over it.

#include "storage/task_types.hpp"

#include <optional>
#include <string>
#include <string_view>

#include "web/html.hpp"
#include "web/http.hpp"

namespace taskq::web {

struct Filters {
  std::string queue;
  std::string state; // comma-separated: states, running, ready
  std::string match; // space- or comma-separated KEY=VALUE patterns
  std::string text;  // q=
  std::string from;  // created from (RFC 3339)
  std::string to;    // created before
  bool oldest = false;
  std::string cursor; // the page's keyset cursor (an id)
  std::string limit;
};

Filters read_filters(const Pairs& query);

// The selector; a value that is not one (a state, a pattern, a time, a
// cursor) is a usage error naming it, as the CLI's.
storage::Selector selector_of(const Filters& f);

// The filters as a query string (without `?`), the cursor too.
std::string query_of(const Filters& f);

// The filters as hidden form fields (not the cursor).
Html hidden_fields(const Filters& f);

// An action's name as forms send it, and the <option>s of a bulk select.
inline constexpr std::string_view k_action_options =
    "<option value=\"pause\">pause</option>"
    "<option value=\"resume\">resume</option>"
    "<option value=\"kill\">kill</option>"
    "<option value=\"release\">release</option>"
    "<option value=\"retry\">retry</option>";

// The bulk actions that cannot be undone: the operator types the count.
bool destructive(std::string_view action);

} // namespace taskq::web
