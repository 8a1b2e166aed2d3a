/* SPDX-License-Identifier: MIT */
/* test-sheap.c -- heaps that any thread can use (mi_heap_new_shared, src/sheap.c,
   docs/v3-api.md).

   usage: test-sheap [threads rounds iterations seed]   (default 8 6 20000 1)

   1. basics: every mi_heap_* allocation function takes a shared heap; each block is in the
      shared heap (mi_heap_contains, from the allocating thread), zeroed and aligned as asked;
      collect, visit and set_default of a shared heap (this thread's part as its default); another thread allocates in the same heap,
      its blocks are freed here after it ended (still the heap's); the one-entry cache with two
      heaps in turn.
   2. delete and destroy of a shared heap that other (live) threads used: after each thread's
      sweep (mi_collect, or the slow path of its part of another shared heap) its blocks moved to its backing heap, intact (delete), or are gone from
      every heap of the thread (destroy); the deleting thread's own part at once.
   3. fork while another thread makes, uses and deletes shared heaps (their locks): the child
      allocates in a shared heap the parent used, and deletes it (not under ThreadSanitizer).
   4. stress: `threads` threads share 4 heaps; each allocates with random functions and sizes in
      a random heap, checks the block is in that heap, fills it with a pattern derived from its
      address and trades it through a table of slots for a block of any thread (alive or ended),
      whose pattern it checks before it frees or reallocates it. Every round starts the threads
      anew (the blocks of the last round's threads stay in the table); in the middle of each
      round, with all threads waiting, one heap is destroyed (odd rounds) or deleted (even
      rounds) and replaced: every block of a destroyed heap dies with it, those ended threads
      left in it too.
   5. the parts of ended threads: blocks a thread left in a shared heap when it ended stay the
      heap's (mi_heap_of), no other heap takes their pages, a later part of the heap (another
      thread) reuses them, mi_heap_destroy frees them and mi_heap_delete hands them over;
      `threads` threads allocate blocks of every kind in two heaps and end, before or while one
      heap is destroyed (all its blocks freed) and the other deleted (all valid).
   6. with the profiler on (last: it stays on; where the build has none, the same checks run
      unsampled): blocks the profiler sampled in another thread's part name the shared heap,
      before and after that thread ends, and mi_heap_destroy frees them. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#if !defined(_WIN32)
#include <sys/wait.h>
#include <unistd.h>
#endif
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mimalloc.h"
#include "testing.h"
#include "rss-guard.h"

/* ---- 1. basics --------------------------------------------------------------------------- */
typedef struct count_args_s { const mi_heap_t* heap; size_t n; } count_args_t;

static bool count_block(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)area; (void)block_size;
  count_args_t* a = (count_args_t*)arg;
  CHECK(heap == a->heap);   /* the visitor is told of the heap it was called for */
  if (block != NULL) a->n++;
  return true;
}

static size_t heap_blocks(mi_heap_t* heap) {
  count_args_t a = { heap, 0 };
  CHECK(mi_heap_visit_blocks(heap, true, &count_block, &a));
  return a.n;
}

static bool all_zero(const void* p, size_t n) {
  for (size_t i = 0; i < n; i++) if (((const uint8_t*)p)[i] != 0) return false;
  return true;
}

/* the visit counts every thread's part: while it runs no other thread uses the heap */
typedef struct other_args_s { mi_heap_t* heap; size_t others; void* blocks[16]; } other_args_t;

static void* other_thread_alloc(void* arg) {
  other_args_t* a = (other_args_t*)arg;
  for (int i = 0; i < 16; i++) {
    a->blocks[i] = mi_heap_malloc(a->heap, 16 + 100 * (size_t)i);
    CHECK(a->blocks[i] != NULL);
    CHECK(mi_heap_contains(a->heap, a->blocks[i]));
    CHECK(!mi_heap_contains(mi_heap_main(), a->blocks[i]));
    memset(a->blocks[i], 0x5a, 16);
  }
  CHECK_EQ(heap_blocks(a->heap), 16 + a->others);   /* its part and the main thread's */
  return NULL;   /* the thread ends with its blocks alive */
}

