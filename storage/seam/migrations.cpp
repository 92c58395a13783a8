// How a schema differs from the one the migrations make
// (storage/seam/migrations.hpp), in the same words on both backends.
#include "storage/seam/migrations.hpp"

namespace taskq::storage::detail {

std::vector<std::string>
schema_differences(const std::map<std::string, std::string>& expected,
                   const std::map<std::string, std::string>& actual,
                   int version) {
  std::vector<std::string> problems;
  for (const auto& [what, sql] : expected) {
    const auto it = actual.find(what);
    if (it == actual.end()) {
      problems.push_back(what + " is missing from the schema");
    } else if (it->second != sql) {
      problems.push_back(what + " differs from schema version "
                         + std::to_string(version));
    }
  }
  for (const auto& [what, sql] : actual) {
    if (!expected.contains(what)) {
      problems.push_back(what + " is not part of taskq's schema");
    }
  }
  return problems;
}

} // namespace taskq::storage::detail
