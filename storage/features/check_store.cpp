// TaskStore: `db check`. The invariants of the stored data that `db check`
// counts and `import` refuses rows for.
#include "storage/features/check_store.hpp"

#include "core/flow.hpp"
#include "storage/model/rows.hpp"
#include "storage/seam/db.hpp"
#include "storage/seam/open_store.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;
namespace flow = core::flow;

namespace detail {

namespace {

struct Rule {
  Invariant text;
  // The offending rows' ids (of tasks, or of flows), one per row; the
  // scope is added to its WHERE as `AND (?1 IS NULL OR <scope> IN ...)`.
  std::string offenders;
  const char* scope = "t.id";
};

// In an offenders query: the JSON of a task's `flow` link (tasks `t`)
// names flow_atoms row `a`, its flow's id and its atom's name.
constexpr const char* k_link_names_atom =
    "EXISTS (SELECT 1 FROM json_each(t.flow) j WHERE j.key = 'id' "
    "AND CAST(j.value AS TEXT) = CAST(a.flow_id AS TEXT)) "
    "AND EXISTS (SELECT 1 FROM json_each(t.flow) j WHERE j.key = 'atom' "
    "AND CAST(j.value AS TEXT) = a.name)";
const std::string k_unfinished =
    "t.state NOT IN " + detail::terminal_states_sql();

// `'A', 'B', ...`: the names of `values`, for an IN list.
template <typename T, size_t N> std::string names_of(const T (&values)[N]) {
  std::string out;
  for (const T& v : values) {
    out += (out.empty() ? "'" : ", '") + std::string(flow::to_string(v)) + "'";
  }
  return out;
}

std::vector<Rule> make_rules() {
  const std::string flow_states = names_of(flow::k_flow_states);
  const std::string atom_states = names_of(flow::k_atom_states);
  const flow::Intention intentions[] = {
      flow::Intention::execute, flow::Intention::ignore,
      flow::Intention::revert, flow::Intention::retry};
  const flow::ChangeKind kinds[] = {
      flow::ChangeKind::flow, flow::ChangeKind::task, flow::ChangeKind::retry};
  std::vector<Rule> rules = {
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
       "WHERE t.labels IS NOT NULL AND "
           + k_unfinished
           + " AND NOT EXISTS (SELECT 1 FROM task_labels l WHERE l.key = j.key "
             "AND l.value = j.value AND l.task_id = t.id)"},
      // Flows (doc/flows.md#storage): an atom's task and the task's `flow` link
      // name each other while the task is unfinished; only that task's end
      // moves the atom, and a flow that has stopped waits for none.
      {{"unfinished task(s) of a flow's atom that no atom waits for",
        "its 'flow' names an atom, but no atom waits for it"},
       "SELECT t.id FROM tasks t WHERE t.flow IS NOT NULL AND "
           + std::string(k_unfinished)
           // (NOT IN: one pass over the atoms, where a correlated NOT
           // EXISTS would scan them for every task on SQLite.)
           + " AND t.id NOT IN (SELECT a.task_id FROM flow_atoms a "
             "WHERE a.task_id IS NOT NULL)"},
      {{"flow atom(s) waiting for a task that is missing, finished or works "
        "for another atom",
        "an atom waits for a task that is missing, finished, or whose "
        "'flow' names another flow or atom"},
       "SELECT a.flow_id FROM flow_atoms a WHERE a.task_id IS NOT NULL "
       "AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = a.task_id AND "
           + std::string(k_unfinished) + " AND " + k_link_names_atom + ")",
       "a.flow_id"},
      {{"atom(s) of finished or suspended flows still waiting for a task",
        "it is finished or SUSPENDED, yet an atom waits for a task"},
       "SELECT f.id FROM flows f JOIN flow_atoms a ON a.flow_id = f.id "
       "WHERE a.task_id IS NOT NULL AND f.state IN ('SUCCESS', 'FAILURE', "
       "'REVERTED', 'SUSPENDED')",
       "f.id"},
      {{"flow atom row(s) of no flow", "an atom row belongs to no flow"},
       "SELECT a.flow_id FROM flow_atoms a WHERE NOT EXISTS "
       "(SELECT 1 FROM flows f WHERE f.id = a.flow_id)",
       "a.flow_id"},
      {{"flow document row(s) of no flow", "a document belongs to no flow"},
       "SELECT d.flow_id FROM flow_documents d WHERE NOT EXISTS "
       "(SELECT 1 FROM flows f WHERE f.id = d.flow_id)",
       "d.flow_id"},
      {{"flow event row(s) of no flow", "an event row belongs to no flow"},
       "SELECT e.flow_id FROM flow_events e WHERE NOT EXISTS "
       "(SELECT 1 FROM flows f WHERE f.id = e.flow_id)",
       "e.flow_id"},
      {{"deleted task(s) whose output is still kept",
        "output rows belong to no task"},
       // (Scoped by task: `t` is the output's task ids.)
       "SELECT t.id FROM (SELECT DISTINCT task_id AS id FROM task_output) t "
       "WHERE NOT EXISTS (SELECT 1 FROM tasks x WHERE x.id = t.id)"},
      {{"flow(s) in an unknown state", "its state is not a flow state"},
       "SELECT f.id FROM flows f WHERE f.state NOT IN (" + flow_states + ")",
       "f.id"},
      {{"flow atom(s) with an unknown kind, state or intention",
        "an atom's kind, state or intention is not one of TaskFlow's"},
       "SELECT a.flow_id FROM flow_atoms a WHERE (a.kind NOT IN ('task', "
       "'retry') OR a.state NOT IN ("
           + atom_states
           + ") OR (a.state = 'RETRYING' AND a.kind <> 'retry') "
             "OR a.intention NOT IN ("
           + names_of(intentions) + "))",
       "a.flow_id"},
      {{"flow event(s) with an unknown kind or state",
        "an event's kind or state is not one of TaskFlow's"},
       "SELECT e.flow_id FROM flow_events e WHERE (e.kind NOT IN ("
           + names_of(kinds) + ") OR (e.kind = 'flow' AND e.state NOT IN ("
           + flow_states + ")) OR (e.kind <> 'flow' AND e.state NOT IN ("
           + atom_states + ")))",
       "e.flow_id"},
  };
  return rules;
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> k_rules = make_rules();
  return k_rules;
}

// `sql` with every json_each(X), SQLite's spelling, in the dialect's.
std::string respell_json_each(const Db& db, std::string sql) {
  constexpr std::string_view k_each = "json_each(";
  for (size_t at = sql.find(k_each); at != std::string::npos;
       at = sql.find(k_each, at)) {
    const size_t open = at + k_each.size();
    const size_t close = sql.find(')', open);
    const std::string rows =
        db.dialect().json_object_rows(sql.substr(open, close - open));
    sql.replace(at, close + 1 - at, rows);
    at += rows.size();
  }
  return sql;
}

// Runs the rules whose scope is (or is not, `flows` false) a flow's id.
void run_rules(Db& db, bool flows, const std::optional<std::string>& scope,
               const std::function<void(const Invariant&, int64_t)>& each) {
  for (const Rule& rule : rules()) {
    if ((std::string_view(rule.scope) != "t.id") != flows) {
      continue;
    }
    Statement st(db, respell_json_each(db, rule.offenders)
                         + " AND (?1 IS NULL OR " + rule.scope
                         + " IN (SELECT CAST(value AS BIGINT) FROM "
                         + db.dialect().json_array_rows("?1") + "))");
    st.bind(1, scope);
    while (st.step()) {
      each(rule.text, st.get_int(0));
    }
  }
}

} // namespace