static void test_basics(void) {
  mi_heap_t* h = mi_heap_new_shared();
  CHECK(h != NULL);
  CHECK_EQ(heap_blocks(h), 0);         /* no part of this thread yet */
  mi_heap_collect(h, true);            /* nothing to collect: no effect */
  void* p[20];
  int n = 0;
  p[n++] = mi_heap_malloc(h, 24);
  p[n++] = mi_heap_zalloc(h, 200);   CHECK(all_zero(p[n-1], 200));
  p[n++] = mi_heap_calloc(h, 10, 30); CHECK(all_zero(p[n-1], 300));
  p[n++] = mi_heap_mallocn(h, 7, 9);
  p[n++] = mi_heap_malloc_small(h, 64);
  p[n++] = mi_heap_zalloc_small(h, 64); CHECK(all_zero(p[n-1], 64));
  p[n++] = mi_heap_malloc_aligned(h, 100, 256);        CHECK_ALIGNED(p[n-1], 256);
  p[n++] = mi_heap_zalloc_aligned(h, 5000, 4096);      CHECK_ALIGNED(p[n-1], 4096); CHECK(all_zero(p[n-1], 5000));
  p[n++] = mi_heap_calloc_aligned(h, 3, 100, 64);      CHECK_ALIGNED(p[n-1], 64); CHECK(all_zero(p[n-1], 300));
  p[n++] = mi_heap_malloc_aligned_at(h, 100, 128, 16); CHECK_ALIGNED((uint8_t*)p[n-1] + 16, 128);
  p[n++] = mi_heap_malloc(h, 300000);                  /* large */
  p[n++] = mi_heap_malloc(h, 5 << 20);                 /* huge */
  p[n++] = mi_heap_malloc_aligned(h, 1000, 1 << 23);   CHECK_ALIGNED(p[n-1], 1 << 23);
  p[n++] = mi_heap_strdup(h, "shared");                CHECK(strcmp((char*)p[n-1], "shared") == 0);
  p[n++] = mi_heap_strndup(h, "shared heap", 6);       CHECK(strcmp((char*)p[n-1], "shared") == 0);
  for (int i = 0; i < n; i++) {
    CHECK_MSG(p[i] != NULL, "block %d", i);
    CHECK_MSG(mi_heap_contains(h, p[i]), "block %d", i);
    CHECK_MSG(mi_heap_of(p[i]) == h, "block %d", i);
    CHECK_MSG(!mi_heap_contains(mi_heap_main(), p[i]), "block %d", i);
  }
  CHECK_EQ(heap_blocks(h), (size_t)n);
  /* reallocation into the shared heap: of one of its blocks, of a default block, of NULL */
  memset(p[0], 7, 24);
  p[0] = mi_heap_realloc(h, p[0], 5000);
  CHECK(p[0] != NULL && mi_heap_contains(h, p[0]) && ((uint8_t*)p[0])[23] == 7);
  void* d = mi_malloc(40);
  memset(d, 9, 40);
  d = mi_heap_reallocn(h, d, 2, 100);
  CHECK(d != NULL && mi_heap_contains(h, d) && ((uint8_t*)d)[39] == 9);
  void* z = mi_heap_rezalloc(h, NULL, 100);
  CHECK(z != NULL && mi_heap_contains(h, z) && all_zero(z, 100));
  z = mi_heap_recalloc(h, z, 50, 10);
  CHECK(z != NULL && mi_heap_contains(h, z) && all_zero(z, 500));
  void* a = mi_heap_realloc_aligned(h, NULL, 300, 512);
  CHECK(a != NULL && mi_heap_contains(h, a)); CHECK_ALIGNED(a, 512);
  a = mi_heap_realloc_aligned(h, a, 30000, 512);
  CHECK(a != NULL && mi_heap_contains(h, a)); CHECK_ALIGNED(a, 512);
  /* set_default of a shared heap: this thread's part of it becomes the default, so malloc
     allocates in the heap, until the default is set back */
  mi_heap_t* const dflt = mi_heap_get_default();
  CHECK(mi_heap_set_default(h) == dflt);
  mi_heap_t* const part = mi_heap_get_default();
  CHECK(part != h && part != dflt && mi_heap_get_backing() == dflt);   /* (the part: a heap of this thread) */
  void* dp = mi_malloc(40);
  CHECK(dp != NULL && mi_heap_of(dp) == h && mi_heap_contains(h, dp));
  CHECK(mi_heap_set_default(dflt) == part);
  CHECK(mi_heap_get_default() == dflt);
  mi_free(dp);
  /* another thread allocates in the same heap, and ends; its blocks are not this thread's part */
  other_args_t args = { h, (size_t)n + 3, { NULL } };   /* (p, d, z and a are live) */
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, &other_thread_alloc, &args), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK_EQ(heap_blocks(h), (size_t)n + 3 + 16);   /* the ended part's pages are visited too */
  for (int i = 0; i < 16; i++) {
    CHECK(((uint8_t*)args.blocks[i])[15] == 0x5a);
    CHECK(mi_heap_contains(h, args.blocks[i]));   /* (its ended part's pages stay the heap's) */
    mi_free(args.blocks[i]);
  }
  /* two shared heaps in turn: the one-entry cache follows */
  mi_heap_t* h2 = mi_heap_new_shared();
  CHECK(h2 != NULL);
  for (int i = 0; i < 100; i++) {
    void* x = mi_heap_malloc((i & 1) ? h2 : h, 32);
    CHECK(mi_heap_contains((i & 1) ? h2 : h, x));
    CHECK(!mi_heap_contains((i & 1) ? h : h2, x));
    mi_free(x);
  }
  mi_heap_collect(h, true);
  /* delete: this thread's blocks move to its backing heap and stay valid */
  mi_heap_delete(h2);
  mi_heap_delete(h);
  for (int i = 0; i < n; i++) CHECK_MSG(mi_heap_contains(mi_heap_main(), p[i]), "block %d", i);
  CHECK(((uint8_t*)p[0])[23] == 7);
  for (int i = 0; i < n; i++) mi_free(p[i]);
  mi_free(d); mi_free(z); mi_free(a);
  /* the arena variant */
  mi_arena_id_t arena;
  if (mi_reserve_os_memory_ex(64 << 20, false, true, true, &arena) == 0) {
    mi_heap_t* ha = mi_heap_new_shared_in_arena(arena);
    CHECK(ha != NULL);
    void* q = mi_heap_malloc(ha, 1000);
    CHECK(q != NULL && mi_heap_contains(ha, q) && mi_arena_contains(arena, q));
    mi_free(q);
    mi_heap_delete(ha);
  }
  mi_option_disable(mi_option_show_errors);
  CHECK(mi_heap_new_shared_in_arena(12345) == NULL);   /* no such arena */
  mi_option_enable(mi_option_show_errors);
}

