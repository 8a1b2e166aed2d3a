/* SPDX-License-Identifier: MIT */
/* workload.h: helpers shared by the workload programs of bench/workloads/ (see bench.h for the
 * random numbers, the clock and the RESULT line): the data checks every program runs on its
 * blocks, and running one job per thread. */
#ifndef WORKLOAD_H
#define WORKLOAD_H

#include "../bench.h"
#include <pthread.h>
#include <stdbool.h>

/* A 64-bit finaliser (murmur3's constants): spreads every input bit over the output. */
static inline uint64_t wl_mix64(uint64_t x) {
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  x *= UINT64_C(0xc4ceb9fe1a85ec53);
  x ^= x >> 33;
  return x;
}

/* Tag stamps, for blocks whose size and tag the program remembers: a block of 16 bytes or more
 * holds `tag` in its first and last 8 bytes, a smaller one is filled with the tag's low byte. */
static inline void wl_stamp(unsigned char *p, size_t size, uint64_t tag) {
  if (size >= 16) {
    memcpy(p, &tag, 8);
    memcpy(p + size - 8, &tag, 8);
  } else {
    memset(p, (int)(tag & 0xFF), size);
  }
}

static inline bool wl_stamp_ok(const unsigned char *p, size_t size, uint64_t tag) {
  if (size >= 16) {
    uint64_t a, b;
    memcpy(&a, p, 8);
    memcpy(&b, p + size - 8, 8);
    return a == tag && b == tag;
  }
  for (size_t i = 0; i < size; i++)
    if (p[i] != (unsigned char)(tag & 0xFF)) return false;
  return true;
}

/* Self-describing blocks, for blocks that travel without their size (between threads, through
 * queues): the first word is a hash of the size in the high half and the size in the low half,
 * the last word its complement. */
#define WL_BLK_MAGIC UINT64_C(0x5bd1e9955bd1e995)

static inline uint64_t wl_blk_hdr(size_t size) {
  return (wl_mix64((uint64_t)size ^ WL_BLK_MAGIC) & UINT64_C(0xffffffff00000000)) | (uint64_t)size;
}

static inline void wl_blk_fill(void *p, size_t size) {
  uint64_t h = wl_blk_hdr(size), t = ~h;
  memcpy(p, &h, 8);
  memcpy((char *)p + size - 8, &t, 8);
}

/* Verify a block written by wl_blk_fill whose size must lie in [min, max]; returns its header.
 * On a mismatch prints "CORRUPT <prog>: ..." and exits 1. */
static inline uint64_t wl_blk_check(const void *p, size_t min, size_t max, const char *prog,
                                    const char *where) {
  uint64_t h, t;
  memcpy(&h, p, 8);
  size_t size = (size_t)(h & 0xffffffffu);
  if (size < min || size > max || h != wl_blk_hdr(size)) {
    fprintf(stderr, "CORRUPT %s: bad header %016llx at %p (%s)\n", prog, (unsigned long long)h, p,
            where);
    exit(1);
  }
  memcpy(&t, (const char *)p + size - 8, 8);
  if (t != ~h) {
    fprintf(stderr, "CORRUPT %s: bad trailer %016llx at %p size %zu (%s)\n", prog,
            (unsigned long long)t, p, size, where);
    exit(1);
  }
  return h;
}

/* Run fn on each of the n jobs (an array of job_size-byte elements), one thread per job, and
 * wait for all; a single job runs on the calling thread. Exits 1 if a thread cannot start. */
static inline void wl_run_jobs(void *jobs, size_t job_size, size_t n, void *(*fn)(void *),
                               const char *prog) {
  if (n == 1) {
    fn(jobs);
    return;
  }
  pthread_t *th = calloc(n, sizeof *th);
  if (th == NULL) exit(1);
  for (size_t i = 0; i < n; i++) {
    if (pthread_create(&th[i], NULL, fn, (char *)jobs + i * job_size) != 0) {
      fprintf(stderr, "%s: pthread_create failed\n", prog);
      exit(1);
    }
  }
  for (size_t i = 0; i < n; i++) pthread_join(th[i], NULL);
  free(th);
}

#endif /* WORKLOAD_H */
