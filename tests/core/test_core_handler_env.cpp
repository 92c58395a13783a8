#include "core/handler_env.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace core = taskq::core;

namespace {

core::Task leased_task() {
  core::Task t;
  t.id = 7;
  t.queue = "q";
  t.attempts = 2;
  t.payload = R"({"a":1})";
  t.lease = core::Lease{"tok", "w", core::Time{}};
  return t;
}

bool has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

} // namespace

TEST_CASE("shell_quote makes one single-quoted word of any bytes") {
  CHECK(core::shell_quote("") == "''");
  CHECK(core::shell_quote("a b") == "'a b'");
  CHECK(core::shell_quote("it's") == R"('it'\''s')");
  CHECK(core::shell_quote(std::string("a\0b", 3)) == "'ab'");
}

TEST_CASE("a string payload reaches the handler as its contents") {
  CHECK(core::payload_text(R"("hi\nthere")") == "hi\nthere");
  CHECK(core::payload_text(R"({"a":1})") == R"({"a":1})");
  CHECK(core::payload_text("null") == "null");
  // The environment cannot hold a NUL: such a string stays JSON there.
  CHECK(core::payload_env_value(R"("a\u0000b")") == R"("a\u0000b")");
  CHECK(core::payload_text(R"("a\u0000b")") == std::string("a\0b", 3));
  CHECK(core::payload_env_value(R"("plain")") == "plain");
}

TEST_CASE("env_lines is the text lease -o env prints") {
  auto t = leased_task();
  t.checkpoint = R"({"step":3})";
  CHECK(core::env_lines(t)
        == "export TASKQ_ID=7\n"
           "export TASKQ_LEASE='tok'\n"
           "export TASKQ_QUEUE='q'\n"
           "export TASKQ_ATTEMPT=2\n"
           "export TASKQ_PAYLOAD='{\"a\":1}'\n"
           "export TASKQ_CHECKPOINT='{\"step\":3}'\n"
           "export TASKQ_SYNC='{}'\n");
}

TEST_CASE("an atom's task names its flow, atom, action and arguments") {
  auto t = leased_task();
  CHECK(core::flow_env(t).empty());
  t.flow = R"({"id":3,"atom":"build","action":"execute","args":{"x":[1]}})";
  const auto vars = core::flow_env(t);
  REQUIRE(vars.size() == 4);
  CHECK(vars[0] == std::pair<std::string, std::string>{"TASKQ_FLOW", "3"});
  CHECK(vars[1].second == "build");
  CHECK(vars[2].second == "execute");
  CHECK(vars[3].second == R"({"x":[1]})");
}

TEST_CASE("the sync state is a JSON object, {} when none") {
  auto t = leased_task();
  CHECK(core::sync_json(t) == "{}");
  t.sync = {{"b", "2"}, {"a", "1"}};
  CHECK(core::sync_json(t) == R"({"a":"1","b":"2"})");
}

TEST_CASE("handlers inherit run's environment but for the variables it sets") {
  const char* envp[] = {"PATH=/bin",        "TASKQ_ID=9", "TASKQ_HANDLER=4",
                        "TASKQ_DB=/old.db", "HOME=/h",    nullptr};
  const auto per_task =
      core::inherited_environment(envp, core::HandlerKind::per_task);
  CHECK(per_task
        == std::vector<std::string>{"PATH=/bin", "TASKQ_HANDLER=4", "HOME=/h"});
  const auto stream =
      core::inherited_environment(envp, core::HandlerKind::stream);
  CHECK(stream == std::vector<std::string>{"PATH=/bin", "HOME=/h"});
}

TEST_CASE("a per-task handler's environment, in order") {
  auto t = leased_task();
  const auto made = core::task_environment(t, {"PATH=/bin"}, "/d/q.db", "w1");
  CHECK(made.left_out.empty());
  CHECK(made.env
        == std::vector<std::string>{
            "PATH=/bin", "TASKQ_ID=7", "TASKQ_LEASE=tok", "TASKQ_QUEUE=q",
            "TASKQ_ATTEMPT=2", R"(TASKQ_PAYLOAD={"a":1})", "TASKQ_SYNC={}",
            "TASKQ_DB=/d/q.db", "TASKQ_WORKER=w1"});
}

TEST_CASE("what the environment cannot hold is left out and said") {
  auto t = leased_task();
  t.payload = "\"" + std::string(core::k_max_env_entry, 'x') + "\"";
  t.checkpoint = "\"" + std::string(200 * 1024, 'c') + "\"";
  const auto made = core::task_environment(t, {}, "db", "w");
  REQUIRE(made.left_out.size() == 2);
  CHECK(made.left_out[0].name == "TASKQ_PAYLOAD");
  CHECK(made.left_out[0].bytes == core::k_max_env_entry);
  CHECK(made.left_out[1].name == "TASKQ_CHECKPOINT");
  CHECK_FALSE(std::any_of(made.env.begin(), made.env.end(), [](auto& e) {
    return e.starts_with("TASKQ_PAYLOAD=")
           || e.starts_with("TASKQ_CHECKPOINT=");
  }));
  CHECK(has(made.env, "TASKQ_SYNC={}"));
  CHECK(core::left_out_message(7, made.left_out[0])
        == "taskq: task 7: its payload (131071 bytes) is too large for "
           "TASKQ_PAYLOAD; the handler gets it on stdin only\n");
  CHECK(core::left_out_message(7, {"TASKQ_SYNC", 5})
        == "taskq: task 7: its sync state (5 bytes) is too large for "
           "TASKQ_SYNC; see taskq show 7\n");
  CHECK(core::left_out_message(7, {"TASKQ_ARGS", 5})
        == "taskq: task 7: its TASKQ_ARGS (5 bytes) is too large for the "
           "environment; see taskq show 7\n");
}

TEST_CASE("a payload just within the limit stays") {
  auto t = leased_task();
  const size_t room =
      core::k_max_env_entry - std::string("TASKQ_PAYLOAD=").size();
  t.payload = "\"" + std::string(room, 'x') + "\"";
  CHECK(core::task_environment(t, {}, "db", "w").left_out.empty());
}

TEST_CASE("a stream handler's environment names its number") {
  CHECK(core::stream_environment({"A=1"}, "/q.db", "w", 2)
        == std::vector<std::string>{"A=1", "TASKQ_DB=/q.db", "TASKQ_WORKER=w",
                                    "TASKQ_HANDLER=2"});
}