/* ---- 2. delete and destroy of a heap other threads used ----------------------------------- */
#define PART_THREADS  8
#define PART_BLOCKS   200

typedef struct part_args_s {
  mi_heap_t* heap;
  bool destroy;
  pthread_barrier_t* barrier;
  int index;
} part_args_t;

static bool in_own_heap(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)area; (void)block_size;
  void** blocks = (void**)arg;
  if (block == NULL) return true;
  for (int i = 0; i < PART_BLOCKS; i++) if (blocks[i] == block) blocks[PART_BLOCKS]++;   /* count of found */
  return true;
}

static void* part_thread(void* arg) {
  part_args_t* a = (part_args_t*)arg;
  void* blocks[PART_BLOCKS + 1];
  for (int i = 0; i < PART_BLOCKS; i++) {
    const size_t size = 16 + (size_t)((i * 37 + a->index * 11) % 3000);
    blocks[i] = mi_heap_malloc(a->heap, size);
    CHECK(blocks[i] != NULL && mi_heap_contains(a->heap, blocks[i]));
    memset(blocks[i], (uint8_t)(a->index + 1), 16);
  }
  pthread_barrier_wait(a->barrier);   /* the main thread visits, then deletes or destroys the heap */
  pthread_barrier_wait(a->barrier);
  if (a->index % 2 == 0) {
    mi_collect(false);                /* this thread's sweep ends its part */
  }
  else {
    /* or the allocation slow path of a part of a live shared heap does (every 16th call) */
    mi_heap_t* other = mi_heap_new_shared();
    void** q = (void**)mi_malloc(2000 * sizeof(void*));
    for (int i = 0; i < 2000; i++) q[i] = mi_heap_malloc(other, 2000);
    for (int i = 0; i < 2000; i++) mi_free(q[i]);
    mi_free(q);
    mi_heap_delete(other);
  }
  blocks[PART_BLOCKS] = (void*)0;
  mi_heap_visit_blocks(mi_heap_get_backing(), true, &in_own_heap, blocks);
  const uintptr_t found = (uintptr_t)blocks[PART_BLOCKS];
  if (a->destroy) {
    CHECK_EQ(found, 0);   /* freed with the heap, not moved */
  }
  else {
    CHECK_EQ(found, PART_BLOCKS);   /* moved to this thread's backing heap, intact */
    for (int i = 0; i < PART_BLOCKS; i++) {
      CHECK(((uint8_t*)blocks[i])[15] == (uint8_t)(a->index + 1));
      CHECK(mi_heap_contains(mi_heap_main(), blocks[i]));
      mi_free(blocks[i]);
    }
  }
  return NULL;
}

static void test_end_used_heap(bool destroy) {
  mi_heap_t* h = mi_heap_new_shared();
  CHECK(h != NULL);
  void* own = mi_heap_malloc(h, 100);
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, PART_THREADS + 1);
  pthread_t t[PART_THREADS];
  part_args_t args[PART_THREADS];
  for (int i = 0; i < PART_THREADS; i++) {
    args[i] = (part_args_t){ h, destroy, &barrier, i };
    CHECK_EQ(pthread_create(&t[i], NULL, &part_thread, &args[i]), 0);
  }
  pthread_barrier_wait(&barrier);   /* every thread has its part, and waits */
  CHECK_EQ(heap_blocks(h), PART_THREADS * PART_BLOCKS + 1);   /* every part */
  if (destroy) mi_heap_destroy(h);
  else mi_heap_delete(h);
  if (!destroy) { CHECK(mi_heap_contains(mi_heap_main(), own)); mi_free(own); }
  else CHECK(!mi_heap_contains(mi_heap_main(), own));
  pthread_barrier_wait(&barrier);
  for (int i = 0; i < PART_THREADS; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
  pthread_barrier_destroy(&barrier);
}

/* ---- 3. fork ----------------------------------------------------------------------------- */
/* Not under ThreadSanitizer: a child of a process with threads (the purger's, at least) may
   not start one, and the child's purger would be one. (TEST_TSAN: rss-guard.h) */
#if !defined(_WIN32) && !defined(TEST_TSAN)
static atomic_bool fork_stop;

static void* fork_churn(void* arg) {
  (void)arg;
  while (!atomic_load(&fork_stop)) {
    mi_heap_t* h = mi_heap_new_shared();
    mi_free(mi_heap_malloc(h, 64));
    mi_heap_delete(h);
  }
  return NULL;
}

