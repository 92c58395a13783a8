// TaskStore: what the web view reads of tasks (pages, counts), each read
// bounded (the event log's reads are in history_store.cpp); and the checks the
// operator's actions from the web share (a selector's page fields, the
// revision the operator saw).
#include "storage/features/web_store.hpp"

#include "core/error.hpp"
#include "storage/features/select.hpp"
#include "storage/model/rows.hpp"
#include "storage/seam/db.hpp"
#include "storage/task_store.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace taskq::storage {

using namespace detail;

// ---------------------------------------------------------------------------
// The checks of an operator's selector
// ---------------------------------------------------------------------------

namespace detail {

void check_page_only(const Selector& sel) {
  if (sel.after_id || sel.before_id || sel.created_from || sel.created_to
      || sel.text) {
    throw Error(ErrorKind::usage,
                "a page's cursor, created range or text search selects a "
                "page, not tasks to act on: select by ids, queue, state or "
                "labels");
  }
}

void check_expect_rev(const Selector& sel) {
  if (sel.expect_rev && sel.ids.size() != 1) {
    throw Error(ErrorKind::usage,
                "a revision to expect needs exactly one task id");
  }
  if (sel.expect_count
      && (!sel.ids.empty() || !sel.has_filters() || sel.limit || sel.newest)) {
    throw Error(ErrorKind::usage, "a count to expect needs filters, and "
                                  "no ids, limit or newest");
  }
}

void check_count(const std::optional<int64_t>& expect_count, int64_t n) {
  if (expect_count && *expect_count != n) {
    throw Error(ErrorKind::conflict, std::to_string(*expect_count)
                                         + " tasks matched when you "
                                           "looked, "
                                         + std::to_string(n)
                                         + " now: count them again");
  }
}

void check_rev(const std::optional<int64_t>& expect_rev, const Task& task) {
  if (expect_rev && *expect_rev != task.rev) {
    throw Error(ErrorKind::conflict,
                task_ref(task.id) + " changed since you looked (revision "
                    + std::to_string(*expect_rev) + ", now "
                    + std::to_string(task.rev) + ")");
  }
}

} // namespace detail

