// schedule add|list|show|pause|resume|rm, gate add|list|show|rm, tick.
#include "cli/commands.hpp"

namespace taskq::cli {

void register_schedule(CLI::App& app, Context& ctx) {
  (void)app;
  (void)ctx;
}

} // namespace taskq::cli