static void test_fork(void) {
  mi_heap_t* h = mi_heap_new_shared();
  void* p = mi_heap_malloc(h, 100);
  CHECK(p != NULL);
  pthread_t t;
  atomic_store(&fork_stop, false);
  CHECK_EQ(pthread_create(&t, NULL, &fork_churn, NULL), 0);
  for (int i = 0; i < 20; i++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      mi_heap_t* g = mi_heap_new_shared();
      void* q = mi_heap_malloc(h, 200);
      void* r = mi_heap_malloc(g, 200);
      const bool ok = (q != NULL && r != NULL && mi_heap_contains(h, q) && mi_heap_contains(g, r) && mi_heap_contains(h, p));
      mi_heap_destroy(g);
      mi_heap_delete(h);
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  /* fork with this thread's part of `h` as its default: the child's malloc allocates in the
     heap, and its delete sets the child's default back to its backing heap */
  mi_heap_t* const dflt = mi_heap_set_default(h);
  CHECK(dflt != NULL && dflt == mi_heap_get_backing());
  for (int i = 0; i < 5; i++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      void* q = mi_malloc(300);
      bool ok = (q != NULL && mi_heap_contains(h, q) && mi_heap_get_default() != dflt);
      mi_heap_delete(h);
      void* r = mi_malloc(300);
      ok = ok && (mi_heap_get_default() == dflt && r != NULL && mi_heap_contains(dflt, r));
      mi_free(r);
      mi_free(q);
      _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  CHECK(mi_heap_set_default(dflt) != dflt);
  atomic_store(&fork_stop, true);
  CHECK_EQ(pthread_join(t, NULL), 0);
  mi_free(p);
  mi_heap_destroy(h);
}
#else
static void test_fork(void) { }
#endif

/* ---- 5. the parts of ended threads --------------------------------------------------------
   A thread's blocks of a shared heap that it left when it ended stay the heap's: mi_heap_of
   names the heap, no other heap takes their pages (the calling thread's default heap, another
   shared heap's part, a free with abandoned_reclaim_on_free), a later part of the same heap (of
   any thread) reuses their pages, mi_heap_destroy frees them and mi_heap_delete hands them over
   (valid; any heap may take them then). */
#define ENDED_BLOCKS  100
#define ENDED_SIZE    64

typedef struct ended_args_s { mi_heap_t* heap; void* blocks[ENDED_BLOCKS]; size_t size; int fill; } ended_args_t;

static void* ended_alloc(void* arg) {
  ended_args_t* a = (ended_args_t*)arg;
  for (int i = 0; i < ENDED_BLOCKS; i++) {
    a->blocks[i] = mi_heap_malloc(a->heap, a->size);
    CHECK(a->blocks[i] != NULL && mi_heap_contains(a->heap, a->blocks[i]));
    if (a->blocks[i] != NULL) memset(a->blocks[i], a->fill, a->size);
  }
  return NULL;   /* ends with its blocks alive */
}

static void ended_run(ended_args_t* a) {
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, &ended_alloc, a), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
}

/* the 64 KiB window of a small block: blocks of one small page share it */
static uintptr_t page_of(const void* p) { return (uintptr_t)p >> 16; }

static bool in_pages_of(const void* p, const ended_args_t* a) {
  for (int i = 0; i < ENDED_BLOCKS; i++) if (page_of(p) == page_of(a->blocks[i])) return true;
  return false;
}

/* A later part of a heap takes LATER_BLOCKS blocks of the class; with the profiler on, a
   sampled one comes from the part's sample heap, whose pages are its own (a free into them
   must reach the profiler), never from an ended part's page. So "the part reuses the page" is
   "one of its blocks is in it": each of the first blocks is sampled with a probability of
   1 - exp(-64 / rate) (63% at test-sheap's section 6 rate of 64 bytes, 1.6% at ctest's 4096),
   and the test once asked it of the first block alone (test-sheap failed 1 run in 100 with
   MIMALLOC_PROFILE_RATE=4096, half the runs at 64; seen as a failure under load). */
#define LATER_BLOCKS  48
typedef struct later_args_s { mi_heap_t* heap; const ended_args_t* ended; bool in_ended_page; void* blocks[LATER_BLOCKS]; } later_args_t;

static void* later_alloc(void* arg) {
  later_args_t* a = (later_args_t*)arg;
  for (int i = 0; i < LATER_BLOCKS; i++) {
    a->blocks[i] = mi_heap_malloc(a->heap, ENDED_SIZE);
    CHECK(a->blocks[i] != NULL);
    if (in_pages_of(a->blocks[i], a->ended)) a->in_ended_page = true;
    CHECK(mi_heap_of(a->blocks[i]) == a->heap);
  }
  for (int i = 0; i < ENDED_BLOCKS; i++) CHECK(mi_heap_of(a->ended->blocks[i]) == a->ended->heap);
  return NULL;   /* ends with its blocks alive, in the page it may have taken */
}

typedef struct named_args_s { const mi_heap_t* heap; size_t n; } named_args_t;

static bool count_named(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)area; (void)block_size;
  named_args_t* a = (named_args_t*)arg;
  if (block != NULL && mi_heap_of(block) == a->heap) a->n++;   /* (under the visit's locks) */
  return true;
}

