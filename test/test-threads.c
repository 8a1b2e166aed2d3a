/* SPDX-License-Identifier: MIT */
/* test-threads.c -- thread life-cycle tests.

   (a) churn: thousands of short-lived threads allocate and free; some of their blocks outlive
       them and are freed later by the main thread. RSS (from /proc/self/statm) must not grow
       with the number of threads. Two checks, since delayed purging keeps freed memory resident
       on purpose: (1) no leak: after mi_collect(true) (reclaims abandoned segments, purges all)
       the RSS at the end exceeds the RSS after the same collect at the end of the warm-up by at
       most RSS_MARGIN (8 MiB); (2) the policy is bounded: no sample after the warm-up exceeds the
       highest early sample (see rss_baseline) by more than RSS_MARGIN plus UNPURGED_BUDGET, the
       free memory the arenas may keep waiting for the long purge delay (MI_ARENA_UNPURGED_MAX).
   (b) threads whose very first allocator call is mi_free or mi_realloc of another thread's
       block (of a living thread and of an exited one), or whose first allocation must leave errno
       alone.
   (c) a thread that only frees (never allocates) the blocks of a living owner thread, which keeps
       allocating: the owner must reuse the freed memory, so RSS stays bounded.
   (d) heaps created with mi_heap_new, used, then deleted (blocks stay valid) or destroyed, while
       other threads concurrently mi_free blocks that came from those heaps; patterns verified.
   (e) blocks of threads that have exited are freed by another thread, and the memory is reused:
       RSS stays bounded over many rounds.

   (f) threads that exit leaving one block each behind (a cache entry, a result): the memory of
       their segments must be reused by the threads that follow, not piled up. After all of them,
       mi_collect(true) gives the RSS of what is really held (live blocks, the pages they pin);
       the peak RSS may exceed twice that by at most RSS_MARGIN plus the 16 MiB of unused slots
       abandoned segments may keep resident (MI_ABANDONED_RESIDENT_MAX): free memory kept at hand
       never exceeds the memory in use (was 3x: 1116 MiB peak for 365 MiB held).

   (g) MIMALLOC_ABANDONED_RECLAIM_ON_FREE (mi_option_abandoned_reclaim_on_free): off, a free
       into an ended thread's segment leaves it abandoned; on, the freeing thread reclaims it
       (the abandoned-segment count drops by one) and every block stays intact. Then (e) runs
       again with the option on, so other threads free into segments being reclaimed.

   RSS assertions are skipped under sanitizers (their own bookkeeping dominates RSS).
   Usage: test-threads [churn_threads=4000] [rounds=40] [heap_rounds=150] [rss_margin_mib=8]
   (f) runs churn_threads threads. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mimalloc.h"
#include "mimalloc-stats.h"
#include "testing.h"
#include "rss-guard.h"

#define KiB ((size_t)1024)
#define MiB (KiB * KiB)
/* debug builds (fill patterns, padding) use more; CMake passes a larger margin there */
static size_t RSS_MARGIN = 8 * MiB;
/* MI_ARENA_UNPURGED_MAX (src/internal/types.h): free arena memory that may wait for the long
   purge delay while the memory in use is below it */
#define UNPURGED_BUDGET (32 * MiB)
/* MI_ABANDONED_RESIDENT_MAX: unused slots abandoned segments may keep resident */
#define ABANDONED_RESIDENT (16 * MiB)
#define SENTINEL 4242

static bool check_rss = !TEST_RSS_UNRELIABLE;   /* sanitizers, qemu-user: testing.h */
static bool verbose = false; /* environment variable TEST_VERBOSE: print every RSS sample */

