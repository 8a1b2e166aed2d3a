/* SPDX-License-Identifier: MIT */
/* fi-workload.c -- the program the OS-failure sweep runs (test/failinject/sweep.py), in a build
   with MI_FAIL_INJECT (src/prim/failinject.c): a deterministic mix of small, large, huge and
   aligned allocations, calloc, realloc (grow and shrink), first-class heaps (delete and
   destroy), threads run one after another that leave blocks behind for the main thread to
   free, and mi_collect; every block carries a pattern derived from its address and size.

   Rules checked whatever primitive call fails (MIMALLOC_TEST_FAIL):
   - an allocation succeeds or returns NULL with errno ENOMEM; a failed realloc leaves the
     old block intact;
   - every pattern is intact when checked (after each phase, and before each free); calloc and
     mi_zalloc memory reads as zero;
   - with argument "strict" (a single failing call, or a window of them, is over by then): an
     allocation retried right after a NULL succeeds;
   - at the end, after freeing everything and mi_collect(true), a small, a large and a huge
     allocation succeed (retried once: the failing call may be theirs; 5 times without strict,
     where failures may go on).
   Prints at the end one line the driver compares with a run without failure:
     "fi-workload: nulls N reserved R committed C vsz V"
   (reserved/committed: mi_stats_get's current values; vsz: /proc/self/statm's address space.)
   With "concurrent" also CONC_THREADS threads at the same time, each allocating, reallocating,
   checking and freeing its own blocks, leaving some to the main thread (not deterministic:
   for the probability runs).
   Usage: fi-workload [strict] [concurrent] [scale] */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <mimalloc.h>
#include <mimalloc-stats.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testing.h"

#define KiB ((size_t)1024)
#define MiB (KiB * KiB)

typedef struct block_s { uint8_t* p; size_t size; mi_heap_t* heap; } block_t;

#define MAX_BLOCKS 20000
static block_t blocks[MAX_BLOCKS];   /* static: the bookkeeping allocates nothing */
static size_t  nblocks;
static bool    concurrent;
static _Atomic(size_t) nulls;
static bool    strict;
static uint64_t rng = 0x1234567;

static uint64_t rnd(void) {   /* xorshift64: the same sequence in every run */
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return rng;
}

static uint8_t pat(const uint8_t* p, size_t size, size_t i) {
  return (uint8_t)(((uintptr_t)p >> 4) ^ (size * 31) ^ (i * 7) ^ (i >> 9));
}

/* a large block: the pattern on its first and last 4 KiB and every 4 KiB (touching each page
   costs as much as the whole fill; the checks still see every OS page) */
static bool pat_index(size_t size, size_t i) {
  return (size <= 64 * KiB || i < 4 * KiB || i + 4 * KiB >= size || (i % (4 * KiB)) < 8);
}

static void fill(uint8_t* p, size_t size) {
  for (size_t i = 0; i < size; i++) {
    if (pat_index(size, i)) p[i] = pat(p, size, i);
    else if (i % (4 * KiB) == 8) i += 4 * KiB - 9;
  }
}

static bool intact(const uint8_t* p, size_t size) {
  for (size_t i = 0; i < size; i++) {
    if (pat_index(size, i)) { if (p[i] != pat(p, size, i)) return false; }
    else if (i % (4 * KiB) == 8) i += 4 * KiB - 9;
  }
  return true;
}

static bool zero(const uint8_t* p, size_t size) {
  for (size_t i = 0; i < size; i++) if (p[i] != 0) return false;
  return true;
}

/* NULL is allowed with ENOMEM; strict: the same call right after it must succeed */
typedef void* (alloc_fun)(mi_heap_t* heap, size_t size, size_t align);
static void* a_malloc(mi_heap_t* h, size_t s, size_t a)  { (void)a; return (h ? mi_heap_malloc(h, s) : mi_malloc(s)); }
static void* a_zalloc(mi_heap_t* h, size_t s, size_t a)  { (void)a; return (h ? mi_heap_zalloc(h, s) : mi_calloc(1, s)); }
static void* a_aligned(mi_heap_t* h, size_t s, size_t a) { return (h ? mi_heap_malloc_aligned(h, s, a) : mi_malloc_aligned(s, a)); }

