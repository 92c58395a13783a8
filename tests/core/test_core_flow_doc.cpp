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

namespace {

FlowModel compiled(const std::string& text) {
  auto c = flow::compile_flow(text);
  INFO(c.error);
  REQUIRE(c.model);
  CHECK(c.error.empty());
  return std::move(*c.model);
}

// The reason `text` is refused: one line, never empty.
std::string refused(const std::string& text) {
  const auto c = flow::compile_flow(text);
  INFO(text);
  REQUIRE_FALSE(c.model);
  CHECK_FALSE(c.error.empty());
  CHECK(c.error.find('\n') == std::string::npos);
  return c.error;
}

// The node called `name`.
const flow::Node& node(const FlowModel& m, const std::string& name) {
  const auto it = m.by_name.find(name);
  REQUIRE_MESSAGE(it != m.by_name.end(), name);
  return m.nodes[static_cast<size_t>(it->second)];
}

int id(const FlowModel& m, const std::string& name) {
  const auto it = m.by_name.find(name);
  REQUIRE_MESSAGE(it != m.by_name.end(), name);
  return it->second;
}

// Node ids of `names`, in the given order.
Ints ids(const FlowModel& m, std::initializer_list<const char*> names) {
  Ints out;
  for (const char* n : names) {
    out.push_back(id(m, n));
  }
  return out;
}

// An atom called `name` in queue q, with extra fields `more` (",..." JSON).
std::string atom(const std::string& name, const std::string& more = "") {
  return R"({"name":")" + name + R"(","execute":{"queue":"q"})" + more + "}";
}

// Every edge of the model as "a>b", in node order: for exact comparisons.
std::vector<std::string> edges(const FlowModel& m) {
  std::vector<std::string> out;
  for (const auto& n : m.nodes) {
    for (const int s : n.succs) {
      out.push_back(n.name + ">" + m.nodes[static_cast<size_t>(s)].name);
    }
  }
  return out;
}

// preds and succs are mirror images, ascending, without repeats.
void check_consistent(const FlowModel& m) {
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

const char* const k_spec_example = R"json(
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

} // namespace

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

TEST_CASE("for_each_from is a requirement of the retry") {
  SUBCASE("from the store") {
    const auto m =
        compiled(R"({"store":{"hosts":["a","b"]},"atoms":[{"flow":{"name":"g",)"
                 R"("retry":{"for_each_from":"hosts","provides":"host",)"
                 R"("revert_all":true},"atoms":[)"
                 + atom("a", R"(,"requires":"host")") + "]}}]}");
    const auto& r = node(m, "g_retry");
    CHECK(r.retry.kind == RetryKind::for_each_from);
    CHECK(r.retry.from_symbol == "hosts");
    CHECK(r.retry.revert_all);
    CHECK(r.requirements == std::vector<std::string>{"hosts"});
    CHECK(edges(m) == std::vector<std::string>{"g_retry>a"});
  }
  SUBCASE("from a sibling atom: the nested flow runs after it") {
    const auto m = compiled(R"({"atoms":[{"flow":{"name":"g",)"
                            R"("retry":{"for_each_from":"hosts"},"atoms":[)"
                            + atom("a") + "]}},"
                            + atom("list", R"(,"provides":"hosts")") + "]}");
    CHECK(edges(m) == std::vector<std::string>{"g_retry>a", "list>g_retry"});
  }
}

TEST_CASE("an atom's fields are read as add reads them") {
  const auto m = compiled(R"({"atoms":[{"name":"a","execute":{"queue":"q.1",
      "payload": {"n": 1.50, "big": 123456789012345678901234567890,
                  "s": "caf\u00e9 \"x\""}},
      "revert": {}, "labels": {"team": "web", "tier": ""},
      "max_errors": 3, "error_window": "1h30m", "retry_delay": "0s",
      "max_attempts": 2, "priority": -4},
    {"name":"b","execute":{"queue":"q","payload":[1, 2]},
     "revert":{"payload":{"undo":true}}},
    {"name":"c","execute":{"queue":"q"},"revert":{"queue":"r"}}]})");
  const auto& a = node(m, "a");
  // Exact bytes, minified: numbers and escapes as written.
  CHECK(a.execute.payload
        == R"({"n":1.50,"big":123456789012345678901234567890,)"
           R"("s":"caf\u00e9 \"x\""})");
  REQUIRE(a.revert);
  CHECK(a.revert->queue == "q.1");
  CHECK(a.revert->payload == a.execute.payload);
  CHECK(a.labels == taskq::core::Labels{{"team", "web"}, {"tier", ""}});
  CHECK(a.policy.max_errors == 3);
  CHECK(a.policy.window == std::chrono::minutes(90));
  CHECK(a.policy.retry_delay == std::chrono::milliseconds(0));
  CHECK(a.max_attempts == 2);
  CHECK(a.priority == -4);
  const auto& b = node(m, "b");
  CHECK(b.execute.payload == "[1,2]");
  CHECK(b.revert->queue == "q");
  CHECK(b.revert->payload == R"({"undo":true})");
  CHECK(node(m, "c").revert->queue == "r");
  CHECK(node(m, "c").revert->payload == "null");
  CHECK_FALSE(node(m, "c").max_attempts);
}