static void test_ended_parts(void) {
  const bool reclaim_on_free = mi_option_is_enabled(mi_option_abandoned_reclaim_on_free);
  mi_heap_t* h = mi_heap_new_shared();
  mi_heap_t* h2 = mi_heap_new_shared();
  CHECK(h != NULL && h2 != NULL);
  ended_args_t a = { h, { NULL }, ENDED_SIZE, 0x3c };
  ended_run(&a);
  for (int i = 0; i < ENDED_BLOCKS; i++) {
    CHECK_MSG(mi_heap_of(a.blocks[i]) == h, "block %d names its shared heap", i);
    CHECK(mi_heap_contains(h, a.blocks[i]) && !mi_heap_contains(mi_heap_main(), a.blocks[i]));
  }
  /* the visit of abandoned blocks sees them, and mi_heap_of names their heap from the visitor */
  const bool visit_abandoned = mi_option_is_enabled(mi_option_visit_abandoned);
  mi_option_enable(mi_option_visit_abandoned);
  named_args_t named = { h, 0 };
  CHECK(mi_abandoned_visit_blocks(mi_subproc_main(), -1, true, &count_named, &named));
  CHECK_EQ(named.n, ENDED_BLOCKS);
  mi_option_set_enabled(mi_option_visit_abandoned, visit_abandoned);
  /* no other heap takes the pages: this thread's default heap (a collect adopts every ended
     thread's page it may; its allocations of the size class first look for one) ... */
  mi_collect(true);
  void* mine[ENDED_BLOCKS];
  for (int i = 0; i < ENDED_BLOCKS; i++) {
    mine[i] = mi_malloc(ENDED_SIZE);
    CHECK_MSG(mine[i] != NULL && !in_pages_of(mine[i], &a), "a default block in an ended part's page");
  }
  for (int i = 0; i < ENDED_BLOCKS; i++) mi_free(mine[i]);
  /* ... a free with abandoned_reclaim_on_free ... */
  mi_option_enable(mi_option_abandoned_reclaim_on_free);
  mi_free(a.blocks[0]);
  a.blocks[0] = a.blocks[1];   /* (stands in for it below) */
  for (int i = 1; i < ENDED_BLOCKS; i++) CHECK(mi_heap_of(a.blocks[i]) == h && ((uint8_t*)a.blocks[i])[ENDED_SIZE - 1] == 0x3c);
  mi_option_set_enabled(mi_option_abandoned_reclaim_on_free, reclaim_on_free);
  /* ... another shared heap's new part */
  later_args_t other = { h2, &a, false, { NULL } };
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, &later_alloc, &other), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK(!other.in_ended_page);
  /* a later part of the same heap, in another thread, reuses the page */
  later_args_t same = { h, &a, false, { NULL } };
  CHECK_EQ(pthread_create(&t, NULL, &later_alloc, &same), 0);
  CHECK_EQ(pthread_join(t, NULL), 0);
  CHECK(same.in_ended_page);
  for (int i = 0; i < LATER_BLOCKS; i++) CHECK(mi_heap_of(same.blocks[i]) == h && mi_heap_of(other.blocks[i]) == h2);
  /* destroy frees every block of the heap, those of ended parts too: their pages go */
  mi_heap_destroy(h);
  for (int i = 0; i < ENDED_BLOCKS; i++) CHECK_MSG(!mi_any_heap_contains(a.blocks[i]), "block %d freed with its heap", i);
  for (int i = 0; i < LATER_BLOCKS; i++) {
    CHECK(!mi_any_heap_contains(same.blocks[i]));
    CHECK(mi_any_heap_contains(other.blocks[i]) && mi_heap_of(other.blocks[i]) == h2);
  }
  /* delete hands them over: valid, then any heap's (this thread's collect adopts them) */
  ended_args_t b = { h2, { NULL }, ENDED_SIZE, 0x7e };
  ended_run(&b);
  for (int i = 0; i < ENDED_BLOCKS; i++) CHECK(mi_heap_of(b.blocks[i]) == h2);
  mi_heap_delete(h2);
  mi_collect(true);
  for (int i = 0; i < ENDED_BLOCKS; i++) {
    CHECK_MSG(mi_heap_contains(mi_heap_main(), b.blocks[i]) && ((uint8_t*)b.blocks[i])[ENDED_SIZE - 1] == 0x7e, "block %d handed over", i);
  }
  for (int i = 0; i < LATER_BLOCKS; i++) CHECK(mi_heap_contains(mi_heap_main(), other.blocks[i]));
  for (int i = 0; i < ENDED_BLOCKS; i++) mi_free(b.blocks[i]);
  for (int i = 0; i < LATER_BLOCKS; i++) mi_free(other.blocks[i]);
}

/* `threads` threads allocate blocks of every kind in two shared heaps and end (some while the
   heaps are destroyed or deleted); each block is in its heap after; then one heap is destroyed
   (all of them freed) and the other deleted (all valid). */
#define MANY_BLOCKS 300

typedef struct many_args_s { mi_heap_t* heap[2]; void* blocks[MANY_BLOCKS]; int index; pthread_barrier_t* barrier; } many_args_t;

static size_t many_size(int i, int index) {
  if (i % 97 == 5) return (size_t)(3 << 20) + (size_t)index * 4096;   /* huge */
  if (i % 31 == 7) return 200000 + (size_t)i;                         /* large */
  if (i % 11 == 3) return 20000 + (size_t)i * 13;                     /* medium */
  return 16 + (size_t)((i * 53 + index * 7) % 2000);
}

