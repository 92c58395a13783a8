// PostgreSQL URLs (storage/seam/db.cpp): which strings are one, which are
// refused, and that no password libpq could read in one is ever shown; the
// parameters that are taskq's (storage/pg/schema_url.cpp), and the change
// feed they make through a pooler. No server needed.
#include "core/error.hpp"
#include "storage/pg/schema_url.hpp"
#include "storage/seam/change_feed.hpp"
#include "storage/seam/db.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <utility>

using taskq::Error;
using taskq::ErrorKind;
using taskq::storage::check_db_name;
using taskq::storage::is_postgres_url;
using taskq::storage::libpq_url;
using taskq::storage::redact_url;

namespace {

// The error kind check_db_name() throws for `path`; internal: none.
ErrorKind refusal(const std::string& path) {
  try {
    check_db_name(path);
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::internal;
}

} // namespace

TEST_CASE("a PostgreSQL URL's scheme is recognised in any case") {
  for (const char* url :
       {"postgresql://h/db", "postgres://h/db", "POSTGRESQL://h/db",
        "Postgres://h/db", "pOsTgReSqL:///db", "postgresql://"}) {
    CAPTURE(url);
    CHECK(is_postgres_url(url));
    CHECK_NOTHROW(check_db_name(url));
  }
  for (const char* path :
       {"/var/lib/taskq.db", "taskq.db", "postgresql", "postgresql.db",
        "postgres_data/q.db", "postgresql/q.db", "./postgresql://x"}) {
    CAPTURE(path);
    CHECK_FALSE(is_postgres_url(path));
    CHECK_NOTHROW(check_db_name(path));
  }
}

TEST_CASE("libpq is given the scheme in lower case, the rest as written") {
  CHECK(libpq_url("POSTGRESQL://U:PW@H/DB") == "postgresql://U:PW@H/DB");
  CHECK(libpq_url("Postgres://h/db?A=B") == "postgres://h/db?A=B");
  CHECK(libpq_url("/Var/Taskq.db") == "/Var/Taskq.db");
}

TEST_CASE("a string that starts like a URL but is none is refused") {
  for (const char* path :
       {"postgresql:tq", "postgres:/x", "postgresql//h", "POSTGRES//h/db",
        "postgresql:", "Postgresql:u:pw@h/db", "pgsql://h/db", "pg://h",
        "mysql://u:pw@h/db", "file:///tmp/q.db"}) {
    CAPTURE(path);
    CHECK_FALSE(is_postgres_url(path));
    CHECK(refusal(path) == ErrorKind::usage);
  }
}

TEST_CASE("a refused string's message quotes its scheme, no password") {
  try {
    check_db_name("postgresql:u:SECRET@h/db");
    FAIL("not refused");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.find("SECRET") == std::string::npos);
    CHECK(what.find("'postgresql:...'") != std::string::npos);
  }
  try {
    check_db_name("pgsql://u:SECRET@h/db");
    FAIL("not refused");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("SECRET") == std::string::npos);
  }
}

TEST_CASE("a URL is shown without its password") {
  CHECK(redact_url("postgresql://u:secret@host:5432/db")
        == "postgresql://u:***@host:5432/db");
  CHECK(redact_url("postgres://u@host/db") == "postgres://u@host/db");
  CHECK(redact_url("postgresql:///db?host=/tmp&password=secret&sslmode=off")
        == "postgresql:///db?host=/tmp&password=***&sslmode=off");
  CHECK(redact_url("postgresql://u:p%40ss@h/db") == "postgresql://u:***@h/db");
  CHECK(redact_url("/var/lib/taskq.db") == "/var/lib/taskq.db");
  CHECK(redact_url("postgresql://h/db") == "postgresql://h/db");
  CHECK(redact_url("postgresql://h:5432/db?user=a@b&sslmode=require")
        == "postgresql://h:5432/db?user=a@b&sslmode=require");
  CHECK(redact_url("postgresql://[::1]:5432/db")
        == "postgresql://[::1]:5432/db");
}

