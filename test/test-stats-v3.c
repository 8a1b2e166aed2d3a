/* SPDX-License-Identifier: MIT */
/* test-stats-v3.c -- mimalloc 3.x's per-heap and per-subprocess statistics (mimalloc-stats.h
   in v3 mode, compiled with -DMI_V3_API: test/CMakeLists.txt), written against v3's documented
   API only. Checks that a heap's figures count the blocks several threads allocated in it (each
   thread's part as it last published it) and follow their frees, that two heaps and a
   subprocess and the main one are kept apart, that an ended thread's part still counts, the
   JSON, the printers and the bin sizes.
   With a directory argument it also writes its JSON documents there with the figures they must
   hold, for test/stats/run-stats.py (group v3-json) to parse. */
#define _GNU_SOURCE   /* pthread barriers under -std=c11 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mimalloc.h"
#include "mimalloc-stats.h"
#include "testing.h"
#include "rss-guard.h"

_Static_assert(MI_STAT_VERSION == 5, "v3's statistics layout");

#if defined(NDEBUG) && !defined(MI_TEST_PADDED_BLOCKS)
#define EXACT_BINS 1   /* no check record or tracking padding after each block: a size lands in its own class */
#else
#define EXACT_BINS 0
#endif

#define HUGE_MIN  ((size_t)2 * 1024 * 1024 + 1)   /* ours: larger blocks are huge (MI_BIN_HUGE) */

static int64_t blocks_in_use(const mi_stats_t* st) {
  int64_t n = 0;
  for (size_t b = 0; b <= MI_BIN_HUGE; b++) n += st->malloc_bins[b].current;
  return n;
}

/* the bin of mimalloc's numbering a request of `size` lands in */
static size_t bin_of(size_t size) {
  size_t b = 1;
  while (b < MI_BIN_HUGE && mi_stats_get_bin_size(b) < size) b++;
  return b;
}

static bool heap_stats(mi_heap_t* heap, mi_stats_t* st) {
  mi_stats_init(st);
  return mi_heap_stats_get(heap, st);
}

/* ---- bin sizes ------------------------------------------------------------------------- */
static void test_bin_sizes(void) {
  CHECK_EQ(mi_stats_get_bin_size(0), 0);
  CHECK_EQ(mi_stats_get_bin_size(MI_BIN_HUGE + 1), 0);
  CHECK_EQ(mi_stats_get_bin_size(1), sizeof(void*));
  for (size_t b = 2; b < MI_BIN_HUGE; b++) CHECK(mi_stats_get_bin_size(b) > mi_stats_get_bin_size(b - 1));
  CHECK_EQ(mi_stats_get_bin_size(MI_BIN_HUGE), HUGE_MIN);   /* ours: the smallest huge size */
  mi_heap_t* heap = mi_heap_new();
  CHECK(heap != NULL);
  for (size_t b = 1; b < MI_BIN_HUGE && mi_stats_get_bin_size(b) < HUGE_MIN; b++) {
    const size_t size = mi_stats_get_bin_size(b);
    void* p = mi_heap_malloc(heap, size);
    CHECK(p != NULL);
    mi_stats_t st;
    CHECK(heap_stats(heap, &st));
    size_t found = 0;
    for (size_t i = 0; i <= MI_BIN_HUGE; i++) if (st.malloc_bins[i].current == 1) found = i;
    CHECK_EQ(blocks_in_use(&st), 1);
    CHECK_MSG(found >= b && mi_stats_get_bin_size(found) >= mi_usable_size(p), "bin %zu (size %zu): counted in bin %zu", b, size, found);
    /* our classes are finer than mimalloc's above 64 bytes, coarser below: the block lands in
       the bin of its size class (its usable size) */
    if (EXACT_BINS) CHECK_MSG(found == bin_of(mi_usable_size(p)), "size %zu (block %zu) counted in bin %zu", size, mi_usable_size(p), found);
    if (EXACT_BINS && size > 64) CHECK_MSG(found == b, "size %zu counted in bin %zu, not %zu", size, found, b);
    CHECK(st.page_bins[found].current >= 1);
    if (EXACT_BINS && size > 64 && size + 1 < HUGE_MIN) {   /* one byte more: the next class */
      void* q = mi_heap_malloc(heap, size + 1);
      CHECK(heap_stats(heap, &st));
      CHECK_EQ(st.malloc_bins[b + 1].current, 1);
      mi_free(q);
    }
    mi_free(p);
  }
  mi_stats_t st;
  CHECK(heap_stats(heap, &st));
  CHECK_EQ(blocks_in_use(&st), 0);
  mi_heap_delete(heap);
}

