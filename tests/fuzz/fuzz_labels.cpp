// Labels (`--label K=V`) and selectors (`--match K=V`): the parsers agree
// with a reference reading of their rules, a parsed label prints back as
// the text it came from, every label is also a pattern that matches it, and
// matches() agrees with a reference matcher. The input is lines: `L...` a
// label, `P...` a pattern, anything else both.
#include "core/labels.hpp"
#include "core/text.hpp"

#include <string>
#include <vector>

#include "fuzz.hpp"

namespace core = taskq::core;
using taskq::fuzz::as_text;

namespace {

bool key_char(char c) {
  return std::string_view("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                          "0123456789._/-")
             .find(c)
         != std::string_view::npos;
}

bool ref_key(std::string_view k) {
  if (k.empty() || k.size() > 128) {
    return false;
  }
  for (const char c : k) {
    if (!key_char(c)) {
      return false;
    }
  }
  return true;
}

bool ref_value(std::string_view v) {
  for (const char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return false;
    }
  }
  return core::is_valid_utf8(v);
}

// K=V split at the first `=`.
bool split(std::string_view text, std::string_view& k, std::string_view& v) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    return false;
  }
  k = text.substr(0, eq);
  v = text.substr(eq + 1);
  return true;
}

bool ref_label(std::string_view text) {
  std::string_view k, v;
  return split(text, k, v) && ref_key(k) && ref_value(v);
}

bool ref_pattern(std::string_view text) {
  std::string_view k, v;
  if (!split(text, k, v) || !ref_value(v)) {
    return false;
  }
  if (k == "*") {
    return true;
  }
  if (!k.empty() && k.front() == '*') {
    k.remove_prefix(1);
  }
  if (!k.empty() && k.back() == '*') {
    k.remove_suffix(1);
  }
  return ref_key(k);
}

bool ref_matches(const core::Labels& labels,
                 const std::vector<core::LabelPattern>& patterns) {
  for (const auto& p : patterns) {
    if (p.key == "*" && p.value == "*") {
      continue; // asks nothing, of any task
    }
    bool found = false;
    for (const auto& [k, v] : labels) {
      bool key = false;
      if (p.key == "*") {
        key = true;
      } else if (p.key.front() == '*' || p.key.back() == '*') {
        const size_t from = p.key.front() == '*' ? 1 : 0;
        const size_t to = p.key.size() - (p.key.back() == '*' ? 1 : 0);
        key = k.find(p.key.substr(from, to - from)) != std::string::npos;
      } else {
        key = k == p.key;
      }
      found = found || (key && (p.value == "*" || p.value == v));
    }
    if (!found) {
      return false;
    }
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto input = as_text(data, size);
  core::Labels labels;
  std::vector<core::LabelPattern> patterns;
  std::vector<core::LabelPattern> as_patterns; // each label, as a pattern
  size_t start = 0;
  while (start <= input.size()) {
    auto end = input.find('\n', start);
    if (end == std::string_view::npos) {
      end = input.size();
    }
    std::string_view line = input.substr(start, end - start);
    start = end + 1;
    const char kind = line.empty() ? '\0' : line.front();
    if (kind == 'L' || kind == 'P') {
      line.remove_prefix(1);
    }

    if (kind != 'P') {
      const auto label = core::parse_label(line);
      FUZZ_REQUIRE(label.has_value() == ref_label(line));
      if (label) {
        FUZZ_REQUIRE(label->first + "=" + label->second == line);
        const core::Labels one{{label->first, label->second}};
        FUZZ_REQUIRE(core::format_labels(one) == line);
        const auto p = core::parse_label_pattern(line);
        FUZZ_REQUIRE(p && p->key == label->first && p->value == label->second);
        FUZZ_REQUIRE(core::matches(one, {*p}));
        labels[label->first] = label->second;
        as_patterns.push_back(*p);
      }
    }
    if (kind != 'L') {
      const auto p = core::parse_label_pattern(line);
      FUZZ_REQUIRE(p.has_value() == ref_pattern(line));
      if (p) {
        FUZZ_REQUIRE(p->key + "=" + p->value == line);
        patterns.push_back(*p);
      }
    }
  }

  FUZZ_REQUIRE(core::matches(labels, patterns)
               == ref_matches(labels, patterns));
  // A later label of the same key replaces the earlier, so only the
  // patterns of the labels kept must match.
  std::vector<core::LabelPattern> kept;
  for (const auto& p : as_patterns) {
    if (labels.at(p.key) == p.value) {
      kept.push_back(p);
    }
  }
  FUZZ_REQUIRE(core::matches(labels, kept));
  FUZZ_REQUIRE(core::matches(labels, {core::LabelPattern{"*", "*"}}));
  FUZZ_REQUIRE(core::matches(labels, {core::LabelPattern{"*", "*"},
                                      core::LabelPattern{"*x*", "*"}})
               == core::matches(labels, {core::LabelPattern{"*x*", "*"}}));
  FUZZ_REQUIRE(core::matches(labels, {}));
  return 0;
}
