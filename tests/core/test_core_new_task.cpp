#include "core/new_task.hpp"

#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

using taskq::core::check_new_task;
using taskq::core::Millis;
using taskq::core::NewTaskFields;
using taskq::core::NewTaskRule;

namespace {

// The rule `task` breaks, if any.
std::optional<NewTaskRule> rule_of(const NewTaskFields& task) {
  const auto broken = check_new_task(task);
  return broken ? std::optional(broken->rule) : std::nullopt;
}

} // namespace

TEST_CASE("a new task with no field given breaks no rule") {
  CHECK_FALSE(check_new_task(NewTaskFields{}));
}

TEST_CASE("the queue is a name of 1-128 letters, digits and . _ : / -") {
  NewTaskFields t;
  for (const std::string& ok :
       std::vector<std::string>{"q", "a.b_c:d/e-f", std::string(128, 'x')}) {
    t.queue = ok;
    CHECK_FALSE(check_new_task(t));
  }
  for (const std::string& bad :
       std::vector<std::string>{"", std::string(129, 'x'), "a b", "q=1"}) {
    t.queue = bad;
    const auto broken = check_new_task(t);
    REQUIRE(broken);
    CHECK(broken->rule == NewTaskRule::queue_name);
    CHECK(std::string(broken->field) == "queue");
    CHECK(std::string(broken->must)
          == "a name of 1-128 letters, digits and . _ : / -");
  }
}

TEST_CASE("the command is a program's name and UTF-8 words without NUL") {
  NewTaskFields t;
  t.command = std::vector<std::string>{"echo", "", "café"};
  CHECK_FALSE(check_new_task(t)); // an empty argument is an argument
  t.command = std::vector<std::string>{"x"};
  CHECK_FALSE(check_new_task(t));
  t.command = std::vector<std::string>{};
  CHECK(rule_of(t) == NewTaskRule::command_empty);
  t.command = std::vector<std::string>{"", "a"};
  CHECK(rule_of(t) == NewTaskRule::command_empty);

  t.command = std::vector<std::string>{"echo", "ok", "caf\xc3"};
  auto broken = check_new_task(t);
  REQUIRE(broken);
  CHECK(broken->rule == NewTaskRule::command_word);
  CHECK(broken->index == 2);
  t.command = std::vector<std::string>{"\xff"};
  broken = check_new_task(t);
  REQUIRE(broken);
  CHECK(broken->rule == NewTaskRule::command_word);
  CHECK(broken->index == 0);
  t.command = std::vector<std::string>{"echo", std::string("a\0b", 3)};
  broken = check_new_task(t);
  REQUIRE(broken);
  CHECK(broken->rule == NewTaskRule::command_word);
  CHECK(broken->index == 1);
}

TEST_CASE("max_attempts is at least 1") {
  NewTaskFields t;
  t.max_attempts = 1;
  CHECK_FALSE(check_new_task(t));
  t.max_attempts = INT64_MAX;
  CHECK_FALSE(check_new_task(t));
  for (const int64_t bad : {int64_t{0}, int64_t{-1}, INT64_MIN}) {
    t.max_attempts = bad;
    const auto broken = check_new_task(t);
    REQUIRE(broken);
    CHECK(broken->rule == NewTaskRule::max_attempts);
    CHECK(std::string(broken->field) == "max_attempts");
    CHECK(std::string(broken->must) == "at least 1");
  }
}

TEST_CASE("a unique key is UTF-8 text without control characters") {
  NewTaskFields t;
  for (const std::string& ok :
       std::vector<std::string>{"", "k", "clé ~", std::string("\x20")}) {
    t.unique_key = ok;
    CHECK_FALSE(check_new_task(t));
  }
  for (const std::string& bad :
       std::vector<std::string>{"a\tb", "\x1f", "\x7f", "\xc3"}) {
    t.unique_key = bad;
    CHECK(rule_of(t) == NewTaskRule::unique_key);
  }
}

TEST_CASE("after names task ids, 1 or more") {
  NewTaskFields t;
  t.after = {1, 2, INT64_MAX};
  CHECK_FALSE(check_new_task(t));
  t.after = {3, 0};
  const auto broken = check_new_task(t);
  REQUIRE(broken);
  CHECK(broken->rule == NewTaskRule::after_id);
  CHECK(broken->index == 1);
  t.after = {-1};
  CHECK(rule_of(t) == NewTaskRule::after_id);
}

TEST_CASE("to_worker is a worker's name") {
  NewTaskFields t;
  for (const std::string& ok :
       std::vector<std::string>{"w", "host-1 (eu)", "wörker", "~"}) {
    t.to_worker = ok;
    CHECK_FALSE(check_new_task(t));
  }
  for (const std::string& bad :
       std::vector<std::string>{"", "a\nb", "\x1f", "\x7f", "\xe2\x82"}) {
    t.to_worker = bad;
    CHECK(rule_of(t) == NewTaskRule::to_worker);
  }
}

