#pragma once
// The built-in retry controllers of a flow (Times, ForEach,
// ParameterizedForEach, AlwaysRevert, AlwaysRevertAll): what each answers
// to a failure, and the value it gives its next execution.
#include "core/flow.hpp"

#include <optional>
#include <string>

namespace taskq::core::flow::engine {

using nlohmann::json;

// A controller's answer to a failure, and the resolution built from it.
enum class Strategy { retry, revert, revert_all };

// on_failure of the built-in controllers (Times, ForEach,
// ParameterizedForEach, AlwaysRevert, AlwaysRevertAll).
Strategy on_failure(const Node& r, const AtomRuntime& a, const json& store);

// A controller's next value, or the text of its execute failure.
struct NextValue {
  json value;
  std::optional<std::string> error;
};

NextValue next_value(const Node& r, const AtomRuntime& a, const json& store);

// A resolution (doc/flows.md#failure-resolution): the strategy and the
// controller it applies to; `undefined` is TaskFlow's undefined resolver (no
// controller at all), a REVERT_ALL that a REVERT below it does not defer to.
struct Resolution {
  Strategy strategy = Strategy::revert_all;
  int retry = -1;
  bool undefined = false;
};

} // namespace taskq::core::flow::engine
