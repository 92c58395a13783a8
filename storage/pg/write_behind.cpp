#include "storage/pg/write_behind.hpp"

#include "core/error.hpp"
#include "storage/pg/libpq.hpp"
#include "storage/pg/sql.hpp"
#include "storage/pg/tx_sql.hpp"

namespace taskq::storage::pg {

namespace {

using libpq::pq;

// At most this many events rows wait: one INSERT each that many.
constexpr size_t k_events_at_once = 256;

} // namespace

bool WriteBehind::keep(Db::EventRow row) {
  m_events.push_back(std::move(row));
  return m_events.size() >= k_events_at_once;
}

std::string WriteBehind::take_sql(PGconn* conn) {
  if (m_events.empty()) {
    return {};
  }
  std::string sql = insert_events_sql(m_events, [&](const std::string& v) {
    char* quoted = pq().PQescapeLiteral(conn, v.data(), v.size());
    if (quoted == nullptr) {
      m_events.clear();
      throw Error(ErrorKind::internal,
                  "cannot log an event: "
                      + libpq::one_line(pq().PQerrorMessage(conn)));
    }
    std::string out(quoted);
    pq().PQfreemem(quoted);
    return out;
  });
  m_events.clear();
  return sql;
}

const char* WriteBehind::commit_sql(bool changed, bool quiet) {
  m_before = m_wakes;
  return changed && m_wakes.commit(std::chrono::steady_clock::now(), quiet)
             ? k_commit_write
             : "COMMIT";
}

void WriteBehind::wake_owed(
    PGconn* conn, const std::function<libpq::Result(const char*)>& exec,
    bool closing) {
  const auto now = std::chrono::steady_clock::now();
  const auto due = m_wakes.due();
  const auto status = pq().PQtransactionStatus(conn);
  if (!due || (now < *due && !closing) || status == PQTRANS_INTRANS
      || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE) {
    return;
  }
  if (status != PQTRANS_IDLE || pq().PQstatus(conn) != CONNECTION_OK) {
    m_wakes.postpone(now); // sent once the connection is back
    return;
  }
  libpq::Result r;
  try {
    r = exec(k_wake);
  } catch (...) {
    m_wakes.postpone(now); // a silent server: sent once it is back
    throw;
  }
  if (!r || pq().PQstatus(conn) != CONNECTION_OK) {
    m_wakes.postpone(now); // broke meanwhile
    return;
  }
  m_wakes.sent(now);
  if (pq().PQtransactionStatus(conn) == PQTRANS_INERROR) {
    exec("ROLLBACK");
  }
}

} // namespace taskq::storage::pg
