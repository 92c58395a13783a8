#pragma once

#include <string_view>
#include <vector>

namespace taskq::storage {

// One numbered file of migrations/, embedded at build time.
struct Migration {
  int version;
  std::string_view name;
  std::string_view sql;
};

// Every migration, in version order (1, 2, ...).
const std::vector<Migration>& migrations();

} // namespace taskq::storage