TEST_CASE("a broadcast has no worker, dependency, root or unique key") {
  NewTaskFields t;
  t.broadcast = true;
  CHECK_FALSE(check_new_task(t)); // its ttl not known yet
  t.broadcast_ttl = Millis(1);
  CHECK_FALSE(check_new_task(t));

  NewTaskFields to = t;
  to.to_worker = "w";
  CHECK(rule_of(to) == NewTaskRule::broadcast_to);
  to.to_worker = ""; // a bad name is told first
  CHECK(rule_of(to) == NewTaskRule::to_worker);

  NewTaskFields after = t;
  after.after = {1};
  CHECK(rule_of(after) == NewTaskRule::broadcast_alone);
  NewTaskFields root = t;
  root.has_root = true;
  CHECK(rule_of(root) == NewTaskRule::broadcast_alone);
  NewTaskFields unique = t;
  unique.unique_key = "k";
  CHECK(rule_of(unique) == NewTaskRule::broadcast_alone);

  // Not a broadcast: each of them is fine.
  NewTaskFields plain;
  plain.to_worker = "w";
  plain.after = {1};
  plain.has_root = true;
  plain.unique_key = "k";
  plain.broadcast_ttl = Millis(0); // a ttl alone is no broadcast
  CHECK_FALSE(check_new_task(plain));
}

TEST_CASE("a broadcast's ttl is longer than 0") {
  NewTaskFields t;
  t.broadcast = true;
  t.broadcast_ttl = Millis(1);
  CHECK_FALSE(check_new_task(t));
  t.broadcast_ttl = Millis(0);
  CHECK(rule_of(t) == NewTaskRule::broadcast_ttl);
  t.broadcast_ttl = Millis(-1);
  CHECK(rule_of(t) == NewTaskRule::broadcast_ttl);
}

TEST_CASE("a trigger is a gate key: a label's key") {
  NewTaskFields t;
  for (const std::string& ok :
       std::vector<std::string>{"k", "a.b_c/d-1", std::string(128, 'k')}) {
    t.trigger = ok;
    CHECK_FALSE(check_new_task(t));
  }
  for (const std::string& bad : std::vector<std::string>{
           "", "k=v", "a b", "k:1", std::string(129, 'k')}) {
    t.trigger = bad;
    CHECK(rule_of(t) == NewTaskRule::trigger);
  }
}

TEST_CASE("a trigger holds several keys, comma-separated; the first bad "
          "one is told by its position") {
  NewTaskFields t;
  t.trigger = "b,a,b";
  CHECK_FALSE(check_new_task(t));
  for (const auto& [text, pos] : std::vector<std::pair<std::string, size_t>>{
           {"a,b c", 1}, {"a,,b", 1}, {",a", 0}, {"a,", 1}, {"a,b,k=v,=", 2}}) {
    t.trigger = text;
    const auto broken = check_new_task(t);
    REQUIRE(broken);
    CHECK(broken->rule == NewTaskRule::trigger);
    CHECK(broken->index == pos);
  }
}

TEST_CASE("trigger_keys splits at each comma, in order, repeats kept") {
  using taskq::core::trigger_keys;
  CHECK(trigger_keys("a") == std::vector<std::string>{"a"});
  CHECK(trigger_keys("b,a,b") == std::vector<std::string>{"b", "a", "b"});
  CHECK(trigger_keys("") == std::vector<std::string>{""});
  CHECK(trigger_keys("a,") == std::vector<std::string>{"a", ""});
  CHECK(trigger_keys(",,") == std::vector<std::string>{"", "", ""});
}

TEST_CASE("normal_trigger sorts the keys by bytes and keeps each once") {
  using taskq::core::normal_trigger;
  CHECK(normal_trigger("build.done") == "build.done");
  CHECK(normal_trigger("b,a,b") == "a,b");
  CHECK(normal_trigger("a,a,a") == "a");
  CHECK(normal_trigger("b,B,a/1,a.1,a_1,a-1")
        == "B,a-1,a.1,a/1,a_1,b"); // '-' < '.' < '/' < 'B' < '_' < 'b'
}

TEST_CASE("the first broken rule is told, in the order of the rules") {
  NewTaskFields t;
  t.trigger = "=";
  CHECK(rule_of(t) == NewTaskRule::trigger);
  t.to_worker = "";
  CHECK(rule_of(t) == NewTaskRule::to_worker);
  t.after = {0};
  CHECK(rule_of(t) == NewTaskRule::after_id);
  t.unique_key = "\n";
  CHECK(rule_of(t) == NewTaskRule::unique_key);
  t.max_attempts = 0;
  CHECK(rule_of(t) == NewTaskRule::max_attempts);
  t.command = std::vector<std::string>{};
  CHECK(rule_of(t) == NewTaskRule::command_empty);
  t.queue = "";
  CHECK(rule_of(t) == NewTaskRule::queue_name);
}
