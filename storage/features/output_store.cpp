// TaskStore: job output, the chunks of what handlers printed (schema 7).
#include "storage/features/output_store.hpp"

#include "core/error.hpp"
#include "storage/model/locks.hpp"
#include "storage/task_store.hpp"

#include <map>
#include <string>
#include <tuple>

namespace taskq::storage {

using namespace detail;

namespace detail {

void write_output(Db& db, const std::vector<OutputChunk>& chunks,
                  int64_t keep) {
  if (chunks.empty() || keep <= 0) {
    return;
  }
  // A stream's chunks come in order, so a row at or past a chunk's offset
  // means the chunk is there already: a worker that lost its connection
  // while committing sends its chunks again, and they are not doubled.
  // The task's row is shared (PostgreSQL) so that a delete in another
  // transaction, which locks it before it deletes the output
  // (delete_task, purge), either waits for this chunk and deletes it or
  // commits first and this finds no task: never a chunk kept without it.
  Statement insert(db,
                   "INSERT INTO task_output (task_id, attempt, stream, pos, "
                   "data) SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS "
                   "(SELECT 1 FROM tasks WHERE id = ?1"
                       + std::string(row_lock(db, " FOR SHARE"))
                       + ") AND NOT EXISTS "
                         "(SELECT 1 FROM task_output WHERE task_id = ?1 AND "
                         "attempt = ?2 AND stream = ?3 AND pos >= ?4)");
  // Where each stream now ends: what lies before end - keep goes.
  std::map<std::tuple<int64_t, int64_t, std::string>, int64_t> ends;
  for (const OutputChunk& c : chunks) {
    if (c.data.empty()) {
      continue;
    }
    insert.reset();
    insert.bind(1, c.task)
        .bind(2, c.attempt)
        .bind(3, c.stream)
        .bind(4, c.offset)
        .bind_blob(5, c.data)
        .run();
    const int64_t end = c.offset + static_cast<int64_t>(c.data.size());
    auto& e = ends[{c.task, c.attempt, c.stream}];
    e = std::max(e, end);
  }
  for (const auto& [key, end] : ends) {
    const int64_t cut = end - keep;
    if (cut <= 0) {
      continue;
    }
    const auto& [task, attempt, stream] = key;
    Statement(db, "DELETE FROM task_output WHERE task_id = ?1 "
                  "AND attempt = ?2 AND stream = ?3 "
                  "AND pos + length(data) <= ?4")
        .bind(1, task)
        .bind(2, attempt)
        .bind(3, stream)
        .bind(4, cut)
        .run();
    // The chunk that straddles the cut keeps its part after it.
    Statement(db,
              "UPDATE task_output SET data = substr(data, CAST(?4 - pos "
              "+ 1 AS INTEGER)), pos = ?4 WHERE task_id = ?1 AND attempt = ?2 "
              "AND stream = ?3 AND pos < ?4")
        .bind(1, task)
        .bind(2, attempt)
        .bind(3, stream)
        .bind(4, cut)
        .run();
  }
}

} // namespace detail

void TaskStore::append_output(const std::vector<OutputChunk>& chunks,
                              int64_t keep) {
  if (chunks.empty() || keep <= 0) {
    return;
  }
  retrying([&] {
    Transaction tx(*m_db);
    write_output(*m_db, chunks, keep);
    tx.commit();
  });
}

std::vector<OutputChunk>
TaskStore::output(int64_t task, int64_t attempt,
                  const std::optional<std::string>& stream, int64_t after) {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, "SELECT id, stream, pos, data FROM task_output "
                      "WHERE task_id = ?1 AND attempt = ?2 AND id > ?3 "
                      "AND (?4 IS NULL OR stream = ?4) ORDER BY id");
  st.bind(1, task).bind(2, attempt).bind(3, after).bind(4, stream);
  std::vector<OutputChunk> out;
  while (st.step()) {
    OutputChunk c;
    c.id = st.get_int(0);
    c.task = task;
    c.attempt = attempt;
    c.stream = st.get_text(1);
    c.offset = st.get_int(2);
    c.data = st.get_blob(3);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<OutputSize> TaskStore::output_sizes(int64_t task) {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, "SELECT attempt, stream, sum(length(data)), "
                      "max(pos + length(data)) FROM task_output "
                      "WHERE task_id = ?1 GROUP BY attempt, stream "
                      "ORDER BY attempt, stream");
  st.bind(1, task);
  std::vector<OutputSize> out;
  while (st.step()) {
    out.push_back(
        {st.get_int(0), st.get_text(1), st.get_int(2), st.get_int(3)});
  }
  return out;
}

} // namespace taskq::storage