TEST_CASE("a password parameter is hidden however its key is spelled") {
  // libpq percent-decodes keys too (either case of hex); spaces around a
  // key are trimmed; sslpassword is a secret as well.
  CHECK(redact_url("postgresql://h/db?user=tq&pass%77ord=SECRET")
        == "postgresql://h/db?user=tq&pass%77ord=***");
  CHECK(redact_url("postgresql://h/db?%70assword=SECRET&x=1")
        == "postgresql://h/db?%70assword=***&x=1");
  CHECK(redact_url("postgresql://h/db?%70%61%73%73%57%4f%52%44=SECRET")
        == "postgresql://h/db?%70%61%73%73%57%4f%52%44=***");
  CHECK(redact_url("postgresql://h/db?PASSWORD=SECRET")
        == "postgresql://h/db?PASSWORD=***");
  CHECK(redact_url("postgresql://h/db?%20password%20=SECRET")
        == "postgresql://h/db?%20password%20=***");
  CHECK(redact_url("postgresql://h/db?sslpassword=SECRET")
        == "postgresql://h/db?sslpassword=***");
  // Repeated: every one.
  CHECK(redact_url("postgresql://h/db?password=ONE&password=TWO")
        == "postgresql://h/db?password=***&password=***");
  // A value holding '=' or '?' runs to the next '&'.
  CHECK(redact_url("postgresql://h/db?password=a=b?c&x=1")
        == "postgresql://h/db?password=***&x=1");
  // No '=' at all: libpq quotes the whole parameter back.
  CHECK(redact_url("postgresql://h/db?password%3DSECRET")
        == "postgresql://h/db?***");
  // Upper-case scheme.
  CHECK(redact_url("POSTGRESQL://u:SECRET@h/db?PassWord=SECRET2")
        == "POSTGRESQL://u:***@h/db?PassWord=***");
}

TEST_CASE("a password with unencoded reserved characters is hidden whole") {
  // '/': libpq finds no user information (a '/' comes before the '@') and
  // reads "u" as the host, "pa" as the port, "ss@h/db" as the database.
  CHECK(redact_url("postgresql://u:pa/ss@h/db") == "postgresql://u:***@h/db");
  // '?': libpq takes it in the password; so does taskq.
  CHECK(redact_url("postgresql://u:pa?ss@h/db") == "postgresql://u:***@h/db");
  CHECK(redact_url("postgresql://u:pa?x=1@h/db") == "postgresql://u:***@h/db");
  // '@': libpq ends the password at the first; the rest is hidden too.
  CHECK(redact_url("postgresql://u:p@ss@h/db") == "postgresql://u:***@h/db");
  // ':': libpq ends the user at the first ':'.
  CHECK(redact_url("postgresql://u:pa:ss@h/db") == "postgresql://u:***@h/db");
  // '&' and '#'.
  CHECK(redact_url("postgresql://u:a&b#c@h/db?sslmode=disable")
        == "postgresql://u:***@h/db?sslmode=disable");
  // A user with an unencoded '@' (as some hosted services name users).
  CHECK(redact_url("postgresql://name@server:SECRET@h/db")
        == "postgresql://name@server:***@h/db");
  // With a query holding an '@' of its own: which '@' ends the password
  // cannot be told, so it is hidden up to the last.
  CHECK(redact_url("postgresql://u:pa/ss@h/db?application_name=a@b")
        == "postgresql://u:***@b");
  // A '/' and then '?key=' in it: "a" is no port, so the ':' was a
  // password's, up to the last '@'.
  CHECK(redact_url("postgresql://u:a/b?x=1@h/db") == "postgresql://u:***@h/db");
  CHECK(redact_url("postgresql://u:a/b?x=1@h/db?application_name=c@d")
        == "postgresql://u:***@d");
  // A port, and an '@' in the query: nothing is a password.
  CHECK(redact_url("postgresql://h1:5432,h2:5433/db?user=a@b")
        == "postgresql://h1:5432,h2:5433/db?user=a@b");
  CHECK(redact_url("postgresql://h:/db?user=a@b")
        == "postgresql://h:/db?user=a@b");
  CHECK(redact_url("postgresql://[::1]:5432/db?user=a@b")
        == "postgresql://[::1]:5432/db?user=a@b");
  CHECK(redact_url("postgresql://u:pw@[::1]:5432/db")
        == "postgresql://u:***@[::1]:5432/db");
  // Every mix at once, and an upper-case scheme.
  const std::string mix = redact_url(
      "POSTGRES://u:S/E?C@R:E&T@h:5432/db?pass%77ord=X1&PASSWORD=X2");
  CHECK(mix == "POSTGRES://u:***@h:5432/db?pass%77ord=***&PASSWORD=***");
}

