#include "core/flow_retry.hpp"

#include <algorithm>
#include <vector>

namespace taskq::core::flow::engine {
namespace {

// The values a for_each/for_each_from controller iterates, or none when
// for_each_from's symbol does not hold an array.
std::optional<json> iterable_values(const Node& r, const json& store) {
  if (r.retry.kind == RetryKind::for_each) {
    return r.retry.values.is_array() ? r.retry.values : json::array();
  }
  const auto it = store.find(r.retry.from_symbol);
  if (it == store.end() || !it->is_array()) {
    return std::nullopt;
  }
  return *it;
}

// TaskFlow's misc.sequence_minus: the values not tried yet, each history
// value taking away one occurrence, the order kept ([3,2,3,5] tries 3,2,3,5).
std::vector<json> values_left(const json& values,
                              const std::vector<HistoryEntry>& history) {
  std::vector<json> left(values.begin(), values.end());
  for (const HistoryEntry& h : history) {
    const auto it = std::find(left.begin(), left.end(), h.value);
    if (it != left.end()) {
      left.erase(it);
    }
  }
  return left;
}

} // namespace

Strategy on_failure(const Node& r, const AtomRuntime& a, const json& store) {
  const Strategy give_up =
      r.retry.revert_all ? Strategy::revert_all : Strategy::revert;
  switch (r.retry.kind) {
  case RetryKind::times:
    return static_cast<int64_t>(a.history.size()) < r.retry.times
               ? Strategy::retry
               : give_up;
  case RetryKind::for_each:
  case RetryKind::for_each_from: {
    const auto values = iterable_values(r, store);
    return values && !values_left(*values, a.history).empty() ? Strategy::retry
                                                              : give_up;
  }
  case RetryKind::always_revert:
    return give_up;
  case RetryKind::always_revert_all:
    return Strategy::revert_all;
  }
  return give_up;
}

NextValue next_value(const Node& r, const AtomRuntime& a, const json& store) {
  switch (r.retry.kind) {
  case RetryKind::times:
    return {json(static_cast<int64_t>(a.history.size()) + 1), std::nullopt};
  case RetryKind::for_each:
  case RetryKind::for_each_from: {
    const auto values = iterable_values(r, store);
    if (!values) {
      // Choice: TaskFlow would raise a TypeError iterating a non-list.
      return {json(), "symbol '" + r.retry.from_symbol
                          + "' of iterable retry controller " + r.name
                          + " is not a list"};
    }
    const auto left = values_left(*values, a.history);
    if (left.empty()) {
      return {json(),
              "No elements left in collection of iterable retry controller "
                  + r.name};
    }
    return {left.front(), std::nullopt};
  }
  case RetryKind::always_revert:
  case RetryKind::always_revert_all:
    return {json(), std::nullopt}; // TaskFlow's execute returns None
  }
  return {json(), std::nullopt};
}

} // namespace taskq::core::flow::engine
