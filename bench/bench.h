/* SPDX-License-Identifier: MIT */
/* bench.h: shared helpers for the allocator micro-benchmarks.
 *
 * Allocator selection (compile time):
 *   default          BENCH_MALLOC/BENCH_FREE are malloc/free; whichever allocator the
 *                    process resolves `malloc` to is measured (glibc, or a preloaded one);
 *   -DBENCH_USE_MI   they are mi_malloc/mi_free from <mimalloc.h>; link the library that
 *                    should be measured (ours: -I<repo>/include -L<build> -lmimalloc).
 *
 * Every program prints one line starting with "RESULT " made of key=value fields separated by
 * single spaces; the shared-object paths come last. bench/benchlib/common.py parses it.
 */
#ifndef BENCH_H
#define BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef BENCH_USE_MI
#include <mimalloc.h>
#define BENCH_MALLOC(n) mi_malloc(n)
#define BENCH_FREE(p) mi_free(p)
#define BENCH_API "mi"
#define BENCH_ALLOC_SYMBOL "mi_malloc"
#else
#define BENCH_MALLOC(n) malloc(n)
#define BENCH_FREE(p) free(p)
#define BENCH_API "libc"
#define BENCH_ALLOC_SYMBOL "malloc"
#endif

/* Make the compiler believe `p` (and memory) escapes, so allocation pairs are never elided. */
static inline void bench_escape(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

/* splitmix64: tiny, fast, deterministic; the same sequence on every machine. */
static inline uint64_t bench_rand(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* Uniform index in [0, n) from the high 32 bits of r (multiply-shift, no division). */
static inline size_t bench_index(uint64_t r, size_t n) {
  return (size_t)(((r >> 32) * (uint64_t)n) >> 32);
}

/* The request-size distribution, precomputed so that drawing a size in the timed loop is one
 * table load: 65% in 8..64 bytes, 30% in 65..512, 5% in 513..4096 (uniform inside each band). */
#define BENCH_SIZE_TABLE 4096 /* power of two; index with r & (BENCH_SIZE_TABLE-1) */
static inline void bench_size_table_init(uint32_t *table, uint64_t seed) {
  uint64_t s = seed ^ UINT64_C(0x5A5A5A5A5A5A5A5A);
  for (size_t i = 0; i < BENCH_SIZE_TABLE; i++) {
    uint64_t band = bench_index(bench_rand(&s), 100);
    uint64_t r = bench_rand(&s);
    uint32_t size;
    if (band < 65) size = 8 + (uint32_t)bench_index(r, 57);          /* 8..64 */
    else if (band < 95) size = 65 + (uint32_t)bench_index(r, 448);   /* 65..512 */
    else size = 513 + (uint32_t)bench_index(r, 3584);                /* 513..4096 */
    table[i] = size;
  }
}

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Path of the shared object (or executable) that defines `symbol` as this process resolves it,
 * i.e. the allocator that the benchmark really calls. */
static inline const char *bench_symbol_origin(const char *symbol) {
  Dl_info info;
  void *addr = dlsym(RTLD_DEFAULT, symbol);
  if (addr == NULL) return "none";
  if (dladdr(addr, &info) == 0 || info.dli_fname == NULL || info.dli_fname[0] == 0) return "?";
  return info.dli_fname;
}

/* mi_version() of whatever mimalloc-compatible library is loaded, or 0 if none. */
static inline int bench_mi_version(void) {
  void *addr = dlsym(RTLD_DEFAULT, "mi_version");
  int (*fn)(void);
  if (addr == NULL) return 0;
  memcpy(&fn, &addr, sizeof fn); /* object pointer -> function pointer without a cast warning */
  return fn();
}

/* Print the identification fields of the RESULT line (ends the line). */
static inline void bench_print_origin(void) {
  printf(" api=%s mi_version=%d alloc_from=%s malloc_from=%s\n", BENCH_API, bench_mi_version(),
         bench_symbol_origin(BENCH_ALLOC_SYMBOL), bench_symbol_origin("malloc"));
  fflush(stdout);
}

static inline unsigned long long bench_arg(const char *s, const char *what) {
  char *end = NULL;
  unsigned long long v = strtoull(s, &end, 0);
  if (end == s || *end != 0 || v == 0) {
    fprintf(stderr, "bad %s: '%s' (expected a positive integer)\n", what, s);
    exit(2);
  }
  return v;
}

#endif /* BENCH_H */
