/* SPDX-License-Identifier: MIT */
/* test-stress.c -- multi-threaded stress test.

   THREADS worker threads run at a time. Each performs ITERS steps; in each step it allocates a
   block of a random size (mostly small 8..1024 bytes, some medium up to 128 KiB, a few large up
   to 4 MiB, rarely huge up to 40 MiB) with a random entry point (mi_malloc, mi_zalloc and
   mi_calloc -- whose zeroing is verified --, mi_malloc_aligned -- whose alignment is verified),
   fills it with a pattern derived from its address and size, and swaps it into a random slot of
   an array shared by all threads. The block it displaces (usually allocated by another thread,
   often by one that has already exited) has its pattern verified and is then either freed or
   resized with mi_realloc (contents checked, pattern rewritten) and put back into a slot. So most
   frees are cross-thread.

   When a worker finishes, the main thread joins it and immediately starts a replacement, ROUNDS
   times per worker position, so threads end and are replaced while their blocks are still alive
   in the slots. At the end every remaining block is verified and freed.

   Usage: test-stress [threads=4] [rounds=10] [iters=50000] [seed=1]
   Each thread's pseudo-random sequence depends only on the seed and the thread's number.

   Built with MI_STRESS_CRT (Windows: the redirecting DLL's stress test), the same steps call the
   C runtime's malloc, calloc, realloc, free and _msize instead (the aligned entry stays
   mi_malloc_aligned: its blocks are freed with free too), and every block must be ours
   (mi_is_in_heap_region): without the redirection the test fails at the first allocation. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "mimalloc.h"
#include "testing.h"
#include "rss-guard.h"

#if defined(MI_STRESS_CRT)
#include <malloc.h>
#define ST_MALLOC(n)       malloc(n)
#define ST_ZALLOC(n)       calloc(1, n)
#define ST_CALLOC(n, s)    calloc(n, s)
#define ST_REALLOC(p, n)   realloc(p, n)
#define ST_FREE(p)         free(p)
#define ST_USABLE(p)       _msize((void*)(p))
#define ST_OURS(p)         mi_is_in_heap_region(p)
#define ST_API             "the C runtime's functions"
#elif defined(MI_STRESS_LIBC)
/* the C library's names, which the library overrides (Linux): with the profiler on from the
   start, malloc and calloc are its counted entry points */
#include <malloc.h>
#define ST_MALLOC(n)       malloc(n)
#define ST_ZALLOC(n)       calloc(1, n)
#define ST_CALLOC(n, s)    calloc(n, s)
#define ST_REALLOC(p, n)   realloc(p, n)
#define ST_FREE(p)         free(p)
#define ST_USABLE(p)       malloc_usable_size((void*)(p))
#define ST_OURS(p)         mi_is_in_heap_region(p)
#define ST_API             "malloc, calloc, realloc and free"
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"   /* the old address in realloc's messages (and
                                                       its free after a failed realloc) are meant */
#endif
#else
#define ST_MALLOC(n)       mi_malloc(n)
#define ST_ZALLOC(n)       mi_zalloc(n)
#define ST_CALLOC(n, s)    mi_calloc(n, s)
#define ST_REALLOC(p, n)   mi_realloc(p, n)
#define ST_FREE(p)         mi_free(p)
#define ST_USABLE(p)       mi_usable_size(p)
#define ST_OURS(p)         true
#define ST_API             "mi_ functions"
#endif

#define KiB ((size_t)1024)
#define MiB (KiB * KiB)

/* Separate slot arrays bound the memory held: at most SMALL_SLOTS blocks <= 128 KiB,
   LARGE_SLOTS blocks <= 4 MiB and HUGE_SLOTS blocks <= 40 MiB live in the slots. */
enum { SMALL_SLOTS = 4096, LARGE_SLOTS = 12, HUGE_SLOTS = 2 };
static _Atomic(uintptr_t) small_slots[SMALL_SLOTS];
static _Atomic(uintptr_t) large_slots[LARGE_SLOTS];
static _Atomic(uintptr_t) huge_slots[HUGE_SLOTS];

static long iters = 50000;
static uint64_t seed = 1;
static atomic_long stat_allocs, stat_cross_frees, stat_reallocs, stat_huge, stat_aligned, stat_zeroed;

/* ---------------------------------------------------------------------------------------------
   Block contents: word 0 = (size << 16) | 16-bit hash of the address; the rest is a word pattern
   seeded by address and size. Blocks are at least 8 bytes and 8-byte aligned.
--------------------------------------------------------------------------------------------- */

