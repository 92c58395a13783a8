// How the shared SQL, written as SQLite reads it, is spelled for
// PostgreSQL (see storage/pg/sql.hpp).

#include "storage/pg/sql.hpp"

#include "storage/seam/db.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace taskq::storage {

namespace pg {

namespace {

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
         || (c >= '0' && c <= '9') || c == '_';
}

// Whether `sql` has the keyword sequence `word` at `i` (case-insensitive,
// whole words, single spaces in `word` matching any whitespace).
size_t match_words(std::string_view sql, size_t i, std::string_view word) {
  if (i > 0 && ident_char(sql[i - 1])) {
    return 0;
  }
  size_t j = i;
  for (size_t k = 0; k < word.size(); ++k) {
    if (word[k] == ' ') {
      if (j >= sql.size()
          || !std::isspace(static_cast<unsigned char>(sql[j]))) {
        return 0;
      }
      while (j < sql.size()
             && std::isspace(static_cast<unsigned char>(sql[j]))) {
        ++j;
      }
      continue;
    }
    if (j >= sql.size()
        || std::tolower(static_cast<unsigned char>(sql[j])) != word[k]) {
      return 0;
    }
    ++j;
  }
  return j < sql.size() && ident_char(sql[j]) ? 0 : j - i;
}

// Whether the call whose '(' is at `open` has more than one argument.
bool several_args(std::string_view sql, size_t open) {
  int depth = 0;
  for (size_t i = open; i < sql.size(); ++i) {
    if (sql[i] == '(') {
      ++depth;
    } else if (sql[i] == ')') {
      if (--depth == 0) {
        return false;
      }
    } else if (sql[i] == ',' && depth == 1) {
      return true;
    } else if (sql[i] == '\'') {
      i = std::min(sql.find('\'', i + 1), sql.size() - 1);
    }
  }
  return false;
}

bool space(char c) {
  return std::isspace(static_cast<unsigned char>(c)) != 0;
}

// Drops an `INDEXED BY name` hint whose name starts after whitespace at
// `i`, with the spaces `out` ends with (the one after the hint stays).
// Returns where the hint ends.
size_t drop_hint(std::string_view sql, size_t i, std::string& out) {
  while (i < sql.size() && space(sql[i])) {
    ++i;
  }
  while (i < sql.size() && ident_char(sql[i])) {
    ++i;
  }
  while (!out.empty() && out.back() == ' ') {
    out.pop_back();
  }
  return i;
}

// translate()'s scan: parameters come out as markers \x01 KIND N \x02 (KIND
// 'n' for an IS [NOT] NULL test, else 't'); counts them, and sets typed[i]
// when parameter i + 1 has a use other than such a test.
std::string translate_markers(std::string_view sql, int& params,
                              std::vector<bool>& typed) {
  std::string out;
  out.reserve(sql.size() + 32);
  int bare = 0;
  bool ignore_conflicts = false;
  params = 0;
  typed.clear();
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    size_t n = 0;
    if (c == '\'' || c == '"') {
      const size_t end = sql.find(c, i + 1);
      const size_t stop = end == std::string_view::npos ? sql.size() : end + 1;
      out.append(sql.substr(i, stop - i));
      i = stop - 1;
    } else if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      const size_t end = sql.find('\n', i);
      const size_t stop = end == std::string_view::npos ? sql.size() : end;
      out.append(sql.substr(i, stop - i));
      i = stop - 1;
    } else if (c == '?') {
      size_t j = i + 1;
      while (j < sql.size() && sql[j] >= '0' && sql[j] <= '9') {
        ++j;
      }
      int number = 0;
      if (j > i + 1) {
        std::from_chars(sql.data() + i + 1, sql.data() + j, number);
      } else {
        number = ++bare;
      }
      params = std::max(params, number);
      if (typed.size() < static_cast<size_t>(number)) {
        typed.resize(static_cast<size_t>(number), false);
      }
      // A use other than `? IS [NOT] NULL` gives the parameter a type.
      size_t k = j;
      while (k < sql.size() && sql[k] == ' ') {
        ++k;
      }
      const bool null_test = match_words(sql, k, "is null") > 0
                             || match_words(sql, k, "is not null") > 0;
      if (!null_test) {
        typed[static_cast<size_t>(number - 1)] = true;
      }
      out += '\x01';
      out += null_test ? 'n' : 't';
      out += std::to_string(number);
      out += '\x02';
      i = j - 1;
    } else if ((n = match_words(sql, i, "indexed by")) > 0) {
      i = drop_hint(sql, i + n, out) - 1;
    } else if ((n = match_words(sql, i, "insert or ignore")) > 0) {
      out += "INSERT";
      ignore_conflicts = true;
      i += n - 1;
    } else if (((n = match_words(sql, i, "min")) > 0
                || (n = match_words(sql, i, "max")) > 0)
               && i + n < sql.size() && sql[i + n] == '('
               && several_args(sql, i + n)) {
      out += std::tolower(static_cast<unsigned char>(sql[i + 1])) == 'i'
                 ? "LEAST"
                 : "GREATEST";
      i += n - 1;
    } else {
      out += c;
    }
  }
  if (ignore_conflicts) {
    out += " ON CONFLICT DO NOTHING";
  }
  return out;
}

} // namespace