TEST_CASE("a requirement may also be met by the store alone, and a node may "
          "provide a symbol the store injects") {
  const auto m = compiled(R"({"store":{"x":1,"y":2},"atoms":[)"
                          + atom("a", R"(,"requires":["x","y"])") + ","
                          + atom("b", R"(,"provides":"y")") + "]}");
  // The node provider orders: b before a.
  CHECK(edges(m) == std::vector<std::string>{"b>a"});
}

// ---- Refused documents ------------------------------------------------

TEST_CASE("a document that is not JSON, or not an object, is refused") {
  CHECK(refused(R"({"atoms": [)")
            .starts_with("the flow document is not valid JSON: "));
  CHECK(refused("[]") == "a flow document must be a JSON object");
  CHECK(refused("").starts_with("the flow document is not valid JSON"));
}

TEST_CASE("unknown fields are refused, naming the field and the element") {
  CHECK(refused(R"({"atoms":[)" + atom("up", R"(,"retries":2)") + "]}")
        == "unknown field 'retries' in atom 'up'");
  CHECK(refused(R"({"name":"d","atom":[]})")
        == "unknown field 'atom' in flow 'd'");
  CHECK(
      refused(R"({"retry":{"times":2,"delay":1},"atoms":[)" + atom("a") + "]}")
      == "unknown field 'delay' in retry 'flow_retry'");
  CHECK(refused(R"({"atoms":[{"name":"a","execute":{"queue":"q","x":1}}]})")
        == "unknown field 'execute.x' in atom 'a'");
  CHECK(refused(R"({"atoms":[{"name":"a","execute":{"queue":"q"},)"
                R"("revert":{"queu":"q"}}]})")
        == "unknown field 'revert.queu' in atom 'a'");
  CHECK(refused(R"({"atoms":[{"flow":{"atoms":[]},"name":"x"}]})")
        == "unknown field 'name' in element 1 of flow 'flow'");
  // store is for the document only, after for nested elements only.
  CHECK(refused(R"({"atoms":[{"flow":{"name":"g","store":{},"atoms":[)"
                + atom("a") + "]}}]}")
        == "unknown field 'store' in flow 'g'");
  CHECK(refused(R"({"after":["x"],"atoms":[)" + atom("a") + "]}")
        == "unknown field 'after' in flow 'flow'");
  // A control character in an unknown key is not echoed.
  CHECK(refused(R"({"atoms":[)" + atom("a", R"(,"x\ny":1)") + "]}")
        == "unknown field 'x?y' in atom 'a'");
}

TEST_CASE("a field given twice is refused") {
  CHECK(refused(R"({"atoms":[)" + atom("a", R"(,"priority":1,"priority":2)")
                + "]}")
        == "field 'priority' is given twice in atom 'a'");
}