namespace {

// ---------------------------------------------------------------------------
// The selector's SQL, as list's
// ---------------------------------------------------------------------------

// One query of a selector's state, cut from list's (select_sqls) so that a
// page, a count and list select by one predicate: `from_where` is its FROM
// and WHERE (?1 the queue, ?2 now; a state's ?3 written as a literal), and
// `order` the expression it orders by (id, or id + 0 for a partial index:
// see select_sqls).
struct Part {
  std::string from_where;
  std::string order;
};

std::vector<Part> parts_of(const Selector& sel) {
  check_states(sel.states, true);
  std::vector<std::string> states = sel.states;
  std::sort(states.begin(), states.end());
  states.erase(std::unique(states.begin(), states.end()), states.end());
  if (states.empty()) {
    states.emplace_back();
  }
  const std::string head = join("SELECT ", k_task_columns);
  std::vector<Part> out;
  for (const std::string& state : states) {
    for (const SelectPart& part : select_sqls(sel, state, false)) {
      const size_t order = part.sql.rfind(" ORDER BY ");
      if (part.sql.compare(0, head.size(), head) != 0
          || order == std::string::npos) {
        throw Error(ErrorKind::internal, "unexpected selector SQL");
      }
      std::string from_where =
          part.sql.substr(head.size(), order - head.size());
      if (part.binds_state) {
        // check_states has admitted only state names: a literal is safe,
        // and lets several states share one statement.
        const size_t at = from_where.find("?3");
        from_where.replace(at, 2, "'" + state + "'");
      }
      std::string by = part.sql.substr(order + 10);
      if (by.size() > 5 && by.compare(by.size() - 5, 5, " DESC") == 0) {
        by.resize(by.size() - 5);
      }
      out.push_back({std::move(from_where), std::move(by)});
    }
  }
  return out;
}

// The columns of a page row: k_task_columns with the JSON values cut to
// k_page_value_chars characters, then the task's latest error (cut too)
// and its time, and its latest lease's time.
const std::string& page_columns() {
  static const std::string columns = [] {
    const std::string cut =
        "substr(X, 1, " + std::to_string(k_page_value_chars) + ")";
    std::string out;
    std::string_view rest = k_task_columns;
    while (!rest.empty()) {
      const size_t comma = rest.find(", ");
      const std::string_view name = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? "" : rest.substr(comma + 2);
      std::string column(name);
      if (name == "payload" || name == "result" || name == "checkpoint") {
        column = cut;
        column.replace(column.find('X'), 1, name);
      }
      out += (out.empty() ? "" : ", ") + column;
    }
    const std::string last_error =
        "FROM task_errors r WHERE r.task_id = tasks.id ORDER BY r.time DESC "
        "LIMIT 1)";
    return out + ", (SELECT substr(r.message, 1, "
           + std::to_string(k_page_value_chars) + ") " + last_error
           + ", (SELECT r.time " + last_error
           + ", (SELECT max(e.time) FROM events e WHERE e.task_id = tasks.id "
             "AND e.message = 'lease')";
  }();
  return columns;
}

// Numbered parameters after a part's own (?1 queue, ?2 now), each bound
// with its value.
struct Params {
  std::vector<std::variant<int64_t, std::string>> values;
  std::string add(int64_t v) {
    values.emplace_back(v);
    return "?" + std::to_string(values.size() + 3);
  }
  std::string add(const std::string& v) {
    values.emplace_back(v);
    return "?" + std::to_string(values.size() + 3);
  }
  void bind(Statement& st, const Selector& sel, Time now) const {
    st.bind(1, sel.queue).bind(2, to_unix_ms(now));
    int n = 3;
    for (const auto& v : values) {
      ++n;
      if (const auto* i = std::get_if<int64_t>(&v)) {
        st.bind(n, *i);
      } else {
        st.bind(n, std::get<std::string>(v));
      }
    }
  }
};

// The condition of a text search: `text` (a parameter) in the command or
// the payload. replace() finds it the same way on both backends (bytes,
// case and all), where LIKE would not.
std::string text_term(const std::string& param) {
  return " AND (replace(payload, " + param
         + ", '') <> payload OR "
           "replace(coalesce(command, ''), "
         + param + ", '') <> coalesce(command, ''))";
}

// The oldest id a text search looks at: the `bound`-th newest task of
// the selector's parts, the largest such among the parts that
// hold more (so no part gives more than that many candidates); none when
// no part does.
std::optional<int64_t> text_floor(Db& db, const Selector& sel,
                                  const std::vector<Part>& parts, Time now,
                                  int64_t bound) {
  std::optional<int64_t> floor;
  for (const Part& part : parts) {
    // The bound-th newest, and whether one more follows it.
    Params p;
    const std::string skip = p.add(bound - 1);
    Statement st(db, "SELECT id" + part.from_where + " ORDER BY " + part.order
                         + " DESC LIMIT 2 OFFSET " + skip);
    p.bind(st, sel, now);
    if (st.step()) {
      const int64_t last = st.get_int(0);
      if (st.step()) {
        floor = std::max(floor.value_or(0), last);
      }
    }
  }
  return floor;
}

// The queues a page of settled states (paused, sleeping, finished) of
// every queue reads one by one: tasks_settled is (state, queue, id), so a
// queue's tasks come in id order from a range of it, where all queues'
// at once are sorted whole first (1.1 s for a page of 900,000 completed
// tasks on SQLite; four ranges of 51 rows instead). None (read at once)
// when a queue is named, a state is runnable or a pseudo-state, or more
// than k_split_queues queues hold such tasks (queue_counts).
constexpr int64_t k_split_queues = 32;
std::vector<std::string> settled_queues(Db& db, const Selector& sel) {
  std::string in;
  for (const std::string& s : sel.states) {
    const auto state = core::parse_state(s);
    if (!state || *state == core::TaskState::runnable) {
      return {};
    }
    in += (in.empty() ? "'" : ", '") + s + "'";
  }
  if (sel.queue || in.empty()) {
    return {};
  }
  Statement st(db, "SELECT queue FROM queue_counts WHERE state IN (" + in
                       + ") GROUP BY queue HAVING sum(n) <> 0 LIMIT "
                       + std::to_string(k_split_queues + 1));
  std::vector<std::string> out;
  while (st.step()) {
    out.push_back(st.get_text(0));
  }
  if (static_cast<int64_t>(out.size()) > k_split_queues) {
    return {};
  }
  return out;
}

// True when every state named is an unfinished one (and one is named).
bool only_unfinished(const std::vector<std::string>& states) {
  return !states.empty()
         && std::all_of(states.begin(), states.end(), [](const auto& s) {
              const auto state = core::parse_state(s);
              return state ? !core::is_terminal(*state)
                           : s == "running" || s == "ready";
            });
}

// task_labels holds every unfinished task's labels (0003_rescue.sql): for
// unfinished states, the first pattern with an exact key reads its
// candidates from a range of it, not every task of the parts (the
// patterns are still matched on the rows read).
std::string label_candidates(const Selector& sel, Params& p) {
  if (!only_unfinished(sel.states)) {
    return "";
  }
  for (const core::LabelPattern& m : sel.match) {
    if (m.key.find('*') == std::string::npos) {
      return " AND id IN (SELECT task_id FROM task_labels WHERE key = "
             + p.add(m.key)
             + (m.value == "*" ? "" : " AND value = " + p.add(m.value)) + ")";
    }
  }
  return "";
}

// A page's keyset cursor as conditions: ids after after_id, before
// before_id.
std::string cursor_terms(const Selector& sel, Params& p) {
  std::string where;
  if (sel.after_id) {
    where += " AND id > " + p.add(*sel.after_id);
  }
  if (sel.before_id) {
    where += " AND id < " + p.add(*sel.before_id);
  }
  return where;
}

// A row of page_columns(): the task, its latest error, and when its latest
// lease started (for a task that ran and ended, or erred).
Task page_row(Statement& st) {
  Task t = read_task(st);
  const int c = k_task_column_count;
  if (const auto message = st.get_opt_text(c)) {
    t.errors.push_back({core::from_unix_ms(st.get_int(c + 1)), *message});
  }
  const auto leased = st.get_opt_int(c + 2);
  const bool ended =
      core::is_terminal(t.state) && !t.command.empty() && t.attempts > 0;
  if (!t.lease && leased && (ended || !t.errors.empty())) {
    t.lease_started = core::from_unix_ms(*leased);
  }
  return t;
}

// How many ids along the primary key a page of `runnable` tasks of every
// queue looks at first (TaskStore::task_page).
constexpr int64_t k_runnable_window = 2000;

bool in_created(const Selector& sel, Time created) {
  return (!sel.created_from || created >= *sel.created_from)
         && (!sel.created_to || created < *sel.created_to);
}

} // namespace

