// TaskStore: counting. Per-queue stats, and the invariants of the stored
// data that `db check` counts and `import` refuses rows for.
#include "storage/db.hpp"
#include "storage/store_detail.hpp"
#include "storage/task_store.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;

namespace detail {

std::vector<QueueStats> read_stats(Db& db, const std::optional<std::string>& q,
                                   Time now) {
  Statement st(
      db,
      "SELECT queue, count(*) FILTER (WHERE state = 'runnable'), "
      "count(*) FILTER (WHERE state = 'sleeping'), "
      "count(*) FILTER (WHERE state = 'paused'), "
      "count(*) FILTER (WHERE state = 'completed'), "
      "count(*) FILTER (WHERE state = 'failed'), "
      "count(*) FILTER (WHERE state = 'killed'), "
      "count(*) FILTER (WHERE state = 'runnable' AND lease_token IS NOT NULL "
      "    AND lease_expires > ?2), "
      "count(*) FILTER (WHERE state IN ('runnable', 'sleeping') AND "
      "    blockers = 0 AND broadcast_until IS NULL AND run_at <= ?2 AND "
      "    (lease_token IS NULL OR lease_expires <= ?2)), "
      "count(*) FILTER (WHERE state = 'runnable' AND run_at > ?2), "
      "min(run_at) FILTER (WHERE state IN ('runnable', 'sleeping') AND "
      "    blockers = 0 AND broadcast_until IS NULL AND run_at <= ?2 AND "
      "    (lease_token IS NULL OR lease_expires <= ?2)), "
      "count(*) FILTER (WHERE state = 'completed' AND "
      "    updated_at > ?2 - 60000), "
      "count(*) FILTER (WHERE state = 'completed' AND "
      "    updated_at > ?2 - 3600000) "
      "FROM tasks WHERE ?1 IS NULL OR queue = ?1 GROUP BY queue ORDER BY "
      "queue");
  st.bind(1, q).bind(2, to_unix_ms(now));
  std::vector<QueueStats> out;
  while (st.step()) {
    QueueStats s;
    s.queue = st.get_text(0);
    s.runnable = st.get_int(1);
    s.sleeping = st.get_int(2);
    s.paused = st.get_int(3);
    s.completed = st.get_int(4);
    s.failed = st.get_int(5);
    s.killed = st.get_int(6);
    s.running = st.get_int(7);
    s.ready = st.get_int(8);
    s.delayed = st.get_int(9);
    if (auto oldest = st.get_opt_int(10)) {
      s.oldest_ready_age = Millis(to_unix_ms(now) - *oldest);
    }
    s.completed_last_minute = st.get_int(11);
    s.completed_last_hour = st.get_int(12);
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace detail

std::vector<QueueStats> TaskStore::stats(const std::optional<std::string>& q,
                                         Time now) {
  Transaction tx(*m_db, Transaction::Kind::read);
  return read_stats(*m_db, q, now);
}

namespace detail {

namespace {

struct Rule {
  Invariant text;
  const char* offenders; // task ids, one per offending row, of tasks `t`
};

// Each selects from `tasks t`; the scope is added to its WHERE.
const Rule k_rules[] = {
    {{"task(s) left in the transient fault state",
      "its state is fault, which is transient, never stored"},
     "SELECT t.id FROM tasks t WHERE t.state = 'fault'"},
    {{"leased task(s) that are not runnable",
      "it holds a lease but is not runnable"},
     "SELECT t.id FROM tasks t WHERE t.lease_token IS NOT NULL "
     "AND t.state <> 'runnable'"},
    // What leasing trusts: a waiting task's count of unfinished
    // dependencies, and the label index roots are checked against.
    {{"waiting task(s) whose count of unfinished dependencies is off",
      "its 'blockers' is not the number of its unfinished dependencies"},
     "SELECT t.id FROM tasks t WHERE t.blockers > 0 "
     "AND t.blockers <> (SELECT count(*) FROM task_deps d JOIN tasks x "
     "ON x.id = d.dep_id WHERE d.task_id = t.id "
     "AND x.state <> 'completed')"},
    {{"label(s) of unfinished tasks missing from the label index",
      "a label is missing from the label index"},
     "SELECT t.id FROM tasks t, json_each(t.labels) j "
     "WHERE t.labels IS NOT NULL "
     "AND t.state NOT IN ('completed', 'failed', 'killed') "
     "AND NOT EXISTS (SELECT 1 FROM task_labels l WHERE l.key = j.key "
     "AND l.value = j.value AND l.task_id = t.id)"},
};

} // namespace

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

void find_violations(
    Db& db, const std::optional<std::string>& scope,
    const std::function<void(const Invariant&, int64_t)>& each) {
  for (const Rule& rule : k_rules) {
    // The rules name json_each(t.labels), SQLite's spelling; the scope is
    // a JSON array of ids.
    std::string sql(rule.offenders);
    constexpr std::string_view k_labels_rows = "json_each(t.labels)";
    if (const size_t at = sql.find(k_labels_rows); at != std::string::npos) {
      sql.replace(at, k_labels_rows.size(),
                  db.dialect().json_object_rows("t.labels"));
    }
    Statement st(db, sql
                         + " AND (?1 IS NULL OR t.id IN (SELECT CAST(value "
                           "AS BIGINT) FROM "
                         + db.dialect().json_array_rows("?1") + "))");
    st.bind(1, scope);
    while (st.step()) {
      each(rule.text, st.get_int(0));
    }
  }
}

} // namespace detail

CheckReport TaskStore::check() {
  CheckReport report;
  Transaction tx(*m_db, Transaction::Kind::read);
  if (!check_file(*m_db, report)) {
    return report;
  }
  {
    Statement st(*m_db, "SELECT count(*) FROM tasks");
    st.step();
    report.tasks = st.get_int(0);
  }
  std::vector<std::pair<const Invariant*, int64_t>> broken; // rule, count
  find_violations(*m_db, std::nullopt,
                  [&](const Invariant& rule, int64_t /*task_id*/) {
                    if (broken.empty() || broken.back().first != &rule) {
                      broken.emplace_back(&rule, 0);
                    }
                    ++broken.back().second;
                  });
  for (const auto& [rule, n] : broken) {
    report.problems.push_back(std::to_string(n) + " "
                              + std::string(rule->summary));
  }
  report.ok = report.problems.empty();
  return report;
}

} // namespace taskq::storage