static void* try_alloc(alloc_fun* f, mi_heap_t* heap, size_t size, size_t align, bool zeroed) {
  errno = 0;
  uint8_t* p = (uint8_t*)f(heap, size, align);
  if (p == NULL) {
    CHECK_MSG(errno == ENOMEM, "size %zu align %zu: NULL with errno %d", size, align, errno);
    nulls++;
    if (!strict) return NULL;
    errno = 0;
    p = (uint8_t*)f(heap, size, align);
    CHECK_MSG(p != NULL, "size %zu align %zu: the allocation right after a failed one failed too (errno %d)", size, align, errno);
    if (p == NULL) return NULL;
  }
  if (align > 0) CHECK_ALIGNED(p, align);
  if (zeroed) CHECK_MSG(zero(p, size), "calloc/zalloc of %zu bytes at %p is not zero", size, (void*)p);
  fill(p, size);
  return p;
}

static void keep(uint8_t* p, size_t size, mi_heap_t* heap) {
  if (p == NULL) return;
  if (nblocks == MAX_BLOCKS) { CHECK(intact(p, size)); mi_free(p); return; }
  blocks[nblocks].p = p; blocks[nblocks].size = size; blocks[nblocks].heap = heap;
  nblocks++;
}

static void drop(size_t i) {
  CHECK_MSG(intact(blocks[i].p, blocks[i].size), "block %p of %zu bytes corrupted", (void*)blocks[i].p, blocks[i].size);
  mi_free(blocks[i].p);
  blocks[i] = blocks[--nblocks];
}

static void check_all(const char* phase) {
  size_t bad = 0;
  for (size_t i = 0; i < nblocks; i++) if (!intact(blocks[i].p, blocks[i].size)) bad++;
  CHECK_MSG(bad == 0, "after %s: %zu of %zu blocks corrupted", phase, bad, nblocks);
}

static size_t small_size(void) { return 1 + (size_t)(rnd() % 1024); }

static void phase_small(size_t n, mi_heap_t* heap) {
  for (size_t i = 0; i < n; i++) {
    const size_t size = small_size();
    keep((uint8_t*)try_alloc((i % 7 == 0 ? a_zalloc : a_malloc), heap, size, 0, (i % 7 == 0)), size, heap);
    if (nblocks > 0 && rnd() % 3 == 0) drop((size_t)(rnd() % nblocks));
  }
}

static void phase_sizes(const size_t* sizes, size_t count, bool zeroed) {
  for (size_t i = 0; i < count; i++) {
    keep((uint8_t*)try_alloc(zeroed ? a_zalloc : a_malloc, NULL, sizes[i], 0, zeroed), sizes[i], NULL);
  }
}

static void phase_aligned(void) {
  static const size_t aligns[] = { 16, 64, 4 * KiB, 64 * KiB, 1 * MiB, 4 * MiB, 32 * MiB };
  for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
    for (size_t size = 24; size <= 3 * MiB; size *= 11) {
      keep((uint8_t*)try_alloc(a_aligned, NULL, size, aligns[i], false), size, NULL);
    }
  }
}

static void phase_realloc(size_t n) {
  for (size_t k = 0; k < n && nblocks > 0; k++) {
    const size_t i = (size_t)(rnd() % nblocks);
    if (blocks[i].heap != NULL) continue;
    const size_t old = blocks[i].size;
    const size_t newsize = (rnd() % 4 == 0 ? 1 + old / 2 : old * 2 + (size_t)(rnd() % 5000));
    if (newsize > 64 * MiB) continue;
    CHECK(intact(blocks[i].p, old));
    errno = 0;
    uint8_t* q = (uint8_t*)mi_realloc(blocks[i].p, newsize);
    if (q == NULL) {
      CHECK_MSG(errno == ENOMEM, "realloc to %zu: NULL with errno %d", newsize, errno);
      CHECK_MSG(intact(blocks[i].p, old), "a failed realloc changed the old block");
      nulls++;
      continue;
    }
    /* the kept prefix is the old pattern; then the whole block gets the new one */
    const size_t keep_n = (old < newsize ? old : newsize);
    for (size_t j = 0; j < keep_n && j < 4 * KiB; j++) {
      if (pat_index(old, j) && q[j] != pat(blocks[i].p, old, j)) { CHECK_MSG(false, "realloc lost the contents"); break; }
    }
    fill(q, newsize);
    blocks[i].p = q; blocks[i].size = newsize;
  }
}

