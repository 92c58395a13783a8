#pragma once

#include "storage/task_store.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <string>

#include "store_helpers.hpp"

// Two flows and a plain task, shared by the tests of export/import and of
// db check on flows.
namespace taskq::test {

// Two task atoms in a row under a `times: 2` controller: `a` provides x,
// `b` requires it.
inline const std::string k_doc =
    R"({"name": "f", "pattern": "linear", "retry": {"times": 2},
  "atoms": [{"name": "a", "execute": {"queue": "q"}, "provides": "x"},
            {"name": "b", "execute": {"queue": "q"}, "requires": "x"}]})";
inline const std::string k_one = R"({"name": "one", "atoms": [
  {"name": "only", "execute": {"queue": "r", "payload": {"p": [1, 2.50]}},
   "revert": {"queue": "r"}}]})";

// Leases the one task of `queue` and completes it with `result`.
inline void finish(TaskStore& store, const std::string& queue,
                   const std::optional<std::string>& result, Time now) {
  const auto t = lease_one(store, queue, now);
  REQUIRE(t);
  store.complete(t->id, *token_of(*t), result, now);
}

// Flow 1: `a` done without a result, `b` failed for good, so the controller
// retried (both reverted, history kept) and `a` runs again. Flow 2: SUCCESS
// with a result. A plain task beside them.
inline void scene(TaskStore& store) {
  Time now = t0;
  REQUIRE(store.submit_flow(k_doc, now, k_operator) == 1);
  finish(store, "q", std::nullopt, now += 1s);
  const auto b = lease_one(store, "q", now += 1s);
  REQUIRE(b);
  store.fail(b->id, *token_of(*b),
             fail_request("disk full", storage::FailMode::no_retry), now);
  REQUIRE(store.submit_flow(k_one, now += 1s, k_operator) == 2);
  finish(store, "r", R"({"k": "v"})", now += 1s);
  add_task(store, "other", now);
  REQUIRE(store.find_flow(1)->state == "RUNNING");
  REQUIRE(store.find_flow(2)->state == "SUCCESS");
}

} // namespace taskq::test
