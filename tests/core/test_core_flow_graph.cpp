// compile_flow: the orderings of after and of data flow, cycles, and
// the edges through nested flows.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "flow_doc_helpers.hpp"

using namespace taskq::test::flow_doc_helpers;

TEST_CASE("a linear flow orders each element after the previous one") {
  const auto m = compiled(R"({"pattern":"linear","atoms":[)" + atom("a") + ","
                          + atom("b") + "," + atom("c") + "]}");
  check_consistent(m);
  CHECK(edges(m) == std::vector<std::string>{"a>b", "b>c"});
  CHECK(m.name == "flow");
  CHECK(m.flows[0].pattern == Pattern::linear);
  CHECK_FALSE(m.flows[0].retry);
  CHECK(m.flows[0].nodes == Ints{0, 1, 2});
}

TEST_CASE("an unordered flow has no edges between its elements") {
  const auto m = compiled(R"({"pattern":"unordered","atoms":[)" + atom("a")
                          + "," + atom("b") + "," + atom("c") + "]}");
  CHECK(edges(m).empty());
}

TEST_CASE("graph is the default pattern: without after or data flow, no "
          "order") {
  const auto m = compiled(R"({"atoms":[)" + atom("a") + "," + atom("b") + "]}");
  CHECK(m.flows[0].pattern == Pattern::graph);
  CHECK(edges(m).empty());
}

TEST_CASE("a graph flow orders by after and by data flow, each edge once") {
  const auto m =
      compiled(R"({"pattern":"graph","store":{"seed":1},"atoms":[)"
               + atom("d", R"(,"after":["b","c"],"requires":["y","seed"])")
               + "," + atom("b", R"(,"provides":"x")") + ","
               + atom("c", R"(,"requires":"x","provides":"y","after":"b")")
               + "," + atom("e", R"(,"after":["d","d"])") + "]}");
  check_consistent(m);
  // c requires x from b and is also after b: one edge b>c.
  CHECK(edges(m) == std::vector<std::string>{"d>e", "b>d", "b>c", "c>d"});
  CHECK(node(m, "d").preds == ids(m, {"b", "c"}));
  CHECK(node(m, "c").requirements == std::vector<std::string>{"x"});
}

TEST_CASE("a nested flow is one element: edges go to its entry nodes and "
          "from its exit nodes") {
  SUBCASE("a linear nested flow: its first atom is the entry, its last the "
          "exit") {
    const auto m = compiled(
        R"({"atoms":[)" + atom("a") + ","
        + R"({"flow":{"name":"g","pattern":"linear","after":["a"],"atoms":[)"
        + atom("x") + "," + atom("y") + "]}}," + atom("b", R"(,"after":["g"])")
        + "]}");
    check_consistent(m);
    CHECK(edges(m) == std::vector<std::string>{"a>x", "x>y", "y>b"});
    REQUIRE(m.flows.size() == 2);
    CHECK(m.flows[1].name == "g");
    CHECK(m.flows[1].parent == 0);
    CHECK(m.flows[1].nodes == ids(m, {"x", "y"}));
    CHECK(m.flows[0].nodes == Ints{0, 1, 2, 3});
    CHECK(node(m, "x").flow == 1);
  }
  SUBCASE("an unordered nested flow: every atom is both") {
    const auto m =
        compiled(R"({"pattern":"linear","atoms":[)" + atom("a") + ","
                 + R"({"flow":{"pattern":"unordered","atoms":[)" + atom("x")
                 + "," + atom("y") + "]}}," + atom("b") + "]}");
    CHECK(edges(m) == std::vector<std::string>{"a>x", "a>y", "x>b", "y>b"});
    CHECK(m.flows[1].name == "flow.2"); // default: parent name . position
  }
  SUBCASE("a nested flow with a retry: the retry is its entry") {
    const auto m = compiled(
        R"({"pattern":"linear","atoms":[)" + atom("a") + ","
        + R"({"flow":{"retry":{"times":2},"pattern":"unordered","atoms":[)"
        + atom("x") + "," + atom("y") + "]}}," + atom("b") + "]}");
    check_consistent(m);
    CHECK(edges(m)
          == std::vector<std::string>{"a>flow.2_retry", "flow.2_retry>x",
                                      "flow.2_retry>y", "x>b", "y>b"});
    CHECK(m.flows[1].retry == id(m, "flow.2_retry"));
    CHECK(m.flows[1].nodes == ids(m, {"x", "y"}));
    CHECK(node(m, "flow.2_retry").flow == 1);
    CHECK(node(m, "flow.2_retry").retry.times == 2);
  }
  SUBCASE("a nested flow holding only a retry: the retry is entry and exit") {
    const auto m = compiled(
        R"({"pattern":"linear","atoms":[)" + atom("a") + ","
        + R"({"flow":{"name":"g","retry":{"always_revert":true},"atoms":[]}},)"
        + atom("b") + "]}");
    CHECK(edges(m) == std::vector<std::string>{"a>g_retry", "g_retry>b"});
    CHECK(m.flows[1].nodes.empty());
    CHECK(node(m, "g_retry").retry.kind == RetryKind::always_revert);
  }
  SUBCASE("two levels: entries and exits are found through both") {
    const auto m =
        compiled(R"({"pattern":"linear","atoms":[)" + atom("a") + ","
                 + R"({"flow":{"name":"g","atoms":[)" + atom("x") + ","
                 + R"({"flow":{"name":"h","pattern":"linear","atoms":[)"
                 + atom("y") + "," + atom("z") + "]}}]}}," + atom("b") + "]}");
    check_consistent(m);
    CHECK(edges(m)
          == std::vector<std::string>{"a>x", "a>y", "x>b", "y>z", "z>b"});
    REQUIRE(m.flows.size() == 3);
    CHECK(m.flows[2].parent == 1);
    CHECK(m.flows[1].nodes == ids(m, {"x", "y", "z"}));
    CHECK(m.flows[2].nodes == ids(m, {"y", "z"}));
  }
}