/* ---- a heap that several threads allocate in -------------------------------------------- */
#define THREADS 4
static const size_t thread_size[THREADS] = { 48, 200, 1000, 5000 };
static const int thread_count[THREADS] = { 300, 200, 100, 50 };
static mi_heap_t* shared;
static pthread_barrier_t barrier;

typedef struct worker_s { int id; void* blocks[300]; } worker_t;

static void* worker(void* arg) {
  worker_t* w = (worker_t*)arg;
  const int n = thread_count[w->id];
  for (int i = 0; i < n; i++) w->blocks[i] = mi_heap_malloc(shared, thread_size[w->id]);
  mi_heap_stats_merge_to_subproc(shared);         /* published: the main thread counts them */
  pthread_barrier_wait(&barrier);                 /* 1: main reads */
  pthread_barrier_wait(&barrier);                 /* 2: free half */
  for (int i = 0; i < n / 2; i++) mi_free(w->blocks[i]);
  mi_stats_t st;
  CHECK(heap_stats(shared, &st));                 /* taking the figures publishes them too */
  pthread_barrier_wait(&barrier);                 /* 3: main reads */
  pthread_barrier_wait(&barrier);                 /* 4: free the rest and end */
  for (int i = n / 2; i < n; i++) mi_free(w->blocks[i]);
  return NULL;
}

static void check_shared(int main_blocks, bool halved) {
  mi_stats_t st;
  CHECK(heap_stats(shared, &st));
  int64_t want = main_blocks;
  int64_t bytes = main_blocks * 64;
  for (int t = 0; t < THREADS; t++) {
    const int n = (halved ? thread_count[t] - thread_count[t] / 2 : thread_count[t]);
    want += n;
    bytes += n * (int64_t)thread_size[t];
    if (EXACT_BINS) CHECK_MSG(st.malloc_bins[bin_of(thread_size[t])].current == n, "size %zu: %lld blocks, want %d",
                              thread_size[t], (long long)st.malloc_bins[bin_of(thread_size[t])].current, n);
  }
  if (EXACT_BINS) CHECK_EQ(st.malloc_bins[bin_of(64)].current, main_blocks);
  CHECK_MSG(blocks_in_use(&st) == want, "blocks in use %lld, want %lld", (long long)blocks_in_use(&st), (long long)want);
  CHECK(st.malloc_normal.current >= bytes);
  CHECK(st.malloc_normal.current <= 2 * bytes + 64 * want);
  CHECK_EQ(st.theaps.current, THREADS + 1);
  CHECK_EQ(st.heaps.current, 1);
  CHECK(st.pages.current >= THREADS + 1);
  CHECK(st.page_committed.current >= st.malloc_normal.current);
  CHECK(st.committed.current >= st.page_committed.current);
  CHECK(st.reserved.current >= st.committed.current);
  CHECK(st.malloc_normal.peak >= st.malloc_normal.current);
}

