// A PostgreSQL statement's run and rows (storage/pg/statement.hpp).
#include "storage/pg/statement.hpp"

#include <cstdlib>

namespace taskq::storage::pg {

using libpq::pq;

bool PgStatement::step() {
  if (!m_result) {
    std::vector<const char*> values(m_values.size());
    for (size_t i = 0; i < m_values.size(); ++i) {
      values[i] = m_set[i] ? m_values[i].c_str() : nullptr;
    }
    m_result = m_db->run(*m_prepared, values, m_types);
    m_row = -1;
    const char* tuples = pq().PQcmdTuples(m_result.get());
    m_changes = tuples[0] == '\0' ? 0 : std::atoll(tuples);
  }
  if (m_row + 1 < pq().PQntuples(m_result.get())) {
    ++m_row;
    return true;
  }
  return false;
}

} // namespace taskq::storage::pg