TEST_CASE("a flow's nodes hold nested retries but not its own") {
  const auto m =
      compiled(R"({"name":"top","retry":{"times":2},"atoms":[)" + atom("a")
               + R"(,{"flow":{"name":"inner",)"
                 R"("retry":{"name":"ir","times":2},"atoms":[)"
               + atom("b") + "]}}]}");
  CHECK(m.nodes[0].name == "top_retry");
  CHECK(m.flows[0].retry == 0);
  CHECK(m.flows[0].nodes == ids(m, {"a", "ir", "b"}));
  CHECK(m.flows[1].nodes == ids(m, {"b"}));
  CHECK(node(m, "ir").flow == 1);
  // The document's retry precedes everything that has no other
  // predecessor.
  CHECK(edges(m)
        == std::vector<std::string>{"top_retry>a", "top_retry>ir", "ir>b"});
}

TEST_CASE("data flow orders the nested flows holding provider and consumer") {
  const auto m =
      compiled(R"({"atoms":[{"flow":{"name":"g2","pattern":"linear","atoms":[)"
               + atom("c") + "," + atom("d", R"(,"requires":"s")") + "]}},"
               + R"({"flow":{"name":"g1","pattern":"linear","atoms":[)"
               + atom("a", R"(,"provides":"s")") + "," + atom("b") + "]}}]}");
  check_consistent(m);
  // g1 before g2: g1's exit b -> g2's entry c.
  CHECK(edges(m) == std::vector<std::string>{"c>d", "a>b", "b>c"});
}

TEST_CASE("a symbol of a flow's retry needs no edge inside that flow, and "
          "orders what is outside it") {
  const auto m =
      compiled(R"({"atoms":[{"flow":{"name":"g","retry":{"name":"r","times":2,)"
               R"("provides":"n"},"atoms":[)"
               + atom("a", R"(,"requires":"n")") + "]}},"
               + atom("b", R"(,"requires":"n")") + "]}");
  check_consistent(m);
  CHECK(edges(m) == std::vector<std::string>{"r>a", "a>b"});
}

TEST_CASE("a requirement may also be met by the store alone, and a node may "
          "provide a symbol the store injects") {
  const auto m = compiled(R"({"store":{"x":1,"y":2},"atoms":[)"
                          + atom("a", R"(,"requires":["x","y"])") + ","
                          + atom("b", R"(,"provides":"y")") + "]}");
  // The node provider orders: b before a.
  CHECK(edges(m) == std::vector<std::string>{"b>a"});
}

TEST_CASE("after must name a sibling element of a graph flow") {
  CHECK(refused(R"({"atoms":[)" + atom("a", R"(,"after":["zz"])") + "]}")
        == "atom 'a' is after 'zz', but no atom or flow has that name");
  CHECK(refused(R"({"atoms":[)" + atom("a", R"(,"after":["a"])") + "]}")
        == "atom 'a' is after itself");
  CHECK(refused(R"({"atoms":[)" + atom("a")
                + R"(,{"flow":{"name":"g",)"
                  R"("atoms":[)"
                + atom("b", R"(,"after":["a"])") + "]}}]}")
        == "atom 'b' is after 'a', which is not an element of flow 'g'");
  CHECK(refused(R"({"atoms":[)" + atom("a")
                + R"(,{"flow":{"name":"g",)"
                  R"("retry":{"times":2},"atoms":[)"
                + atom("b") + "]}}," + atom("c", R"(,"after":["g_retry"])")
                + "]}")
        == "atom 'c' is after 'g_retry', which is not an element of flow "
           "'flow'");
  CHECK(refused(R"({"pattern":"linear","atoms":[)" + atom("a") + ","
                + atom("b", R"(,"after":["a"])") + "]}")
        == "atom 'b' has 'after', but flow 'flow' is linear: 'after' orders "
           "the elements of a graph flow");
  CHECK(refused(R"({"pattern":"unordered","atoms":[)" + atom("a")
                + R"(,{"flow":{"name":"g","after":["a"],"atoms":[)" + atom("b")
                + "]}}]}")
        == "flow 'g' has 'after', but flow 'flow' is unordered: 'after' "
           "orders the elements of a graph flow");
  CHECK(refused(R"({"atoms":[)" + atom("a", R"(,"after":[""])") + "]}")
            .starts_with("atom 'a': 'after' has an invalid name ''"));
}