static void* many_thread(void* arg) {
  many_args_t* a = (many_args_t*)arg;
  for (int i = 0; i < MANY_BLOCKS; i++) {
    const size_t size = many_size(i, a->index);
    a->blocks[i] = mi_heap_malloc(a->heap[i % 2], size);
    CHECK(a->blocks[i] != NULL);
    if (a->blocks[i] != NULL) memset(a->blocks[i], (uint8_t)(a->index + 1), size);
  }
  for (int i = 0; i < MANY_BLOCKS; i += 5) { mi_free(a->blocks[i]); a->blocks[i] = NULL; }   /* some freed */
  if (a->barrier != NULL) pthread_barrier_wait(a->barrier);   /* then end while the heaps end */
  return NULL;
}

static void test_ended_many(int threads, bool racing) {
  mi_heap_t* hd = mi_heap_new_shared();   /* destroyed */
  mi_heap_t* hk = mi_heap_new_shared();   /* deleted */
  CHECK(hd != NULL && hk != NULL);
  many_args_t* args = (many_args_t*)mi_calloc((size_t)threads, sizeof(many_args_t));
  pthread_t* t = (pthread_t*)mi_calloc((size_t)threads, sizeof(pthread_t));
  pthread_barrier_t barrier;
  if (racing) pthread_barrier_init(&barrier, NULL, (unsigned)threads + 1);
  for (int i = 0; i < threads; i++) {
    args[i] = (many_args_t){ { hd, hk }, { NULL }, i, (racing ? &barrier : NULL) };
    CHECK_EQ(pthread_create(&t[i], NULL, &many_thread, &args[i]), 0);
  }
  if (racing) pthread_barrier_wait(&barrier);
  else {
    for (int i = 0; i < threads; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
    for (int k = 0; k < threads; k++) {
      for (int i = 0; i < MANY_BLOCKS; i++) {
        if (args[k].blocks[i] == NULL) continue;
        CHECK_MSG(mi_heap_of(args[k].blocks[i]) == (i % 2 == 0 ? hd : hk), "thread %d block %d in its heap", k, i);
      }
    }
  }
  mi_heap_destroy(hd);
  mi_heap_delete(hk);
  if (racing) for (int i = 0; i < threads; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
  for (int k = 0; k < threads; k++) {
    for (int i = 1; i < MANY_BLOCKS; i += 2) {   /* the deleted heap's: valid */
      uint8_t* p = (uint8_t*)args[k].blocks[i];
      if (p == NULL) continue;
      const size_t size = many_size(i, k);
      CHECK_MSG(mi_any_heap_contains(p) && p[0] == (uint8_t)(k + 1) && p[size - 1] == (uint8_t)(k + 1), "thread %d block %d valid", k, i);
      mi_free(p);
    }
    if (racing) continue;   /* (a thread ending meanwhile may have taken a freed page) */
    for (int i = 0; i < MANY_BLOCKS; i += 2) {   /* the destroyed heap's: freed */
      if (args[k].blocks[i] != NULL) CHECK_MSG(!mi_any_heap_contains(args[k].blocks[i]), "thread %d block %d freed", k, i);
    }
  }
  if (racing) pthread_barrier_destroy(&barrier);
  mi_free(t);
  mi_free(args);
}

/* ---- 4. stress ----------------------------------------------------------------------------- */
#define HEAPS  4
#define SLOTS  4096

typedef struct block_hdr_s {
  uint32_t heap_idx;   /* the heap's index | its generation << 8 (heap_id) */
  uint32_t round;
  size_t   size;
  uintptr_t check;
} block_hdr_t;

static mi_heap_t* _Atomic heaps[HEAPS];
static _Atomic(uint32_t) heap_gen[HEAPS];   /* bumped when heaps[i] is replaced */
static _Atomic(void*) slots[SLOTS];
static size_t iterations = 20000;
static int nthreads = 8;
static _Atomic(uint32_t) current_round;
static pthread_barrier_t round_barrier;

static uint32_t heap_id(uint32_t hi) {   /* (changes only while every thread waits) */
  return hi | (atomic_load(&heap_gen[hi]) << 8);
}

static uint64_t rnd(uint64_t* s) {   /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void fill(void* p, size_t size, uint32_t heap_idx, uint32_t round) {
  block_hdr_t* h = (block_hdr_t*)p;
  h->heap_idx = heap_idx; h->round = round; h->size = size; h->check = (uintptr_t)p ^ size ^ 0x5ca1ab1eU;
  const uint8_t pat = (uint8_t)((uintptr_t)p >> 4);
  const size_t n = (size - sizeof(*h) < 256 ? size - sizeof(*h) : 256);   /* the first and the last bytes */
  memset((uint8_t*)p + sizeof(*h), pat, n);
  memset((uint8_t*)p + size - n, pat, n);
}

static void check_block(const void* p) {
  const block_hdr_t* h = (const block_hdr_t*)p;
  CHECK_MSG(h->check == ((uintptr_t)p ^ h->size ^ 0x5ca1ab1eU), "block %p header", p);
  const uint8_t pat = (uint8_t)((uintptr_t)p >> 4);
  const size_t n = (h->size - sizeof(*h) < 256 ? h->size - sizeof(*h) : 256);
  const uint8_t* b = (const uint8_t*)p;
  CHECK_MSG(b[sizeof(*h)] == pat && b[sizeof(*h) + n - 1] == pat && b[h->size - 1] == pat && b[h->size - n] == pat, "block %p pattern", p);
}

/* The stress part's blocks count in the RSS guard's live bytes (rss-guard.h) from
   stress_alloc to stress_free (their requested sizes; MI_TEST_RSS_LEAK=1: leaked, counted
   as freed). */
static void* stress_alloc_(mi_heap_t* heap, size_t size, uint64_t* s) {
  switch (rnd(s) % 8) {
    case 0: return mi_heap_zalloc(heap, size);
    case 1: return mi_heap_calloc(heap, 1, size);
    case 2: return mi_heap_malloc_aligned(heap, size, (size_t)64 << (rnd(s) % 7));
    case 3: return (size <= 1024 ? mi_heap_malloc_small(heap, size) : mi_heap_malloc(heap, size));
    default: return mi_heap_malloc(heap, size);
  }
}

static void* stress_alloc(mi_heap_t* heap, size_t size, uint64_t* s) {
  test_live_add(size);
  void* p = stress_alloc_(heap, size, s);
  if (p == NULL) test_live_sub(size);
  return p;
}

static void stress_free(void* p) {
  const size_t size = ((const block_hdr_t*)p)->size;
  if (!test_rss_leak()) mi_free(p);
  test_live_sub(size);
}

static size_t stress_size(uint64_t* s) {
  const uint64_t r = rnd(s);
  if (r % 1000 == 0) return 32 + (size_t)(rnd(s) % (3 << 20));   /* large and huge */
  if (r % 50 == 0) return 32 + (size_t)(rnd(s) % 100000);        /* medium */
  return 32 + (size_t)(rnd(s) % 1000);
}

static void* stress_thread(void* arg) {
  uint64_t s = (uint64_t)(uintptr_t)arg;
  const uint32_t round = atomic_load(&current_round);
  for (size_t it = 0; it < iterations; it++) {
    if (it == iterations / 2) {
      pthread_barrier_wait(&round_barrier);   /* the main thread ends one heap and replaces it */
      pthread_barrier_wait(&round_barrier);
    }
    const uint32_t hi = (uint32_t)(rnd(&s) % HEAPS);
    mi_heap_t* const heap = atomic_load(&heaps[hi]);
    const size_t size = stress_size(&s);
    void* p = stress_alloc(heap, size, &s);
    CHECK(p != NULL);
    if (p == NULL) continue;
    CHECK_MSG(mi_heap_contains(heap, p), "%p in shared heap %u", p, hi);
    fill(p, size, heap_id(hi), round);
    void* old = atomic_exchange(&slots[rnd(&s) % SLOTS], p);
    if (old == NULL) continue;
    check_block(old);
    if (rnd(&s) % 8 == 0) {   /* grow or shrink into a heap of ours (the block may be any thread's) */
      const uint32_t hj = (uint32_t)(rnd(&s) % HEAPS);
      mi_heap_t* const heap2 = atomic_load(&heaps[hj]);
      const size_t size2 = stress_size(&s);
      const size_t size_old = ((const block_hdr_t*)old)->size;
      test_live_add(size2);
      void* q = mi_heap_realloc(heap2, old, size2);
      CHECK(q != NULL);
      if (q == NULL) { test_live_sub(size2); stress_free(old); continue; }
      test_live_sub(size_old);
      if (mi_usable_size(q) < size2) CHECK(false);
      if (q == old) {   /* resized in place: the block stays in its heap (and its thread's part) */
        const block_hdr_t* b = (const block_hdr_t*)q;
        fill(q, size2, b->heap_idx, b->round);
      }
      else fill(q, size2, heap_id(hj), round);
      old = atomic_exchange(&slots[rnd(&s) % SLOTS], q);
      if (old == NULL) continue;
      check_block(old);
    }
    stress_free(old);
  }
  return NULL;
}

static void stress(int rounds, uint64_t seed) {
  for (int i = 0; i < HEAPS; i++) atomic_store(&heaps[i], mi_heap_new_shared());
  pthread_t* t = (pthread_t*)mi_malloc(sizeof(pthread_t) * (size_t)nthreads);
  for (int r = 0; r < rounds; r++) {
    atomic_store(&current_round, (uint32_t)r);
    pthread_barrier_init(&round_barrier, NULL, (unsigned)nthreads + 1);
    for (int i = 0; i < nthreads; i++) {
      CHECK_EQ(pthread_create(&t[i], NULL, &stress_thread, (void*)(uintptr_t)(seed * 1000 + (uint64_t)(r * nthreads + i))), 0);
    }
    pthread_barrier_wait(&round_barrier);
    /* every thread waits: end heap k, which the live threads used */
    const uint32_t k = (uint32_t)r % HEAPS;
    mi_heap_t* const old = atomic_load(&heaps[k]);
    if (r % 2 == 1) {
      /* destroyed: every block allocated in it dies with it, those of live threads (this
         round's) and those ended threads (earlier rounds) left in it alike; blocks of earlier
         heaps of the index, which were deleted, stay valid: freed here */
      for (size_t i = 0; i < SLOTS; i++) {
        block_hdr_t* b = (block_hdr_t*)atomic_load(&slots[i]);
        if (b == NULL || (b->heap_idx & 0xff) != k) continue;
        check_block(b);
        atomic_store(&slots[i], NULL);
        if (b->heap_idx != heap_id(k)) stress_free(b);
        else test_live_sub(b->size);   /* (freed by the destroy) */
      }
      mi_heap_destroy(old);
    }
    else {
      mi_heap_delete(old);   /* its blocks stay valid */
    }
    atomic_fetch_add(&heap_gen[k], 1);
    atomic_store(&heaps[k], mi_heap_new_shared());
    pthread_barrier_wait(&round_barrier);
    for (int i = 0; i < nthreads; i++) CHECK_EQ(pthread_join(t[i], NULL), 0);
    pthread_barrier_destroy(&round_barrier);
  }
  for (size_t i = 0; i < SLOTS; i++) {
    void* p = atomic_exchange(&slots[i], NULL);
    if (p != NULL) { check_block(p); stress_free(p); }
  }
  for (int i = 0; i < HEAPS; i++) mi_heap_destroy(atomic_load(&heaps[i]));
  mi_free(t);
}

/* ---- 6. sampled blocks ---------------------------------------------------------------------
   The profiler takes a sampled block from its heap's sample heap (src/prof.c), whose pages are
   the theap's shared heap's too: another thread names the heap for them, the thread's end
   leaves them to the heap, and its destroy frees them. */
#define SAMPLED_BLOCKS 1000

typedef struct sampled_args_s { mi_heap_t* heap; void* blocks[SAMPLED_BLOCKS]; atomic_int step; } sampled_args_t;

static void* sampled_thread(void* arg) {
  sampled_args_t* a = (sampled_args_t*)arg;
  for (int i = 0; i < SAMPLED_BLOCKS; i++) {
    a->blocks[i] = mi_heap_malloc(a->heap, 48 + (size_t)(i % 4) * 16);
    if (a->blocks[i] != NULL) memset(a->blocks[i], 0x6b, 48);
  }
  atomic_store(&a->step, 1);
  while (atomic_load(&a->step) != 2) sched_yield();
  return NULL;   /* ends with its blocks alive */
}

static void test_sampled(void) {
  const bool profiling = mi_profile_start(64);   /* about every block sampled */
  mi_heap_t* h = mi_heap_new_shared();
  CHECK(h != NULL);
  if (h == NULL) return;
  static sampled_args_t a;
  a.heap = h;
  atomic_store(&a.step, 0);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, &sampled_thread, &a), 0);
  while (atomic_load(&a.step) != 1) sched_yield();
  for (int pass = 0; pass < 2; pass++) {   /* the thread live, then ended */
    size_t named = 0;
    for (int i = 0; i < SAMPLED_BLOCKS; i++) {
      CHECK(a.blocks[i] != NULL);
      if (a.blocks[i] != NULL && mi_heap_of(a.blocks[i]) == h && ((uint8_t*)a.blocks[i])[47] == 0x6b) named++;
    }
    CHECK_MSG(named == SAMPLED_BLOCKS, "pass %d (profiler %s): %zu of %d blocks named their shared heap", pass, (profiling ? "on" : "off"), named, SAMPLED_BLOCKS);
    if (pass == 0) { atomic_store(&a.step, 2); CHECK_EQ(pthread_join(t, NULL), 0); }
  }
  mi_heap_destroy(h);
  size_t left = 0;
  for (int i = 0; i < SAMPLED_BLOCKS; i++) if (mi_any_heap_contains(a.blocks[i])) left++;
  CHECK_MSG(left == 0, "%zu blocks outlived their heap's destroy", left);
}

/* the bytes test_ended_many(threads, ...) holds at most: every block it allocates (only the
   stress part counts its blocks one by one: this part's are counted as one allowance) */
static size_t ended_many_bytes(int threads) {
  size_t n = 0;
  for (int k = 0; k < threads; k++) for (int i = 0; i < MANY_BLOCKS; i++) n += many_size(i, k);
  return n;
}

int main(int argc, char** argv) {
  int rounds = 6;
  uint64_t seed = 1;
  if (argc > 1) nthreads = atoi(argv[1]);
  if (argc > 2) rounds = atoi(argv[2]);
  if (argc > 3) iterations = (size_t)atoll(argv[3]);
  if (argc > 4) seed = (uint64_t)atoll(argv[4]);
  if (nthreads < 1) nthreads = 1;
  /* The RSS bound (rss-guard.h): 2 x the peak of the live bytes + 64 MiB + 6 MiB for each part
     of a shared heap the stress part makes (every thread has one in each of the HEAPS heaps,
     with a page of every size class it used; the pages of ended parts stay the heap's), scaled
     under the sanitizers. The stress part holds 10-20 MiB live; test_ended_many's allowance
     (about 118 MiB with 8 threads) is the peak. Measured with 8 threads (2 busy cores): peak
     RSS 110-174 MiB above the start; at most 172 MiB above 2 x peak live (Release; Debug,
     secure and the tracking builds 21-40 MiB) of the 256 MiB this makes for 8 threads. */
  test_rss_guard_start("sheap", 2.0, 64 + (size_t)nthreads * HEAPS * 6);
  test_basics();
  test_end_used_heap(false);
  test_end_used_heap(true);
  test_fork();
  test_ended_parts();
  const size_t many = ended_many_bytes(nthreads);
  test_live_add(many);
  test_ended_many(nthreads, false);
  test_ended_many(nthreads, true);
  test_live_sub(many);
  stress(rounds, seed);
  test_sampled();
  return test_summary("sheap", "%d threads, %d rounds of %zu iterations", nthreads, rounds, iterations);
}