static void test_shared_heap(void) {
  shared = mi_heap_new();
  CHECK(shared != NULL);
  pthread_barrier_init(&barrier, NULL, THREADS + 1);
  void* mine[100];
  for (int i = 0; i < 100; i++) mine[i] = mi_heap_malloc(shared, 64);
  static worker_t workers[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++) {
    workers[t].id = t;
    pthread_create(&threads[t], NULL, &worker, &workers[t]);
  }
  pthread_barrier_wait(&barrier);   /* 1 */
  check_shared(100, false);
  for (int i = 0; i < 50; i++) mi_free(mine[i]);
  pthread_barrier_wait(&barrier);   /* 2 */
  pthread_barrier_wait(&barrier);   /* 3 */
  check_shared(50, true);
  mi_stats_t st;
  CHECK(heap_stats(shared, &st));
  CHECK(st.malloc_normal.peak > st.malloc_normal.current);   /* it was higher at the first look */
  pthread_barrier_wait(&barrier);   /* 4 */
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  CHECK(heap_stats(shared, &st));
  CHECK_EQ(st.theaps.current, 1);   /* the ended threads' parts are gone */
  CHECK_EQ(blocks_in_use(&st), 50);
  for (int i = 50; i < 100; i++) mi_free(mine[i]);
  CHECK(heap_stats(shared, &st));
  CHECK_EQ(blocks_in_use(&st), 0);
  CHECK_EQ(st.malloc_normal.current, 0);
  pthread_barrier_destroy(&barrier);
  mi_heap_delete(shared);
}

/* ---- a heap's ended parts ----------------------------------------------------------------
   A thread that allocated in a heap ends while the heap lives: its blocks stay the heap's (v3
   merges an ended part into its heap), so the heap's figures keep counting them and their pages
   until they are freed, and the totals it had published are not lost. */
#define ENDED_N     200
#define ENDED_MORE  50
#define ENDED_SIZE  200
static mi_heap_t* ended_heap;
static void* ended_blocks[ENDED_N + ENDED_MORE];
static pthread_barrier_t ended_barrier;

/* arg != NULL: publishes ENDED_N blocks, lets the main thread look, allocates ENDED_MORE more */
static void* ended_worker(void* arg) {
  for (int i = 0; i < ENDED_N; i++) ended_blocks[i] = mi_heap_malloc(ended_heap, ENDED_SIZE);
  if (arg != NULL) {
    mi_heap_stats_merge_to_subproc(ended_heap);
    pthread_barrier_wait(&ended_barrier);   /* the main thread reads */
    pthread_barrier_wait(&ended_barrier);
    for (int i = ENDED_N; i < ENDED_N + ENDED_MORE; i++) ended_blocks[i] = mi_heap_malloc(ended_heap, ENDED_SIZE);
  }
  return NULL;
}

static int64_t blocks_total(const mi_stats_t* st) {
  int64_t n = 0;
  for (size_t b = 0; b <= MI_BIN_HUGE; b++) n += st->malloc_bins[b].total;
  return n;
}