static void phase_heaps(void) {
  mi_heap_t* h = mi_heap_new();
  if (h == NULL) { CHECK(errno == ENOMEM); nulls++; return; }
  phase_small(2000, h);
  check_all("a heap's allocations");
  for (size_t i = 0; i < nblocks; ) { if (blocks[i].heap == h) blocks[i] = blocks[--nblocks]; else i++; }
  mi_heap_destroy(h);
  h = mi_heap_new();
  if (h == NULL) { CHECK(errno == ENOMEM); nulls++; return; }
  phase_small(2000, h);
  const size_t big = 5 * MiB;
  keep((uint8_t*)try_alloc(a_malloc, h, big, 0, false), big, h);
  mi_heap_delete(h);   /* its blocks move to the default heap: still ours to check and free */
  for (size_t i = 0; i < nblocks; i++) if (blocks[i].heap == h) blocks[i].heap = NULL;
}

/* threads one after another (deterministic): each allocates, frees half, and leaves the rest
   to the main thread (its pages are abandoned when it ends) */
static void* thread_main(void* arg) {
  (void)arg;
  phase_small(3000, NULL);
  static const size_t sizes[] = { 100 * KiB, 700 * KiB, 6 * MiB };
  phase_sizes(sizes, 3, false);
  return NULL;
}

static void phase_threads(size_t n) {
  for (size_t t = 0; t < n; t++) {
    pthread_t th;
    if (pthread_create(&th, NULL, &thread_main, NULL) != 0) { nulls++; continue; }   /* EAGAIN: its stack */
    pthread_join(th, NULL);
    for (size_t i = 0; i < nblocks / 3; i++) drop((size_t)(rnd() % nblocks));
  }
}

/* threads at the same time (mode "concurrent"): each allocates, checks and frees its own
   blocks at random (sizes up to 1 MiB, some aligned, some realloc'd), then leaves what it
   holds on a shared list that the main thread checks and frees after they ended */
#define CONC_THREADS 4
#define CONC_BLOCKS  1500
static pthread_mutex_t conc_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t conc_size(uint64_t* r) {
  *r ^= *r << 13; *r ^= *r >> 7; *r ^= *r << 17;
  const uint64_t x = *r;
  return ((x >> 40) % 16 == 0 ? 1 + (size_t)((x >> 8) % MiB) : 1 + (size_t)((x >> 8) % 2048));
}

static void* conc_main(void* arg) {
  uint64_t r = 0x9E3779B97F4A7C15ULL * (uint64_t)((uintptr_t)arg + 1);
  block_t mine[CONC_BLOCKS];
  size_t n = 0;
  for (size_t k = 0; k < 20000; k++) {
    const size_t size = conc_size(&r);
    const size_t align = ((r >> 20) % 8 == 0 ? (size_t)16 << ((r >> 24) % 12) : 0);
    uint8_t* p = (uint8_t*)try_alloc((align ? a_aligned : (r >> 30) % 5 == 0 ? a_zalloc : a_malloc), NULL, size, align, (!align && (r >> 30) % 5 == 0));
    if (p != NULL) {
      if (n == CONC_BLOCKS) { const size_t i = (size_t)((r >> 33) % n); CHECK(intact(mine[i].p, mine[i].size)); mi_free(mine[i].p); mine[i] = mine[--n]; }
      mine[n].p = p; mine[n].size = size; mine[n].heap = NULL; n++;
    }
    if (n > 0 && (r >> 50) % 16 == 0) {   /* realloc one */
      const size_t i = (size_t)((r >> 36) % n);
      const size_t newsize = conc_size(&r);
      CHECK(intact(mine[i].p, mine[i].size));
      errno = 0;
      uint8_t* q = (uint8_t*)mi_realloc(mine[i].p, newsize);
      if (q == NULL) { CHECK(errno == ENOMEM); CHECK(intact(mine[i].p, mine[i].size)); nulls++; }
      else { fill(q, newsize); mine[i].p = q; mine[i].size = newsize; }
    }
  }
  pthread_mutex_lock(&conc_lock);
  for (size_t i = 0; i < n; i++) {
    if (i % 2 == 0) keep(mine[i].p, mine[i].size, NULL);   /* for the main thread */
    else { CHECK(intact(mine[i].p, mine[i].size)); mi_free(mine[i].p); }
  }
  pthread_mutex_unlock(&conc_lock);
  return NULL;
}

