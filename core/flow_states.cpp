#include "core/flow.hpp"

namespace taskq::core::flow {} // namespace taskq::core::flow
