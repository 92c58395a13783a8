// compile_flow: the fields of atoms and retries, their types and values.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "flow_doc_helpers.hpp"

using namespace taskq::test::flow_doc_helpers;

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

TEST_CASE("a document that is not JSON, or not an object, is refused") {
  CHECK(refused(R"({"atoms": [)")
            .starts_with("the flow document is not valid JSON: "));
  CHECK(refused("[]")
        == "a flow document must be a JSON object such as {\"atoms\": "
           "[...]}, not an array (put the atoms in {\"atoms\": [...]})");
  CHECK(refused(R"("deploy.json")")
        == "a flow document must be a JSON object such as {\"atoms\": "
           "[...]}, not a string");
  CHECK(refused("5")
        == "a flow document must be a JSON object such as {\"atoms\": "
           "[...]}, not a number");
  CHECK(refused("null")
        == "a flow document must be a JSON object such as {\"atoms\": "
           "[...]}, not null");
  CHECK(refused(" true ")
        == "a flow document must be a JSON object such as {\"atoms\": "
           "[...]}, not true");
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
  CHECK(retry(R"({"times":-1})")
        == "retry 'flow_retry': 'times' must be 0 or more");
  CHECK(retry(R"({"for_each":"ab"})")
        == "retry 'flow_retry': 'for_each' must be an array of values");
  CHECK(retry(R"({"always_revert":false})")
        == "retry 'flow_retry': 'always_revert' must be true");
  CHECK(retry(R"({"times":2,"revert_all":1})")
        == "retry 'flow_retry': 'revert_all' must be true or false");
  CHECK(retry(R"([])")
        == "flow 'flow': 'retry' must be an object such as {\"times\": 3}");
}
