// Flows (doc/flows.md#storage): a flow's rows, and its steps.
// core::flow::advance decides every step; this file loads what it decides on,
// writes back what it changed and creates the tasks it asks for, in the
// transaction of the command that made the step happen (flow submit, suspend,
// resume or rerun, or the end of an atom's task, through Db::defer).
#include "storage/features/flow_store.hpp"

#include "core/error.hpp"
#include "core/flow.hpp"
#include "storage/features/add_store.hpp"
#include "storage/features/tx_store.hpp"
#include "storage/model/locks.hpp"
#include "storage/model/rows.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace taskq::storage {

using namespace detail;
namespace flow = core::flow;
using core::from_unix_ms;
using nlohmann::json;

namespace detail {

std::string flow_ref(int64_t id) {
  return "flow " + std::to_string(id);
}

std::shared_ptr<const flow::FlowModel>
model_of(int64_t id, const std::string& document,
         std::optional<flow::FlowModel> compiled) {
  struct Cached {
    std::string document;
    std::shared_ptr<const flow::FlowModel> model;
  };
  static std::mutex lock;
  static std::map<int64_t, Cached> cache;
  std::lock_guard guard(lock);
  auto it = cache.find(id);
  if (it != cache.end() && it->second.document == document) {
    return it->second.model;
  }
  flow::Compiled c;
  c.model = std::move(compiled);
  if (!c.model) {
    c = flow::compile_flow(document);
  }
  if (!c.model) {
    throw Error(ErrorKind::internal,
                flow_ref(id)
                    + ": its stored document no longer compiles: " + c.error);
  }
  if (cache.size() >= 16) {
    cache.erase(cache.begin());
  }
  auto model = std::make_shared<const flow::FlowModel>(std::move(*c.model));
  cache[id] = Cached{document, model};
  return model;
}

} // namespace detail

