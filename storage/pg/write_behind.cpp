#include "storage/pg/write_behind.hpp"

#include "core/error.hpp"
#include "storage/pg/libpq.hpp"
#include "storage/pg/sql.hpp"
#include "storage/pg/tx_sql.hpp"

#include <array>
#include <string_view>

namespace taskq::storage::pg {

namespace {

using libpq::pq;

// At most this many events rows wait: one INSERT each that many.
constexpr size_t k_events_at_once = 256;
// At most this many ride a statement (WriteBehind::riding): few statement
// texts to prepare (one per count), and a turn of a worker leasing ahead
// logs a handful.
constexpr size_t k_riders = 16;
// The columns of an events row, as the INSERT names them.
constexpr int k_event_columns = 7;

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

std::optional<Prepared> WriteBehind::riding(const Prepared& p) const {
  const std::string& text = p.sql.text;
  const size_t here = text.find(Db::k_kept_events_here);
  if (m_events.empty() || m_events.size() > k_riders
      || (here == std::string::npos
          && (!text.starts_with("UPDATE tasks SET ")
              || text.find("events") != std::string::npos))) {
    return std::nullopt;
  }
  // In a statement's own INSERT (Db::k_kept_events_here), the rows are
  // one arm of a UNION ALL, written first: their types are spelled out,
  // since a union's parameters take no type from the columns.
  static constexpr std::array<std::string_view, k_event_columns> k_types = {
      "::bigint", "::bigint", "::text", "::text", "::text", "::text", "::text"};
  Prepared out;
  out.params = p.params + k_event_columns * static_cast<int>(m_events.size());
  out.sql.source = p.sql.source;
  out.sql.as_text = p.sql.as_text;
  std::string values;
  int position = static_cast<int>(p.sql.source.size());
  int bound = p.params;
  for (size_t i = 0; i < m_events.size(); ++i) {
    values += i == 0 ? "(" : ", (";
    for (size_t c = 0; c < k_types.size(); ++c) {
      values += (c == 0 ? "$" : ", $") + std::to_string(++position);
      if (here != std::string::npos) {
        values += k_types[c];
      }
      out.sql.source.push_back(++bound);
      out.sql.as_text.push_back(false); // typed by its column
    }
    values += ")";
  }
  if (here != std::string::npos) {
    out.sql.text = text.substr(0, here) + "SELECT * FROM (VALUES " + values
                   + ") AS taskq_kept UNION ALL "
                   + text.substr(here + Db::k_kept_events_here.size());
    return out;
  }
  out.sql.text = "WITH taskq_events AS (INSERT INTO events (task_id, time, "
                 "message, from_state, to_state, actor, detail) VALUES "
                 + values + ") " + text;
  return out;
}

std::vector<std::optional<std::string>> WriteBehind::take_values() {
  std::vector<std::optional<std::string>> out;
  out.reserve(m_events.size() * k_event_columns);
  for (Db::EventRow& r : m_events) {
    out.emplace_back(std::to_string(r.task_id));
    out.emplace_back(std::to_string(r.time));
    out.emplace_back(std::move(r.message));
    out.emplace_back(std::move(r.from));
    out.emplace_back(std::move(r.to));
    out.emplace_back(std::move(r.actor));
    out.emplace_back(std::move(r.detail));
  }
  m_events.clear();
  return out;
}

const char* WriteBehind::commit_sql(bool changed, bool quiet) {
  m_before = m_wakes;
  // With a loud wake-up still owed this commit is loud: it goes within
  // core::k_wake_every, and carries the owed one.
  const bool quiet_now = quiet && !m_wakes.owed_soon();
  if (!changed
      || !m_wakes.commit(std::chrono::steady_clock::now(), quiet_now)) {
    return "COMMIT";
  }
  return quiet_now ? k_commit_write_quiet : k_commit_write;
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
    r = exec(m_wakes.owed_soon() ? k_wake : k_wake_quiet);
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
