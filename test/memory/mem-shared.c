/* SPDX-License-Identifier: MIT */
/* mem-shared.c -- memory freed by one live thread is reused by the others (memory-shared-*).

   Written for the change to shared segments: a page that becomes empty gives its slot back at
   once to a process-wide pool that every thread takes pages from (purged later, after a delay).
   Until then the unused slots of a live thread's segments are private to it (only that thread
   reuses them, until it ends), and every test below fails on that code;
   test/memory/CMakeLists.txt registers them only with -DMI_SHARED_SEGMENTS_TESTS=ON for now.

   usage: mem-shared reuse [all|self]
          mem-shared mstress [threads=16] [rounds=4] [iters=20000] [seed=1]

   reuse (memory-shared-reuse; `reuse all`: memory-shared-reuse-all)
     Thread A allocates MT_REUSE_TOTAL (128 MiB) in blocks of 16 B .. 64 KiB (log-uniform, fixed
     seed, every byte written), then frees them itself, all but the first block that landed in
     each 4 MiB segment (a long-lived thread keeps a few objects: about 40 blocks, 1.2 MiB), and
     stays alive and idle (it waits on a condition variable). Thread B, another live thread,
     then allocates the same blocks (same seed), writes them and frees them. Then A frees its
     last blocks and ends. `all`: A frees everything. MIMALLOC_PURGE_DELAY is set to 1000 ms
     first (mi_option_set): the test measures reuse, not purging.
     Checked, with growth = figure after B's allocation - figure before A started:
       RSS (statm)                 growth_B <= 1.25 x growth_A + 8 MiB
       committed (mi_stats_get)    growth_B <= 1.25 x growth_A + 8 MiB
     The bound: with A's free slots open to B, B needs new pages only where A still holds one
     (one page per segment kept by a live block: 64 KiB, a 128 KiB slot or a 512 KiB page over
     ~40 segments; in `all` the empty pages A's heap retains, one per size class, since A makes
     no more heartbeats), at most some 10-20 MiB, against the 32 MiB that 0.25 x 128 MiB allows;
     the 8 MiB is for thread stacks and metadata. Also checked: A's allocation grew the RSS by at
     least 0.9 x 128 MiB (the workload touched its memory); the blocks' stamps (checked before
     every free); after A ended and mi_collect(true) the RSS is back within 16 MiB of the start.
     Reserved memory, segments and address space are printed, not checked (the first arena
     reserves 1 GiB at once, which both allocations fit in either way).
     Before shared segments (2 cores, Release and Debug alike): RSS +134 MiB after A, +268 after
     B (2.00 x), committed 164 -> 324 MiB (1.98 x), segments 39 -> 77. `all`: 1.39-1.41 x and
     1.37-1.38 x: a segment whose pages are all free goes back to its arena, where B finds it,
     but 14 of A's 39 segments keep a retained empty page and stay A's. `self` (not a test: A
     allocates B's blocks itself, the reuse a thread has of its own free slots today): 1.07 x
     and 1.10 x, so the bound holds where the slots are reused.

   mstress (memory-shared-mstress16-rss, -nopurge with MIMALLOC_PURGE_DELAY=1000)
     A compact version of the mstress workload (bench/workloads/mstress.c, after mimalloc's
     stress test): `rounds` rounds, each starting `threads` (16) fresh threads that meet at a
     barrier before they start and again halfway (so all 16 run at once, interleaved on the
     cores, and all hold their blocks at the same time), and are joined at the end of the round.
     A worker keeps 256 local blocks and, `iters` times, replaces one (free + malloc of a new
     size: 50%), frees one (20%), swaps one with a shared slot (20%: it takes over a block of
     another thread, possibly of an earlier round, and frees it later), frees a shared slot's
     block (5%) or stores a new block in one (5%). At the end of its round a worker moves a
     quarter of its blocks to shared slots and frees the rest. Sizes: 70% 16..256 B, 20%
     ..4 KiB, 9% ..64 KiB, 1% ..512 KiB; a block's first word holds its size and a tag, one word
     per 4 KiB and its last word check words (verified before each free). The test counts the
     live requested bytes (an atomic sum over all threads) and their peak, L (~40-45 MiB; the
     exact figure depends on the interleaving, the ratio is what is checked).
     Checked: VmHWM (/proc/self/status: the process' peak RSS, start-up included) <=
     3 x L + 16 MiB. Measured with 16 threads x 4 rounds (2 cores, loaded; peak RSS / L):
       ours, before shared segments     Release 5.9-7.2 x, Debug 3.5-3.6 x (its threads run long
                                        enough for the owners' 10 ms purges to matter: it fails
                                        by ~8 MiB only); -nopurge: Release 7.0-7.8 x, Debug 5.2 x
       ours, every unused slot purged   Release 2.2-2.5 x, Debug 2.1 x (MIMALLOC_PURGE_DELAY=0:
         at once                        the pages in use alone, a floor for page-level sharing;
                                        5-10 times slower)
       glibc (-DMT_LIBC_MALLOC)         3.2-3.5 x, at the bound (2 of 4 runs within it): with
                                        per-thread arenas a thread's free chunks serve only the
                                        threads of its arena, the same weakness
       glibc, MALLOC_ARENA_MAX=1        1.17-1.36 x (one shared pool, block by block)
     The bound is that floor (pages with a few live blocks each, per thread and size class)
     plus 0.5 x L for free slots waiting in the pool for their purge or for a taker, and 16 MiB
     for the program, 16 thread stacks and metadata (VmHWM is 1.5-2 MiB before the workload).
     1.6 x L (glibc's single pool with room) is out of reach of a page-level design here: even
     with nothing kept unused the pages in use come to 2.2 x L.
     Default options in one test; the other sets a purge delay of 1 s (the environment), so
     that its outcome does not depend on how fast the build runs against the purge delay.

   Neither test asserts timing; both print their figures on success and failure. Under a
   sanitizer the RSS figures are not asserted (MT_RSS_ASSERTS). The glibc build:
     gcc -std=gnu11 -O2 -DMT_LIBC_MALLOC -Iinclude -Itest test/memory/mem-shared.c -lpthread
   (mstress only; it calls malloc/free, the mimalloc build mi_malloc/mi_free, so that it tests
   this library also where MI_OVERRIDE is off). */