static void test_ended_part(bool published) {
  const int n = (published ? ENDED_N + ENDED_MORE : ENDED_N);
  const size_t bin = bin_of(ENDED_SIZE);
  ended_heap = mi_heap_new();
  CHECK(ended_heap != NULL);
  pthread_barrier_init(&ended_barrier, NULL, 2);
  pthread_t thread;
  pthread_create(&thread, NULL, &ended_worker, (published ? &thread : NULL));
  mi_stats_t st;
  if (published) {
    pthread_barrier_wait(&ended_barrier);
    CHECK(heap_stats(ended_heap, &st));
    CHECK_EQ(blocks_in_use(&st), ENDED_N);
    CHECK_EQ(blocks_total(&st), ENDED_N);
    CHECK_EQ(st.theaps.current, 1);
    pthread_barrier_wait(&ended_barrier);
  }
  pthread_join(thread, NULL);
  CHECK(heap_stats(ended_heap, &st));
  CHECK_EQ(st.theaps.current, 0);   /* the part ended; its blocks did not */
  CHECK_MSG(blocks_in_use(&st) == n, "ended part: %lld blocks in use, want %d", (long long)blocks_in_use(&st), n);
  if (EXACT_BINS) CHECK_EQ(st.malloc_bins[bin].current, n);
  CHECK(st.malloc_normal.current >= (int64_t)n * ENDED_SIZE);
  CHECK(st.malloc_normal.current <= (int64_t)n * (ENDED_SIZE + 64));
  CHECK(st.pages.current >= 1);
  if (EXACT_BINS) CHECK(st.page_bins[bin].current >= 1);
  CHECK(st.page_committed.current >= st.malloc_normal.current);
  CHECK(st.committed.current >= st.page_committed.current);
  CHECK(st.reserved.current >= st.committed.current);
  /* totals: the published ones kept, the blocks allocated since counted once */
  CHECK_MSG(blocks_total(&st) == n, "ended part: %lld blocks allocated in total, want %d", (long long)blocks_total(&st), n);
  CHECK(st.malloc_normal.total >= st.malloc_normal.current);
  CHECK(st.malloc_normal.peak >= st.malloc_normal.current);
  mi_stats_t again;
  CHECK(heap_stats(ended_heap, &again));   /* a second look counts nothing twice */
  CHECK_EQ(blocks_total(&again), n);
  CHECK_EQ(again.malloc_normal.total, st.malloc_normal.total);
  CHECK_EQ(again.pages.current, st.pages.current);
  /* freed from this thread: the figures drop, the pages go when their last block does */
  for (int i = 0; i < n / 2; i++) mi_free(ended_blocks[i]);
  CHECK(heap_stats(ended_heap, &st));
  CHECK_EQ(blocks_in_use(&st), n - n / 2);
  CHECK(st.malloc_normal.current < again.malloc_normal.current);
  CHECK_EQ(blocks_total(&st), n);
  for (int i = n / 2; i < n; i++) mi_free(ended_blocks[i]);
  CHECK(heap_stats(ended_heap, &st));
  CHECK_EQ(blocks_in_use(&st), 0);
  CHECK_EQ(st.malloc_normal.current, 0);
  CHECK_EQ(st.pages.current, 0);
  if (EXACT_BINS) CHECK_EQ(st.page_bins[bin].current, 0);
  CHECK_EQ(st.page_committed.current, 0);
  CHECK_EQ(blocks_total(&st), n);
  CHECK(st.malloc_normal.peak >= (int64_t)n * ENDED_SIZE);
  pthread_barrier_destroy(&ended_barrier);
  mi_heap_delete(ended_heap);
}

/* Parts end while another thread takes the heap's figures: the totals never fall, and the
   blocks left are all counted at the end (the sanitizer builds check the locking). */
#define CHURN_THREADS 4
#define CHURN_ROUNDS  8
#define CHURN_KEEP    20
static void* churn_blocks[CHURN_THREADS * CHURN_ROUNDS][CHURN_KEEP];
static atomic_int churn_done;

static void* churn_worker(void* arg) {
  void** keep = (void**)arg;
  void* tmp[100];
  for (int i = 0; i < 100; i++) tmp[i] = mi_heap_malloc(ended_heap, 48 + (size_t)(i % 5) * 40);
  for (int i = 0; i < CHURN_KEEP; i++) keep[i] = mi_heap_malloc(ended_heap, 300);
  if (((keep - &churn_blocks[0][0]) / CHURN_KEEP) % 2 == 0) mi_heap_stats_merge_to_subproc(ended_heap);   /* half publish */
  for (int i = 0; i < 100; i++) mi_free(tmp[i]);
  return NULL;
}

static void* churn_starter(void* arg) {
  (void)arg;
  for (int r = 0; r < CHURN_ROUNDS; r++) {
    pthread_t t[CHURN_THREADS];
    for (int i = 0; i < CHURN_THREADS; i++) pthread_create(&t[i], NULL, &churn_worker, churn_blocks[r * CHURN_THREADS + i]);
    for (int i = 0; i < CHURN_THREADS; i++) pthread_join(t[i], NULL);
  }
  atomic_store(&churn_done, 1);
  return NULL;
}

