/* The recording wrapper of bench/compare_outputs (which compiles it with
 * -DREAL=... -DRECORDS=...). It runs the real taskq binary as its child
 * with the same argv (argv[0] included), stdin, environment and
 * descriptors, forwards every catchable signal to it, dies of the same
 * signal or exits with the same status, and writes one record per
 * invocation: the arguments, the exit status, stdout and stderr.
 *
 * Capturing without changing what the binary sees or what the caller gets:
 *  - a regular file: the bytes between the descriptor's offset before and
 *    after the run are read back (the binary writes to the file itself);
 *  - a pipe or socket: the binary writes to a pipe of ours, which the
 *    wrapper copies to the caller's as it comes (a reader gone: the pipe is
 *    closed, so the binary meets EPIPE as it would have);
 *  - /dev/null: the binary writes into a memory file instead (nobody reads
 *    it; the binary sees a regular file, and asks only isatty());
 *  - a terminal, another device or a closed descriptor: left alone, not
 *    captured.
 * Limits: the caller's $! is the wrapper's pid. SIGKILL reaches the binary
 * through the parent-death signal, SIGSTOP stops only the wrapper,
 * /proc/PID/fd of the wrapper does not show the binary's files, and a
 * handler's parent is the real binary (its /proc/PPID/exe is not $TASKQ).
 * Built with -DPASSTHROUGH, it records the arguments only and execs the
 * binary in its own pid, for the suites that stop, kill or inspect the
 * process they started. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t child = -1;
static int wake[2];
static const int fwd_sigs[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGUSR1,
                               SIGUSR2, SIGALRM, SIGCONT, SIGTSTP, SIGWINCH};

static void forward(int sig) {
  if (child > 0) kill(child, sig);
}
static void on_child(int sig) {
  int e = errno;
  (void)sig;
  if (write(wake[1], "c", 1) < 0) {
  }
  errno = e;
}

enum kind { K_CLOSED, K_FILE, K_PIPE, K_NULL, K_DEVICE, K_SAME };
static const char *kind_name[] = {"closed, not captured", "file", "pipe",
                                  "/dev/null", "device, not captured",
                                  "the same file or pipe as stdout"};

struct cap {
  int fd;
  enum kind kind;
  off_t pos0;
  int append;
  int r, w;   /* relay pipe (K_PIPE) */
  int mem;    /* memory file (K_NULL) */
  int open;   /* relay still reading */
  int broken; /* the caller's reader is gone */
  char *buf;
  size_t len, size;
};

static void keep(struct cap *c, const char *p, size_t n) {
  if (c->len + n > c->size) {
    c->size = (c->len + n) * 2 + 4096;
    c->buf = realloc(c->buf, c->size);
    if (!c->buf) abort();
  }
  memcpy(c->buf + c->len, p, n);
  c->len += n;
}

static void setup(struct cap *c, int fd) {
  struct stat st;
  memset(c, 0, sizeof *c);
  c->fd = fd;
  c->r = c->w = c->mem = -1;
  if (fstat(fd, &st) != 0) {
    c->kind = K_CLOSED;
  } else if (S_ISREG(st.st_mode)) {
    c->kind = K_FILE;
    c->append = (fcntl(fd, F_GETFL) & O_APPEND) != 0;
    c->pos0 = c->append ? st.st_size : lseek(fd, 0, SEEK_CUR);
  } else if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
      c->kind = K_DEVICE;
      return;
    }
    c->kind = K_PIPE;
    c->r = p[0];
    c->w = p[1];
    c->open = 1;
  } else if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
             minor(st.st_rdev) == 3) {
    c->kind = K_NULL;
    c->mem = memfd_create("stdout", MFD_CLOEXEC);
    if (c->mem < 0) c->kind = K_DEVICE;
  } else {
    c->kind = K_DEVICE;
  }
}