namespace {

std::string history_to_json(const std::vector<flow::HistoryEntry>& history) {
  json out = json::array();
  for (const auto& e : history) {
    out.push_back({{"value", e.value}, {"failures", e.failures}});
  }
  return out.dump();
}

std::vector<flow::HistoryEntry> history_from_json(const std::string& text) {
  std::vector<flow::HistoryEntry> out;
  for (const auto& e : json::parse(text)) {
    out.push_back({e.at("value"),
                   e.at("failures").get<std::map<std::string, std::string>>()});
  }
  return out;
}

// A flow as loaded for a step.
struct Loaded {
  int64_t id = 0;
  std::shared_ptr<const flow::FlowModel> model;
  flow::FlowRuntime rt;
};

// The flows this process stepped last, as it wrote them, by database and
// id, with the version each step wrote (flows.version): while a flow's
// version is still that one, nobody else has stepped it and its atoms'
// rows are what this process wrote, so a `run` working through a large
// flow does not read every atom's row again for each of its tasks. The
// version is random, so a step that was rolled back (its version never
// committed) can never be mistaken for another process's step.
class RecentRuns {
public:
  std::optional<Loaded> find(const Db& db, int64_t id, int64_t version) {
    std::lock_guard guard(m_lock);
    const auto it = m_runs.find({db.path(), id});
    if (it == m_runs.end() || it->second.first != version) {
      return std::nullopt;
    }
    return it->second.second;
  }
  void remember(const Db& db, const Loaded& f, int64_t version) {
    std::lock_guard guard(m_lock);
    if (m_runs.size() >= 16) {
      m_runs.erase(m_runs.begin());
    }
    m_runs[{db.path(), f.id}] = {version, f};
  }
  static RecentRuns& instance() {
    static RecentRuns runs;
    return runs;
  }

private:
  std::mutex m_lock;
  std::map<std::pair<std::string, int64_t>, std::pair<int64_t, Loaded>> m_runs;
};

int64_t new_version() {
  static std::mt19937_64 random{std::random_device{}()};
  static std::mutex lock;
  std::lock_guard guard(lock);
  return static_cast<int64_t>(random() >> 1);
}

std::optional<Loaded> load_flow(Db& db, int64_t id) {
  Loaded f;
  f.id = id;
  {
    Statement st(db, "SELECT state, store, failed, version FROM flows "
                     "WHERE id = ?1");
    st.bind(1, id);
    if (!st.step()) {
      return std::nullopt;
    }
    if (auto known = RecentRuns::instance().find(db, id, st.get_int(3))) {
      return known;
    }
    f.rt.state = flow::parse_flow_state(st.get_text(0))
                     .value_or(flow::FlowState::failure);
    f.rt.store = json::parse(st.get_text(1));
    f.rt.failed = st.get_int(2) != 0;
  }
  {
    Statement st(db, "SELECT document FROM flow_documents WHERE flow_id = ?1");
    st.bind(1, id);
    if (!st.step()) {
      throw Error(ErrorKind::internal, flow_ref(id) + " has no document");
    }
    f.model = model_of(id, st.get_text(0));
  }
  f.rt.atoms.resize(f.model->nodes.size());
  Statement st(db, "SELECT node, state, intention, task_id, result, failure, "
                   "history FROM flow_atoms WHERE flow_id = ?1 ORDER BY node");
  st.bind(1, id);
  while (st.step()) {
    const auto node = static_cast<size_t>(st.get_int(0));
    if (node >= f.rt.atoms.size()) {
      continue;
    }
    flow::AtomRuntime& a = f.rt.atoms[node];
    a.state = flow::parse_atom_state(st.get_text(1))
                  .value_or(flow::AtomState::pending);
    a.intention = flow::parse_intention(st.get_text(2))
                      .value_or(flow::Intention::execute);
    a.task = st.get_opt_int(3);
    if (auto r = st.get_opt_text(4)) {
      a.result = json::parse(*r);
    }
    a.failure = st.get_opt_text(5);
    if (auto h = st.get_opt_text(6)) {
      a.history = history_from_json(*h);
    }
  }
  return f;
}

// The task an atom's NewAtomTask becomes.
NewTask atom_task(const Loaded& f, const flow::NewAtomTask& n) {
  const flow::Node& node = f.model->nodes[static_cast<size_t>(n.node)];
  const bool revert = n.action == flow::Action::revert;
  const flow::TaskTarget& target =
      revert && node.revert ? *node.revert : node.execute;
  NewTask t;
  t.queue = target.queue.empty() ? node.execute.queue : target.queue;
  t.payload = target.payload;
  t.labels = node.labels;
  t.priority = node.priority;
  t.max_attempts = node.max_attempts;
  t.policy = node.policy;
  // In the order doc/flows.md#workers gives: id, atom, action, args.
  t.flow = nlohmann::ordered_json{
      {"id", f.id},
      {"atom", node.name},
      {"action", flow::to_string(n.action)},
      {"args",
       n.args}}.dump();
  return t;
}

void bind_atom(Statement& st, int first, const flow::Node& node,
               const flow::AtomRuntime& a) {
  st.bind(first, flow::to_string(a.state))
      .bind(first + 1, flow::to_string(a.intention))
      .bind(first + 2, a.task);
  if (a.result) {
    st.bind(first + 3, a.result->dump());
  } else {
    st.bind_null(first + 3);
  }
  st.bind(first + 4, a.failure);
  if (node.kind == flow::NodeKind::retry) {
    st.bind(first + 5, history_to_json(a.history));
  } else {
    st.bind_null(first + 5);
  }
}

// Inserts rows in statements of up to the dialect's bulk size: `head` is
// the INSERT up to VALUES, each row `cols` parameters that `bind_row`
// binds from the given first parameter.
template <typename BindRow>
void insert_rows(Db& db, std::string_view head, int cols, size_t count,
                 const BindRow& bind_row) {
  const auto batch = static_cast<size_t>(db.dialect().bulk_rows());
  for (size_t at = 0; at < count; at += batch) {
    const size_t rows = std::min(batch, count - at);
    std::string sql(head);
    for (size_t r = 0; r < rows; ++r) {
      sql += r == 0 ? "(" : ", (";
      for (int c = 0; c < cols; ++c) {
        sql += c == 0 ? "?" : ", ?";
        sql += std::to_string(static_cast<int>(r) * cols + c + 1);
      }
      sql += ")";
    }
    Statement st(db, sql);
    for (size_t r = 0; r < rows; ++r) {
      bind_row(st, static_cast<int>(r) * cols + 1, at + r);
    }
    st.run();
  }
}

// Writes what a step changed: the tasks it creates (each recorded as its
// atom's task), the tasks it cancels, the atoms it touched, the flow's row
// and its event history. `fresh`: the flow's atoms have no rows yet.
void save_step(Db& db, Loaded& f, flow::Step& step, Time now, bool fresh) {
  const std::string actor = "flow:" + std::to_string(f.id);
  for (const flow::NewAtomTask& n : step.create) {
    const int64_t id = insert_task(db, atom_task(f, n), now, actor);
    f.rt.atoms[static_cast<size_t>(n.node)].task = id;
    step.touched.push_back(n.node);
  }
  for (const int64_t id : step.cancel) {
    if (auto t = load_task(db, id)) {
      delete_task(db, *t, now);
    }
  }
  const auto& nodes = f.model->nodes;
  if (fresh) {
    insert_rows(db,
                "INSERT INTO flow_atoms (flow_id, node, name, kind, state, "
                "intention, task_id, result, failure, history) VALUES ",
                10, nodes.size(), [&](Statement& st, int p, size_t i) {
                  st.bind(p, f.id)
                      .bind(p + 1, static_cast<int64_t>(i))
                      .bind(p + 2, nodes[i].name)
                      .bind(p + 3, nodes[i].kind == flow::NodeKind::retry
                                       ? "retry"
                                       : "task");
                  bind_atom(st, p + 4, nodes[i], f.rt.atoms[i]);
                });
  } else {
    std::sort(step.touched.begin(), step.touched.end());
    step.touched.erase(std::unique(step.touched.begin(), step.touched.end()),
                       step.touched.end());
    Statement st(db, "UPDATE flow_atoms SET state = ?3, intention = ?4, "
                     "task_id = ?5, result = ?6, failure = ?7, history = ?8 "
                     "WHERE flow_id = ?1 AND node = ?2");
    for (const int node : step.touched) {
      const auto i = static_cast<size_t>(node);
      st.bind(1, f.id).bind(2, static_cast<int64_t>(node));
      bind_atom(st, 3, nodes[i], f.rt.atoms[i]);
      st.run();
      st.reset();
    }
  }
  const int64_t version = new_version();
  if (step.flow_changed || fresh) {
    Statement(db, "UPDATE flows SET state = ?2, store = ?3, failed = ?4, "
                  "updated_at = ?5, version = ?6 WHERE id = ?1")
        .bind(1, f.id)
        .bind(2, flow::to_string(f.rt.state))
        .bind(3, f.rt.store.dump())
        .bind(4, static_cast<int64_t>(f.rt.failed ? 1 : 0))
        .bind(5, to_unix_ms(now))
        .bind(6, version)
        .run();
  } else {
    Statement(db, "UPDATE flows SET version = ?2 WHERE id = ?1")
        .bind(1, f.id)
        .bind(2, version)
        .run();
  }
  RecentRuns::instance().remember(db, f, version);
  insert_rows(db,
              "INSERT INTO flow_events (flow_id, time, name, kind, state, "
              "result) VALUES ",
              6, step.changes.size(), [&](Statement& st, int p, size_t i) {
                const flow::Change& c = step.changes[i];
                st.bind(p, f.id)
                    .bind(p + 1, to_unix_ms(now))
                    .bind(p + 2, c.name)
                    .bind(p + 3, flow::to_string(c.kind))
                    .bind(p + 4, c.state);
                if (c.result) {
                  st.bind(p + 5, c.result->dump());
                } else {
                  st.bind_null(p + 5);
                }
              });
}

// Why a task that did not complete ended, for its atom's failure: the last
// error its worker reported, else its reason.
std::string end_error(Db& db, int64_t task_id, core::TaskState state) {
  if (state == core::TaskState::failed) {
    Statement st(db, "SELECT message FROM task_errors WHERE task_id = ?1 "
                     "AND message <> ?2 ORDER BY rowid DESC LIMIT 1");
    st.bind(1, task_id).bind(2, core::k_exceeded_error_rate);
    if (st.step()) {
      return st.get_text(0);
    }
  }
  Statement st(db, "SELECT reason FROM tasks WHERE id = ?1");
  st.bind(1, task_id);
  if (st.step() && !st.is_null(0) && !st.get_text(0).empty()) {
    return st.get_text(0);
  }
  return task_ref(task_id) + " " + std::string(core::to_string(state));
}

} // namespace

