#include "web/mhd.hpp"

#include "core/error.hpp"

#include <dlfcn.h>
#include <string>

namespace taskq::web {

const LibMhd& mhd() {
  static const LibMhd* loaded = nullptr;
  if (loaded != nullptr) {
    return *loaded;
  }
  const auto missing = [](const std::string& what) {
    return Error(ErrorKind::unavailable,
                 "cannot serve: " + what + " (install libmicrohttpd12)");
  };
  void* lib = ::dlopen("libmicrohttpd.so.12", RTLD_LAZY | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = ::dlerror();
    throw missing(why == nullptr ? "cannot load libmicrohttpd.so.12" : why);
  }
  static LibMhd table;
#define X(name)                                                                \
  table.name = reinterpret_cast<decltype(table.name)>(::dlsym(lib, #name));    \
  if (table.name == nullptr) {                                                 \
    throw missing("libmicrohttpd.so.12 has no " #name);                        \
  }
  TASKQ_MHD_FUNCTIONS(X)
#undef X
  loaded = &table;
  return table;
}

} // namespace taskq::web
