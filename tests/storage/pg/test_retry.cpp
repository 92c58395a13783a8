// retrying() (storage/seam/db.hpp): a write transaction the database ends in a
// deadlock is run again whole, from BEGIN, and succeeds; one that keeps
// ending so gives up after a bounded number of tries, unavailable.
#include "core/error.hpp"
#include "storage/pg/db.hpp"
#include "storage/seam/db.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <future>
#include <memory>
#include <string>

#include "temp_db.hpp"

using taskq::ErrorKind;
using taskq::storage::connect_postgres;
using taskq::storage::Db;
using taskq::storage::k_write_tries;
using taskq::storage::retrying;
using taskq::storage::Statement;
using taskq::storage::Transaction;
using taskq::storage::TxConflict;
using taskq::test::on_postgresql;
using taskq::test::TempDb;

TEST_CASE("a transaction that keeps meeting conflicts gives up, unavailable") {
  int runs = 0;
  ErrorKind kind = ErrorKind::internal;
  try {
    retrying([&] {
      ++runs;
      throw TxConflict(ErrorKind::unavailable, "deadlock detected");
    });
  } catch (const TxConflict& e) {
    kind = e.kind();
  }
  CHECK(runs == k_write_tries);
  CHECK(kind == ErrorKind::unavailable);
}

TEST_CASE("other errors are not run again") {
  int runs = 0;
  CHECK_THROWS_AS(retrying([&] {
                    ++runs;
                    throw taskq::Error(ErrorKind::conflict, "refused");
                  }),
                  taskq::Error);
  CHECK(runs == 1);
}

namespace {

// Adds 1 to row `first`, then, once the other writer holds its first row
// (on the first try only), to row `second`: two writers with opposite
// orders deadlock on their first tries. Returns how many tries it took.
int add_both(Db& db, int first, int second, std::promise<void>& holding,
             std::shared_future<void> other_holding) {
  int tries = 0;
  retrying([&] {
    ++tries;
    Transaction tx(db);
    Statement bump(db, "UPDATE public.deadlock SET n = n + 1 WHERE id = ?1");
    bump.bind(1, first).run();
    if (tries == 1) {
      holding.set_value();
      other_holding.wait();
    }
    bump.reset();
    bump.bind(1, second).run();
    tx.commit();
  });
  return tries;
}

} // namespace

TEST_CASE("a deadlock is run again whole, and both writers succeed"
          * doctest::skip(!on_postgresql())) {
  TempDb temp;
  const std::unique_ptr<Db> a = connect_postgres(temp.path());
  const std::unique_ptr<Db> b = connect_postgres(temp.path());
  a->exec("SET deadlock_timeout = '100ms'; CREATE TABLE public.deadlock (id "
          "INT PRIMARY KEY, n INT NOT NULL); INSERT INTO public.deadlock "
          "VALUES (1, 0), (2, 0)",
          "cannot make the test's table");
  b->exec("SET deadlock_timeout = '100ms'", "cannot set the timeout");
  std::promise<void> a_holds;
  std::promise<void> b_holds;
  const std::shared_future<void> a_held = a_holds.get_future().share();
  const std::shared_future<void> b_held = b_holds.get_future().share();
  auto a_tries = std::async(
      std::launch::async, [&] { return add_both(*a, 1, 2, a_holds, b_held); });
  auto b_tries = std::async(
      std::launch::async, [&] { return add_both(*b, 2, 1, b_holds, a_held); });
  const int tries = a_tries.get() + b_tries.get();
  // PostgreSQL ends one of the two (40P01); that one runs again.
  CHECK(tries == 3);
  Statement rows(*a, "SELECT n FROM public.deadlock ORDER BY id");
  CHECK(rows.step());
  CHECK(rows.get_int(0) == 2);
  CHECK(rows.step());
  CHECK(rows.get_int(0) == 2);
}