TEST_CASE("nothing of a secret survives redaction") {
  // Whatever the URL, no secret marked in it is left in redact_url's text.
  for (const char* url :
       {"postgresql://u:SECRET@h/db", "postgresql://u:SEC/RET@h/db",
        "postgresql://u:SEC?RET@h/db", "postgresql://u:SEC@RET@h/db",
        "postgresql://u:SEC:RET@h/db", "postgresql://h/db?pass%77ord=SECRET",
        "postgresql://h/db?a=1&password=SECRET&password=SECRET",
        "postgres://u:SECRET@/db?host=/tmp", "Postgresql://u:SECRET@h",
        "postgresql://u:SECRET@[::1/db"}) {
    CAPTURE(url);
    const std::string shown = redact_url(url);
    CHECK(shown.find("SEC") == std::string::npos);
    CHECK(shown.find("RET") == std::string::npos);
  }
}

TEST_CASE("pool= and listen= are taskq's, taken out of libpq's URL") {
  using taskq::storage::pg::split_url;
  const auto plain = split_url("postgresql://h/db?sslmode=require");
  CHECK(plain.url == "postgresql://h/db?sslmode=require");
  CHECK_FALSE(plain.pooled);
  CHECK(plain.listen.empty());

  const auto pooled =
      split_url("postgresql://u:pw@b:6432/db?pool=transaction&sslmode=require"
                "&listen=db%3A5432&schema=jobs");
  CHECK(pooled.url == "postgresql://u:pw@b:6432/db?sslmode=require");
  CHECK(pooled.pooled);
  CHECK(pooled.listen == "db:5432");
  CHECK(pooled.schema == "jobs");

  CHECK_FALSE(split_url("postgresql://h/db?pool=session").pooled);
  for (const char* bad :
       {"postgresql://h/db?pool=statement",
        "postgresql://h/db?pool=", "postgresql://h/db?pool=transaction&listen=",
        "postgresql://h/db?listen=db:5432",
        "postgresql://h/db?pool=session&listen=db:5432"}) {
    CAPTURE(bad);
    try {
      split_url(bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::usage);
    }
  }
}

TEST_CASE("a change feed's URL carries pool= and listen= back") {
  using taskq::storage::pg::split_url;
  using taskq::storage::pg::with_pool;
  const auto parts =
      split_url("postgresql://b/db?pool=transaction&listen=%5B::1%5D:5432");
  const std::string feed = with_pool(parts.url, parts);
  CHECK(feed == "postgresql://b/db?pool=transaction&listen=[::1]:5432");
  const auto again = split_url(feed);
  CHECK(again.url == "postgresql://b/db");
  CHECK(again.pooled);
  CHECK(again.listen == "[::1]:5432");
  CHECK(with_pool("postgresql://b/db?x=1", split_url("postgresql://b/db"))
        == "postgresql://b/db?x=1");
  // A listen= value that holds '&' or '%' survives the trip.
  const auto odd =
      split_url("postgresql:///db?pool=transaction&listen=/s%26x:1");
  CHECK(split_url(with_pool(odd.url, odd)).listen == "/s&x:1");
}

TEST_CASE("answer_timeout= is taskq's: a duration, taken out, carried to "
          "the change feed") {
  using taskq::storage::pg::split_url;
  using taskq::storage::pg::with_pool;
  CHECK_FALSE(split_url("postgresql://h/db").answer_timeout);
  const auto two = split_url("postgresql://h/db?answer_timeout=2s&x=1");
  CHECK(two.url == "postgresql://h/db?x=1");
  CHECK(two.answer_timeout == taskq::core::Millis{2000});
  CHECK(split_url("postgresql://h/db?answer_timeout=1500ms").answer_timeout
        == taskq::core::Millis{1500});
  // Bare digits are seconds, as libpq's connect_timeout; 0 waits for ever.
  CHECK(split_url("postgresql://h/db?answer_timeout=7").answer_timeout
        == taskq::core::Millis{7000});
  CHECK(split_url("postgresql://h/db?answer_timeout=0").answer_timeout
        == taskq::core::Millis{0});
  // The feed's URL keeps it, pooled or not.
  const auto feed = split_url(with_pool(two.url, two));
  CHECK(feed.answer_timeout == taskq::core::Millis{2000});
  CHECK(feed.url == "postgresql://h/db?x=1");
  const auto pooled = split_url(
      "postgresql://b/db?pool=transaction&answer_timeout=3s&listen=db:1");
  const auto back = split_url(with_pool(pooled.url, pooled));
  CHECK(back.pooled);
  CHECK(back.listen == "db:1");
  CHECK(back.answer_timeout == taskq::core::Millis{3000});
  for (const char* bad : {"postgresql://h/db?answer_timeout=",
                          "postgresql://h/db?answer_timeout=soon",
                          "postgresql://h/db?answer_timeout=-1s",
                          "postgresql://h/db?answer_timeout=99999999999"}) {
    CAPTURE(bad);
    try {
      split_url(bad);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::usage);
    }
  }
}

