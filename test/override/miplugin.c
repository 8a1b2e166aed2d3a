/* SPDX-License-Identifier: MIT */
/* miplugin.c -- libov-miplugin.so: a library that links libmimalloc.so (DT_NEEDED) and uses the
   mi_ API, for dlopen-mimalloc.c, whose program neither links nor preloads libmimalloc. */
#define _GNU_SOURCE
#include <pthread.h>

#include "ov.h"

void* miplugin_malloc(size_t size, uint64_t seed) {
  void* p = mi_malloc(size < OV_HDR ? OV_HDR : size);
  if (p != NULL) ov_stamp(p, (size < OV_HDR ? OV_HDR : size), seed);
  return p;
}
void miplugin_free(void* p) { mi_free(p); }
bool miplugin_owns(const void* p) { return mi_is_in_heap_region(p); }
size_t miplugin_usable(const void* p) { return mi_usable_size(p); }

/* what the library's own plain malloc/free calls bind to (the global scope decides) */
void* miplugin_plain_malloc(size_t size) { return malloc(size); }
void miplugin_plain_free(void* p) { free(p); }
void* miplugin_plain_malloc_addr(void) { return (void*)&malloc; }

/* threads of the library's own, trading mi_malloc blocks through shared slots */
#define NSLOTS 256
static _Atomic(void*) slots[NSLOTS];
static _Atomic(long) errors;
static int run_iters;

static void* runner(void* arg) {
  test_rng_t rng = { (uint64_t)(uintptr_t)arg };
  for (int k = 0; k < run_iters; k++) {
    const size_t i = (size_t)test_rand_below(&rng, NSLOTS);
    void* p = miplugin_malloc((size_t)test_rand_range(&rng, OV_HDR, (k % 100 == 0 ? 200000 : 1000)), test_rand(&rng));
    if (p == NULL || !mi_is_in_heap_region(p)) atomic_fetch_add(&errors, 1);
    p = atomic_exchange(&slots[i], p);
    if (p != NULL) {
      if (!ov_verify(p) || mi_usable_size(p) < ov_size(p)) atomic_fetch_add(&errors, 1);
      mi_free(p);
    }
  }
  return NULL;
}

/* Returns the number of errors seen. */
long miplugin_run(int nthreads, int iters) {
  pthread_t t[16];
  if (nthreads > 16) nthreads = 16;
  run_iters = iters;
  atomic_store(&errors, 0);
  for (int i = 0; i < nthreads; i++) {
    if (pthread_create(&t[i], NULL, &runner, (void*)(uintptr_t)(i + 1)) != 0) atomic_fetch_add(&errors, 1000);
  }
  for (int i = 0; i < nthreads; i++) pthread_join(t[i], NULL);
  for (size_t i = 0; i < NSLOTS; i++) {
    void* p = atomic_exchange(&slots[i], NULL);
    if (p != NULL) { if (!ov_verify(p)) atomic_fetch_add(&errors, 1); mi_free(p); }
  }
  mi_collect(true);
  return atomic_load(&errors);
}
