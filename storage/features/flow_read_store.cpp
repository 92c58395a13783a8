// Flows read: the list, one flow with its atoms and events, and the count
// in each state. The rows flow_store.cpp writes.
#include "core/error.hpp"
#include "core/flow.hpp"
#include "storage/features/flow_store.hpp"
#include "storage/model/rows.hpp"
#include "storage/seam/db.hpp"
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
namespace flow = core::flow;
using core::from_unix_ms;

namespace {

FlowSummary read_summary(const Statement& st) {
  return FlowSummary{st.get_int(0), st.get_text(1), st.get_text(2),
                     from_unix_ms(st.get_int(3)), from_unix_ms(st.get_int(4))};
}

} // namespace

std::vector<FlowSummary>
TaskStore::flows(const std::optional<std::string>& state) {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, "SELECT id, name, state, created_at, updated_at "
                      "FROM flows WHERE (?1 IS NULL OR state = ?1) "
                      "ORDER BY id");
  st.bind(1, state);
  std::vector<FlowSummary> out;
  while (st.step()) {
    out.push_back(read_summary(st));
  }
  return out;
}

std::optional<FlowSummary> TaskStore::find_flow(int64_t id) {
  Transaction tx(*m_db, Transaction::Kind::read);
  Statement st(*m_db, "SELECT id, name, state, created_at, updated_at "
                      "FROM flows WHERE id = ?1");
  st.bind(1, id);
  if (!st.step()) {
    return std::nullopt;
  }
  return read_summary(st);
}

std::vector<std::pair<std::string, int64_t>> TaskStore::flow_counts() {
  Transaction tx(*m_db, Transaction::Kind::read);
  std::map<std::string, int64_t, std::less<>> by_state;
  Statement st(*m_db, "SELECT state, count(*) FROM flows GROUP BY state");
  while (st.step()) {
    by_state[st.get_text(0)] = st.get_int(1);
  }
  std::vector<std::pair<std::string, int64_t>> out;
  for (const flow::FlowState s : flow::k_flow_states) {
    const auto it = by_state.find(flow::to_string(s));
    out.emplace_back(flow::to_string(s), it == by_state.end() ? 0 : it->second);
  }
  return out;
}

FlowDetail TaskStore::flow(int64_t id) {
  Transaction tx(*m_db, Transaction::Kind::read);
  FlowDetail d;
  std::string document;
  {
    Statement st(*m_db,
                 "SELECT f.id, f.name, f.state, f.created_at, f.updated_at, "
                 "f.store, d.document FROM flows f JOIN flow_documents d ON "
                 "d.flow_id = f.id WHERE f.id = ?1");
    st.bind(1, id);
    if (!st.step()) {
      throw Error(ErrorKind::not_found, "no " + flow_ref(id));
    }
    d.flow = read_summary(st);
    d.store = st.get_text(5);
    document = st.get_text(6);
  }
  const auto model = model_of(id, document);
  {
    Statement st(*m_db, "SELECT node, name, kind, state, intention, task_id, "
                        "result, failure, history FROM flow_atoms "
                        "WHERE flow_id = ?1 ORDER BY node");
    st.bind(1, id);
    while (st.step()) {
      const auto node = static_cast<size_t>(st.get_int(0));
      FlowAtomInfo a;
      a.name = st.get_text(1);
      a.kind = st.get_text(2);
      if (node < model->nodes.size()) {
        const int sub = model->nodes[node].flow;
        a.flow = model->flows[static_cast<size_t>(sub)].name;
        for (const int p : model->nodes[node].preds) {
          a.preds.push_back(model->nodes[static_cast<size_t>(p)].name);
        }
      }
      a.state = st.get_text(3);
      a.intention = st.get_text(4);
      a.task = st.get_opt_int(5);
      a.result = st.get_opt_text(6);
      a.failure = st.get_opt_text(7);
      a.history = st.get_opt_text(8);
      d.atoms.push_back(std::move(a));
    }
  }
  Statement st(*m_db, "SELECT time, name, kind, state, result FROM "
                      "flow_events WHERE flow_id = ?1 ORDER BY id");
  st.bind(1, id);
  while (st.step()) {
    d.events.push_back(FlowEventInfo{from_unix_ms(st.get_int(0)),
                                     st.get_text(1), st.get_text(2),
                                     st.get_text(3), st.get_opt_text(4)});
  }
  return d;
}

} // namespace taskq::storage
