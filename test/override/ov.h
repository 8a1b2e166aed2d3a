/* SPDX-License-Identifier: MIT */
/* ov.h -- helpers shared by the drop-in override tests (test/override/).

   Every program here is built either linked against libmimalloc.so (its malloc resolves to
   ours through DT_NEEDED) or plain, with OV_PRELOADED defined, and run under
   LD_PRELOAD=libmimalloc.so. Plain builds reference the few mi_ functions they use as weak
   symbols, so they link without the library; ov_require_override() fails the program early
   when the library is not there.

   Also: block patterns that carry their own size and seed (so any thread can verify a block it
   did not allocate), a clock, waiting for a child with a timeout, and running this program
   again as a child with a changed environment while capturing its stdout and stderr.

   Each including .c file defines _GNU_SOURCE before any include. */
#ifndef OV_H
#define OV_H

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if !defined(__GLIBC__)
/* musl has no pvalloc: the allocator's (weak here, so programs run without it still link) */
void* pvalloc(size_t size) __attribute__((weak));
#endif

#include "mimalloc.h"
#include "testing.h"

#ifdef OV_PRELOADED
/* resolved by the dynamic linker from the preloaded library, or NULL without it */
#pragma weak mi_is_in_heap_region
#pragma weak mi_collect
#pragma weak mi_version
#pragma weak mi_option_get
#pragma weak mi_option_enable
#pragma weak mi_abandoned_visit_blocks
#pragma weak mi_malloc
#pragma weak mi_free
#pragma weak mi_usable_size
#endif

/* suffix of the test name in summaries: which variant ran */
#ifdef OV_PRELOADED
#define OV_SUFFIX "-preload"
#else
#define OV_SUFFIX ""
#endif

#define OV_KiB ((size_t)1024)
#define OV_MiB (OV_KiB * OV_KiB)

static inline uint64_t ov_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* The library is there and malloc is ours: otherwise every later check is meaningless. */
static inline void ov_require_override(const char* name) {
#ifdef OV_PRELOADED
  if ((void*)&mi_version == NULL || (void*)&mi_is_in_heap_region == NULL) {
    printf("FAIL %s: libmimalloc is not loaded (run with LD_PRELOAD=libmimalloc.so)\n", name);
    fflush(stdout);
    exit(2);
  }
#endif
  void* volatile p = malloc(24);
  const bool ours = mi_is_in_heap_region(p);
  free(p);
  if (!ours) {
    printf("FAIL %s: malloc is not served by libmimalloc\n", name);
    fflush(stdout);
    exit(2);
  }
}

/* ---------------------------------------------------------------------------------------
   Self-describing blocks: [size][seed][pattern...]. Any thread can check a block it did not
   make, and a block of at least 16 bytes shows if it was overwritten or handed out twice.
--------------------------------------------------------------------------------------- */
static inline uint8_t ov_pat(uint64_t seed, size_t i) { return (uint8_t)(seed * 167 + i * 13 + (i >> 8)); }

static inline void ov_fill(void* p, size_t n, uint64_t seed) {
  uint8_t* b = (uint8_t*)p;
  for (size_t i = 0; i < n; i++) b[i] = ov_pat(seed, i);
}
/* index of the first byte that differs from the pattern, or n */
static inline size_t ov_first_bad(const void* p, size_t n, uint64_t seed) {
  const uint8_t* b = (const uint8_t*)p;
  for (size_t i = 0; i < n; i++) if (b[i] != ov_pat(seed, i)) return i;
  return n;
}
#define OV_CHECK_PATTERN(p, n, seed) \
  do { size_t bad_ = ov_first_bad((p), (n), (seed)); \
       CHECK_MSG(bad_ == (size_t)(n), "pattern broken at byte %zu of %zu (block %p)", bad_, (size_t)(n), (const void*)(p)); } while (0)

#define OV_HDR (2 * sizeof(uint64_t))

/* Blocks above 8 KiB carry the pattern only in their first and last 4 KiB and in 64 bytes of
   every 4 KiB between: enough to see damage, cheap enough for multi-megabyte blocks in tight
   loops. Calls fn(offset, length) for each patterned range of the body. */
#define OV_FOR_RANGES(size, off, len, body) \
  do { \
    const size_t sz_ = (size); \
    if (sz_ <= 8192) { size_t off = OV_HDR, len = sz_ - OV_HDR; body; } \
    else { \
      { size_t off = OV_HDR, len = 4096 - OV_HDR; body; } \
      for (size_t o_ = 4096; o_ + 64 <= sz_ - 4096; o_ += 4096) { size_t off = o_, len = 64; body; } \
      { size_t off = sz_ - 4096, len = 4096; body; } \
    } \
  } while (0)