namespace detail {

void flow_task_ended(Db& db, int64_t task_id, const std::string& link,
                     core::TaskState state, Time now) {
  const json j = json::parse(link);
  auto f = load_flow(db, j.at("id").get<int64_t>());
  if (!f) {
    return; // its flow was deleted
  }
  const auto node = f->model->by_name.find(j.at("atom").get<std::string>());
  if (node == f->model->by_name.end()
      || f->rt.atoms[static_cast<size_t>(node->second)].task != task_id) {
    return; // no longer the task its atom waits for
  }
  flow::TaskEnded ended;
  ended.node = node->second;
  ended.task = task_id;
  ended.ok = state == core::TaskState::completed;
  if (ended.ok) {
    Statement st(db, "SELECT result FROM tasks WHERE id = ?1");
    st.bind(1, task_id);
    if (st.step() && !st.is_null(0)) {
      try {
        ended.result = json::parse(st.get_text(0));
      } catch (const json::exception&) {
        // Valid JSON that a flow's store cannot hold (a number beyond a
        // double, such as 1e400): the task stays completed, as its worker
        // reported, and its atom fails, so the flow's controllers decide.
        ended.ok = false;
        ended.error = task_ref(task_id)
                      + "'s result holds a number out of range for a flow's "
                        "store";
      }
    }
  } else {
    ended.error = end_error(db, task_id, state);
  }
  flow::Step step = flow::advance(*f->model, f->rt, ended);
  save_step(db, *f, step, now, false);
}

} // namespace detail