TEST_CASE("wrong types and values are refused, naming the field") {
  const auto with = [](const std::string& more) {
    return refused(R"({"atoms":[)" + atom("a", more) + "]}");
  };
  CHECK(with(R"(,"priority":"high")")
        == "atom 'a': 'priority' must be an integer");
  CHECK(with(R"(,"priority":1.5)")
        == "atom 'a': 'priority' must be an integer");
  CHECK(with(R"(,"max_errors":0)")
        == "atom 'a': 'max_errors' must be between 1 and 1000000");
  CHECK(with(R"(,"max_attempts":0)")
        == "atom 'a': 'max_attempts' must be 1 or more");
  CHECK(with(R"(,"error_window":"soon")")
        == "atom 'a': 'error_window' must be a duration such as \"90s\", "
           "\"5m\" or \"1h30m\"");
  CHECK(with(R"(,"error_window":"0s")")
        == "atom 'a': 'error_window' must be longer than 0");
  CHECK(with(R"(,"retry_delay":10)")
            .starts_with("atom 'a': 'retry_delay' must be a duration"));
  CHECK(with(R"(,"labels":["a"])")
        == "atom 'a': 'labels' must be an object of \"KEY\": \"VALUE\" "
           "strings");
  CHECK(with(R"(,"labels":{"bad key":"v"})")
            .starts_with("atom 'a': 'labels' has an invalid label 'bad key'"));
  CHECK(with(R"(,"labels":{"k":1})")
            .starts_with("atom 'a': 'labels' has an invalid label 'k'"));
  CHECK(with(R"(,"requires":[1])")
        == "atom 'a': 'requires' must be a string or an array of strings");
  CHECK(with(R"(,"requires":[""])")
            .starts_with("atom 'a': 'requires' has an invalid symbol ''"));
  CHECK(with(R"(,"provides":["x"])")
        == "atom 'a': 'provides' must be a string");
  CHECK(with(R"(,"revert":"undo")")
        == "atom 'a': 'revert' must be an object: {\"queue\": ..., "
           "\"payload\": ...}");
  CHECK(refused(R"({"pattern":"tree","atoms":[)" + atom("a") + "]}")
        == "flow 'flow': 'pattern' must be linear, unordered or graph, not "
           "'tree'");
  CHECK(refused(R"({"store":[1],"atoms":[)" + atom("a") + "]}")
        == "flow 'flow': 'store' must be an object of symbol: value");
  CHECK(refused(R"({"store":{"x":1e999},"atoms":[)" + atom("a") + "]}")
        == "flow 'flow': 'store' holds a number too large to read");
}

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

TEST_CASE("a retry has exactly one valid kind") {
  const auto retry = [](const std::string& r) {
    return refused(R"({"retry":)" + r + R"(,"atoms":[)" + atom("a") + "]}");
  };
  CHECK(retry(R"({"provides":"x"})")
        == "retry 'flow_retry' needs one of 'times', 'for_each', "
           "'for_each_from', 'always_revert' or 'always_revert_all'");
  CHECK(retry(R"({"times":2,"for_each":[1]})")
        == "retry 'flow_retry' gives both 'times' and 'for_each': give one "
           "kind");
  CHECK(retry(R"({"always_revert":true,"always_revert_all":true})")
        == "retry 'flow_retry' gives both 'always_revert' and "
           "'always_revert_all': give one kind");
  CHECK(retry(R"({"times":0})")
        == "retry 'flow_retry': 'times' must be 1 or more");
  CHECK(retry(R"({"for_each":"ab"})")
        == "retry 'flow_retry': 'for_each' must be an array of values");
  CHECK(retry(R"({"always_revert":false})")
        == "retry 'flow_retry': 'always_revert' must be true");
  CHECK(retry(R"({"times":2,"revert_all":1})")
        == "retry 'flow_retry': 'revert_all' must be true or false");
  CHECK(retry(R"([])")
        == "flow 'flow': 'retry' must be an object such as {\"times\": 3}");
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