// ---------------------------------------------------------------------------
// Pages
// ---------------------------------------------------------------------------

TaskPage TaskStore::task_page(const Selector& sel, Time now,
                              int64_t text_candidates) {
  const int64_t rows =
      std::clamp<int64_t>(sel.limit.value_or(k_page_rows), 1, k_page_rows_max);
  Transaction tx(*m_db, Transaction::Kind::read);
  TaskPage page;
  if (!sel.ids.empty()) {
    // Named tasks: as list gives them (whole), in the order asked.
    for (const int64_t id : sel.ids) {
      if (std::none_of(page.tasks.begin(), page.tasks.end(),
                       [id](const Task& t) { return t.id == id; })) {
        page.tasks.push_back(load_full(*m_db, id));
      }
    }
    load_lease_starts(*m_db, page.tasks);
    return page;
  }
  const std::vector<Part> parts = parts_of(sel);
  const bool text = sel.text && !sel.text->empty();
  std::optional<int64_t> floor;
  if (text) {
    floor = text_floor(*m_db, sel, parts, now,
                       std::max<int64_t>(1, text_candidates));
    page.text_bounded = floor.has_value();
  }
  // Labels and the created range are read here, at most k_page_scan rows
  // per part; the SQL asks for one row more than the page, to know whether
  // another page follows.
  const bool post_filter =
      !sel.match.empty() || sel.created_from || sel.created_to;
  const int64_t sql_limit = post_filter ? k_page_scan : rows + 1;
  const bool desc = sel.newest;
  std::vector<Task> found;
  if (!text && !post_filter && !sel.queue
      && sel.states == std::vector<std::string>{"runnable"}) {
    // Runnable tasks of every queue: their four indexes (by kind) give them
    // by queue and priority, so a page of them sorts every unleased one
    // (88,000 at 100,000 unfinished tasks: 76 ms on SQLite). Unfinished
    // tasks are mostly the newest, so the next k_runnable_window ids along
    // the primary key are read first: when they hold more than a page of
    // runnable tasks, those are the page, exactly (every task between the
    // cursor and the last of them was seen). Otherwise, the indexes.
    Params p;
    const std::string where = cursor_terms(sel, p);
    const std::string dir = desc ? " DESC" : "";
    Statement window(
        *m_db, "SELECT id FROM (SELECT id, state FROM tasks WHERE ?1 IS NULL "
               "AND ?2 IS NOT NULL"
                   + where + " ORDER BY id" + dir + " LIMIT "
                   + p.add(k_runnable_window)
                   + ") w WHERE state = 'runnable' ORDER BY id" + dir
                   + " LIMIT " + p.add(rows + 1));
    p.bind(window, sel, now);
    std::vector<int64_t> ids;
    while (window.step()) {
      ids.push_back(window.get_int(0));
    }
    window.reset();
    if (static_cast<int64_t>(ids.size()) > rows) {
      std::string list;
      for (int64_t i = 0; i < rows; ++i) {
        list += (list.empty() ? "" : ", ")
                + std::to_string(ids[static_cast<size_t>(i)]);
      }
      Statement st(*m_db, "SELECT " + page_columns()
                              + " FROM tasks WHERE id IN (" + list
                              + ") ORDER BY id" + dir);
      while (st.step()) {
        found.push_back(page_row(st));
      }
      page.next_cursor = found.back().id;
      load_lease_starts(*m_db, found);
      page.tasks = std::move(found);
      return page;
    }
  }
  // Each part is read in full up to its frontier (the last id it read when
  // it stopped early); past the nearest frontier, a part not read yet may
  // hold tasks, so the page ends there.
  std::optional<int64_t> frontier;
  std::vector<std::pair<Selector, Part>> reads;
  const std::vector<std::string> queues = text || post_filter
                                              ? std::vector<std::string>()
                                              : settled_queues(*m_db, sel);
  for (const std::string& queue : queues) {
    Selector one = sel;
    one.queue = queue;
    for (Part& part : parts_of(one)) {
      reads.emplace_back(one, std::move(part));
    }
  }
  if (queues.empty()) {
    for (const Part& part : parts) {
      reads.emplace_back(sel, part);
    }
  }
  for (const auto& [part_sel, part] : reads) {
    Params p;
    std::string where = cursor_terms(sel, p) + label_candidates(sel, p);
    if (text) {
      where += text_term(p.add(*sel.text));
      if (floor) {
        where += " AND id >= " + p.add(*floor);
      }
    }
    // The ids chosen first, then their columns: the row's columns and
    // subqueries are read for the rows shown, not for every row an index
    // gives before it is sorted.
    const std::string dir = desc ? " DESC" : "";
    const std::string chosen = part.from_where + where + " ORDER BY "
                               + part.order + dir + " LIMIT "
                               + p.add(sql_limit);
    int64_t read = 0;
    int64_t kept = 0;
    std::optional<int64_t> last;
    const auto take = [&](Statement& st) { found.push_back(page_row(st)); };
    if (!post_filter) {
      Statement st(*m_db, "SELECT " + page_columns()
                              + " FROM tasks WHERE id IN (SELECT id" + chosen
                              + ") ORDER BY id" + dir);
      p.bind(st, part_sel, now);
      while (st.step()) {
        ++read;
        last = st.get_int(0);
        take(st);
        ++kept;
      }
    } else {
      // Labels and creation times of up to k_page_scan candidates, matched
      // here; then the page's columns of the rows kept only (a page of 50
      // reads 50 rows' subqueries, not 5,000).
      Statement scan(*m_db, "SELECT id, labels, created_at" + chosen);
      p.bind(scan, part_sel, now);
      std::string ids;
      while (scan.step()) {
        ++read;
        last = scan.get_int(0);
        if (core::matches(labels_from_json(scan.get_opt_text(1)), sel.match)
            && in_created(sel, core::from_unix_ms(scan.get_int(2)))) {
          ids += (ids.empty() ? "" : ", ") + std::to_string(*last);
          if (++kept > rows) {
            break;
          }
        }
      }
      scan.reset();
      if (!ids.empty()) {
        Statement st(*m_db, "SELECT " + page_columns()
                                + " FROM tasks WHERE id IN (" + ids
                                + ") ORDER BY id" + dir);
        while (st.step()) {
          take(st);
        }
      }
    }
    if (last && (kept > rows || read >= sql_limit)) {
      frontier = !frontier ? *last
                 : desc    ? std::max(*frontier, *last)
                           : std::min(*frontier, *last);
    }
  }
  const auto before = [desc](int64_t a, int64_t b) {
    return desc ? a > b : a < b;
  };
  std::sort(found.begin(), found.end(),
            [&](const Task& a, const Task& b) { return before(a.id, b.id); });
  // `running` and `runnable` (or two indexes of one state) can both hold
  // a task.
  found.erase(
      std::unique(found.begin(), found.end(),
                  [](const Task& a, const Task& b) { return a.id == b.id; }),
      found.end());
  if (frontier) {
    found.erase(
        std::find_if(found.begin(), found.end(),
                     [&](const Task& t) { return before(*frontier, t.id); }),
        found.end());
    page.next_cursor = frontier;
  }
  if (static_cast<int64_t>(found.size()) > rows) {
    found.resize(static_cast<size_t>(rows));
    page.next_cursor = found.back().id;
  }
  load_lease_starts(*m_db, found);
  page.tasks = std::move(found);
  return page;
}

