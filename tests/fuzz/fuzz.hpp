// Shared by the libFuzzer targets in tests/fuzz: each target defines
// LLVMFuzzerTestOneInput and states its properties with FUZZ_REQUIRE, which
// aborts (a crash libFuzzer reports, with the input saved) when one fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_REQUIRE(condition)                                                \
  do {                                                                         \
    if (!(condition)) {                                                        \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, \
                   #condition);                                                \
      std::abort();                                                            \
    }                                                                          \
  } while (false)

namespace taskq::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Takes bytes from the front of the input for the choices a target makes
// (which parser, a clock value), leaving the rest as the text.
class Bytes {
public:
  Bytes(const uint8_t* data, size_t size) : m_data(data), m_size(size) {}

  uint8_t byte() {
    if (m_size == 0) {
      return 0;
    }
    --m_size;
    return *m_data++;
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
      v = v << 8 | byte();
    }
    return v;
  }
  std::string_view rest() const { return as_text(m_data, m_size); }

private:
  const uint8_t* m_data;
  size_t m_size;
};

} // namespace taskq::fuzz