#include "memory-common.h"
#include "rss-guard.h"
#include <pthread.h>
#include <stdatomic.h>

#ifdef MT_LIBC_MALLOC   /* the glibc comparison build (by hand, see CMakeLists.txt): no mimalloc */
#define MT_MALLOC(n)  malloc(n)
#define MT_FREE(p)    free(p)
#define MT_ALLOCATOR  "libc malloc"
#else
#define MT_MALLOC(n)  mi_malloc(n)
#define MT_FREE(p)    mi_free(p)
#define MT_ALLOCATOR  "mimalloc"
#endif

static uint64_t ms_rand(uint64_t* x) {   /* xorshift64 */
  *x ^= *x << 13; *x ^= *x >> 7; *x ^= *x << 17;
  return *x;
}

/* /proc/self/status field (kB) in bytes, or 0 */
static size_t ms_status_bytes(const char* field) {
  char buf[4096];
  if (!mt_read_proc("/proc/self/status", buf, sizeof(buf))) return 0;
  const char* p = strstr(buf, field);
  if (p == NULL) return 0;
  return (size_t)strtoull(p + strlen(field) + 1, NULL, 10) * KiB;
}

/* Blocks that carry their size: word 0 = size | tag << 32, one word per 4 KiB = mix(word 0),
   last word = ~mix(word 0); for blocks of 16 bytes and more. */
static uint64_t ms_mix(uint64_t h) {
  h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL; h ^= h >> 33;
  return h;
}

static void ms_stamp(uint8_t* p, size_t size, uint64_t tag) {
  const uint64_t w = (uint64_t)size | (tag << 32), c = ms_mix(w), nc = ~c;
  memcpy(p, &w, 8);
  for (size_t off = 4096; off + 16 <= size; off += 4096) memcpy(p + off, &c, 8);   /* every OS page */
  memcpy(p + size - 8, &nc, 8);
}

static _Atomic(long) ms_corrupt;