static void collect_file(struct cap *c) {
  struct stat st;
  off_t end;
  if (c->append)
    end = fstat(c->fd, &st) == 0 ? st.st_size : c->pos0;
  else
    end = lseek(c->fd, 0, SEEK_CUR);
  if (end <= c->pos0) return;
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", c->fd);
  int rfd = open(path, O_RDONLY | O_CLOEXEC);
  if (rfd < 0) return;
  char b[65536];
  off_t at = c->pos0;
  while (at < end) {
    size_t want = (size_t)(end - at) < sizeof b ? (size_t)(end - at) : sizeof b;
    ssize_t n = pread(rfd, b, want, at);
    if (n <= 0) break;
    keep(c, b, (size_t)n);
    at += n;
  }
  close(rfd);
}

static void collect_mem(struct cap *c) {
  char b[65536];
  off_t at = 0;
  ssize_t n;
  while ((n = pread(c->mem, b, sizeof b, at)) > 0) {
    keep(c, b, (size_t)n);
    at += n;
  }
}

/* Copies what the relay pipe holds to the caller; returns 0 at EOF. */
static int relay(struct cap *c, int blocking) {
  char b[65536];
  for (;;) {
    ssize_t n = read(c->r, b, sizeof b);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 1;
    if (n <= 0) {
      c->open = 0;
      return 0;
    }
    keep(c, b, (size_t)n);
    if (!c->broken) {
      for (ssize_t off = 0; off < n;) {
        ssize_t m = write(c->fd, b + off, (size_t)(n - off));
        if (m < 0 && errno == EINTR) continue;
        if (m < 0) { /* the reader is gone: so is ours, for the binary */
          c->broken = 1;
          break;
        }
        off += m;
      }
      if (c->broken) {
        close(c->r);
        c->open = 0;
        return 0;
      }
    }
    if (!blocking) continue;
  }
}

static void put(FILE *f, const struct cap *c, const char *name) {
  fprintf(f, "--- %s (%s), %zu bytes\n", name, kind_name[c->kind], c->len);
  if (c->len) {
    fwrite(c->buf, 1, c->len, f);
    if (c->buf[c->len - 1] != '\n') fputs("\n\\ no newline at end\n", f);
  }
}

static void put_args(FILE *f, int argc, char **argv) {
  fputs("$ taskq", f);
  for (int i = 1; i < argc; i++) {
    fputc(' ', f);
    fputc('\'', f);
    for (const char *p = argv[i]; *p; p++) {
      if (*p == '\'')
        fputs("'\\''", f);
      else if (*p == '\n')
        fputs("'$'\\n''", f);
      else
        fputc(*p, f);
    }
    fputc('\'', f);
  }
  fputc('\n', f);
}

