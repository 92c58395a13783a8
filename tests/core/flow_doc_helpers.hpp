// Helpers for the compile_flow tests (test_core_flow_doc.cpp,
// test_core_flow_fields.cpp, test_core_flow_graph.cpp): a compiled or
// refused document, its nodes and edges, and a sample document.
#pragma once

#include "core/flow.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

namespace flow = taskq::core::flow;
using flow::FlowModel;
using flow::NodeKind;
using flow::Pattern;
using flow::RetryKind;
using Ints = std::vector<int>;

namespace taskq::test::flow_doc_helpers {

inline FlowModel compiled(const std::string& text) {
  auto c = flow::compile_flow(text);
  INFO(c.error);
  REQUIRE(c.model);
  CHECK(c.error.empty());
  return std::move(*c.model);
}

// The reason `text` is refused: one line, never empty.
inline std::string refused(const std::string& text) {
  const auto c = flow::compile_flow(text);
  INFO(text);
  REQUIRE_FALSE(c.model);
  CHECK_FALSE(c.error.empty());
  CHECK(c.error.find('\n') == std::string::npos);
  return c.error;
}

// The node called `name`.
inline const flow::Node& node(const FlowModel& m, const std::string& name) {
  const auto it = m.by_name.find(name);
  REQUIRE_MESSAGE(it != m.by_name.end(), name);
  return m.nodes[static_cast<size_t>(it->second)];
}

inline int id(const FlowModel& m, const std::string& name) {
  const auto it = m.by_name.find(name);
  REQUIRE_MESSAGE(it != m.by_name.end(), name);
  return it->second;
}

// Node ids of `names`, in the given order.
inline Ints ids(const FlowModel& m, std::initializer_list<const char*> names) {
  Ints out;
  for (const char* n : names) {
    out.push_back(id(m, n));
  }
  return out;
}

// An atom called `name` in queue q, with extra fields `more` (",..." JSON).
inline std::string atom(const std::string& name, const std::string& more = "") {
  return R"({"name":")" + name + R"(","execute":{"queue":"q"})" + more + "}";
}

// Every edge of the model as "a>b", in node order: for exact comparisons.
inline std::vector<std::string> edges(const FlowModel& m) {
  std::vector<std::string> out;
  for (const auto& n : m.nodes) {
    for (const int s : n.succs) {
      out.push_back(n.name + ">" + m.nodes[static_cast<size_t>(s)].name);
    }
  }
  return out;
}

// preds and succs are mirror images, ascending, without repeats.
inline void check_consistent(const FlowModel& m) {
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    const auto& n = m.nodes[i];
    for (const auto* list : {&n.preds, &n.succs}) {
      for (size_t k = 1; k < list->size(); ++k) {
        REQUIRE((*list)[k - 1] < (*list)[k]);
      }
    }
    for (const int s : n.succs) {
      const auto& p = m.nodes[static_cast<size_t>(s)].preds;
      REQUIRE(std::find(p.begin(), p.end(), static_cast<int>(i)) != p.end());
    }
    for (const int p : n.preds) {
      const auto& s = m.nodes[static_cast<size_t>(p)].succs;
      REQUIRE(std::find(s.begin(), s.end(), static_cast<int>(i)) != s.end());
    }
  }
}

inline const char* const k_spec_example = R"json(
{"name": "deploy",
 "store": {"version": "1.4.2"},
 "pattern": "linear",
 "retry": {"name": "r1", "times": 3, "provides": "attempt"},
 "atoms": [
   {"name": "build",  "execute": {"queue": "build", "payload": {"app": "web"}},
    "provides": "artifact", "requires": ["version"]},
   {"flow": {"name": "publish", "pattern": "unordered",
             "retry": {"for_each": ["mirror-a", "mirror-b"], "provides": "mirror"},
             "atoms": [
               {"name": "upload", "execute": {"queue": "upload"},
                "revert": {"queue": "upload"}, "requires": ["artifact", "mirror"]},
               {"name": "notify", "execute": {"queue": "mail"}, "max_errors": 1}]}},
   {"name": "verify", "execute": {"queue": "check"}, "priority": 5}]}
)json";

} // namespace taskq::test::flow_doc_helpers