static size_t rss_now(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  unsigned long size = 0, resident = 0;
  int n = fscanf(f, "%lu %lu", &size, &resident);
  fclose(f);
  return n == 2 ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

static double mib(size_t x) { return (double)x / (double)MiB; }

/* The RSS check: samples are taken after every batch/round; the baseline is the highest sample in
   the window [n/8, n/4) (after a warm-up in which thread stacks, caches and heaps reach their
   working size, at least 2 samples in), and the last sample may exceed it by at most RSS_MARGIN. */
static void rss_window(long n, long* from, long* to) {
  *from = n / 8 < 2 ? 2 : n / 8;
  *to = n / 4 <= *from ? *from + 1 : n / 4;
}
static size_t rss_baseline(const size_t* samples, long n, long* from, long* to) {
  rss_window(n, from, to);
  size_t m = 0;
  for (long i = *from; i < *to && i < n; i++) if (samples[i] > m) m = samples[i];
  return m;
}

/* Blocks carry a header word (size << 16 | address hash) and a byte pattern. A filled block
   counts in the live bytes of the RSS guard (rss-guard.h) until counted_free. */
static uint64_t header_of(const void* p, size_t size) { return ((uint64_t)size << 16) | (test_mix64((uintptr_t)p) & 0xffff); }
static size_t size_in_header(const void* p) { return (size_t)(*(const uint64_t*)p >> 16); }
static void fill(void* p, size_t size) {
  test_live_add(size);
  *(uint64_t*)p = header_of(p, size);
  uint8_t* b = (uint8_t*)p;
  uint8_t s = (uint8_t)test_mix64((uintptr_t)p);
  for (size_t i = 8; i < size; i++) b[i] = (uint8_t)(s + i);
}
/* true if intact; size is read from the header */
static bool intact(const void* p) {
  uint64_t h = *(const uint64_t*)p;
  size_t size = (size_t)(h >> 16);
  if (h != header_of(p, size) || size < 8) return false;
  const uint8_t* b = (const uint8_t*)p;
  uint8_t s = (uint8_t)test_mix64((uintptr_t)p);
  for (size_t i = 8; i < size; i++) if (b[i] != (uint8_t)(s + i)) return false;
  return mi_usable_size(p) >= size;
}
static void* alloc_filled(size_t size) {
  void* p = mi_malloc(size);
  CHECK_MSG(p != NULL, "mi_malloc(%zu) failed", size);
  if (p) fill(p, size);
  return p;
}
/* frees a filled block (MI_TEST_RSS_LEAK=1: leaks it, counted as freed) */
static void counted_free(void* p) {
  const size_t size = size_in_header(p);
  if (!test_rss_leak()) mi_free(p);
  test_live_sub(size);
}
static void verify_free(void* p, const char* where) {
  CHECK_MSG(intact(p), "%s: block %p is corrupt", where, p);
  counted_free(p);
}

/* ---------------------------------------------------------------------------------------------
   (a) thread churn
--------------------------------------------------------------------------------------------- */

enum { BATCH = 50, KEEP = 8, CHURN_BLOCKS = 200 };

typedef struct churn_arg_s { long id; void* keep[KEEP]; } churn_arg_t;

/* A short-lived thread's blocks: CHURN_BLOCKS filled blocks of 8 B..2 KiB, every 20th up to
   64 KiB; with `big_first`, the first is a huge one (1 MiB). */
static void churn_alloc(void** blocks, test_rng_t* rng, bool big_first) {
  for (int i = 0; i < CHURN_BLOCKS; i++) {
    size_t size = 8 + (size_t)test_rand_below(rng, (i % 20 == 0) ? 65536 : 2048);
    if (i == 0 && big_first) size = MiB + 8;
    blocks[i] = alloc_filled(size);
  }
}

/* Run BATCH threads of `fn` on args[0..BATCH), with ids first_id.., and join them. */
static void run_batch(void* (*fn)(void*), churn_arg_t* args, long first_id) {
  pthread_t t[BATCH];
  for (int i = 0; i < BATCH; i++) {
    args[i].id = first_id + i;
    CHECK_EQ(pthread_create(&t[i], NULL, fn, &args[i]), 0);
  }
  for (int i = 0; i < BATCH; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
}

static void* churn_thread(void* varg) {
  churn_arg_t* arg = (churn_arg_t*)varg;
  test_rng_t rng = { (uint64_t)arg->id * 7919 + 1 };
  void* blocks[CHURN_BLOCKS];
  churn_alloc(blocks, &rng, arg->id % 10 == 0);
  for (int i = 0; i < CHURN_BLOCKS; i++) {
    if (i < KEEP) arg->keep[i] = blocks[i * 25 + 1]; /* these outlive the thread */
  }
  for (int i = 0; i < CHURN_BLOCKS; i++) {
    if (i % 25 == 1) continue;
    verify_free(blocks[i], "churn thread");
  }
  return NULL;
}

static void free_kept(churn_arg_t* args) {
  for (int i = 0; i < BATCH; i++)
    for (int k = 0; k < KEEP; k++) verify_free(args[i].keep[k], "churn leftovers");
}

static void test_churn(long total) {
  long nbatches = (total + BATCH - 1) / BATCH;
  if (nbatches < 8) nbatches = 8;
  if (nbatches > 4096) nbatches = 4096;
  static churn_arg_t args[2][BATCH];
  long from, to;
  rss_window(nbatches, &from, &to);
  size_t rss = 0, peak = 0, early_max = 0, late_max = 0, collected_early = 0;
  for (long b = 0; b < nbatches; b++) {
    churn_arg_t* cur = args[b % 2];
    churn_arg_t* prev = args[(b + 1) % 2];
    run_batch(&churn_thread, cur, b * BATCH);
    /* free the blocks kept by the previous batch (their threads are long gone) */
    if (b > 0) free_kept(prev);
    rss = rss_now();
    if (verbose) printf("    batch %ld: RSS %.1f MiB\n", b, mib(rss));
    if (rss > peak) peak = rss;
    if (b >= from && b < to && rss > early_max) early_max = rss;
    if (b >= to && rss > late_max) late_max = rss;
    if (b == to - 1) { mi_collect(true); collected_early = rss_now(); }
  }
  free_kept(args[(nbatches - 1) % 2]);
  mi_collect(true);
  const size_t collected = rss_now();
  printf("  churn: %ld threads in %ld batches of %d; RSS max of batches %ld-%ld %.1f MiB, max after %.1f MiB, "
         "final %.1f MiB, peak %.1f MiB; after mi_collect(true) at batch %ld %.1f MiB, at the end %.1f MiB\n",
         nbatches * BATCH, nbatches, BATCH, from, to - 1, mib(early_max), mib(late_max), mib(rss), mib(peak), to - 1,
         mib(collected_early), mib(collected));
  if (check_rss) {
    CHECK_MSG(collected <= collected_early + RSS_MARGIN,
              "thread churn leaks: RSS after mi_collect(true) grew from %.1f MiB (batch %ld) to %.1f MiB after %ld batches",
              mib(collected_early), to - 1, mib(collected), nbatches);
    CHECK_MSG(late_max <= early_max + RSS_MARGIN + UNPURGED_BUDGET,
              "thread churn: RSS grew from %.1f MiB (batches %ld-%ld) to %.1f MiB, beyond the margin and the unpurged budget",
              mib(early_max), from, to - 1, mib(late_max));
  }
}

/* ---------------------------------------------------------------------------------------------
   (b) first allocator call is a free or realloc of a foreign block
--------------------------------------------------------------------------------------------- */

static void* first_free_thread(void* arg) {
  void** blocks = (void**)arg;
  counted_free(blocks[0]); /* the very first allocator call of this thread */
  for (int i = 1; blocks[i] != NULL; i++) verify_free(blocks[i], "first-free thread");
  /* the thread's own heap works afterwards */
  for (int i = 0; i < 1000; i++) { void* p = alloc_filled(16 + (size_t)i); verify_free(p, "first-free thread own"); }
  return NULL;
}

typedef struct realloc_arg_s { void* p; size_t newsize; void* result; } realloc_arg_t;

static void* first_realloc_thread(void* varg) {
  realloc_arg_t* a = (realloc_arg_t*)varg;
  uint64_t h = *(uint64_t*)a->p;
  size_t oldsize = (size_t)(h >> 16);
  uint8_t s = (uint8_t)test_mix64((uintptr_t)a->p);
  uint8_t* q = (uint8_t*)mi_realloc(a->p, a->newsize); /* the very first allocator call */
  CHECK(q != NULL);
  if (q == NULL) return NULL;
  test_live_sub(oldsize);   /* (fill counts the new size) */
  size_t keep = oldsize < a->newsize ? oldsize : a->newsize;
  bool ok = (*(uint64_t*)q == h);
  for (size_t i = 8; i < keep; i++) if (q[i] != (uint8_t)(s + i)) { ok = false; break; }
  CHECK_MSG(ok, "mi_realloc(%zu -> %zu) as a thread's first call lost contents", oldsize, a->newsize);
  CHECK_GE(mi_usable_size(q), a->newsize);
  fill(q, a->newsize);
  a->result = q;
  return NULL;
}

static void* first_malloc_errno_thread(void* arg) {
  (void)arg;
  errno = SENTINEL;
  void* p = mi_malloc(32); /* thread initialisation must not clobber errno */
  CHECK_EQ(errno, SENTINEL);
  CHECK(p != NULL);
  mi_free(p);
  errno = SENTINEL;
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  void* q = mi_heap_malloc(h, 100);
  CHECK_EQ(errno, SENTINEL);
  CHECK(mi_heap_contains_block(h, q));
  mi_heap_destroy(h);
  return NULL;
}

static void* exiting_allocator_thread(void* arg) {
  void** out = (void**)arg;
  out[0] = alloc_filled(100);
  out[1] = alloc_filled(300 * KiB);
  out[2] = alloc_filled(40 * MiB);
  out[3] = NULL;
  return NULL;
}

static void test_first_calls(void) {
  pthread_t t;
  /* blocks of the (living) main thread: small, large, huge, aligned */
  void* blocks[6] = { alloc_filled(64), alloc_filled(100), alloc_filled(MiB), alloc_filled(40 * MiB), NULL, NULL };
  void* al = mi_malloc_aligned(5000, 4096);
  fill(al, 5000);
  blocks[4] = al;
  CHECK_EQ(pthread_create(&t, NULL, &first_free_thread, blocks), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);

  /* blocks of a thread that has exited */
  void* orphans[4];
  CHECK_EQ(pthread_create(&t, NULL, &exiting_allocator_thread, orphans), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(pthread_create(&t, NULL, &first_free_thread, orphans), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);

  /* realloc as the first call: grow (moves), shrink in place, to huge, from huge */
  const size_t from[] = { 100, 4000, 100, 40 * MiB, 300 * KiB };
  const size_t to[] = { 20000, 2100, 40 * MiB, 100, 500 * KiB };
  for (int i = 0; i < 5; i++) {
    realloc_arg_t a = { alloc_filled(from[i]), to[i], NULL };
    CHECK_EQ(pthread_create(&t, NULL, &first_realloc_thread, &a), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    if (a.result) verify_free(a.result, "realloc'ed by another thread");
  }
  /* ... and of a block of an exited thread */
  CHECK_EQ(pthread_create(&t, NULL, &exiting_allocator_thread, orphans), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  for (int i = 0; i < 3; i++) {
    realloc_arg_t a = { orphans[i], 2 * MiB, NULL };
    CHECK_EQ(pthread_create(&t, NULL, &first_realloc_thread, &a), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    if (a.result) verify_free(a.result, "orphan realloc'ed by another thread");
  }

  CHECK_EQ(pthread_create(&t, NULL, &first_malloc_errno_thread, NULL), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  printf("  first calls: free/realloc of living and exited threads' blocks as a thread's first call\n");
}

/* ---------------------------------------------------------------------------------------------
   (c) a thread that only frees
--------------------------------------------------------------------------------------------- */

enum { FO_BLOCKS = 20000 };
static void* fo_blocks[FO_BLOCKS];
static pthread_barrier_t fo_barrier;
static long fo_rounds;
static size_t fo_rss[1000];

static void* fo_owner(void* arg) {
  (void)arg;
  test_rng_t rng = { 99 };
  for (long r = 0; r < fo_rounds; r++) {
    for (int i = 0; i < FO_BLOCKS; i++) {
      size_t size = 16 + (size_t)test_rand_below(&rng, 500);
      if (i % 1000 == 0) size = 16 * KiB + (size_t)test_rand_below(&rng, 100 * KiB);
      fo_blocks[i] = alloc_filled(size);
    }
    fo_rss[r] = rss_now();
    if (verbose) printf("    free-only round %ld: RSS %.1f MiB\n", r, mib(fo_rss[r]));
    pthread_barrier_wait(&fo_barrier); /* hand over */
    pthread_barrier_wait(&fo_barrier); /* all freed */
  }
  return NULL;
}

static void* fo_freer(void* arg) {
  (void)arg;
  /* never calls an allocating function */
  for (long r = 0; r < fo_rounds; r++) {
    pthread_barrier_wait(&fo_barrier);
    for (int i = 0; i < FO_BLOCKS; i++) {
      CHECK_MSG(intact(fo_blocks[i]), "free-only thread: block %d of round %ld corrupt", i, r);
      counted_free(fo_blocks[i]);
    }
    pthread_barrier_wait(&fo_barrier);
  }
  return NULL;
}

static void test_free_only(long rounds) {
  if (rounds < 6) rounds = 6;
  if (rounds > 1000) rounds = 1000;
  fo_rounds = rounds;
  pthread_barrier_init(&fo_barrier, NULL, 2);
  pthread_t o, f;
  CHECK_EQ(pthread_create(&o, NULL, &fo_owner, NULL), 0);
  CHECK_EQ(pthread_create(&f, NULL, &fo_freer, NULL), 0);
  CHECK_EQ(pthread_join(o, NULL), 0);
  CHECK_EQ(pthread_join(f, NULL), 0);
  pthread_barrier_destroy(&fo_barrier);
  long from, to;
  size_t early = rss_baseline(fo_rss, rounds, &from, &to);
  size_t final = fo_rss[rounds - 1];
  printf("  free-only thread: %ld rounds of %d blocks; RSS max of rounds %ld-%ld %.1f MiB, last %.1f MiB\n", rounds, FO_BLOCKS,
         from, to - 1, mib(early), mib(final));
  if (check_rss) {
    CHECK_MSG(final <= early + RSS_MARGIN, "free-only thread: RSS grew from %.1f MiB to %.1f MiB over %ld rounds",
              mib(early), mib(final), rounds);
  }
}

/* ---------------------------------------------------------------------------------------------
   (d) heaps deleted/destroyed while other threads free into them
--------------------------------------------------------------------------------------------- */

enum { HSLOTS = 1024, HBLOCKS = 1500, HFREERS = 2 };
static _Atomic(uintptr_t) hslots[HSLOTS];
static atomic_long h_outstanding; /* published and not yet freed */
static atomic_bool h_stop;
static atomic_long h_freed;

static void publish(void* p) {
  atomic_fetch_add(&h_outstanding, 1);
  for (unsigned i = (unsigned)((uintptr_t)p >> 4) % HSLOTS;; i = (i + 1) % HSLOTS) {
    uintptr_t expected = 0;
    if (atomic_compare_exchange_weak(&hslots[i], &expected, (uintptr_t)p)) return;
    if (i % 64 == 0) sched_yield();
  }
}

static void* heap_freer(void* arg) {
  (void)arg;
  unsigned i = 0;
  long n = 0;
  while (!atomic_load(&h_stop) || atomic_load(&h_outstanding) > 0) {
    for (int k = 0; k < HSLOTS; k++, i = (i + 1) % HSLOTS) {
      void* p = (void*)atomic_exchange(&hslots[i], 0);
      if (p == NULL) continue;
      CHECK_MSG(intact(p), "heap freer: block %p corrupt", p);
      counted_free(p);
      atomic_fetch_sub(&h_outstanding, 1);
      n++;
    }
    sched_yield();
  }
  atomic_fetch_add(&h_freed, n);
  return NULL;
}

static void wait_outstanding_zero(void) {
  while (atomic_load(&h_outstanding) > 0) sched_yield();
}

static long heap_rounds;

static void* heap_owner(void* arg) {
  (void)arg;
  static void* own[HBLOCKS];
  test_rng_t rng = { 4242 };
  mi_heap_t* backing = mi_heap_get_backing();
  for (long r = 0; r < heap_rounds; r++) {
    int mode = (int)(r % 3); /* 0: delete, 1: destroy, 2: through the default heap, then delete */
    mi_heap_t* h = mi_heap_new();
    CHECK(h != NULL);
    if (h == NULL) break;
    mi_heap_t* prev = NULL;
    if (mode == 2) prev = mi_heap_set_default(h);
    size_t nown = 0;
    for (int i = 0; i < HBLOCKS; i++) {
      size_t size = 8 + (size_t)test_rand_below(&rng, i % 100 == 0 ? 300 * KiB : 1000);
      void* p;
      switch (i % 4) {
        case 0: p = (mode == 2 ? mi_malloc(size) : mi_heap_malloc(h, size)); break;
        case 1: p = mi_heap_zalloc(h, size); break;
        case 2: p = mi_heap_malloc_aligned(h, size, (size_t)1 << (3 + i % 10)); break;
        default: p = mi_heap_calloc(h, 1, size); break;
      }
      CHECK(p != NULL);
      if (p == NULL) continue;
      CHECK_MSG(mi_heap_contains_block(h, p), "round %ld: block not in its heap", r);
      fill(p, size);
      if (test_rand_below(&rng, 2) == 0) publish(p); /* freed concurrently by other threads */
      else own[nown++] = p;
    }
    if (mode == 2) CHECK_PTR_EQ(mi_heap_set_default(prev), h);
    if (mode == 1) {
      /* destroy frees every block still in the heap: wait until the others have freed
         theirs (their frees may still sit in the heap's cross-thread lists), check ours */
      wait_outstanding_zero();
      for (size_t i = 0; i < nown; i++) CHECK_MSG(intact(own[i]), "round %ld: own block corrupt before destroy", r);
      for (size_t i = 0; i < nown; i++) test_live_sub(size_in_header(own[i]));
      mi_heap_destroy(h);
    }
    else {
      /* delete while the other threads are still freeing into the heap */
      mi_heap_delete(h);
      CHECK_PTR_EQ(mi_heap_get_default(), backing);
      for (size_t i = 0; i < nown; i++) {
        CHECK_MSG(intact(own[i]), "round %ld: block corrupt after mi_heap_delete", r);
        if (i % 2 == 0) publish(own[i]); /* now freed by others... */
        else counted_free(own[i]);       /* ...or by us */
      }
    }
  }
  return NULL;
}

static void test_heaps_concurrent(long rounds) {
  heap_rounds = rounds;
  atomic_store(&h_stop, false);
  pthread_t freers[HFREERS], owner;
  for (int i = 0; i < HFREERS; i++) CHECK_EQ(pthread_create(&freers[i], NULL, &heap_freer, NULL), 0);
  CHECK_EQ(pthread_create(&owner, NULL, &heap_owner, NULL), 0);
  CHECK_EQ(pthread_join(owner, NULL), 0);
  atomic_store(&h_stop, true);
  for (int i = 0; i < HFREERS; i++) CHECK_EQ(pthread_join(freers[i], NULL), 0);
  CHECK_EQ(atomic_load(&h_outstanding), 0);
  printf("  heaps: %ld heaps created, used, deleted/destroyed; %ld blocks freed concurrently by %d other threads\n", rounds,
         atomic_load(&h_freed), HFREERS);
}

/* ---------------------------------------------------------------------------------------------
   (e) blocks of exited threads freed elsewhere; memory reused
--------------------------------------------------------------------------------------------- */

enum { EX_BLOCKS = 12000 };
static void* ex_blocks[EX_BLOCKS];

static void* ex_allocator(void* arg) {
  long round = (long)(intptr_t)arg;
  test_rng_t rng = { (uint64_t)round + 1 };
  for (int i = 0; i < EX_BLOCKS; i++) {
    size_t size = 16 + (size_t)test_rand_below(&rng, i % 500 == 0 ? 200 * KiB : 1000);
    ex_blocks[i] = alloc_filled(size);
  }
  return NULL;
}
static void* ex_freer(void* arg) {
  (void)arg;
  for (int i = 0; i < EX_BLOCKS; i++) verify_free(ex_blocks[i], "exited thread's block");
  return NULL;
}

static void test_exited_blocks(long rounds) {
  if (rounds < 6) rounds = 6;
  if (rounds > 1000) rounds = 1000;
  static size_t samples[1000];
  size_t rss = 0;
  for (long r = 0; r < rounds; r++) {
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, &ex_allocator, (void*)(intptr_t)r), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    rss = rss_now(); /* the round's blocks are all live here */
    if (verbose) printf("    exited-threads round %ld: RSS %.1f MiB\n", r, mib(rss));
    samples[r] = rss;
    if (r % 2 == 0) {
      ex_freer(NULL); /* the main thread frees */
    }
    else {
      CHECK_EQ(pthread_create(&t, NULL, &ex_freer, NULL), 0); /* a fresh thread frees */
      CHECK_EQ(pthread_join(t, NULL), 0);
    }
  }
  long from, to;
  size_t early = rss_baseline(samples, rounds, &from, &to);
  printf("  exited threads: %ld rounds of %d blocks freed by other threads; RSS max of rounds %ld-%ld %.1f MiB, last %.1f MiB\n",
         rounds, EX_BLOCKS, from, to - 1, mib(early), mib(rss));
  if (check_rss) {
    CHECK_MSG(rss <= early + RSS_MARGIN, "exited threads: RSS grew from %.1f MiB to %.1f MiB over %ld rounds", mib(early),
              mib(rss), rounds);
  }
}

/* ---------------------------------------------------------------------------------------------
   (f) threads that exit leaving a block behind
--------------------------------------------------------------------------------------------- */

static void* leaver_thread(void* varg) {
  churn_arg_t* arg = (churn_arg_t*)varg;
  test_rng_t rng = { (uint64_t)arg->id * 104729 + 7 };
  void* blocks[CHURN_BLOCKS];
  churn_alloc(blocks, &rng, false);
  arg->keep[0] = blocks[20];   /* a block of up to 64 KiB outlives the thread */
  for (int i = 0; i < CHURN_BLOCKS; i++) {
    if (i != 20) verify_free(blocks[i], "leaver thread");
  }
  return NULL;
}

static void test_leavers(long total) {
  long nbatches = (total + BATCH - 1) / BATCH;
  if (nbatches < 8) nbatches = 8;
  if (nbatches > 400) nbatches = 400;
  const size_t args_size = (size_t)(nbatches * BATCH) * sizeof(churn_arg_t);
  test_live_add(args_size);
  churn_arg_t* args = (churn_arg_t*)mi_calloc((size_t)(nbatches * BATCH), sizeof(churn_arg_t));
  CHECK(args != NULL);
  if (args == NULL) return;
  size_t peak = 0;
  for (long b = 0; b < nbatches; b++) {
    run_batch(&leaver_thread, &args[b * BATCH], b * BATCH);
    const size_t rss = rss_now();
    if (verbose) printf("    leavers batch %ld: RSS %.1f MiB\n", b, mib(rss));
    if (rss > peak) peak = rss;
  }
  mi_collect(true);
  const size_t held = rss_now();
  for (long i = 0; i < nbatches * BATCH; i++) verify_free(args[i].keep[0], "leaver's block");
  mi_free(args);
  test_live_sub(args_size);
  printf("  leavers: %ld threads each left a block behind; peak RSS %.1f MiB, after mi_collect(true) %.1f MiB\n",
         nbatches * BATCH, mib(peak), mib(held));
  if (check_rss) {
    CHECK_MSG(peak <= 2 * held + RSS_MARGIN + ABANDONED_RESIDENT,
              "leavers: peak RSS %.1f MiB, more than twice the %.1f MiB held after mi_collect(true) (+%.0f MiB)",
              mib(peak), mib(held), mib(RSS_MARGIN + ABANDONED_RESIDENT));
  }
}

/* ---------------------------------------------------------------------------------------------
   (g) reclaim on free
--------------------------------------------------------------------------------------------- */

enum { RF_BLOCKS = 64 };
static void* rf_blocks[RF_BLOCKS];

static void* rf_allocator(void* arg) {
  (void)arg;
  for (int i = 0; i < RF_BLOCKS; i++) rf_blocks[i] = alloc_filled(48);   /* one small page */
  return NULL;
}

static long long abandoned_pages(void) {
  static mi_stats_t st;
  st.size = sizeof(st);
  st.version = MI_STAT_VERSION;
  CHECK(mi_stats_get(&st));
  return (long long)st.pages_abandoned.current;
}

static void test_reclaim_on_free(long rounds) {
  const long saved = mi_option_get(mi_option_abandoned_reclaim_on_free);
  mi_free(mi_malloc(8));   /* this thread has a heap: only such a thread reclaims */
  for (int on = 0; on <= 1; on++) {
    mi_option_set(mi_option_abandoned_reclaim_on_free, on);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, &rf_allocator, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    const long long before = abandoned_pages();
    CHECK_MSG(before > 0, "no abandoned page after a thread exited with %d live blocks", RF_BLOCKS);
    verify_free(rf_blocks[0], "reclaim-on-free");
    const long long after = abandoned_pages();
    CHECK_MSG(after == before - on, "reclaim_on_free=%d: abandoned pages %lld -> %lld after one free", on, before, after);
    for (int i = 1; i < RF_BLOCKS; i++) verify_free(rf_blocks[i], "reclaim-on-free rest");
  }
  test_exited_blocks(rounds / 2);   /* (e) again, other threads now reclaim as they free */
  mi_option_set(mi_option_abandoned_reclaim_on_free, saved);
  printf("  reclaim on free: a free into an ended thread's page adopts it only with the option on\n");
}

int main(int argc, char** argv) {
  verbose = (getenv("TEST_VERBOSE") != NULL);
  long churn = test_arg(argc, argv, 1, 4000);
  long rounds = test_arg(argc, argv, 2, 40);
  long hrounds = test_arg(argc, argv, 3, 150);
  RSS_MARGIN = (size_t)test_arg(argc, argv, 4, 8) * MiB;
  /* The RSS bound (rss-guard.h): 2 x the peak of the live bytes (filled blocks) + 192 MiB (scaled
     under the sanitizers). The live bytes peak at 125 MiB in (f) (4000 blocks left behind),
     but (d) comes first: it holds 1-3 MiB (its RSS grew by about 1.2 MiB per heap deleted while
     other threads still freed into it until the backing heap, where a deleted heap's pages go,
     was collected from any heap's slow path: 160-200 MiB after 150 heaps; the test threads-heaps
     runs 1000), while the peak so far is 42 MiB (the 40 MiB blocks of (b)). The base below is
     from before that fix (not re-measured in every build since).
     Measured (2 busy cores): at most 99 MiB above 2 x peak live in Release and Debug (the
     tracking builds 85, secure 24, MI_DEBUG_FULL's smaller run 1); the 192 MiB is that growth
     with a margin. */
  test_rss_guard_start("threads", 2.0, 192);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (!check_rss) printf("  (sanitizer build: RSS is reported but not checked)\n");
  test_first_calls();
  test_churn(churn);
  test_free_only(rounds);
  test_heaps_concurrent(hrounds);
  test_exited_blocks(rounds);
  test_leavers(churn);
  test_reclaim_on_free(rounds);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  return test_summary("threads", "first-call free/realloc, churn of %ld threads, free-only thread %ld rounds, %ld concurrent heaps, "
                                 "exited-thread blocks %ld rounds, %ld leaving threads, reclaim on free; RSS margin %zu MiB%s; %.2f s",
                      churn, rounds, hrounds, rounds, churn, RSS_MARGIN / MiB, check_rss ? "" : " (not checked)", secs);
}