void find_violations(
    Db& db, const std::optional<std::string>& scope,
    const std::function<void(const Invariant&, int64_t)>& each) {
  run_rules(db, false, scope, each);
}

void find_flow_violations(
    Db& db, const std::optional<std::string>& scope,
    const std::function<void(const Invariant&, int64_t)>& each) {
  run_rules(db, true, scope, each);
}

} // namespace detail

namespace {

// How many flows have no document, one that no longer compiles, or atom rows
// that are not its compiled nodes (node i named and kinded as nodes[i],
// one row each): what every step of the flow trusts.
int64_t flows_off_document(Db& db) {
  int64_t off = 0;
  Statement flows(db, "SELECT f.id, d.document FROM flows f LEFT JOIN "
                      "flow_documents d ON d.flow_id = f.id ORDER BY f.id");
  Statement atoms(db, "SELECT node, name, kind FROM flow_atoms "
                      "WHERE flow_id = ?1 ORDER BY node");
  while (flows.step()) {
    const flow::Compiled c = flows.is_null(1)
                                 ? flow::Compiled{std::nullopt, "none"}
                                 : flow::compile_flow(flows.get_text(1));
    bool ok = c.model.has_value();
    size_t n = 0;
    atoms.bind(1, flows.get_int(0));
    while (atoms.step()) {
      ok = ok && n < c.model->nodes.size()
           && atoms.get_int(0) == static_cast<int64_t>(n)
           && atoms.get_text(1) == c.model->nodes[n].name
           && atoms.get_text(2)
                  == (c.model->nodes[n].kind == flow::NodeKind::retry ? "retry"
                                                                      : "task");
      ++n;
    }
    atoms.reset();
    off += ok && n == c.model->nodes.size() ? 0 : 1;
  }
  return off;
}

// Where the counts the triggers keep (queue_counts) differ from the tasks,
// counted again: one line per queue and state.
std::vector<std::string> count_drift(Db& db) {
  std::map<std::pair<std::string, std::string>, std::pair<int64_t, int64_t>>
      counts; // (queue, state) -> (kept, counted)
  {
    // Summed over slots: only the sum of a count's rows means anything.
    Statement st(db, "SELECT queue, state, CAST(sum(n) AS BIGINT) FROM "
                     "queue_counts GROUP BY queue, state");
    while (st.step()) {
      counts[{st.get_text(0), st.get_text(1)}].first = st.get_int(2);
    }
  }
  {
    Statement st(db, "SELECT queue, state, count(*) FROM tasks "
                     "GROUP BY queue, state");
    while (st.step()) {
      counts[{st.get_text(0), st.get_text(1)}].second = st.get_int(2);
    }
  }
  std::vector<std::string> out;
  for (const auto& [key, n] : counts) {
    if (n.first != n.second) {
      out.push_back("the count of " + key.second + " tasks of queue "
                    + key.first + " is " + std::to_string(n.first)
                    + ", but it holds " + std::to_string(n.second));
    }
  }
  return out;
}

} // namespace

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
  const auto count = [&](const Invariant& rule, int64_t /*id*/) {
    if (broken.empty() || broken.back().first != &rule) {
      broken.emplace_back(&rule, 0);
    }
    ++broken.back().second;
  };
  find_violations(*m_db, std::nullopt, count);
  find_flow_violations(*m_db, std::nullopt, count);
  for (const auto& [rule, n] : broken) {
    report.problems.push_back(std::to_string(n) + " "
                              + std::string(rule->summary));
  }
  for (const std::string& drift : count_drift(*m_db)) {
    report.problems.push_back(drift);
  }
  if (const int64_t n = flows_off_document(*m_db); n > 0) {
    report.problems.push_back(std::to_string(n)
                              + " flow(s) without a document that compiles "
                                "or whose atoms are not its nodes");
  }
  report.ok = report.problems.empty();
  return report;
}

} // namespace taskq::storage
