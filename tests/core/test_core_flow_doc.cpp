// compile_flow: the document as a whole, its elements, names and size.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "flow_doc_helpers.hpp"

using namespace taskq::test::flow_doc_helpers;

TEST_CASE(
    "the example of doc/flows.md compiles to its nodes, flows and edges") {
  const auto m = compiled(k_spec_example);
  check_consistent(m);
  CHECK(m.name == "deploy");
  CHECK(m.store == nlohmann::json{{"version", "1.4.2"}});

  // Document order, depth first, each retry before its flow's atoms.
  REQUIRE(m.nodes.size() == 6);
  const char* names[] = {"r1",     "build",  "publish_retry",
                         "upload", "notify", "verify"};
  for (size_t i = 0; i < 6; ++i) {
    CHECK(m.nodes[i].name == names[i]);
    CHECK(m.by_name.at(names[i]) == static_cast<int>(i));
  }
  CHECK(m.by_name.size() == 6);

  REQUIRE(m.flows.size() == 2);
  CHECK(m.flows[0].name == "deploy");
  CHECK(m.flows[0].pattern == Pattern::linear);
  CHECK(m.flows[0].parent == -1);
  CHECK(m.flows[0].retry == 0);
  CHECK(m.flows[0].nodes == Ints{1, 2, 3, 4, 5});
  CHECK(m.flows[1].name == "publish");
  CHECK(m.flows[1].pattern == Pattern::unordered);
  CHECK(m.flows[1].parent == 0);
  CHECK(m.flows[1].retry == 2);
  CHECK(m.flows[1].nodes == Ints{3, 4});

  const auto& r1 = m.nodes[0];
  CHECK(r1.kind == NodeKind::retry);
  CHECK(r1.flow == 0);
  CHECK(r1.retry.kind == RetryKind::times);
  CHECK(r1.retry.times == 3);
  CHECK(r1.provides == "attempt");
  CHECK_FALSE(r1.retry.revert_all);

  const auto& pr = m.nodes[2];
  CHECK(pr.kind == NodeKind::retry);
  CHECK(pr.flow == 1);
  CHECK(pr.retry.kind == RetryKind::for_each);
  CHECK(pr.retry.values == nlohmann::json{"mirror-a", "mirror-b"});
  CHECK(pr.provides == "mirror");

  const auto& build = m.nodes[1];
  CHECK(build.kind == NodeKind::task);
  CHECK(build.flow == 0);
  CHECK(build.execute.queue == "build");
  CHECK(build.execute.payload == R"({"app":"web"})");
  CHECK_FALSE(build.revert);
  CHECK(build.provides == "artifact");
  CHECK(build.requirements == std::vector<std::string>{"version"});

  const auto& upload = m.nodes[3];
  CHECK(upload.flow == 1);
  CHECK(upload.execute.payload == "null");
  REQUIRE(upload.revert);
  CHECK(upload.revert->queue == "upload");
  CHECK(upload.revert->payload == "null");
  CHECK(upload.requirements == std::vector<std::string>{"artifact", "mirror"});
  CHECK_FALSE(upload.provides);

  CHECK(m.nodes[4].policy.max_errors == 1);
  CHECK_FALSE(m.nodes[4].policy.window);
  CHECK(m.nodes[5].priority == 5);
  CHECK(m.nodes[5].flow == 0);

  // r1 -> build -> publish's retry -> {upload, notify} -> verify.
  CHECK(m.nodes[0].preds.empty());
  CHECK(m.nodes[0].succs == Ints{1});
  CHECK(m.nodes[1].preds == Ints{0});
  CHECK(m.nodes[1].succs == Ints{2});
  CHECK(m.nodes[2].preds == Ints{1});
  CHECK(m.nodes[2].succs == Ints{3, 4});
  CHECK(m.nodes[3].preds == Ints{2});
  CHECK(m.nodes[3].succs == Ints{5});
  CHECK(m.nodes[4].preds == Ints{2});
  CHECK(m.nodes[4].succs == Ints{5});
  CHECK(m.nodes[5].preds == Ints{3, 4});
  CHECK(m.nodes[5].succs.empty());
}

// ---- Refused documents ------------------------------------------------

TEST_CASE("names must be valid and are required for atoms") {
  CHECK(refused(R"({"atoms":[)" + atom("") + "]}")
        == "element 1 of flow 'flow': 'name' is not a valid name (''): use "
           "1-128 letters, "
           "digits and . _ : / -");
  CHECK(
      refused(R"({"atoms":[)" + atom("a b") + "]}")
          .starts_with(
              "element 1 of flow 'flow': 'name' is not a valid name ('a b')"));
  CHECK(refused(R"({"atoms":[{"name":7,"execute":{"queue":"q"}}]})")
        == "element 1 of flow 'flow': 'name' must be a string");
  CHECK(refused(R"({"name":"","atoms":[]})")
            .starts_with("flow 'flow': 'name' is not a valid name ('')"));
  CHECK(refused(R"({"retry":{"name":"r r","times":1},"atoms":[]})")
            .starts_with("the retry of flow 'flow': 'name' is not a valid "
                         "name"));
}

