#pragma once
// The compiler of a flow document into a FlowModel, phase by phase:
// reading (core/flow_doc.cpp) and the graph (core/flow_graph.cpp).
#include "core/flow.hpp"
#include "core/flow_fields.hpp"

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace taskq::core::flow::doc {

// One element of a flow: a task atom or a nested flow.
struct Element {
  int owner = 0; // the flow it is an element of
  int index = 0; // its position there
  int node = -1; // the task atom, or
  int sub = -1;  // the nested flow
  std::vector<std::string> after;
};

// What compile needs of a flow beyond SubFlow.
struct FlowInfo {
  std::vector<int> elements;
  int element = -1; // its element in its parent; -1 for flows[0]
  int depth = 0;
  // Orderings of its elements, by position: (a, b) means a runs first.
  std::vector<std::pair<int, int>> order;
  // Its nodes that run first and last, as an element of its parent.
  std::vector<int> entry;
  std::vector<int> exit;
};

enum class NameKind { node, flow };
struct NameRef {
  NameKind kind = NameKind::node;
  int id = 0;
};

// One document's compiler: compile moves the model out, so it runs once.
class Compiler {
public:
  FlowModel compile(std::string_view text);

private:
  // ---- Phase 1: reading ------------------------------------------------

  void claim_name(const std::string& name, NameRef ref);

  // Reads a flow (flows[0] when parent is -1), its retry and its elements.
  // `element`: its element in the parent (-1 for flows[0]).
  void read_flow(std::string_view text, int parent, int element,
                 std::string default_name);

  // `after` of an element of a flow with `pattern`.
  std::vector<std::string> after_list(Fields& fields, Pattern pattern,
                                      int owner);

  int new_element(int owner, int index);

  void read_element(std::string_view text, int f, int index);

  TaskTarget read_target(std::string_view text, const std::string& where,
                         const std::string& key, const TaskTarget* defaults);

  void read_atom(Fields& a, int f, int e);

  void read_retry(std::string_view text, int f);

  int add_node(Node node);

  // ---- Phase 2: `after` -------------------------------------------------

  std::string element_name(int e) const;

  std::string element_label(int e) const;

  void resolve_after();

  // ---- Phase 3: data flow -----------------------------------------------

  const Node& node(int n) const;

  // The flow holding node n as (part of) an element, and that element: a
  // task atom is an element of its flow; a retry is part of the element
  // that is its flow, in the parent (flow -1 for the document's retry).
  std::pair<int, int> place(int n) const;

  // One step up the flow tree: the parent flow, and the element there.
  std::pair<int, int> up(std::pair<int, int> p) const;

  int depth(int f) const;

  // True when node n lies inside flow f (nested too; a retry lies inside
  // the flows around the one it controls).
  bool inside(int n, int f) const;

  std::string node_label(int n) const;

  void resolve_data_flow();

  // Node x requires `symbol`, which node p provides.
  void order_by_symbol(int x, int p, const std::string& symbol);

  void add_linear_order();

  // ---- Phase 4: cycles --------------------------------------------------

  // Fails with the first cycle among flow f's elements (its `order` is
  // sorted), found by an iterative depth-first search in document order.
  void check_cycles(int f);

  // ---- Phase 5: entry and exit nodes, edges ----------------------------

  const std::vector<int>& entry_of(int e) const;

  const std::vector<int>& exit_of(int e) const;

  void build_edges();

  FlowModel m_model;
  std::vector<FlowInfo> m_info; // parallel to m_model.flows
  std::vector<Element> m_elements;
  std::vector<int> m_element_of_node;     // -1 for retries
  std::vector<std::vector<int>> m_single; // {n}, as an element's entry/exit
  std::unordered_map<std::string, NameRef> m_names;
  std::unordered_map<std::string, int> m_providers; // symbol -> node
};

} // namespace taskq::core::flow::doc