static uint64_t header_of(uintptr_t addr, size_t size) { return ((uint64_t)size << 16) | (test_mix64(addr) & 0xffff); }
static uint64_t word_of(uintptr_t addr, size_t size, size_t j) {
  return test_mix64(addr ^ ((uint64_t)size << 40)) ^ ((uint64_t)j * 0x9E3779B97F4A7C15ULL);
}

static void fill_block(void* p, size_t size) {
  uintptr_t addr = (uintptr_t)p;
  uint64_t* w = (uint64_t*)p;
  w[0] = header_of(addr, size);
  size_t nwords = size / 8;
  for (size_t j = 1; j < nwords; j++) w[j] = word_of(addr, size, j);
  if (size % 8 != 0) {
    uint64_t last = word_of(addr, size, nwords);
    memcpy((uint8_t*)p + nwords * 8, &last, size % 8);
  }
}

/* Verifies the first nbytes (>= 8) of a block that was filled at address addr with size size
   (addr differs from p after a moving realloc). Returns the offset of the first bad byte or
   nbytes when all is well. */
static size_t check_block(const void* p, uintptr_t addr, size_t size, size_t nbytes) {
  const uint64_t* w = (const uint64_t*)p;
  if (w[0] != header_of(addr, size)) return 0;
  size_t nwords = nbytes / 8;
  for (size_t j = 1; j < nwords; j++) {
    if (w[j] != word_of(addr, size, j)) return j * 8;
  }
  if (nbytes % 8 != 0) {
    uint64_t last = word_of(addr, size, nwords);
    if (memcmp((const uint8_t*)p + nwords * 8, &last, nbytes % 8) != 0) return nwords * 8;
  }
  return nbytes;
}

/* The size recorded in a block's header (validated against the address hash). */
static size_t size_of_block(const void* p) {
  uint64_t h = *(const uint64_t*)p;
  if ((h & 0xffff) != (test_mix64((uintptr_t)p) & 0xffff)) return 0;
  return (size_t)(h >> 16);
}

static void verify(const void* p, const char* when, long tid) {
  size_t size = size_of_block(p);
  CHECK_MSG(size >= 8, "thread %ld, %s: block %p has a corrupt header 0x%llx", tid, when, p,
            (unsigned long long)*(const uint64_t*)p);
  if (size < 8) return;
  size_t bad = check_block(p, (uintptr_t)p, size, size);
  CHECK_MSG(bad == size, "thread %ld, %s: block %p of size %zu corrupt at offset %zu", tid, when, p, size, bad);
  CHECK_MSG(ST_USABLE(p) >= size, "thread %ld, %s: block %p of size %zu has usable size %zu", tid, when, p, size,
            (size_t)ST_USABLE(p));
}

/* Frees a verified block and takes its size off the live count (rss-guard.h; with
   MI_TEST_RSS_LEAK=1 the block is leaked instead, and still counted as freed). */
static void release(void* p) {
  const size_t size = size_of_block(p);
  if (!test_rss_leak()) ST_FREE(p);
  test_live_sub(size);
}

/* ---------------------------------------------------------------------------------------------
   Workers
--------------------------------------------------------------------------------------------- */

typedef enum { K_SMALL, K_LARGE, K_HUGE } kind_t;

static size_t pick_size(test_rng_t* rng, kind_t* kind) {
  uint64_t r = test_rand_below(rng, 100000);
  if (r < 94000) { /* small, biased towards the smallest sizes */
    *kind = K_SMALL;
    size_t hi = 8 + (size_t)test_rand_below(rng, 1017);
    return 8 + (size_t)test_rand_below(rng, hi - 7);
  }
  if (r < 99880) { /* medium: log-uniform 1 KiB .. 128 KiB */
    *kind = K_SMALL;
    unsigned bits = (unsigned)test_rand_range(rng, 11, 17);
    return (size_t)test_rand_range(rng, ((size_t)1 << (bits - 1)) + 1, (size_t)1 << bits);
  }
  if (r < 99995) { /* large: log-uniform 128 KiB .. 4 MiB */
    *kind = K_LARGE;
    unsigned bits = (unsigned)test_rand_range(rng, 18, 22);
    return (size_t)test_rand_range(rng, ((size_t)1 << (bits - 1)) + 1, (size_t)1 << bits);
  }
  *kind = K_HUGE; /* huge: 32 MiB .. 40 MiB */
  return (size_t)test_rand_range(rng, 32 * MiB + 1, 40 * MiB);
}