int64_t TaskStore::count(const Selector& sel, Time now) {
  if (sel.text) {
    throw Error(ErrorKind::usage,
                "a text search is bounded (k_text_candidates): it cannot "
                "be counted");
  }
  Transaction tx(*m_db, Transaction::Kind::read);
  if (!sel.ids.empty()) {
    std::set<int64_t> ids(sel.ids.begin(), sel.ids.end());
    for (const int64_t id : ids) {
      if (!load_task(*m_db, id)) {
        throw Error(ErrorKind::not_found, "no " + task_ref(id));
      }
    }
    return static_cast<int64_t>(ids.size());
  }
  const bool stored_states = std::all_of(
      sel.states.begin(), sel.states.end(),
      [](const std::string& s) { return core::parse_state(s).has_value(); });
  if (sel.match.empty() && !sel.created_from && !sel.created_to
      && stored_states) {
    check_states(sel.states, true);
    // The counts the triggers keep (0008_counts.sql), in the transaction
    // of every write: the same tasks the selector's SQL would find.
    std::string in;
    for (const std::string& s : sel.states) {
      in += (in.empty() ? "'" : ", '") + s + "'";
    }
    Statement st(*m_db,
                 "SELECT CAST(coalesce(sum(n), 0) AS BIGINT) FROM "
                 "queue_counts WHERE "
                     + std::string(sel.queue ? "queue = ?1" : "?1 IS NULL")
                     + (in.empty() ? "" : " AND state IN (" + in + ")"));
    st.bind(1, sel.queue);
    st.step();
    return st.get_int(0);
  }
  const std::vector<Part> parts = parts_of(sel);
  Params p;
  std::string where;
  if (sel.created_from) {
    where += " AND created_at >= " + p.add(to_unix_ms(*sel.created_from));
  }
  if (sel.created_to) {
    where += " AND created_at < " + p.add(to_unix_ms(*sel.created_to));
  }
  where += label_candidates(sel, p);
  // UNION: a task two parts hold is counted once.
  const std::string columns = sel.match.empty() ? "id" : "id, labels";
  std::string sql;
  for (const Part& part : parts) {
    sql += (sql.empty() ? "SELECT " : " UNION SELECT ") + columns
           + part.from_where + where;
  }
  if (sel.match.empty()) {
    Statement st(*m_db, "SELECT count(*) FROM (" + sql + ") u");
    p.bind(st, sel, now);
    st.step();
    return st.get_int(0);
  }
  Statement st(*m_db, sql);
  p.bind(st, sel, now);
  int64_t n = 0;
  while (st.step()) {
    if (core::matches(labels_from_json(st.get_opt_text(1)), sel.match)) {
      ++n;
    }
  }
  return n;
}

} // namespace taskq::storage
