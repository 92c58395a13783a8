#include "core/error.hpp"
#include "core/task.hpp"

#include <doctest/doctest.h>

#include <chrono>

using namespace std::chrono_literals;
using taskq::core::Lease;
using taskq::core::Task;
using taskq::core::Time;
namespace core = taskq::core;

TEST_CASE("a lease is live strictly before it expires") {
  const Time now = core::from_unix_ms(1'000'000);
  const Lease lease{"tok", "host:1", now};
  CHECK(lease.live(now - 1ms));
  CHECK_FALSE(lease.live(now));
  CHECK_FALSE(lease.live(now + 1ms));
}

TEST_CASE("a task is leased only while its lease is live") {
  const Time now = core::from_unix_ms(1'000'000);
  Task task;
  CHECK_FALSE(task.leased(now));
  task.lease = Lease{"tok", "host:1", now + 5min};
  CHECK(task.leased(now));
  CHECK_FALSE(task.leased(now + 5min));
}

TEST_CASE("a new task is runnable with a null payload and default policy") {
  const Task task;
  CHECK(task.state == core::TaskState::runnable);
  CHECK(task.payload == "null");
  CHECK_FALSE(task.policy.max_errors);
  CHECK_FALSE(task.max_attempts);
  CHECK(task.errors.empty());
}

TEST_CASE("an Error carries its kind and message") {
  const taskq::Error e(taskq::ErrorKind::conflict, "cannot run task 7");
  CHECK(e.kind() == taskq::ErrorKind::conflict);
  CHECK(std::string(e.what()) == "cannot run task 7");
}