static _Atomic(uintptr_t)* pick_slot(test_rng_t* rng, kind_t kind) {
  switch (kind) {
    case K_SMALL: return &small_slots[test_rand_below(rng, SMALL_SLOTS)];
    case K_LARGE: return &large_slots[test_rand_below(rng, LARGE_SLOTS)];
    default: return &huge_slots[test_rand_below(rng, HUGE_SLOTS)];
  }
}

static kind_t kind_of_size(size_t size) { return size <= 128 * KiB ? K_SMALL : size <= 4 * MiB ? K_LARGE : K_HUGE; }

static void* allocate(test_rng_t* rng, size_t size, long tid) {
  uint64_t how = test_rand_below(rng, 100);
  void* p;
  if (how < 70) {
    p = ST_MALLOC(size);
  }
  else if (how < 80 || how >= 95) {
    p = (how < 80 ? ST_ZALLOC(size) : size % 8 == 0 ? ST_CALLOC(size / 8, 8) : ST_CALLOC(size, 1));
    atomic_fetch_add_explicit(&stat_zeroed, 1, memory_order_relaxed);
    if (p != NULL) {
      const uint8_t* b = (const uint8_t*)p;
      size_t nz = 0;
      while (nz < size && b[nz] == 0) nz++;
      CHECK_MSG(nz == size, "thread %ld: zeroed block %p of size %zu has a non-zero byte at %zu", tid, p, size, nz);
    }
  }
  else {
    size_t align = (size_t)1 << test_rand_range(rng, 3, test_rand_below(rng, 20) == 0 ? 20 : 12);
    p = mi_malloc_aligned(size, align);
    atomic_fetch_add_explicit(&stat_aligned, 1, memory_order_relaxed);
    CHECK_MSG(p == NULL || ((uintptr_t)p & (align - 1)) == 0, "thread %ld: mi_malloc_aligned(%zu, %zu) = %p", tid, size,
              align, p);
  }
  CHECK_MSG(p != NULL, "thread %ld: allocation of %zu bytes failed", tid, size);
  if (p != NULL && !ST_OURS(p)) {
    static _Atomic(int) said;
    CHECK_MSG(atomic_exchange(&said, 1) != 0, "thread %ld: block %p of %zu bytes: malloc is not served by this allocator", tid, p, size);
  }
  return p;
}

static void* worker(void* arg) {
  long tid = (long)(intptr_t)arg;
  test_rng_t rng = { test_mix64(seed * 1000003u + (uint64_t)tid) };
  for (long i = 0; i < iters; i++) {
    kind_t kind;
    size_t size = pick_size(&rng, &kind);
    if (kind == K_HUGE) atomic_fetch_add_explicit(&stat_huge, 1, memory_order_relaxed);
    test_live_add(size);   /* (the requested size: counted before the block exists) */
    void* p = allocate(&rng, size, tid);
    if (p == NULL) { test_live_sub(size); continue; }
    size_t usable = ST_USABLE(p);
    CHECK_MSG(usable >= size, "thread %ld: block %p of size %zu has usable size %zu", tid, p, size, usable);
    if (usable < size) { ST_FREE(p); test_live_sub(size); continue; }
    fill_block(p, size);
    atomic_fetch_add_explicit(&stat_allocs, 1, memory_order_relaxed);

    void* old = (void*)atomic_exchange(pick_slot(&rng, kind), (uintptr_t)p);
    if (old == NULL) continue;
    verify(old, "before free", tid);
    atomic_fetch_add_explicit(&stat_cross_frees, 1, memory_order_relaxed);
    if (test_rand_below(&rng, 100) < 15) {
      /* resize instead of freeing, and put it back */
      size_t osize = size_of_block(old);
      kind_t nkind;
      size_t nsize = (test_rand_below(&rng, 2) == 0 ? pick_size(&rng, &nkind) : osize / 2 + 8);
      if (nsize < 8) nsize = 8;
      nkind = kind_of_size(nsize);
      uintptr_t oaddr = (uintptr_t)old;
      test_live_add(nsize);
      void* q = ST_REALLOC(old, nsize);
      CHECK_MSG(q != NULL, "thread %ld: realloc(%p, %zu) failed", tid, (void*)oaddr, nsize);
      if (q == NULL) { test_live_sub(nsize); release(old); continue; }
      test_live_sub(osize);
      size_t keep = (osize < nsize ? osize : nsize);
      size_t bad = check_block(q, oaddr, osize, keep);
      CHECK_MSG(bad == keep, "thread %ld: mi_realloc(%p, %zu -> %zu) = %p lost contents at offset %zu", tid, (void*)oaddr,
                osize, nsize, q, bad);
      CHECK_MSG(ST_USABLE(q) >= nsize, "thread %ld: realloc'ed block usable size %zu < %zu", tid, (size_t)ST_USABLE(q), nsize);
      CHECK_MSG(ST_OURS(q), "thread %ld: realloc(%p, %zu) = %p: not ours", tid, (void*)oaddr, nsize, q);
      fill_block(q, nsize);
      atomic_fetch_add_explicit(&stat_reallocs, 1, memory_order_relaxed);
      void* displaced = (void*)atomic_exchange(pick_slot(&rng, nkind), (uintptr_t)q);
      if (displaced != NULL) { verify(displaced, "before free", tid); release(displaced); }
    }
    else {
      release(old);
    }
  }
  return NULL;
}