static void test_ended_churn(void) {
  ended_heap = mi_heap_new();
  CHECK(ended_heap != NULL);
  atomic_store(&churn_done, 0);
  pthread_t starter;
  pthread_create(&starter, NULL, &churn_starter, NULL);
  int64_t last_total = 0, last_bytes = 0;
  int takings = 0;
  while (!atomic_load(&churn_done) || takings == 0) {
    mi_stats_t st;
    CHECK(heap_stats(ended_heap, &st));
    CHECK(blocks_total(&st) >= last_total);
    CHECK(st.malloc_normal.total >= last_bytes);
    last_total = blocks_total(&st);
    last_bytes = st.malloc_normal.total;
    takings++;
  }
  pthread_join(starter, NULL);
  const int64_t kept = (int64_t)CHURN_THREADS * CHURN_ROUNDS * CHURN_KEEP;
  mi_stats_t st;
  CHECK(heap_stats(ended_heap, &st));
  CHECK_EQ(st.theaps.current, 0);
  CHECK_MSG(blocks_in_use(&st) == kept, "churn: %lld blocks in use, want %lld", (long long)blocks_in_use(&st), (long long)kept);
  CHECK(blocks_total(&st) >= kept);
  for (int i = 0; i < CHURN_THREADS * CHURN_ROUNDS; i++) for (int j = 0; j < CHURN_KEEP; j++) mi_free(churn_blocks[i][j]);
  CHECK(heap_stats(ended_heap, &st));
  CHECK_EQ(blocks_in_use(&st), 0);
  CHECK_EQ(st.pages.current, 0);
  CHECK(blocks_total(&st) >= last_total);
  mi_heap_delete(ended_heap);
}

/* Several threads take the heap's figures while parts publish and end and another thread frees
   the blocks the ended parts left: for each taker the totals never fall (two takings may settle
   in the other order than they walked the ended parts' pages; the one not kept in the heap's
   ended figures must still leave its totals there). */
#define MONO_ROUNDS  200
#define MONO_KEEP    (MONO_ROUNDS * CHURN_THREADS * 32)
static _Atomic(void*) mono_kept[MONO_KEEP];
static atomic_int mono_nkept;
static atomic_int mono_falls;

static void* mono_worker(void* arg) {
  void* tmp[64];
  for (int i = 0; i < 64; i++) tmp[i] = mi_heap_malloc(ended_heap, 48 + (size_t)(i % 5) * 40);
  mi_heap_stats_merge_to_subproc(ended_heap);
  for (int i = 0; i < 32; i++) mi_free(tmp[i]);
  for (int i = 0; i < 32; i++) tmp[i] = mi_heap_malloc(ended_heap, 48 + (size_t)(i % 5) * 40);
  if (arg != NULL) mi_heap_stats_merge_to_subproc(ended_heap);
  for (int i = 0; i < 32; i++) mi_free(tmp[i]);
  for (int i = 32; i < 64; i++) {
    const int k = atomic_fetch_add(&mono_nkept, 1);
    if (k < MONO_KEEP) atomic_store(&mono_kept[k], tmp[i]);
    else mi_free(tmp[i]);
  }
  return NULL;
}

static void* mono_starter(void* arg) {
  (void)arg;
  for (int r = 0; r < MONO_ROUNDS; r++) {
    pthread_t t[CHURN_THREADS];
    for (int i = 0; i < CHURN_THREADS; i++) pthread_create(&t[i], NULL, &mono_worker, ((r + i) % 2 == 0 ? &t[i] : NULL));
    for (int i = 0; i < CHURN_THREADS; i++) pthread_join(t[i], NULL);
  }
  atomic_store(&churn_done, 1);
  return NULL;
}

static void* mono_freer(void* arg) {
  (void)arg;
  int i = 0;
  for (;;) {
    const bool last = atomic_load(&churn_done);
    int n = atomic_load(&mono_nkept);
    if (n > MONO_KEEP) n = MONO_KEEP;
    for (; i < n; i++) {
      void* p = atomic_exchange(&mono_kept[i], NULL);
      if (p == NULL && !last) break;   /* its worker stores it yet */
      if (p != NULL) mi_free(p);
    }
    if (last) return NULL;
  }
}

