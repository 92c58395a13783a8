// What shell completion offers: recent task ids.
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace taskq::storage {

std::vector<int64_t>
TaskStore::recent_ids(const std::vector<core::TaskState>& states, bool leased,
                      int64_t limit) {
  // The states are written into the text (they are core's names, never
  // input) so that SQLite can prove a query for settled states only
  // (`state <> 'runnable'`) may use the partial index tasks_settled
  // (state, queue, id): its cost is then the number of tasks in those
  // states, not the table's size. Otherwise the primary key is read
  // backwards until `limit` ids are found (tasks that can still run are
  // mostly recent ones).
  std::string sql = "SELECT id FROM tasks";
  std::string where;
  bool runnable = false;
  for (const auto s : states) {
    where += where.empty() ? " WHERE state IN (" : ", ";
    where += "'" + std::string(core::to_string(s)) + "'";
    runnable = runnable || s == core::TaskState::runnable;
  }
  if (!where.empty()) {
    where += ")";
    if (!runnable) {
      where += " AND state <> 'runnable'";
    }
  }
  if (leased) {
    where += where.empty() ? " WHERE " : " AND ";
    where += "lease_token IS NOT NULL";
  }
  // Few tasks hold a lease: `+id` keeps SQLite from walking the primary
  // key, so that it reads the partial index tasks_leased instead.
  sql += where + (leased ? " ORDER BY +id DESC" : " ORDER BY id DESC")
         + " LIMIT ?1";
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, sql);
  st.bind(1, limit);
  std::vector<int64_t> out;
  while (st.step()) {
    out.push_back(st.get_int(0));
  }
  return out;
}

} // namespace taskq::storage
