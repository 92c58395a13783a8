#include "web/filters.hpp"

#include "core/error.hpp"
#include "core/labels.hpp"
#include "core/state.hpp"
#include "core/time.hpp"

#include "web/view.hpp"

namespace taskq::web {

namespace {

std::vector<std::string> split(std::string_view text, std::string_view seps) {
  std::vector<std::string> out;
  std::string cur;
  for (const char c : text) {
    if (seps.find(c) != std::string_view::npos) {
      if (!cur.empty()) {
        out.push_back(cur);
      }
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) {
    out.push_back(cur);
  }
  return out;
}

core::Time time_of(const std::string& text, std::string_view what) {
  const auto t = core::parse_time(text);
  if (!t) {
    throw Error(ErrorKind::usage, std::string(what) + ": not a time: " + text
                                      + " (e.g. 2026-12-06T10:00:00Z)");
  }
  return *t;
}

} // namespace

Filters read_filters(const Pairs& query) {
  Filters f;
  for (const auto& [k, v] : query) {
    if (k == "queue") {
      f.queue = v;
    } else if (k == "state") {
      f.state = v;
    } else if (k == "match") {
      f.match += (f.match.empty() ? "" : " ") + v;
    } else if (k == "q") {
      f.text = v;
    } else if (k == "from") {
      f.from = v;
    } else if (k == "to") {
      f.to = v;
    } else if (k == "oldest") {
      f.oldest = v == "1";
    } else if (k == "cursor") {
      f.cursor = v;
    } else if (k == "limit") {
      f.limit = v;
    }
  }
  return f;
}

storage::Selector selector_of(const Filters& f) {
  storage::Selector sel;
  if (!f.queue.empty()) {
    sel.queue = f.queue;
  }
  for (const auto& s : split(f.state, ", ")) {
    if (s != "running" && s != "ready" && !core::parse_state(s)) {
      throw Error(ErrorKind::usage, "not a state: " + s);
    }
    sel.states.push_back(s);
  }
  for (const auto& m : split(f.match, ", ")) {
    const auto p = core::parse_label_pattern(m);
    if (!p) {
      throw Error(ErrorKind::usage, "not a label pattern: " + m
                                        + " (KEY=VALUE, KEY!=VALUE, KEY)");
    }
    sel.match.push_back(*p);
  }
  if (!f.text.empty()) {
    sel.text = f.text;
  }
  if (!f.from.empty()) {
    sel.created_from = time_of(f.from, "from");
  }
  if (!f.to.empty()) {
    sel.created_to = time_of(f.to, "to");
  }
  sel.newest = !f.oldest;
  if (!f.cursor.empty()) {
    const auto c = parse_id_text(f.cursor);
    if (!c) {
      throw Error(ErrorKind::usage, "not a page cursor: " + f.cursor);
    }
    (sel.newest ? sel.before_id : sel.after_id) = *c;
  }
  if (!f.limit.empty()) {
    const auto n = parse_id_text(f.limit);
    if (!n || *n < 1 || *n > storage::k_page_rows_max) {
      throw Error(ErrorKind::usage,
                  "limit: give 1 to "
                      + std::to_string(storage::k_page_rows_max));
    }
    sel.limit = *n;
  }
  return sel;
}

std::string query_of(const Filters& f) {
  std::string q;
  const auto add = [&](std::string_view k, const std::string& v) {
    if (!v.empty()) {
      q += (q.empty() ? "" : "&") + std::string(k) + "=" + url_encode(v);
    }
  };
  add("queue", f.queue);
  add("state", f.state);
  add("match", f.match);
  add("q", f.text);
  add("from", f.from);
  add("to", f.to);
  add("oldest", f.oldest ? "1" : "");
  add("limit", f.limit);
  add("cursor", f.cursor);
  return q;
}

Html hidden_fields(const Filters& f) {
  Html h;
  const auto add = [&](std::string_view k, const std::string& v) {
    if (!v.empty()) {
      h.put("<input type=\"hidden\" name=\"{}\" value=\"{}\">", k, v);
    }
  };
  add("queue", f.queue);
  add("state", f.state);
  add("match", f.match);
  add("q", f.text);
  add("from", f.from);
  add("to", f.to);
  return h;
}

bool destructive(std::string_view action) {
  return action == "kill";
}

} // namespace taskq::web