static void* mono_taker(void* arg) {
  (void)arg;
  int64_t last_total = 0, last_bytes = 0;
  while (!atomic_load(&churn_done)) {
    mi_stats_t st;
    if (!heap_stats(ended_heap, &st)) { atomic_fetch_add(&mono_falls, 1000000); break; }
    if (blocks_total(&st) < last_total || st.malloc_normal.total < last_bytes) atomic_fetch_add(&mono_falls, 1);
    last_total = blocks_total(&st);
    last_bytes = st.malloc_normal.total;
  }
  return NULL;
}

static void test_ended_monotone(void) {
  ended_heap = mi_heap_new();
  CHECK(ended_heap != NULL);
  atomic_store(&churn_done, 0);
  atomic_store(&mono_nkept, 0);
  atomic_store(&mono_falls, 0);
  pthread_t starter, freer, takers[3];
  pthread_create(&starter, NULL, &mono_starter, NULL);
  pthread_create(&freer, NULL, &mono_freer, NULL);
  for (int i = 0; i < 3; i++) pthread_create(&takers[i], NULL, &mono_taker, NULL);
  pthread_join(starter, NULL);
  pthread_join(freer, NULL);
  for (int i = 0; i < 3; i++) pthread_join(takers[i], NULL);
  CHECK_MSG(atomic_load(&mono_falls) == 0, "a taker saw the totals fall %d times", atomic_load(&mono_falls));
  mi_stats_t st;
  CHECK(heap_stats(ended_heap, &st));
  CHECK_MSG(blocks_in_use(&st) == 0, "%lld blocks in use, %lld pages, %lld parts", (long long)blocks_in_use(&st), (long long)st.pages.current, (long long)st.theaps.current);
  mi_heap_delete(ended_heap);
}

/* ---- two heaps kept apart --------------------------------------------------------------- */
static void test_two_heaps(void) {
  mi_heap_t* a = mi_heap_new();
  mi_heap_t* b = mi_heap_new();
  void* pa[10];
  void* pb[20];
  for (int i = 0; i < 10; i++) pa[i] = mi_heap_malloc(a, 100);
  for (int i = 0; i < 20; i++) pb[i] = mi_heap_malloc(b, 3000);
  mi_stats_t sa, sb;
  CHECK(heap_stats(a, &sa));
  CHECK(heap_stats(b, &sb));
  CHECK_EQ(blocks_in_use(&sa), 10);
  CHECK_EQ(blocks_in_use(&sb), 20);
  CHECK_EQ(sa.theaps.current, 1);
  if (EXACT_BINS) {
    CHECK_EQ(sa.malloc_bins[bin_of(100)].current, 10);
    CHECK_EQ(sa.malloc_bins[bin_of(3000)].current, 0);
    CHECK_EQ(sb.malloc_bins[bin_of(3000)].current, 20);
  }
  for (int i = 0; i < 10; i++) mi_free(pa[i]);
  CHECK(heap_stats(a, &sa));
  CHECK(heap_stats(b, &sb));
  CHECK_EQ(blocks_in_use(&sa), 0);
  CHECK_EQ(blocks_in_use(&sb), 20);
  for (int i = 0; i < 20; i++) mi_free(pb[i]);
  mi_heap_delete(a);
  mi_heap_delete(b);
  /* the main heap: this thread's part */
  void* p = mi_malloc(777);
  mi_stats_t sm;
  CHECK(heap_stats(mi_heap_main(), &sm));
  CHECK(blocks_in_use(&sm) >= 1);
  CHECK(heap_stats(NULL, &sm));
  CHECK(blocks_in_use(&sm) >= 1);
  mi_free(p);
  /* a struct of another layout is refused */
  mi_stats_t bad;
  mi_stats_init(&bad);
  bad.version = 4;
  CHECK(!mi_heap_stats_get(mi_heap_main(), &bad));
  CHECK(!mi_stats_get(&bad));
  CHECK(mi_stats_as_json(&bad, 0, NULL) == NULL);
}

/* ---- a subprocess ------------------------------------------------------------------------ */
static mi_subproc_id_t sub;
static mi_heap_t* sub_heap;
static pthread_barrier_t sub_barrier;

