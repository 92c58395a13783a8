#pragma once

// A PostgreSQL statement (StatementImpl): its binds, sent as text, and its
// rows, read from libpq's result. The connection (PgDb, storage/pg/db.cpp)
// runs it, preparing it on the server once it has run often enough.

#include "storage/pg/libpq.hpp"
#include "storage/pg/sql.hpp"
#include "storage/seam/db.hpp"

#include <charconv>
#include <cstdint>
#include <libpq-fe.h>
#include <string>
#include <string_view>
#include <vector>

namespace taskq::storage::pg {

// A statement as PostgreSQL reads it, and its name once prepared.
// Runs of a statement before it is prepared on the server: see run().
constexpr int k_runs_before_prepare = 3;

struct Prepared {
  pg::Translation sql;
  int params = 0;   // bound by the caller (sql.source may hold more)
  int runs = 0;     // executions so far
  std::string name; // empty until prepared on the server
};

// What runs a statement with its bound values: the connection.
class Runner {
public:
  virtual libpq::Result run(Prepared& p,
                            const std::vector<const char*>& bound_values,
                            const std::vector<Oid>& bound_types) = 0;

protected:
  ~Runner() = default;
};

class PgStatement final : public StatementImpl {
public:
  PgStatement(Runner& db, Prepared& p)
      : m_db(&db), m_prepared(&p), m_values(static_cast<size_t>(p.params)),
        m_types(static_cast<size_t>(p.params), 0),
        m_set(static_cast<size_t>(p.params), false) {}

  void bind_int(int index, int64_t value) override {
    slot(index, 20) = std::to_string(value); // bigint
  }
  void bind_text(int index, std::string_view value, bool) override {
    slot(index, 25).assign(value); // text
  }
  // Bytes as a text parameter in BYTEA's hex form, NULs included.
  void bind_blob(int index, std::string_view value) override {
    to_bytea_hex(value, slot(index, 17)); // bytea
  }
  void bind_null(int index) override {
    slot(index, 0);
    m_set[static_cast<size_t>(index - 1)] = false;
  }

  bool step() override;
  void reset() override {
    m_result.reset();
    m_row = -1;
  }
  int64_t changes() const override { return m_changes; }

  bool is_null(int col) const override {
    return libpq::pq().PQgetisnull(m_result.get(), m_row, col) == 1;
  }
  bool is_integer(int col) const override {
    if (is_null(col)) {
      return false;
    }
    const Oid type = libpq::pq().PQftype(m_result.get(), col);
    // int8, int2, int4; numeric (what sum() of integers gives) when whole.
    if (type == 20 || type == 21 || type == 23) {
      return true;
    }
    return type == 1700
           && std::string_view(
                  libpq::pq().PQgetvalue(m_result.get(), m_row, col))
                      .find_first_of(".eE")
                  == std::string_view::npos;
  }
  int column_count() const override {
    return libpq::pq().PQnfields(m_result.get());
  }
  std::string column_name(int col) const override {
    const char* name = libpq::pq().PQfname(m_result.get(), col);
    return name == nullptr ? std::string() : std::string(name);
  }
  int64_t get_int(int col) const override {
    const char* text = libpq::pq().PQgetvalue(m_result.get(), m_row, col);
    if (text[0] == 't' || text[0] == 'f') { // a boolean
      return text[0] == 't' ? 1 : 0;
    }
    int64_t value = 0;
    const std::string_view s(text);
    std::from_chars(s.data(), s.data() + s.size(), value);
    return value;
  }
  std::string get_text(int col) const override {
    return {libpq::pq().PQgetvalue(m_result.get(), m_row, col),
            static_cast<size_t>(
                libpq::pq().PQgetlength(m_result.get(), m_row, col))};
  }

  // Results come as text: BYTEA in the hex form, which the session asks
  // for (bytea_output=hex, see session_settings).
  std::string get_blob(int col) const override {
    const std::string_view text(
        libpq::pq().PQgetvalue(m_result.get(), m_row, col),
        static_cast<size_t>(
            libpq::pq().PQgetlength(m_result.get(), m_row, col)));
    return from_bytea_hex(text);
  }

private:
  std::string& slot(int index, Oid type) {
    const auto i = static_cast<size_t>(index - 1);
    if (index < 1 || i >= m_values.size()) {
      throw Error(ErrorKind::internal,
                  "parameter " + std::to_string(index) + " out of range");
    }
    m_set[i] = true;
    m_types[i] = type;
    m_result.reset();
    m_row = -1;
    return m_values[i];
  }

  Runner* m_db;
  Prepared* m_prepared; // owned by the connection
  std::vector<std::string> m_values;
  std::vector<Oid> m_types; // of the values bound: bigint, text, 0 (NULL)
  std::vector<bool> m_set;  // false: NULL
  libpq::Result m_result;
  int m_row = -1;
  int64_t m_changes = 0;
};

} // namespace taskq::storage::pg