TEST_CASE("a cycle is refused with its names") {
  CHECK(refused(R"({"atoms":[)" + atom("a", R"(,"after":["b"])") + ","
                + atom("b", R"(,"after":["a"])") + "]}")
        == "cycle: a -> b -> a");
  // Through data flow and a nested flow.
  CHECK(refused(R"({"atoms":[)" + atom("a", R"(,"provides":"x","after":["c"])")
                + "," + R"({"flow":{"name":"g","pattern":"linear","atoms":[)"
                + atom("b", R"(,"requires":"x")") + "]}},"
                + atom("c", R"(,"after":["g"])") + "]}")
        == "cycle: a -> g -> c -> a");
  CHECK(refused(R"({"atoms":[)" + atom("a", R"(,"provides":"x","requires":"y")")
                + "," + atom("b", R"(,"provides":"y","requires":"x")") + "]}")
        == "cycle: a -> b -> a");
}

TEST_CASE("a required symbol needs a provider") {
  CHECK(refused(R"({"atoms":[)" + atom("upload", R"(,"requires":["artifact"])")
                + "]}")
        == "atom 'upload' requires 'artifact', which nothing provides");
  CHECK(refused(R"({"retry":{"for_each_from":"hosts"},"atoms":[)" + atom("a")
                + "]}")
        == "retry 'flow_retry' requires 'hosts', which nothing provides");
  CHECK(refused(R"({"atoms":[)" + atom("a", R"(,"requires":"x","provides":"x")")
                + "]}")
        == "atom 'a' requires 'x', which it provides itself");
}

TEST_CASE("a symbol is provided by one node at most") {
  CHECK(refused(R"({"retry":{"times":2,"provides":"x"},"atoms":[)"
                + atom("a", R"(,"provides":"x")") + "]}")
        == "symbol 'x' is provided by both 'flow_retry' and 'a'");
  CHECK(refused(R"({"atoms":[)" + atom("a", R"(,"provides":"x")") + ","
                + atom("b", R"(,"provides":"x")") + "]}")
        == "symbol 'x' is provided by both 'a' and 'b'");
}

TEST_CASE("an unordered flow's elements cannot depend on each other") {
  CHECK(refused(R"({"name":"publish","pattern":"unordered","atoms":[)"
                + atom("build", R"(,"provides":"artifact")") + ","
                + atom("upload", R"(,"requires":"artifact")") + "]}")
        == "atom 'upload' requires 'artifact' from 'build', but 'upload' and "
           "'build' are elements of unordered flow 'publish', which sets no "
           "order between them");
  // Nested: the elements of the unordered flow are named.
  CHECK(refused(R"({"name":"u","pattern":"unordered","atoms":[)"
                + atom("b", R"(,"provides":"s")")
                + R"(,{"flow":{"name":"g","atoms":[)"
                + atom("c", R"(,"requires":"s")") + "]}}]}")
        == "atom 'c' requires 's' from 'b', but 'g' and 'b' are elements of "
           "unordered flow 'u', which sets no order between them");
}

TEST_CASE("a linear flow cannot use a symbol before it is provided") {
  CHECK(refused(R"({"name":"d","pattern":"linear","atoms":[)"
                + atom("a", R"(,"requires":"x")") + ","
                + atom("b", R"(,"provides":"x")") + "]}")
        == "atom 'a' requires 'x', which 'b' provides only after it (linear "
           "flow 'd' runs 'b' after 'a')");
}

TEST_CASE("a retry cannot require what its own flow provides") {
  CHECK(refused(R"({"atoms":[{"flow":{"name":"g",)"
                R"("retry":{"for_each_from":"v"},"atoms":[)"
                + atom("a", R"(,"provides":"v")") + "]}}]}")
        == "retry 'g_retry' requires 'v', which 'a' provides only inside the "
           "flow that retry controls");
}