static void phase_concurrent(void) {
  pthread_t th[CONC_THREADS];
  bool started[CONC_THREADS];
  for (size_t t = 0; t < CONC_THREADS; t++) started[t] = (pthread_create(&th[t], NULL, &conc_main, (void*)t) == 0);
  for (size_t t = 0; t < CONC_THREADS; t++) if (started[t]) pthread_join(th[t], NULL);
}

static size_t statm_vsz(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  unsigned long vsz = 0;
  if (fscanf(f, "%lu", &vsz) != 1) vsz = 0;
  fclose(f);
  return (size_t)vsz * (size_t)sysconf(_SC_PAGESIZE);
}

int main(int argc, char** argv) {
  size_t scale = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "strict") == 0) strict = true;
    else if (strcmp(argv[i], "concurrent") == 0) concurrent = true;
    else scale = (size_t)atol(argv[i]);
  }
  if (scale == 0) scale = 1;
  static const size_t large[] = { 70 * KiB, 200 * KiB, 513 * KiB, 1 * MiB, 3 * MiB + 5, 2 * MiB };
  static const size_t huge[]  = { 9 * MiB, 33 * MiB, 300 * MiB };
  for (size_t round = 0; round < scale; round++) {
    phase_small(6000, NULL);
    check_all("small allocations");
    phase_sizes(large, 6, false);
    phase_sizes(large, 6, true);
    phase_sizes(huge, 3, (round % 2) == 0);
    check_all("large and huge allocations");
    phase_aligned();
    check_all("aligned allocations");
    phase_realloc(3000);
    check_all("realloc");
    mi_collect(false);
    phase_heaps();
    check_all("heaps");
    phase_threads(3);
    check_all("threads");
    if (concurrent) { phase_concurrent(); check_all("concurrent threads"); }
    while (nblocks > nblocks / 2 + 1 && nblocks > 0) drop(nblocks - 1);
    mi_collect(true);
    check_all("collect");
    phase_sizes(huge, 2, true);   /* zeroed memory after the purges */
    check_all("after collect");
  }
  while (nblocks > 0) drop(nblocks - 1);
  mi_collect(true);

  /* the failure is over: these must work (retried once: the failing call may be theirs) */
  static const size_t after[] = { 48, 300 * KiB, 40 * MiB };
  for (size_t i = 0; i < 3; i++) {
    uint8_t* p = (uint8_t*)mi_malloc(after[i]);
    for (int k = 0; p == NULL && k < (strict ? 1 : 5); k++) p = (uint8_t*)mi_malloc(after[i]);
    CHECK_MSG(p != NULL, "an allocation of %zu bytes after the failure failed", after[i]);
    if (p != NULL) { fill(p, after[i]); CHECK(intact(p, after[i])); mi_free(p); }
  }
  mi_collect(true);

  mi_stats_t_decl(st);
  CHECK(mi_stats_get(&st));
  printf("fi-workload: nulls %zu reserved %lld committed %lld vsz %zu\n", (size_t)nulls,
         (long long)st.reserved.current, (long long)st.committed.current, statm_vsz());
  return test_summary("fi-workload", NULL);
}
