// The sanitizer runtime's defaults, in every executable of a sanitizer
// tree (CMake option TASKQ_SANITIZE adds this file to each executable
// that links taskq_warnings, which all of ours do), wherever it starts:
// the CLI suites start taskq with a clean environment, so ASAN_OPTIONS
// would not reach it. ASAN_OPTIONS still adds to these.
//
// intercept_tls_get_addr=0: up to GCC 13 and LLVM 16, the runtime's
// __tls_get_addr hook takes a thread-local block that malloc happened to
// place 16 bytes past a page boundary for one with glibc 2.19's header, and
// LeakSanitizer then scans the range the two words before it name. Its
// tracer dies at exit ("Tracer caught signal 11", "LeakSanitizer has
// encountered a fatal error"), as a `multihost` worker's did once in CI
// (clang 14). Leaks are still looked for; the blocks of thread-locals that
// libraries allocate are no longer scanned for pointers into the heap.

extern "C" const char* __asan_default_options();
extern "C" const char* __asan_default_options() {
  return "intercept_tls_get_addr=0";
}
