#pragma once

// Internal to web/: GNU libmicrohttpd, the HTTP server `taskq serve` runs
// on, loaded when `serve` starts (mhd()), as storage/pg/libpq.cpp loads
// libpq: linked in, it and the TLS libraries it needs would cost every
// other command their start-up.

#include <microhttpd.h>

namespace taskq::web {

#define TASKQ_MHD_FUNCTIONS(X)                                                 \
  X(MHD_start_daemon)                                                          \
  X(MHD_stop_daemon)                                                           \
  X(MHD_get_daemon_info)                                                       \
  X(MHD_get_connection_values)                                                 \
  X(MHD_get_connection_info)                                                   \
  X(MHD_create_response_from_buffer)                                           \
  X(MHD_create_response_from_callback)                                         \
  X(MHD_add_response_header)                                                   \
  X(MHD_queue_response)                                                        \
  X(MHD_destroy_response)

struct LibMhd {
#define X(name) decltype(&::name) name = nullptr;
  TASKQ_MHD_FUNCTIONS(X)
#undef X
};

// The functions of libmicrohttpd.so.12; unavailable when it cannot be
// loaded (the message names the Debian package).
const LibMhd& mhd();

} // namespace taskq::web