/* checks the stamps; returns the block's size (0 if corrupt) */
static size_t ms_check(const uint8_t* p, size_t min, size_t max) {
  uint64_t w, nc;
  memcpy(&w, p, 8);
  const size_t s = (size_t)(w & 0xFFFFFFFFu);
  bool ok = (s >= min && s <= max);
  if (ok) {
    const uint64_t c = ms_mix(w);
    memcpy(&nc, p + s - 8, 8);
    ok = (nc == ~c);
    for (size_t off = 4096; ok && off + 16 <= s; off += 4096) { uint64_t v; memcpy(&v, p + off, 8); ok = (v == c); }
  }
  if (!ok) {
    if (atomic_fetch_add(&ms_corrupt, 1) < 5) fprintf(stderr, "block %p: stamps overwritten (first word %llx)\n", (const void*)p, (unsigned long long)w);
    return 0;
  }
  return s;
}

/* ---------------------------------------------------------------------------------------
   reuse: thread A's freed memory, A alive and idle, serves thread B
--------------------------------------------------------------------------------------- */
#ifndef MT_LIBC_MALLOC
#define MT_REUSE_TOTAL    (128 * MiB)
#define MT_REUSE_MIN      ((size_t)16)
#define MT_REUSE_MAX      (64 * KiB)
#define MT_REUSE_FACTOR   1.25
#define MT_REUSE_SLACK    (8 * MiB)
#define MT_REUSE_MAX_BLOCKS  (1u << 20)
#define MT_REUSE_MAX_SEGS    4096

typedef struct reuse_fig_s { size_t rss, vsz; int64_t committed, reserved, segments; } reuse_fig_t;

static void reuse_measure(reuse_fig_t* f) {
  const mi_stats_t* s = mt_stats();
  f->rss = mt_rss(); f->vsz = mt_vsz();
  f->committed = s->committed.current; f->reserved = s->reserved.current; f->segments = s->segments.current;
}

static bool reuse_free_all;   /* `reuse all`: A keeps nothing */
static bool reuse_self;       /* `reuse self`: A allocates B's blocks itself (calibration: the reuse a thread has of its own slots) */
/* phases (mt_phase_set): 1: A allocated and freed, idle; 2: B done, A may end */
static reuse_fig_t fig0, figA, figA_freed, figB;
static size_t reuse_blocks, reuse_kept, reuse_kept_bytes, reuse_segments_a;

/* allocates MT_REUSE_TOTAL in the fixed sequence of sizes, every byte written */
static size_t reuse_alloc(uint8_t** blocks) {
  uint64_t x = 0x243F6A8885A308D3ULL;
  size_t total = 0, n = 0;
  while (total < MT_REUSE_TOTAL && n < MT_REUSE_MAX_BLOCKS) {
    /* log-uniform in [16, 64 KiB]: a power of two scale, then uniform within it */
    const size_t k = (size_t)(ms_rand(&x) % 12);   /* 16 << 0 .. 16 << 11 = 32 KiB */
    const size_t lo = MT_REUSE_MIN << k;
    const size_t size = lo + (size_t)(ms_rand(&x) % (lo + 1));   /* lo .. 2 lo <= 64 KiB */
    test_live_add(size);   /* the RSS guard's live bytes (rss-guard.h) */
    uint8_t* p = (uint8_t*)MT_MALLOC(size);
    CHECK_MSG(p != NULL, "malloc(%zu) failed", size);
    if (p == NULL) { test_live_sub(size); break; }
    memset(p, (int)(n & 0x7F) + 1, size);
    ms_stamp(p, size, n);
    blocks[n++] = p;
    total += size;
  }
  return n;
}

static void reuse_check_free(uint8_t* p) {
  const size_t size = ms_check(p, MT_REUSE_MIN, MT_REUSE_MAX);
  if (size == 0) CHECK_MSG(false, "block %p corrupt", (void*)p);
  if (!test_rss_leak()) MT_FREE(p);   /* (MI_TEST_RSS_LEAK=1: leaked, counted as freed) */
  test_live_sub(size);
}

static void* reuse_thread_b(void* arg);

