// compile_flow's phases 2-5 (core/flow_doc.cpp reads the document): the
// orderings of `after` and of data flow, cycles, and the edges between
// nodes through the entry and exit nodes of nested flows.
#include "core/flow_compiler.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace taskq::core::flow::doc {

// ---- Phase 2: `after` -------------------------------------------------

std::string Compiler::element_name(int e) const {
  const auto& el = m_elements[static_cast<size_t>(e)];
  return el.node >= 0 ? m_model.nodes[static_cast<size_t>(el.node)].name
                      : m_model.flows[static_cast<size_t>(el.sub)].name;
}

std::string Compiler::element_label(int e) const {
  const auto& el = m_elements[static_cast<size_t>(e)];
  return (el.node >= 0 ? "atom '" : "flow '") + element_name(e) + "'";
}

void Compiler::resolve_after() {
  for (size_t e = 0; e < m_elements.size(); ++e) {
    const auto& el = m_elements[e];
    for (const auto& name : el.after) {
      const auto it = m_names.find(name);
      int before = -1;
      if (it != m_names.end()) {
        before = it->second.kind == NameKind::flow
                     ? m_info[static_cast<size_t>(it->second.id)].element
                     : m_element_of_node[static_cast<size_t>(it->second.id)];
      }
      if (it == m_names.end()) {
        fail(element_label(static_cast<int>(e)) + " is after '" + shown(name)
             + "', but no atom or flow has that name");
      }
      if (before == static_cast<int>(e)) {
        fail(element_label(static_cast<int>(e)) + " is after itself");
      }
      if (before < 0
          || m_elements[static_cast<size_t>(before)].owner != el.owner) {
        fail(element_label(static_cast<int>(e)) + " is after '" + name
             + "', which is not an element of flow '"
             + m_model.flows[static_cast<size_t>(el.owner)].name + "'");
      }
      m_info[el.owner].order.emplace_back(
          m_elements[static_cast<size_t>(before)].index, el.index);
    }
  }
}

// ---- Phase 3: data flow -----------------------------------------------

const Node& Compiler::node(int n) const {
  return m_model.nodes[static_cast<size_t>(n)];
}

std::pair<int, int> Compiler::place(int n) const {
  const Node& nd = node(n);
  if (nd.kind == NodeKind::task) {
    return {nd.flow, m_element_of_node[static_cast<size_t>(n)]};
  }
  return {m_model.flows[static_cast<size_t>(nd.flow)].parent,
          m_info[static_cast<size_t>(nd.flow)].element};
}

std::pair<int, int> Compiler::up(std::pair<int, int> p) const {
  const auto f = static_cast<size_t>(p.first);
  return {m_model.flows[f].parent, m_info[f].element};
}

int Compiler::depth(int f) const {
  return f < 0 ? -1 : m_info[static_cast<size_t>(f)].depth;
}

bool Compiler::inside(int n, int f) const {
  auto p = place(n);
  while (depth(p.first) > depth(f)) {
    p = up(p);
  }
  return p.first == f;
}

std::string Compiler::node_label(int n) const {
  return (node(n).kind == NodeKind::task ? "atom '" : "retry '") + node(n).name
         + "'";
}

void Compiler::resolve_data_flow() {
  for (size_t xi = 0; xi < m_model.nodes.size(); ++xi) {
    const int x = static_cast<int>(xi);
    for (const auto& symbol : node(x).requirements) {
      const auto it = m_providers.find(symbol);
      if (it == m_providers.end()) {
        if (m_model.store.contains(symbol)) {
          continue;
        }
        fail(node_label(x) + " requires '" + symbol
             + "', which nothing provides");
      }
      order_by_symbol(x, it->second, symbol);
    }
  }
}

void Compiler::order_by_symbol(int x, int p, const std::string& symbol) {
  const std::string what = node_label(x) + " requires '" + symbol + "'";
  if (p == x) {
    fail(what + ", which it provides itself");
  }
  if (node(p).kind == NodeKind::retry && inside(x, node(p).flow)) {
    return; // the controller of x runs first by construction
  }
  if (node(x).kind == NodeKind::retry && inside(p, node(x).flow)) {
    fail(what + ", which '" + node(p).name
         + "' provides only inside the flow that retry controls");
  }
  // The lowest flow holding both, and their elements there. Neither is
  // inside the other's retry-controlled flow, so both places exist.
  auto a = place(p);
  auto b = place(x);
  while (depth(a.first) > depth(b.first)) {
    a = up(a);
  }
  while (depth(b.first) > depth(a.first)) {
    b = up(b);
  }
  while (a.first != b.first) {
    a = up(a);
    b = up(b);
  }
  const auto f = static_cast<size_t>(a.first);
  const Element& ep = m_elements[static_cast<size_t>(a.second)];
  const Element& ex = m_elements[static_cast<size_t>(b.second)];
  switch (m_model.flows[f].pattern) {
  case Pattern::graph:
    m_info[f].order.emplace_back(ep.index, ex.index);
    break;
  case Pattern::linear:
    if (ep.index > ex.index) {
      fail(what + ", which '" + node(p).name
           + "' provides only after it (linear flow '" + m_model.flows[f].name
           + "' runs '" + element_name(a.second) + "' after '"
           + element_name(b.second) + "')");
    }
    break;
  case Pattern::unordered:
    fail(what + " from '" + node(p).name + "', but '" + element_name(b.second)
         + "' and '" + element_name(a.second)
         + "' are elements of unordered flow '" + m_model.flows[f].name
         + "', which sets no order between them");
  }
}