/* stamp a block of `size` (>= OV_HDR) bytes with its header and pattern */
static inline void ov_stamp(void* p, size_t size, uint64_t seed) {
  uint64_t* h = (uint64_t*)p;
  h[0] = size;
  h[1] = seed;
  OV_FOR_RANGES(size, off, len, ov_fill((uint8_t*)p + off, len, seed + off));
}
static inline void* ov_make(size_t size, uint64_t seed) {
  if (size < OV_HDR) size = OV_HDR;
  void* p = malloc(size);
  if (p != NULL) ov_stamp(p, size, seed);
  return p;
}
/* the block's stamp is intact, checked over the first `limit` bytes */
static inline bool ov_verify_prefix(const void* p, size_t limit, uint64_t seed) {
  bool ok = true;
  OV_FOR_RANGES(((const uint64_t*)p)[0], off, len,
    if (off < limit) { const size_t n_ = (off + len <= limit ? len : limit - off);
                       ok = ok && ov_first_bad((const uint8_t*)p + off, n_, seed + off) == n_; });
  return ok;
}
/* the block's stamp is intact */
static inline bool ov_verify(const void* p) {
  const uint64_t* h = (const uint64_t*)p;
  const size_t size = (size_t)h[0];
  if (size < OV_HDR || size > 256 * OV_MiB) return false;
  return ov_verify_prefix(p, size, h[1]);
}
static inline size_t ov_size(const void* p) { return (size_t)((const uint64_t*)p)[0]; }

/* ---------------------------------------------------------------------------------------
   Children
--------------------------------------------------------------------------------------- */
/* Wait for pid at most timeout_ms. Returns true with *status set when it ended; on a timeout
   kills it (SIGKILL), reaps it and returns false. */
static inline bool ov_wait(pid_t pid, uint64_t timeout_ms, int* status) {
  const uint64_t deadline = ov_now_ms() + timeout_ms;
  for (;;) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) { *status = -1; return true; }
    if (ov_now_ms() >= deadline) break;
    usleep(1000);
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) { }
  return false;
}

/* A readable description of a wait status, for failure messages. */
static inline const char* ov_status_str(int status, char* buf, size_t n) {
  if (WIFEXITED(status)) snprintf(buf, n, "exit status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else snprintf(buf, n, "wait status 0x%x", (unsigned)status);
  return buf;
}

typedef struct ov_run_s {
  int    status;       /* wait status */
  bool   timed_out;
  size_t out_len, err_len;
  char   out[65536];   /* stdout (truncated, NUL-terminated) */
  char   err[65536];   /* stderr */
} ov_run_t;

static inline void ov_drain(int* fd, char* buf, size_t cap, size_t* len) {
  char tmp[4096];
  ssize_t n = read(*fd, tmp, sizeof(tmp));
  if (n > 0) {
    size_t k = (size_t)n;
    if (*len + k > cap - 1) k = cap - 1 - *len;
    memcpy(buf + *len, tmp, k);
    *len += k;
    buf[*len] = 0;
  }
  else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    close(*fd);
    *fd = -1;
  }
}

/* Run this program again (/proc/self/exe) with argv, after applying env: a NULL-terminated
   list of "NAME=value" to set and "NAME" to remove. stdout and stderr are captured. Must be
   called while the process is single-threaded (it forks before exec). */
static inline void ov_run_self(char* const argv[], const char* const env[], uint64_t timeout_ms, ov_run_t* run) {
  int po[2], pe[2];
  memset(run, 0, sizeof(*run));
  if (pipe2(po, O_CLOEXEC) != 0 || pipe2(pe, O_CLOEXEC) != 0) { perror("pipe"); exit(2); }
  fflush(stdout); fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); exit(2); }
  if (pid == 0) {
    dup2(po[1], 1);
    dup2(pe[1], 2);
    for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
      const char* eq = strchr(env[i], '=');
      if (eq == NULL) unsetenv(env[i]);
      else {
        char name[128];
        size_t k = (size_t)(eq - env[i]);
        if (k >= sizeof(name)) k = sizeof(name) - 1;
        memcpy(name, env[i], k); name[k] = 0;
        setenv(name, eq + 1, 1);
      }
    }
    execv("/proc/self/exe", argv);
    _exit(127);
  }
  close(po[1]); close(pe[1]);
  const uint64_t deadline = ov_now_ms() + timeout_ms;
  int fo = po[0], fe = pe[0];
  while (fo >= 0 || fe >= 0) {
    const uint64_t now = ov_now_ms();
    if (now >= deadline) break;
    struct pollfd fds[2] = { { fo, POLLIN, 0 }, { fe, POLLIN, 0 } };
    int r = poll(fds, 2, (int)(deadline - now));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (fo >= 0 && fds[0].revents != 0) ov_drain(&fo, run->out, sizeof(run->out), &run->out_len);
    if (fe >= 0 && fds[1].revents != 0) ov_drain(&fe, run->err, sizeof(run->err), &run->err_len);
  }
  if (fo >= 0) close(fo);
  if (fe >= 0) close(fe);
  const uint64_t now = ov_now_ms();
  run->timed_out = !ov_wait(pid, (now < deadline ? deadline - now : 1), &run->status);
}

/* number of (non-overlapping) occurrences of needle in hay */
static inline size_t ov_count(const char* hay, const char* needle) {
  size_t n = 0, k = strlen(needle);
  for (const char* s = strstr(hay, needle); s != NULL; s = strstr(s + k, needle)) n++;
  return n;
}

#endif