static void* reuse_thread_a(void* arg) {
  (void)arg;
  uint8_t** blocks = (uint8_t**)calloc(MT_REUSE_MAX_BLOCKS, sizeof(uint8_t*));
  uintptr_t* segs = (uintptr_t*)calloc(MT_REUSE_MAX_SEGS, sizeof(uintptr_t));
  uint8_t** kept = (uint8_t**)calloc(MT_REUSE_MAX_SEGS, sizeof(uint8_t*));
  CHECK(blocks != NULL && segs != NULL && kept != NULL);
  if (blocks == NULL || segs == NULL || kept == NULL) { mt_phase_set(1); return NULL; }
  const size_t n = reuse_alloc(blocks);
  reuse_blocks = n;
  reuse_measure(&figA);
  /* free all but the first block that landed in each segment */
  size_t nsegs = 0;
  for (size_t i = 0; i < n; i++) {
    const uintptr_t seg = (uintptr_t)blocks[i] & ~(uintptr_t)(MT_SEGMENT_SIZE - 1);
    size_t j = 0;
    while (j < nsegs && segs[j] != seg) j++;
    if (j == nsegs && nsegs < MT_REUSE_MAX_SEGS) {
      segs[nsegs] = seg;
      if (!reuse_free_all) { kept[nsegs] = blocks[i]; uint64_t w; memcpy(&w, blocks[i], 8); reuse_kept_bytes += (size_t)(w & 0xFFFFFFFFu); }
      else reuse_check_free(blocks[i]);
      nsegs++;
    }
    else {
      reuse_check_free(blocks[i]);
    }
    blocks[i] = NULL;
  }
  reuse_segments_a = nsegs;
  reuse_kept = (reuse_free_all ? 0 : nsegs);
  reuse_measure(&figA_freed);
  if (reuse_self) reuse_thread_b(NULL);
  mt_phase_set(1);
  mt_phase_wait(2);   /* alive and idle while B allocates */
  for (size_t j = 0; j < nsegs; j++) if (kept[j] != NULL) reuse_check_free(kept[j]);
  free(kept);
  free(segs);
  free(blocks);
  return NULL;
}

static void* reuse_thread_b(void* arg) {
  (void)arg;
  uint8_t** blocks = (uint8_t**)calloc(MT_REUSE_MAX_BLOCKS, sizeof(uint8_t*));
  CHECK(blocks != NULL);
  if (blocks == NULL) return NULL;
  const size_t n = reuse_alloc(blocks);
  CHECK_EQ(n, reuse_blocks);
  reuse_measure(&figB);
  for (size_t i = 0; i < n; i++) reuse_check_free(blocks[i]);
  free(blocks);
  return NULL;
}

