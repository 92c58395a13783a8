/* LD_PRELOAD shim for tests/cli/stream.sh: holds fdatasync and fsync made
 * by any thread but the process's main one (so `run --stream`'s WAL sync
 * thread, which makes its commits durable: its main thread only syncs for
 * SQLite's own WAL header and checkpoints, left alone so that the commits
 * go on) while the file named by $STALL_GATE exists. When it starts holding
 * one it creates $STALL_GATE.held, so the test can await that instead of
 * guessing how long a sync takes. With $STALL_FAIL set, those syncs fail
 * with EIO instead. Without either it only passes the calls on. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void hold(void) {
  const char* gate = getenv("STALL_GATE");
  if (gate == NULL || access(gate, F_OK) != 0 || gettid() == getpid()) {
    return;
  }
  char held[4096];
  snprintf(held, sizeof held, "%s.held", gate);
  const int fd = open(held, O_WRONLY | O_CREAT, 0644);
  if (fd >= 0) {
    close(fd);
  }
  while (access(gate, F_OK) == 0) {
    usleep(10 * 1000); /* the test removes the gate, or kills us */
  }
}

/* Holds (or fails), then calls the C library's `name` (the next definition
 * of it). */
static int held_sync(const char* name, int fd) {
  int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, name);
  if (getenv("STALL_FAIL") != NULL && gettid() != getpid()) {
    errno = EIO;
    return -1;
  }
  hold();
  return real(fd);
}

int fdatasync(int fd) {
  return held_sync("fdatasync", fd);
}

int fsync(int fd) {
  return held_sync("fsync", fd);
}