static void drain(_Atomic(uintptr_t)* slots, size_t n, size_t* count) {
  for (size_t i = 0; i < n; i++) {
    void* p = (void*)atomic_exchange(&slots[i], 0);
    if (p != NULL) { verify(p, "at the end", -1); release(p); (*count)++; }
  }
}

int main(int argc, char** argv) {
  long nthreads = test_arg(argc, argv, 1, 4);
  long rounds = test_arg(argc, argv, 2, 10);
  iters = test_arg(argc, argv, 3, 50000);
  seed = (uint64_t)test_arg(argc, argv, 4, 1);
  if (nthreads < 1) nthreads = 1;
  if (nthreads > 256) nthreads = 256;
  if (rounds < 1) rounds = 1;
  /* The RSS bound (rss-guard.h): 2.5 x the peak of the live requested bytes + 128 MiB (scaled
     under the sanitizers). The slots hold up to 640 MiB; the ctest arguments reach a peak of
     170-265 MiB live. Measured with every build ctest runs (2 busy cores): peak RSS above the
     start 1.0-1.2 x peak live with the default options; with MIMALLOC_PURGE_DELAY=-1 (nothing
     purged) and PURGE_DECOMMITS=0 (MADV_FREE pages stay in the RSS: memory-stress-*) the RSS
     is all the memory ever touched, 354-524 MiB for 165-245 MiB live (2.2 x; the most above
     2 x peak live: 60 MiB), which the 2.5 x covers. */
  test_rss_guard_start("stress", 2.5, 128);

  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  pthread_t threads[256];
  long next_tid = 0;
  for (long i = 0; i < nthreads; i++) {
    CHECK_EQ(pthread_create(&threads[i], NULL, &worker, (void*)(intptr_t)next_tid), 0);
    next_tid++;
  }
  /* join in order and start a replacement at once: the others keep running meanwhile */
  for (long r = 1; r < rounds; r++) {
    for (long i = 0; i < nthreads; i++) {
      CHECK_EQ(pthread_join(threads[i], NULL), 0);
      CHECK_EQ(pthread_create(&threads[i], NULL, &worker, (void*)(intptr_t)next_tid), 0);
      next_tid++;
    }
  }
  for (long i = 0; i < nthreads; i++) CHECK_EQ(pthread_join(threads[i], NULL), 0);

  size_t remaining = 0;
  drain(small_slots, SMALL_SLOTS, &remaining);
  drain(large_slots, LARGE_SLOTS, &remaining);
  drain(huge_slots, HUGE_SLOTS, &remaining);
  mi_collect(true);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  return test_summary("stress",
                      "%s, %ld threads x %ld rounds x %ld iterations, seed %llu: %ld allocations (%ld zeroed, %ld aligned, %ld huge), "
                      "%ld slot take-overs, %ld reallocs, %zu verified at the end, %.2f s",
                      ST_API, nthreads, rounds, iters, (unsigned long long)seed, atomic_load(&stat_allocs), atomic_load(&stat_zeroed),
                      atomic_load(&stat_aligned), atomic_load(&stat_huge), atomic_load(&stat_cross_frees),
                      atomic_load(&stat_reallocs), remaining, secs);
}