static int reuse_mode(bool free_all, bool self) {
  reuse_free_all = free_all;
  reuse_self = self;
  /* RSS bound (rss-guard.h): 2 x peak live + 64 MiB, scaled under the sanitizers (measured:
     150-162 MiB above the start for 129 MiB live; TSan 763-817 MiB) */
  test_rss_guard_start("memory-shared-reuse", 2.0, 64);
  mi_option_set(mi_option_purge_delay, 1000);   /* reuse, not purging, is measured */
  mt_activity(3000);
  mi_collect(true);
  reuse_measure(&fig0);
  pthread_t a, b;
  CHECK(pthread_create(&a, NULL, &reuse_thread_a, NULL) == 0);
  mt_phase_wait(1);
  if (!self) {
    CHECK(pthread_create(&b, NULL, &reuse_thread_b, NULL) == 0);
    pthread_join(b, NULL);
  }
  mt_phase_set(2);
  pthread_join(a, NULL);
  mi_collect(true);
  reuse_fig_t fig_end;
  reuse_measure(&fig_end);

  const double rss_a = mt_mib_diff(figA.rss, fig0.rss), rss_b = mt_mib_diff(figB.rss, fig0.rss);
  const double com_a = (double)(figA.committed - fig0.committed) / MiB, com_b = (double)(figB.committed - fig0.committed) / MiB;
  const double rss_bound = MT_REUSE_FACTOR * rss_a + mt_mib(MT_REUSE_SLACK);
  const double com_bound = MT_REUSE_FACTOR * com_a + mt_mib(MT_REUSE_SLACK);
  printf("reuse%s%s: %zu blocks (%zu MiB, 16 B..64 KiB) in %zu segments; A keeps %zu blocks (%.1f KiB); purge_delay %ld ms\n",
         (free_all ? " all" : ""), (self ? " self (A allocates B's blocks itself)" : ""), reuse_blocks, MT_REUSE_TOTAL / MiB, reuse_segments_a, reuse_kept, (double)reuse_kept_bytes / KiB,
         mi_option_get(mi_option_purge_delay));
  printf("  RSS        start %.1f MiB; after A's allocation %+.1f, after A's frees %+.1f, after B's allocation %+.1f (bound %+.1f = %.2f x A + %zu), ratio B/A %.2f; end (A ended, collect) %+.1f\n",
         mt_mib(fig0.rss), rss_a, mt_mib_diff(figA_freed.rss, fig0.rss), rss_b, rss_bound, MT_REUSE_FACTOR, MT_REUSE_SLACK / MiB,
         (rss_a > 0 ? rss_b / rss_a : 0.0), mt_mib_diff(fig_end.rss, fig0.rss));
  printf("  committed  start %.1f MiB; after A %+.1f, after A's frees %+.1f, after B %+.1f (bound %+.1f), ratio B/A %.2f; end %+.1f\n",
         (double)fig0.committed / MiB, com_a, (double)(figA_freed.committed - fig0.committed) / MiB, com_b, com_bound,
         (com_a > 0 ? com_b / com_a : 0.0), (double)(fig_end.committed - fig0.committed) / MiB);
  printf("  segments   start %lld, after A %lld, after A's frees %lld, after B %lld, end %lld; reserved start %.0f MiB, after B %.0f MiB; address space start %.0f MiB, after B %+.0f MiB\n",
         (long long)fig0.segments, (long long)figA.segments, (long long)figA_freed.segments, (long long)figB.segments, (long long)fig_end.segments,
         (double)fig0.reserved / MiB, (double)figB.reserved / MiB, mt_mib(fig0.vsz), mt_mib_diff(figB.vsz, fig0.vsz));
  fflush(stdout);
  if (MT_RSS_ASSERTS) {
    CHECK_MSG(figA.rss >= fig0.rss + MT_REUSE_TOTAL / 10 * 9, "A's allocation grew the RSS by only %.1f MiB", rss_a);
    CHECK_MSG(rss_b <= rss_bound, "RSS after B's allocation %+.1f MiB > %.2f x %.1f + %zu MiB: B did not reuse what A freed",
              rss_b, MT_REUSE_FACTOR, rss_a, MT_REUSE_SLACK / MiB);
    CHECK_MSG(fig_end.rss <= fig0.rss + 16 * MiB, "after A ended and mi_collect(true) the RSS is %+.1f MiB above the start", mt_mib_diff(fig_end.rss, fig0.rss));
  }
  CHECK_MSG(com_b <= com_bound, "committed after B's allocation %+.1f MiB > %.2f x %.1f + %zu MiB", com_b, MT_REUSE_FACTOR, com_a, MT_REUSE_SLACK / MiB);
  CHECK_EQ(ms_corrupt, 0);
  return test_summary(self ? "memory-shared-reuse self" : free_all ? "memory-shared-reuse-all" : "memory-shared-reuse",
                      "RSS B/A %.2f (%+.1f / %+.1f MiB), committed B/A %.2f%s", (rss_a > 0 ? rss_b / rss_a : 0.0), rss_b, rss_a,
                      (com_a > 0 ? com_b / com_a : 0.0), (MT_RSS_ASSERTS ? "" : " (sanitizer build: RSS not asserted)"));
}
#endif

/* ---------------------------------------------------------------------------------------
   mstress: 16 threads at once, blocks handed between threads, peak RSS vs peak live bytes
--------------------------------------------------------------------------------------- */
#define MS_LOCAL        256
#define MS_MIN          ((size_t)16)
#define MS_MAX          (512 * KiB)
#define MS_FACTOR       3.0
#define MS_SLACK        (16 * MiB)
#define MS_MAX_THREADS  64

static _Atomic(void*)* ms_shared;
static size_t ms_nshared;
static _Atomic(size_t) ms_live, ms_live_peak;
static _Atomic(uint64_t) ms_allocs;
static size_t ms_iters = 20000;
static pthread_barrier_t ms_barrier;   /* all the round's threads start together and meet halfway */

static void ms_live_add(size_t n) {
  test_live_add(n);   /* the RSS guard's live bytes (rss-guard.h) */
  const size_t now = atomic_fetch_add_explicit(&ms_live, n, memory_order_relaxed) + n;
  size_t peak = atomic_load_explicit(&ms_live_peak, memory_order_relaxed);
  while (now > peak && !atomic_compare_exchange_weak_explicit(&ms_live_peak, &peak, now, memory_order_relaxed, memory_order_relaxed)) { }
}

