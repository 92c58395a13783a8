// How the shared SQL, written as SQLite reads it, is spelled for
// PostgreSQL (see storage/pg_sql.hpp).

#include "storage/pg_sql.hpp"

#include "storage/db.hpp"

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
      size_t j = i + n;
      while (j < sql.size()
             && std::isspace(static_cast<unsigned char>(sql[j]))) {
        ++j;
      }
      while (j < sql.size() && ident_char(sql[j])) {
        ++j;
      }
      while (!out.empty() && out.back() == ' ') {
        out.pop_back(); // the space before the hint; the one after stays
      }
      i = j - 1;
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

} // namespace pg

std::string pg_sql(std::string_view sqlite_sql) {
  return pg::translate(sqlite_sql).text;
}

} // namespace taskq::storage