TEST_CASE("listen= names a host, a port or both") {
  using taskq::storage::pg::listen_host_port;
  using HP = std::pair<std::string, std::string>;
  CHECK(listen_host_port("db:5432") == HP{"db", "5432"});
  CHECK(listen_host_port("db") == HP{"db", ""});
  CHECK(listen_host_port(":5433") == HP{"", "5433"});
  CHECK(listen_host_port("[::1]:5432") == HP{"::1", "5432"});
  CHECK(listen_host_port("[::1]") == HP{"::1", ""});
  CHECK(listen_host_port("/run/postgresql:5432")
        == HP{"/run/postgresql", "5432"});
}

TEST_CASE("a write begins with two statements, its settings in the lock's") {
  using taskq::storage::pg::with_schema_write;
  const std::string own = with_schema_write("taskq", false);
  CHECK(own.starts_with("BEGIN; SELECT CAST("));
  // One statement after the BEGIN: the schema set before the lock is
  // taken, the clock read after it (the outer SELECT).
  CHECK(own.find(';') == own.rfind(';'));
  CHECK(own.find("set_config('search_path', 'taskq', true), "
                 "pg_advisory_xact_lock_shared(1953721201) OFFSET 0")
        != std::string::npos);
  CHECK(own.find("lock_timeout") == std::string::npos);
  // Through a pooler, the session's settings too, each local to the
  // transaction.
  const std::string pooled =
      with_schema_write("q", true, taskq::core::Millis{4000});
  CHECK(pooled.find(';') == pooled.rfind(';'));
  for (const char* setting :
       {"lock_timeout", "client_min_messages', 'warning", "bytea_output', 'hex",
        "idle_in_transaction_session_timeout', '4000",
        "plan_cache_mode', 'force_generic_plan", "search_path', 'q"}) {
    CAPTURE(setting);
    CHECK(pooled.find("set_config('" + std::string(setting))
          != std::string::npos);
  }
}

TEST_CASE("a pooled transaction sets its settings after its BEGIN") {
  using taskq::storage::pg::with_schema;
  CHECK(with_schema("BEGIN; SELECT 1", "taskq")
        == "BEGIN; SET LOCAL search_path TO taskq; SELECT 1");
  CHECK(with_schema("BEGIN; SELECT 1", "taskq", "SET LOCAL a=1; ")
        == "BEGIN; SET LOCAL search_path TO taskq; SET LOCAL a=1; SELECT 1");
  CHECK(with_schema("BEGIN ISOLATION LEVEL REPEATABLE READ", "q",
                    "SET LOCAL a=1; SET LOCAL b=2; ")
        == "BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL search_path TO "
           "q; SET LOCAL a=1; SET LOCAL b=2");
}

TEST_CASE("through a pooler without listen=, waiting wakes every second") {
  using taskq::storage::ChangeFeed;
  // No server is needed: nothing connects. The timer starts with the
  // feed, so the time is taken before it (taken after, a stall between
  // the two made the second look early).
  const auto start = std::chrono::steady_clock::now();
  ChangeFeed feed("postgresql://127.0.0.1:1/x?pool=transaction");
  CHECK_FALSE(feed.polling()); // a descriptor to poll(2), a timer's
  CHECK_FALSE(feed.skips_own());
  CHECK_FALSE(feed.drain()); // no tick yet
  CHECK(feed.wait(taskq::core::Millis{5000}));
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= std::chrono::milliseconds(900));
  CHECK(took < std::chrono::milliseconds(2500));
  CHECK_FALSE(feed.drain()); // the tick was consumed
}