static size_t ms_size(uint64_t* x) {
  const uint64_t r = ms_rand(x);
  const uint64_t band = r % 100, u = (r >> 8) & 0xFFFFFFFFu;
  if (band < 70) return MS_MIN + (size_t)((u * (256 - MS_MIN)) >> 32);                    /* 16..256 B */
  if (band < 90) return 256 + (size_t)((u * (4 * KiB - 256)) >> 32);                      /* ..4 KiB */
  if (band < 99) return 4 * KiB + (size_t)((u * (64 * KiB - 4 * KiB)) >> 32);             /* ..64 KiB */
  return 64 * KiB + (size_t)((u * (MS_MAX - 64 * KiB)) >> 32);                            /* ..512 KiB */
}

static void* ms_alloc(uint64_t* x) {
  const size_t size = ms_size(x);
  uint8_t* p = (uint8_t*)MT_MALLOC(size);
  if (p == NULL) { fprintf(stderr, "malloc(%zu) failed\n", size); abort(); }
  ms_live_add(size);   /* counted before it is written: the peak is never under the RSS's cause */
  ms_stamp(p, size, *x);
  atomic_fetch_add_explicit(&ms_allocs, 1, memory_order_relaxed);
  return p;
}

static void ms_free(void* p) {
  if (p == NULL) return;
  const size_t size = ms_check((const uint8_t*)p, MS_MIN, MS_MAX);
  if (!test_rss_leak()) MT_FREE(p);   /* (MI_TEST_RSS_LEAK=1: leaked, counted as freed) */
  if (size > 0) { atomic_fetch_sub_explicit(&ms_live, size, memory_order_relaxed); test_live_sub(size); }
}

static void* ms_worker(void* arg) {
  uint64_t x = (uint64_t)(uintptr_t)arg;
  void* local[MS_LOCAL];
  memset(local, 0, sizeof(local));
  pthread_barrier_wait(&ms_barrier);
  for (size_t i = 0; i < ms_iters; i++) {
    if (i == ms_iters / 2) pthread_barrier_wait(&ms_barrier);   /* every thread holds its blocks at once */
    const uint64_t r = ms_rand(&x);
    const uint64_t action = r % 100;
    const size_t j = (size_t)((r >> 16) % MS_LOCAL);
    const size_t k = (size_t)((r >> 32) % ms_nshared);
    if (action < 50) { ms_free(local[j]); local[j] = ms_alloc(&x); }                       /* replace */
    else if (action < 70) { ms_free(local[j]); local[j] = NULL; }                          /* free */
    else if (action < 90) { local[j] = atomic_exchange(&ms_shared[k], local[j]); }         /* swap */
    else if (action < 95) { ms_free(atomic_exchange(&ms_shared[k], NULL)); }               /* free shared */
    else { void* p = ms_alloc(&x); ms_free(atomic_exchange(&ms_shared[k], p)); }           /* store */
  }
  for (size_t j = 0; j < MS_LOCAL; j++) {   /* the round ends: a quarter handed on, the rest freed */
    if (local[j] == NULL) continue;
    const uint64_t r = ms_rand(&x);
    if ((r & 3) == 0) ms_free(atomic_exchange(&ms_shared[(r >> 8) % ms_nshared], local[j]));
    else ms_free(local[j]);
  }
  return NULL;
}