Translation translate(std::string_view sql) {
  int params = 0;
  std::vector<bool> typed;
  const std::string marked = translate_markers(sql, params, typed);
  Translation t;
  for (int i = 1; i <= params; ++i) {
    t.source.push_back(i);
    t.as_text.push_back(!typed[static_cast<size_t>(i - 1)]);
  }
  std::vector<int> alias(static_cast<size_t>(params) + 1, 0);
  for (size_t i = 0; i < marked.size(); ++i) {
    if (marked[i] != '\x01') {
      t.text += marked[i];
      continue;
    }
    const bool null_test = marked[i + 1] == 'n';
    const size_t end = marked.find('\x02', i);
    int n = 0;
    std::from_chars(marked.data() + i + 2, marked.data() + end, n);
    int server = n;
    if (null_test && typed[static_cast<size_t>(n - 1)]) {
      auto& a = alias[static_cast<size_t>(n)];
      if (a == 0) {
        t.source.push_back(n);
        t.as_text.push_back(true);
        a = static_cast<int>(t.source.size());
      }
      server = a;
    }
    t.text += '$';
    t.text += std::to_string(server);
    i = end;
  }
  return t;
}

namespace {

// The end (one past) of the quoted text or `--` comment that starts at
// `i`, or `i` when none does.
size_t literal_end(std::string_view sql, size_t i) {
  const char c = sql[i];
  size_t end = std::string_view::npos;
  if (c == '\'' || c == '"') {
    end = sql.find(c, i + 1);
    return end == std::string_view::npos ? sql.size() : end + 1;
  }
  if (c == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
    end = sql.find('\n', i);
    return end == std::string_view::npos ? sql.size() : end;
  }
  return i;
}

// Where the ')' closing the '(' at `open` is (sql.size() if nowhere).
size_t closing_paren(std::string_view sql, size_t open) {
  int depth = 0;
  for (size_t i = open; i < sql.size(); ++i) {
    const size_t end = literal_end(sql, i);
    if (end != i) {
      i = end - 1;
    } else if (sql[i] == '(') {
      ++depth;
    } else if (sql[i] == ')' && --depth == 0) {
      return i;
    }
  }
  return sql.size();
}

// Whether the table body between `open` and `close` declares a primary key.
bool has_primary_key(std::string_view sql, size_t open, size_t close) {
  for (size_t i = open; i < close; ++i) {
    const size_t end = literal_end(sql, i);
    if (end != i) {
      i = end - 1;
    } else if (match_words(sql, i, "primary key") > 0) {
      return true;
    }
  }
  return false;
}

// Where the table options from `i` on (after a CREATE TABLE's ')') that
// PostgreSQL lacks end: STRICT and WITHOUT ROWID, comma-separated. `i`
// when there are none.
size_t table_options_end(std::string_view sql, size_t i) {
  size_t end = i;
  for (size_t j = i;;) {
    while (j < sql.size() && space(sql[j])) {
      ++j;
    }
    size_t n = match_words(sql, j, "strict");
    if (n == 0) {
      n = match_words(sql, j, "without rowid");
    }
    if (n == 0) {
      break;
    }
    end = j = j + n;
    while (j < sql.size() && space(sql[j])) {
      ++j;
    }
    if (j >= sql.size() || sql[j] != ',') {
      break;
    }
    ++j;
  }
  return end;
}

// Where the CREATE TRIGGER statement starting at `i` ends: past the `;`
// after its body's END, and that line's end.
size_t trigger_end(std::string_view sql, size_t i) {
  bool body_ended = false;
  for (size_t j = i; j < sql.size(); ++j) {
    const size_t end = literal_end(sql, j);
    size_t n = 0;
    if (end != j) {
      j = end - 1;
    } else if ((n = match_words(sql, j, "end")) > 0) {
      body_ended = true;
      j += n - 1;
    } else if (sql[j] == ';' && body_ended) {
      return j + 1 < sql.size() && sql[j + 1] == '\n' ? j + 2 : j + 1;
    } else if (!space(sql[j])) {
      body_ended = false;
    }
  }
  return sql.size();
}

} // namespace