static void* sub_worker(void* arg) {
  (void)arg;
  mi_subproc_add_current_thread(sub);
  void* mine[30];
  void* theirs[40];
  for (int i = 0; i < 30; i++) mine[i] = mi_malloc(700);
  sub_heap = mi_heap_new();
  for (int i = 0; i < 40; i++) theirs[i] = mi_heap_malloc(sub_heap, 1500);
  mi_stats_t st;
  mi_stats_init(&st);
  CHECK(mi_subproc_stats_get(sub, &st));        /* this thread's own heaps and sub_heap */
  CHECK(blocks_in_use(&st) >= 70);
  CHECK(blocks_in_use(&st) <= 80);              /* (the heap's own descriptors) */
  CHECK_EQ(st.heaps.current, 1);
  CHECK_EQ(st.theaps.current, 1);
  CHECK(st.segments.current >= 1);
  if (EXACT_BINS) {
    CHECK_EQ(st.malloc_bins[bin_of(700)].current, 30);
    CHECK_EQ(st.malloc_bins[bin_of(1500)].current, 40);
    CHECK_EQ(st.malloc_bins[bin_of(3000)].current, 0);   /* the main subprocess' blocks */
  }
  mi_stats_init(&st);
  CHECK(mi_subproc_stats_get_exclusive(sub, &st));
  CHECK_EQ(blocks_in_use(&st), 0);
  CHECK(st.segments.current >= 1);
  mi_heap_stats_merge_to_subproc(sub_heap);
  pthread_barrier_wait(&sub_barrier);   /* the main thread reads */
  pthread_barrier_wait(&sub_barrier);
  for (int i = 0; i < 30; i++) mi_free(mine[i]);
  for (int i = 0; i < 40; i++) mi_free(theirs[i]);
  mi_heap_delete(sub_heap);
  return NULL;
}

static void test_subproc(void) {
  sub = mi_subproc_new();
  void* big[200];
  for (int i = 0; i < 200; i++) big[i] = mi_malloc(3000);
  pthread_barrier_init(&sub_barrier, NULL, 2);
  pthread_t thread;
  pthread_create(&thread, NULL, &sub_worker, NULL);
  pthread_barrier_wait(&sub_barrier);
  mi_stats_t st;
  mi_stats_init(&st);
  CHECK(mi_subproc_stats_get(sub, &st));   /* from outside: sub_heap as its thread published it */
  CHECK_EQ(blocks_in_use(&st), 40);
  if (EXACT_BINS) CHECK_EQ(st.malloc_bins[bin_of(1500)].current, 40);
  CHECK_EQ(st.heaps.current, 1);
  mi_stats_t sm;
  mi_stats_init(&sm);
  CHECK(mi_subproc_stats_get(mi_subproc_main(), &sm));   /* the process' */
  CHECK(sm.pages.current > st.pages.current);
  CHECK(sm.committed.current > 0);
  CHECK(sm.heaps.current >= 1);
  CHECK(sm.threads.current >= 2);
  mi_stats_t sp;
  mi_stats_init(&sp);
  CHECK(mi_stats_get(&sp));
  CHECK(sp.pages.current > 0 && sp.reserved.current > 0);
  pthread_barrier_wait(&sub_barrier);
  pthread_join(thread, NULL);
  for (int i = 0; i < 200; i++) mi_free(big[i]);
  pthread_barrier_destroy(&sub_barrier);
}

/* ---- JSON and text ------------------------------------------------------------------------ */
typedef struct text_s { char buf[1 << 16]; size_t len; int calls; } text_t;

static void collect(const char* msg, void* arg) {
  text_t* t = (text_t*)arg;
  t->calls++;
  const size_t n = strlen(msg);
  if (t->len + n < sizeof(t->buf)) { memcpy(t->buf + t->len, msg, n + 1); t->len += n; }
}

static bool write_file(const char* dir, const char* name, const char* text) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE* f = fopen(path, "w");
  if (f == NULL) return false;
  fputs(text, f);
  return (fclose(f) == 0);
}