static int mstress_mode(int argc, char** argv) {
  size_t threads = 16, rounds = 4, seed = 1;
  for (int i = 2; i < argc; i++) {
    if (sscanf(argv[i], "threads=%zu", &threads) == 1 || sscanf(argv[i], "rounds=%zu", &rounds) == 1 ||
        sscanf(argv[i], "iters=%zu", &ms_iters) == 1 || sscanf(argv[i], "seed=%zu", &seed) == 1) continue;
    fprintf(stderr, "unknown argument '%s'\n", argv[i]);
    return 2;
  }
  if (threads == 0 || threads > MS_MAX_THREADS) { fprintf(stderr, "threads: 1..%d\n", MS_MAX_THREADS); return 2; }
  /* RSS guard (rss-guard.h): only against a runaway, 10 x peak live + 64 MiB: this mode measures
     the ratio itself (5.9-7.8 x today, above) */
  test_rss_guard_start("memory-shared-mstress", 10.0, 64);
  ms_nshared = threads * MS_LOCAL;
  ms_shared = (_Atomic(void*)*)calloc(ms_nshared, sizeof(*ms_shared));
  CHECK(ms_shared != NULL);
  if (ms_shared == NULL) return test_summary("memory-shared-mstress-rss", "no memory");
  CHECK(pthread_barrier_init(&ms_barrier, NULL, (unsigned)threads) == 0);
  const size_t hwm0 = ms_status_bytes("VmHWM:");
  const long long t0 = mt_now_ms();
  pthread_t tids[MS_MAX_THREADS];
  for (size_t r = 0; r < rounds; r++) {
    for (size_t i = 0; i < threads; i++) {
      const uint64_t s = (seed * 0x2545F4914F6CDD1DULL) ^ ((r * threads + i + 1) * 0x9E3779B97F4A7C15ULL);
      CHECK(pthread_create(&tids[i], NULL, &ms_worker, (void*)(uintptr_t)(s | 1)) == 0);
    }
    for (size_t i = 0; i < threads; i++) pthread_join(tids[i], NULL);
  }
  const long long elapsed = mt_now_ms() - t0;
  const size_t hwm = ms_status_bytes("VmHWM:"), rss = mt_rss();
  const size_t live_end = atomic_load(&ms_live), peak = atomic_load(&ms_live_peak);
  for (size_t k = 0; k < ms_nshared; k++) ms_free(atomic_exchange(&ms_shared[k], NULL));
  free(ms_shared);
  pthread_barrier_destroy(&ms_barrier);
  const double bound = MS_FACTOR * mt_mib(peak) + mt_mib(MS_SLACK);
  char opts[64] = "";
#ifndef MT_LIBC_MALLOC
  snprintf(opts, sizeof(opts), ", purge_delay %ld ms", mi_option_get(mi_option_purge_delay));
#endif
  printf("mstress (%s%s): %zu threads x %zu rounds x %zu iterations, %llu mallocs in %lld ms; peak live %.1f MiB (live at the end %.1f MiB)\n",
         MT_ALLOCATOR, opts, threads, rounds, ms_iters, (unsigned long long)atomic_load(&ms_allocs), elapsed, mt_mib(peak), mt_mib(live_end));
  printf("  peak RSS (VmHWM) %.1f MiB (before the workload %.1f MiB; RSS at the end %.1f MiB) = %.2f x peak live; bound %.1f MiB (%.1f x peak live + %zu MiB)\n",
         mt_mib(hwm), mt_mib(hwm0), mt_mib(rss), (peak > 0 ? (double)hwm / (double)peak : 0.0), bound, MS_FACTOR, MS_SLACK / MiB);
  fflush(stdout);
  CHECK_MSG(peak >= 8 * MiB, "peak live only %.1f MiB: the workload is too small to say anything", mt_mib(peak));
  if (MT_RSS_ASSERTS) {
    CHECK_MSG(mt_mib(hwm) <= bound, "peak RSS %.1f MiB > %.1f x peak live %.1f MiB + %zu MiB (%.2f x)", mt_mib(hwm), MS_FACTOR, mt_mib(peak),
              MS_SLACK / MiB, (double)hwm / (double)peak);
  }
  CHECK_EQ(atomic_load(&ms_live), 0);
  CHECK_EQ(ms_corrupt, 0);
  char tname[64];
  snprintf(tname, sizeof(tname), "memory-shared-mstress%zu-rss", threads);
  return test_summary(tname, "%s: peak RSS %.1f MiB = %.2f x peak live %.1f MiB (bound %.1f MiB)%s", MT_ALLOCATOR,
                      mt_mib(hwm), (peak > 0 ? (double)hwm / (double)peak : 0.0), mt_mib(peak), bound,
                      (MT_RSS_ASSERTS ? "" : " (sanitizer build: RSS not asserted)"));
}

int main(int argc, char** argv) {
  const char* mode = (argc > 1 ? argv[1] : "");
#ifndef MT_LIBC_MALLOC
  if (strcmp(mode, "reuse") == 0) {
    const char* how = (argc > 2 ? argv[2] : "");
    return reuse_mode(strcmp(how, "all") == 0, strcmp(how, "self") == 0);
  }
#endif
  if (strcmp(mode, "mstress") == 0) return mstress_mode(argc, argv);
  fprintf(stderr, "usage: mem-shared reuse [all|self] | mstress [threads=16] [rounds=N] [iters=N] [seed=N]\n");
  return 2;
}