std::string translate_schema(std::string_view sql) {
  constexpr std::string_view identity =
      "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY";
  std::string out;
  out.reserve(sql.size() + 64);
  bool statement_start = true;
  bool create_table = false;                   // in a CREATE TABLE statement
  size_t table_close = std::string_view::npos; // its body's ')'
  for (size_t i = 0; i < sql.size(); ++i) {
    const char c = sql[i];
    size_t n = 0;
    const size_t end = literal_end(sql, i);
    if (end != i) {
      out.append(sql.substr(i, end - i));
      i = end - 1;
      continue;
    }
    if (space(c)) {
      out += c;
      continue;
    }
    const bool first = statement_start;
    statement_start = false;
    if (c == ';') {
      statement_start = true;
      create_table = false;
      table_close = std::string_view::npos;
      out += c;
    } else if (first
               && (match_words(sql, i, "pragma") > 0
                   || match_words(sql, i, "drop trigger") > 0)) {
      // The whole statement goes, with its ';' and its line's end
      // (SQLite's triggers are SQLite's: see CREATE TRIGGER below).
      size_t j = sql.find(';', i);
      j = j == std::string_view::npos ? sql.size() : j + 1;
      if (j < sql.size() && sql[j] == '\n') {
        ++j;
      }
      statement_start = true;
      i = j - 1;
    } else if (first && match_words(sql, i, "create trigger") > 0) {
      // SQLite's trigger bodies are SQLite's: the whole statement goes, to
      // its `END;` (PostgreSQL's triggers are in migrations/postgresql/).
      i = trigger_end(sql, i) - 1;
      statement_start = true;
    } else if (first && (n = match_words(sql, i, "create table")) > 0) {
      create_table = true;
      out.append(sql.substr(i, n));
      i += n - 1;
    } else if (c == '(' && create_table
               && table_close == std::string_view::npos) {
      table_close = closing_paren(sql, i);
      out += c;
      if (!has_primary_key(sql, i, table_close)) {
        size_t j = i + 1;
        while (j < table_close && space(sql[j])) {
          ++j;
        }
        const std::string_view indent = sql.substr(i + 1, j - i - 1);
        out.append(indent);
        out += "rowid BIGINT GENERATED ALWAYS AS IDENTITY,";
        if (indent.empty()) {
          out += ' ';
        }
      }
    } else if (create_table && i == table_close) {
      out += c;
      i = table_options_end(sql, i + 1) - 1;
    } else if ((n = match_words(sql, i, "integer primary key autoincrement"))
                   > 0
               || (n = match_words(sql, i, "integer primary key")) > 0) {
      out += identity;
      i += n - 1;
    } else if ((n = match_words(sql, i, "integer")) > 0) {
      out += "BIGINT";
      i += n - 1;
    } else if ((n = match_words(sql, i, "blob")) > 0) {
      out += "BYTEA";
      i += n - 1;
    } else if ((n = match_words(sql, i, "json_each")) > 0 && i + n < sql.size()
               && sql[i + n] == '(') {
      const size_t open = i + n;
      const size_t close = closing_paren(sql, open);
      out += Db::Dialect{Backend::postgresql}.json_object_rows(
          sql.substr(open + 1, close - open - 1));
      i = close;
    } else if ((n = match_words(sql, i, "indexed by")) > 0) {
      i = drop_hint(sql, i + n, out) - 1;
    } else {
      out += c;
    }
  }
  return out;
}

std::string insert_events_sql(
    const std::vector<Db::EventRow>& rows,
    const std::function<std::string(const std::string&)>& literal) {
  std::string out = "INSERT INTO events (task_id, time, message, from_state, "
                    "to_state, actor, detail) VALUES ";
  const auto text = [&](const std::optional<std::string>& v) {
    return v ? literal(*v) : std::string("NULL");
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const Db::EventRow& r = rows[i];
    out += i == 0 ? "(" : ", (";
    out += std::to_string(r.task_id) + ", " + std::to_string(r.time) + ", "
           + literal(r.message) + ", " + text(r.from) + ", " + text(r.to) + ", "
           + literal(r.actor) + ", " + text(r.detail) + ")";
  }
  return out + "; ";
}

} // namespace pg

std::string pg_sql(std::string_view sqlite_sql) {
  return pg::translate(sqlite_sql).text;
}

void to_bytea_hex(std::string_view bytes, std::string& out) {
  out.assign("\\x");
  out.reserve(2 + 2 * bytes.size());
  constexpr std::string_view k_hex = "0123456789abcdef";
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += k_hex[b >> 4];
    out += k_hex[b & 15];
  }
}

std::string from_bytea_hex(std::string_view text) {
  if (!text.starts_with("\\x")) {
    throw Error(ErrorKind::internal, "bytes not in BYTEA's hex form");
  }
  const auto digit = [](char c) {
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
  };
  std::string out;
  out.reserve((text.size() - 2) / 2);
  for (size_t i = 2; i + 1 < text.size(); i += 2) {
    out += static_cast<char>((digit(text[i]) << 4) | digit(text[i + 1]));
  }
  return out;
}

} // namespace taskq::storage