TEST_CASE("an element must be an atom or a nested flow") {
  CHECK(refused(R"({"atoms":[)" + atom("a") + ",3]}")
        == "element 2 of flow 'flow' must be an object: an atom or "
           "{\"flow\": {...}}");
  CHECK(refused(R"({"atoms":[{"execute":{"queue":"q"}}]})")
        == "element 1 of flow 'flow' has no 'name' (an atom needs one; a "
           "nested flow is {\"flow\": {...}})");
  CHECK(refused(R"({"atoms":[{"flow":[]}]})")
        == "element 1 of flow 'flow': 'flow' must be an object: the nested "
           "flow");
}

TEST_CASE("an atom needs execute with a valid queue") {
  CHECK(refused(R"({"atoms":[{"name":"a"}]})")
        == "atom 'a': 'execute' is required: {\"queue\": ..., \"payload\": "
           "...}");
  CHECK(refused(R"({"atoms":[{"name":"a","execute":"q"}]})")
        == "atom 'a': 'execute' must be an object: {\"queue\": ..., "
           "\"payload\": ...}");
  CHECK(refused(R"({"atoms":[{"name":"a","execute":{"payload":1}}]})")
        == "atom 'a': 'execute.queue' is required");
  CHECK(refused(R"({"atoms":[{"name":"a","execute":{"queue":"no way"}}]})")
        == "atom 'a': 'execute.queue' is not a valid queue name ('no way'): "
           "use 1-128 letters, digits and . _ : / -");
  CHECK(refused(R"({"atoms":[{"name":"a","execute":{"queue":"q"},)"
                R"("revert":{"queue":""}}]})")
            .starts_with("atom 'a': 'revert.queue' is not a valid queue "
                         "name"));
}

TEST_CASE("a flow needs atoms, and something in them or a retry") {
  CHECK(refused(R"({"name":"d"})")
        == "flow 'd': 'atoms' is required: an array of atoms and "
           "{\"flow\": {...}} elements");
  CHECK(refused(R"({"atoms":{}})")
        == "flow 'flow': 'atoms' must be an array of atoms and {\"flow\": "
           "{...}} elements");
  CHECK(refused(R"({"atoms":[]})")
        == "flow 'flow': 'atoms' is empty: a flow needs an atom, a nested "
           "flow or a retry");
  CHECK(refused(R"({"atoms":[)" + atom("a") + R"(,{"flow":{"atoms":[]}}]})")
        == "flow 'flow.2': 'atoms' is empty: a flow needs an atom, a nested "
           "flow or a retry");
}

TEST_CASE("names are unique across atoms, retries and flows") {
  CHECK(refused(R"({"atoms":[)" + atom("a") + "," + atom("a") + "]}")
        == "duplicate name 'a'");
  CHECK(refused(R"({"name":"a","atoms":[)" + atom("a") + "]}")
        == "duplicate name 'a'");
  CHECK(refused(R"({"retry":{"times":2},"atoms":[)" + atom("flow_retry") + "]}")
        == "duplicate name 'flow_retry'");
  CHECK(refused(R"({"atoms":[{"flow":{"name":"g","atoms":[)" + atom("x")
                + "]}}," + atom("g") + "]}")
        == "duplicate name 'g'");
}

TEST_CASE("nesting is limited") {
  std::string doc = atom("a");
  for (int i = 0; i < 120; ++i) {
    doc = R"({"flow":{"atoms":[)" + doc + "]}}";
  }
  CHECK(refused(R"({"atoms":[)" + doc + "]}")
            .ends_with(" is nested more than 100 flows deep"));
}

TEST_CASE("a graph document of 10,000 atoms compiles") {
  // Each atom after the one at half its position, and requiring the symbol
  // of the previous one: about 20,000 edges.
  const int count = 10000;
  std::string doc = R"({"name":"big","store":{"s-1":0},"atoms":[)";
  for (int i = 0; i < count; ++i) {
    if (i > 0) {
      doc += ",";
    }
    const std::string n = std::to_string(i);
    doc += R"({"name":"a)" + n
           + R"(","execute":{"queue":"work","payload":{"i":)" + n
           + R"(}},"provides":"s)" + n + R"(","requires":["s)"
           + std::to_string(i - 1) + R"("])";
    if (i > 0) {
      doc += R"(,"after":["a)" + std::to_string(i / 2) + R"("])";
    }
    doc += "}";
  }
  doc += "]}";
  const auto start = std::chrono::steady_clock::now();
  const auto c = flow::compile_flow(doc);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  MESSAGE("compiled 10,000 atoms (" << doc.size() << " bytes) in " << ms
                                    << " ms");
  REQUIRE(c.model);
  const auto& m = *c.model;
  REQUIRE(m.nodes.size() == count);
  CHECK(m.nodes[1].preds == Ints{0});
  CHECK(m.nodes[9999].preds == Ints{4999, 9998});
  size_t edge_count = 0;
  for (const auto& n : m.nodes) {
    edge_count += n.succs.size();
  }
  // Two edges into each atom but the first three: a0 has none, and for a1
  // and a2 the atom at half the position is the previous one.
  CHECK(edge_count == 2 * (count - 1) - 2);
}
