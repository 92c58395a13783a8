#include "storage/pg/begins.hpp"

#include "storage/pg/schema_url.hpp"
#include "storage/pg/statement.hpp"
#include "storage/pg/tx_sql.hpp"

#include <algorithm>

namespace taskq::storage::pg {

Begins::Begins(const std::string& schema, bool pooled, core::Millis idle)
    : m_schema(schema), m_pooled(pooled),
      m_write(with_schema_write(schema, pooled, idle)),
      m_read(with_schema(k_begin_read, schema,
                         local_settings(pooled, schema, idle))),
      m_alone(
          with_schema("BEGIN", schema, local_settings(pooled, schema, idle))) {}

Begins::Holding Begins::hold(const std::vector<int64_t>& ids) {
  m_held = ids;
  std::sort(m_held.begin(), m_held.end());
  m_held.erase(std::unique(m_held.begin(), m_held.end()), m_held.end());
  if (m_held.empty()) {
    return {m_write, {}};
  }
  if (m_holding_runs < k_runs_before_prepare) {
    ++m_holding_runs;
  }
  if (m_pooled || m_holding_runs < k_runs_before_prepare) {
    return {with_tasks_locked(m_write, m_schema, m_held), {}};
  }
  return {execute_tasks_locked(m_held),
          m_prepared ? std::string() : prepare_tasks_locked(m_write, m_schema)};
}

bool Begins::holds(int64_t id) const {
  return std::binary_search(m_held.begin(), m_held.end(), id);
}

} // namespace taskq::storage::pg
