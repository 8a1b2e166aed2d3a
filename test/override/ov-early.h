/* SPDX-License-Identifier: MIT */
/* ov-early.h -- the allocation exercise run before libmimalloc's constructor: from the
   executable's .preinit_array (preinit.c) and from the constructor of libov-early.so
   (early.c). Both include this file; each copy counts its own checks (testing.h counters are
   per translation unit), so the library exports its counts for main to check.

   The blocks in `keep` are left allocated for main to verify, reallocate and free, partly from
   another thread. */
#ifndef OV_EARLY_H
#define OV_EARLY_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testing.h"

/* Weak, so the early library needs no DT_NEEDED on libmimalloc (which would make the loader
   run libmimalloc's constructor first); resolved from the global scope at load time. */
extern bool mi_is_in_heap_region(const void* p) __attribute__((weak));

#define OV_EARLY_KEEP 8

typedef struct ov_early_s {
  bool  ran;
  int   checks, failures;
  void* keep[OV_EARLY_KEEP];        /* live blocks for main */
  size_t keep_size[OV_EARLY_KEEP];
  uint8_t keep_seed[OV_EARLY_KEEP];
} ov_early_t;

static inline bool ov_early_ours(const void* p) {
  return (p != NULL && mi_is_in_heap_region != NULL && mi_is_in_heap_region(p));
}

static inline void ov_early_fill(void* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) ((uint8_t*)p)[i] = (uint8_t)(seed + i * 7);
}
static inline bool ov_early_intact(const void* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i++) if (((const uint8_t*)p)[i] != (uint8_t)(seed + i * 7)) return false;
  return true;
}

static void ov_early_exercise(ov_early_t* st, uint8_t seed) {
  CHECK_MSG(mi_is_in_heap_region != NULL, "mi_is_in_heap_region is not resolved: libmimalloc not loaded");

  /* malloc of a spread of sizes, filled and read back */
  static const size_t sizes[] = { 1, 24, 100, 1000, 5000, 70000, 600000, 5u << 20 };
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    uint8_t* p = (uint8_t*)malloc(sizes[i]);
    CHECK_MSG(ov_early_ours(p), "malloc(%zu) = %p is not in our heap", sizes[i], (void*)p);
    if (p == NULL) continue;
    ov_early_fill(p, sizes[i], (uint8_t)(seed + i));
    CHECK(ov_early_intact(p, sizes[i], (uint8_t)(seed + i)));
    if (i < OV_EARLY_KEEP) {
      st->keep[i] = p; st->keep_size[i] = sizes[i]; st->keep_seed[i] = (uint8_t)(seed + i);
    }
    else free(p);
  }

  /* calloc: zeroed and ours */
  uint8_t* c = (uint8_t*)calloc(1000, 3);
  CHECK_MSG(ov_early_ours(c), "calloc = %p is not in our heap", (void*)c);
  if (c != NULL) {
    bool zero = true;
    for (size_t i = 0; i < 3000; i++) zero = zero && (c[i] == 0);
    CHECK_MSG(zero, "calloc block is not zeroed");
  }

  /* realloc: grow (moves), keeps the contents */
  if (c != NULL) {
    ov_early_fill(c, 3000, 3);
    uint8_t* r = (uint8_t*)realloc(c, 300000);
    CHECK_MSG(ov_early_ours(r), "realloc = %p is not in our heap", (void*)r);
    if (r != NULL) { CHECK(ov_early_intact(r, 3000, 3)); c = r; }
    free(c);
  }
  void* r0 = realloc(NULL, 77);   /* realloc(NULL) is malloc */
  CHECK(ov_early_ours(r0));
  free(r0);

  /* posix_memalign */
  void* a = NULL;
  int err = posix_memalign(&a, 4096, 10000);
  CHECK_EQ(err, 0);
  CHECK_MSG(ov_early_ours(a), "posix_memalign = %p is not in our heap", a);
  CHECK_ALIGNED(a, 4096);
  if (a != NULL) { ov_early_fill(a, 10000, 9); CHECK(ov_early_intact(a, 10000, 9)); }
  free(a);

  /* strdup */
  char* s = strdup("allocated before the allocator's constructor");
  CHECK_MSG(ov_early_ours(s), "strdup = %p is not in our heap", (void*)s);
  if (s != NULL) CHECK(strcmp(s, "allocated before the allocator's constructor") == 0);
  free(s);
  free(NULL);

  st->ran = true;
  st->checks = (int)test_check_count();
  st->failures = (int)test_failure_count();
}

#endif
