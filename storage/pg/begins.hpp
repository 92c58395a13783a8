// Internal to storage/pg: how a PostgreSQL connection's transactions
// begin (storage/pg/tx_sql.hpp's statements, in the connection's schema
// and settings), and the tasks a write holds from its begin
// (Db::begin_holding).
#pragma once

#include "core/time.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace taskq::storage::pg {

class Begins {
public:
  // `schema`, `pooled` and `idle`: the URL's (schema_url.hpp).
  Begins(const std::string& schema, bool pooled, core::Millis idle);

  const std::string& write() const { return m_write; }
  const std::string& read() const { return m_read; }
  // A BEGIN for one statement through a pooler (PgDb::alone()).
  const std::string& alone() const { return m_alone; }

  // What begins a write that holds tasks `ids` (any order, repeats
  // allowed), their rows locked in id order once the write lock is held
  // (with_tasks_locked()). Like any statement (PgDb::run()), from its
  // k_runs_before_prepare'th run with tasks on it is prepared once in the
  // session (prepare_tasks_locked()), unless through a pooler: `prepare`
  // is then the PREPARE to send first, until prepared() says it went
  // through.
  struct Holding {
    std::string begin;
    std::string prepare; // empty: none to send
  };
  Holding hold(const std::vector<int64_t>& ids);
  void prepared() { m_prepared = true; }
  // A plain begin (Db::begin) holds nothing.
  void hold_none() { m_held.clear(); }
  // The session was made again: nothing is prepared in it.
  void session_new() { m_prepared = false; }
  // Whether the transaction begun last holds task `id`.
  bool holds(int64_t id) const;

private:
  std::string m_schema;
  bool m_pooled = false;
  std::string m_write; // k_begin_write, in the schema
  std::string m_read;  // k_begin_read, in the schema
  std::string m_alone;
  std::vector<int64_t> m_held; // hold()'s tasks, sorted
  int m_holding_runs = 0;      // hold()s with tasks, up to the threshold
  bool m_prepared = false;     // prepare_tasks_locked() in this session
};

} // namespace taskq::storage::pg