int64_t TaskStore::submit_flow(const std::string& document, Time now,
                               const std::string& actor) {
  flow::Compiled c = flow::compile_flow(document);
  if (!c.model) {
    throw Error(ErrorKind::usage, c.error);
  }
  return retrying([&]() -> int64_t {
    Transaction tx(*m_db);
    now = locked_now(now);
    Loaded f;
    f.rt = flow::initial_runtime(*c.model);
    const std::string name = c.model->name;
    {
      Statement st(*m_db, "INSERT INTO flows (name, state, store, failed, "
                          "created_at, updated_at) VALUES "
                          "(?1, ?2, ?3, 0, ?4, ?4) RETURNING id");
      st.bind(1, name)
          .bind(2, flow::to_string(f.rt.state))
          .bind(3, f.rt.store.dump())
          .bind(4, to_unix_ms(now));
      st.step();
      f.id = st.get_int(0);
      st.reset();
    }
    Statement(*m_db, "INSERT INTO flow_documents (flow_id, document) VALUES "
                     "(?1, ?2)")
        .bind(1, f.id)
        .bind_borrowed(2, document)
        .run();
    f.model =
        model_of(f.id, document, c.model); // a copy: run again on a conflict
    flow::Step step = flow::advance(*f.model, f.rt, flow::Start{});
    // The flow's first event: it exists, PENDING; then what Start did.
    step.changes.insert(step.changes.begin(),
                        flow::Change{f.model->name, flow::ChangeKind::flow,
                                     "PENDING", std::nullopt});
    (void)actor; // its atoms' tasks are created by the flow itself
    save_step(*m_db, f, step, now, true);
    tx.commit();
    return f.id;
  });
}

FlowReply TaskStore::flow_request(int64_t id, FlowRequest req, Time now) {
  return retrying([&]() -> FlowReply {
    Transaction tx(*m_db);
    now = locked_now(now);
    // The flow's row locked first (PostgreSQL), as a task's end does
    // before it steps the flow: one step at a time, each seeing the last.
    Statement(*m_db, "SELECT 1 FROM flows WHERE id = ?1"
                         + std::string(row_lock(*m_db, " FOR UPDATE")))
        .bind(1, id)
        .run();
    auto f = load_flow(*m_db, id);
    if (!f) {
      throw Error(ErrorKind::not_found, "no " + flow_ref(id));
    }
    flow::Input in;
    switch (req) {
    case FlowRequest::suspend: {
      flow::Suspend s;
      for (size_t i = 0; i < f->rt.atoms.size(); ++i) {
        const auto& task = f->rt.atoms[i].task;
        if (!task) {
          continue;
        }
        const auto t = load_task(*m_db, *task);
        if (!t || !t->leased(now)) {
          s.unleased.push_back(static_cast<int>(i));
        }
      }
      in = s;
      break;
    }
    case FlowRequest::resume:
      in = flow::Resume{};
      break;
    case FlowRequest::rerun:
      in = flow::Rerun{false};
      break;
    case FlowRequest::rerun_reset:
      in = flow::Rerun{true};
      break;
    }
    flow::Step step = flow::advance(*f->model, f->rt, in);
    if (step.verdict == flow::Verdict::refused) {
      throw Error(ErrorKind::conflict, flow_ref(id) + ": " + step.note);
    }
    FlowReply reply;
    if (step.verdict == flow::Verdict::ignored) {
      reply.ignored = true;
      reply.note = flow_ref(id) + ": "
                   + (step.note.empty() ? "nothing to do" : step.note);
    } else {
      save_step(*m_db, *f, step, now, false);
      tx.commit();
    }
    reply.state = std::string(flow::to_string(f->rt.state));
    return reply;
  });
}

} // namespace taskq::storage