static void test_json_and_text(const char* dir) {
  mi_heap_t* heap = mi_heap_new();
  void* p[77];
  for (int i = 0; i < 77; i++) p[i] = mi_heap_malloc(heap, 4000);
  mi_stats_t st;
  CHECK(heap_stats(heap, &st));
  char* json = mi_heap_stats_get_json(heap, 0, NULL);
  CHECK(json != NULL);
  if (json != NULL) {
    CHECK(strstr(json, "\"stat_version\": 5") != NULL);
    CHECK(strstr(json, "\"theaps\": { \"total\": 1, \"peak\": 1, \"current\": 1 }") != NULL);
    char want[128];
    snprintf(want, sizeof(want), "\"current\": 77, \"block_size\": %zu }", mi_stats_get_bin_size(bin_of(4000)));
    if (EXACT_BINS) CHECK_MSG(strstr(json, want) != NULL, "no %s in\n%.300s", want, json);
    if (dir != NULL) {
      CHECK(write_file(dir, "heap.json", json));
      char expect[256];
      snprintf(expect, sizeof(expect), "blocks=77\nbin=%zu\nexact=%d\nmalloc_normal=%lld\npages=%lld\n", bin_of(4000), EXACT_BINS,
               (long long)st.malloc_normal.current, (long long)st.pages.current);
      CHECK(write_file(dir, "heap.expect", expect));
    }
    mi_free(json);
  }
  static char small[64];
  CHECK(mi_heap_stats_get_json(heap, sizeof(small), small) == NULL);   /* does not fit */
  static char big[1 << 16];
  CHECK(mi_stats_as_json(&st, sizeof(big), big) == big);
  CHECK(strstr(big, "\"chunk_bins\"") != NULL);
  char* sj = mi_subproc_stats_get_json(mi_subproc_main(), 0, NULL);
  CHECK(sj != NULL);
  if (sj != NULL) {
    CHECK(strstr(sj, "\"heaps\": {") != NULL);
    if (dir != NULL) CHECK(write_file(dir, "subproc.json", sj));
    mi_free(sj);
  }
  if (dir != NULL) CHECK(write_file(dir, "as.json", big));

  static text_t text;
  mi_heap_stats_print_out(heap, &collect, &text);
  CHECK(text.calls >= 4);
  CHECK(strstr(text.buf, "1 thread's part") != NULL);
  CHECK(strstr(text.buf, "pages in use") != NULL);
  CHECK(strstr(text.buf, "blocks by size") != NULL);
  memset(&text, 0, sizeof(text));
  mi_subproc_stats_print_out(mi_subproc_main(), &collect, &text);
  CHECK(strstr(text.buf, "peak RSS") != NULL);   /* the process' */
  memset(&text, 0, sizeof(text));
  mi_subproc_heap_stats_print_out(mi_subproc_main(), &collect, &text);
  CHECK(strstr(text.buf, "peak RSS") != NULL);
  CHECK(strstr(text.buf, "the main heap") != NULL);
  CHECK(strstr(text.buf, "1 thread's part") != NULL);   /* `heap` */
  memset(&text, 0, sizeof(text));
  mi_subproc_id_t other = mi_subproc_new();
  mi_subproc_heap_stats_print_out(other, &collect, &text);
  CHECK(strstr(text.buf, "subprocess") != NULL);
  CHECK(strstr(text.buf, "the main heap") == NULL);
  for (int i = 0; i < 77; i++) mi_free(p[i]);
  mi_heap_delete(heap);
}

int main(int argc, char** argv) {
  /* The RSS bound (rss-guard.h): 64 MiB above the start (more under the sanitizers), live bytes
     not counted: the test holds a few MiB at most (measured: 2-4 MiB above the start at its
     peak in the plain builds, 7 under ASan, 42-62 under TSan). */
  test_rss_guard_start("stats-v3", 0.0, 64);
  test_bin_sizes();
  test_two_heaps();
  test_shared_heap();
  test_ended_part(false);
  test_ended_part(true);
  test_ended_churn();
  test_ended_monotone();
  test_subproc();
  test_json_and_text(argc > 1 ? argv[1] : NULL);
  return test_summary("stats-v3", "heap and subprocess statistics");
}