void Compiler::add_linear_order() {
  for (size_t f = 0; f < m_info.size(); ++f) {
    if (m_model.flows[f].pattern != Pattern::linear) {
      continue;
    }
    const int count = static_cast<int>(m_info[f].elements.size());
    for (int i = 0; i + 1 < count; ++i) {
      m_info[f].order.emplace_back(i, i + 1);
    }
  }
}

// ---- Phase 4: cycles --------------------------------------------------

void Compiler::check_cycles(int f) {
  const auto& info = m_info[static_cast<size_t>(f)];
  const auto& order = info.order;
  const size_t count = info.elements.size();
  std::vector<size_t> begin(count + 1, 0); // successors of i:
  for (const auto& [a, b] : order) {       // order[begin[i], begin[i+1])
    ++begin[static_cast<size_t>(a) + 1];
  }
  for (size_t i = 0; i < count; ++i) {
    begin[i + 1] += begin[i];
  }
  enum : char { white, grey, black };
  std::vector<char> colour(count, white);
  std::vector<std::pair<size_t, size_t>> stack; // element, next successor
  for (size_t root = 0; root < count; ++root) {
    if (colour[root] != white) {
      continue;
    }
    stack.emplace_back(root, begin[root]);
    colour[root] = grey;
    while (!stack.empty()) {
      auto& [e, next] = stack.back();
      if (next == begin[e + 1]) {
        colour[e] = black;
        stack.pop_back();
        continue;
      }
      const auto s = static_cast<size_t>(order[next++].second);
      if (colour[s] == white) {
        colour[s] = grey;
        stack.emplace_back(s, begin[s]);
      } else if (colour[s] == grey) {
        std::string path;
        size_t i = stack.size();
        while (stack[i - 1].first != s) {
          --i;
        }
        for (; i <= stack.size(); ++i) {
          path += element_name(info.elements[stack[i - 1].first]) + " -> ";
        }
        fail("cycle: " + path + element_name(info.elements[s]));
      }
    }
  }
}

// ---- Phase 5: entry and exit nodes, edges ----------------------------

const std::vector<int>& Compiler::entry_of(int e) const {
  const auto& el = m_elements[static_cast<size_t>(e)];
  return el.node >= 0 ? m_single[static_cast<size_t>(el.node)]
                      : m_info[static_cast<size_t>(el.sub)].entry;
}

const std::vector<int>& Compiler::exit_of(int e) const {
  const auto& el = m_elements[static_cast<size_t>(e)];
  return el.node >= 0 ? m_single[static_cast<size_t>(el.node)]
                      : m_info[static_cast<size_t>(el.sub)].exit;
}

void Compiler::build_edges() {
  const size_t node_count = m_model.nodes.size();
  m_single.resize(node_count);
  for (size_t n = 0; n < node_count; ++n) {
    m_single[n] = {static_cast<int>(n)};
  }
  std::vector<std::pair<int, int>> edges;
  // Children have higher indices than their parents: bottom up.
  for (size_t fi = m_info.size(); fi-- > 0;) {
    auto& info = m_info[fi];
    const auto& elements = info.elements;
    std::vector<char> has_pred(elements.size(), 0);
    std::vector<char> has_succ(elements.size(), 0);
    for (const auto& [a, b] : info.order) {
      has_succ[static_cast<size_t>(a)] = 1;
      has_pred[static_cast<size_t>(b)] = 1;
      for (const int x : exit_of(elements[static_cast<size_t>(a)])) {
        for (const int y : entry_of(elements[static_cast<size_t>(b)])) {
          edges.emplace_back(x, y);
        }
      }
    }
    std::vector<int> entry;
    std::vector<int> exit;
    for (size_t i = 0; i < elements.size(); ++i) {
      if (!has_pred[i]) {
        const auto& more = entry_of(elements[i]);
        entry.insert(entry.end(), more.begin(), more.end());
      }
      if (!has_succ[i]) {
        const auto& more = exit_of(elements[i]);
        exit.insert(exit.end(), more.begin(), more.end());
      }
    }
    if (const auto retry = m_model.flows[fi].retry) {
      for (const int y : entry) {
        edges.emplace_back(*retry, y);
      }
      entry = {*retry};
      if (elements.empty()) {
        exit = {*retry};
      }
    }
    info.entry = std::move(entry);
    info.exit = std::move(exit);
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  // Sorted by (from, to): each succs list and each preds list come out
  // ascending.
  for (const auto& [a, b] : edges) {
    m_model.nodes[static_cast<size_t>(a)].succs.push_back(b);
    m_model.nodes[static_cast<size_t>(b)].preds.push_back(a);
  }
}

} // namespace taskq::core::flow::doc