int main(int argc, char **argv) {
  char rec[4096];
  int seq = 0;
  {
    char path[4096];
    snprintf(path, sizeof path, "%s/.seq", RECORDS);
    int sfd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (sfd >= 0 && flock(sfd, LOCK_EX) == 0) {
      char b[32] = {0};
      if (pread(sfd, b, sizeof b - 1, 0) > 0) seq = atoi(b);
      seq++;
      int n = snprintf(b, sizeof b, "%d\n", seq);
      if (ftruncate(sfd, 0) == 0 && pwrite(sfd, b, (size_t)n, 0) < 0) {
      }
    }
    if (sfd >= 0) close(sfd);
    snprintf(rec, sizeof rec, "%s/%06d", RECORDS, seq);
    FILE *f = fopen(rec, "w");
    if (f) {
      put_args(f, argc, argv);
      fputs("exit: none (the wrapper was killed first)\n", f);
      fclose(f);
    }
  }

#ifdef PASSTHROUGH
  {
    FILE *f = fopen(rec, "w");
    if (f) {
      put_args(f, argc, argv);
      fputs("exit: not recorded (pass-through)\n", f);
      fclose(f);
    }
    execv(REAL, argv);
    return 127;
  }
#endif
  struct cap out, err;
  int dup_err = 0;
  setup(&out, 1);
  setup(&err, 2);
  {
    struct stat a, b;
    if (out.kind == K_FILE && err.kind == K_FILE && fstat(1, &a) == 0 &&
        fstat(2, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
      err.kind = K_SAME;
    /* 2>&1 into a pipe: one relay for both, so their order is kept. */
    if (out.kind == K_PIPE && err.kind == K_PIPE && fstat(1, &a) == 0 &&
        fstat(2, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
      close(err.r);
      close(err.w);
      err.r = err.w = -1;
      err.open = 0;
      err.kind = K_SAME;
      dup_err = 1;
    }
  }
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) return 125;

  sigset_t all, old;
  sigemptyset(&all);
  for (size_t i = 0; i < sizeof fwd_sigs / sizeof *fwd_sigs; i++)
    sigaddset(&all, fwd_sigs[i]);
  sigaddset(&all, SIGCHLD);
  sigprocmask(SIG_BLOCK, &all, &old);
  pid_t parent = getpid();
  child = fork();
  if (child < 0) return 125;
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(137);
    if (out.kind == K_PIPE) dup2(out.w, 1);
    if (out.kind == K_NULL) dup2(out.mem, 1);
    if (err.kind == K_PIPE) dup2(err.w, 2);
    if (dup_err) dup2(out.w, 2);
    if (err.kind == K_NULL) dup2(err.mem, 2);
    sigprocmask(SIG_SETMASK, &old, NULL);
    execv(REAL, argv);
    _exit(127);
  }
  close(0);
  if (out.w >= 0) close(out.w);
  if (err.w >= 0) close(err.w);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = forward;
  for (size_t i = 0; i < sizeof fwd_sigs / sizeof *fwd_sigs; i++)
    sigaction(fwd_sigs[i], &sa, NULL);
  sa.sa_handler = on_child;
  sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  if (out.r >= 0) fcntl(out.r, F_SETFL, O_NONBLOCK);
  if (err.r >= 0) fcntl(err.r, F_SETFL, O_NONBLOCK);
  sigprocmask(SIG_SETMASK, &old, NULL);

  int status = 0;
  for (;;) {
    pid_t w = waitpid(child, &status, WNOHANG);
    if (w == child) break;
    struct pollfd p[3];
    int n = 0;
    p[n++] = (struct pollfd){.fd = wake[0], .events = POLLIN};
    if (out.open) p[n++] = (struct pollfd){.fd = out.r, .events = POLLIN};
    if (err.open) p[n++] = (struct pollfd){.fd = err.r, .events = POLLIN};
    if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR) break;
    char b[64];
    while (read(wake[0], b, sizeof b) > 0) {
    }
    if (out.open) relay(&out, 0);
    if (err.open) relay(&err, 0);
  }
  child = -1;
  if (out.open) relay(&out, 0);
  if (err.open) relay(&err, 0);
  if (out.open || err.open) {
    /* Something the binary started still holds the pipe: keep copying
     * for it, unrecorded, in the background. */
    if (fork() == 0) {
      if (out.r >= 0 && out.open) fcntl(out.r, F_SETFL, 0);
      if (err.r >= 0 && err.open) fcntl(err.r, F_SETFL, 0);
      out.len = err.len = 0;
      while (out.open || err.open) {
        struct pollfd p[2];
        int n = 0;
        if (out.open) p[n++] = (struct pollfd){.fd = out.r, .events = POLLIN};
        if (err.open) p[n++] = (struct pollfd){.fd = err.r, .events = POLLIN};
        if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR) break;
        if (out.open) relay(&out, 0);
        if (err.open) relay(&err, 0);
        out.len = err.len = 0;
      }
      _exit(0);
    }
  }
  if (out.kind == K_FILE) collect_file(&out);
  if (err.kind == K_FILE) collect_file(&err);
  if (out.kind == K_NULL) collect_mem(&out);
  if (err.kind == K_NULL) collect_mem(&err);

  FILE *f = fopen(rec, "w");
  if (f) {
    put_args(f, argc, argv);
    if (WIFSIGNALED(status))
      fprintf(f, "exit: signal %d\n", WTERMSIG(status));
    else
      fprintf(f, "exit: %d\n", WEXITSTATUS(status));
    put(f, &out, "stdout");
    put(f, &err, "stderr");
    fclose(f);
  }
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    return 128 + sig;
  }
  return WEXITSTATUS(status);
}
