#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskq::core {

using Labels = std::map<std::string, std::string>;

// One `K=V` pattern of `--match`.
struct LabelPattern {
  std::string key;   // exact, `*` (any key), `*part`, `part*` or `*part*`
  std::string value; // exact, or `*` (any value)
};

// Parses `K=V` for `--label`: K is 1-128 characters of [A-Za-z0-9._/-],
// V any UTF-8 text without control characters (may be empty). std::nullopt when
// malformed.
std::optional<std::pair<std::string, std::string>>
parse_label(std::string_view text);

// Parses `K=V` for `--match`: as parse_label, but K may also be `*`, or have
// one `*` at its start, its end or both (never inside), and V may be `*`.
std::optional<LabelPattern> parse_label_pattern(std::string_view text);

// True when every pattern is matched by some label of `labels`: the key
// pattern matches the label's key (a key without `*` exactly; with its `*`s
// stripped, anywhere in the key; `*` any key), and the value pattern is `*` or
// equal to that label's value. `*=*` matches every task, labelled or not; an
// empty pattern list matches everything.
bool matches(const Labels& labels, const std::vector<LabelPattern>& patterns);

// `k=v` for each label, in key order, joined by `separator`: `k=v,k2=v2`
// as --root takes them, `k=v k2=v2` for tables.
std::string format_labels(const Labels& labels,
                          std::string_view separator = ",");

} // namespace taskq::core
