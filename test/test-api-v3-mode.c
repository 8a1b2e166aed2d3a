/* SPDX-License-Identifier: MIT */
/* test-api-v3-mode.c -- a program written against mimalloc 3.x's documented API, compiled with
   -DMI_V3_API (test/CMakeLists.txt) so that our header gives v3's meaning of every name where
   v2 and v3 differ (docs/v3-api.md). It uses no name of v2 alone, so it compiles unchanged
   against mimalloc 3.x's own header as well. Each v3-mode name is called with its edge cases:
   heaps any thread allocates in and frees from, heaps in exclusive arenas, theaps, the typed
   macros in v3's argument order, v3's option numbers (checked against the option names the
   library prints), subprocesses as structs, and the visitor of abandoned blocks.
   The checks marked "ours" test where this library documents that it differs from v3. */
#define _GNU_SOURCE   /* MAP_ANONYMOUS */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#if !defined(_WIN32)
#include <sys/mman.h>
#include <unistd.h>   /* sysconf */
#endif

#include "mimalloc.h"
#include "testing.h"
#include "rss-guard.h"

/* v3's types: the program fails to compile if the header is in v2 mode */
_Static_assert(sizeof(mi_arena_id_t) == sizeof(void*), "v3's arena id is a pointer");
_Static_assert(_mi_option_last == 47, "v3 numbers 47 options");
_Static_assert(mi_option_allow_thp == 43 && mi_option_generic_collect == 34 && mi_option_disallow_arena_alloc == 26,
               "v3's option numbers");
_Static_assert(mi_option_deprecated_eager_commit == 3 && mi_option_arena_is_numa_local == 46, "v3's option names");

/* ---- errors: counted, so that EFAULT (option off) never aborts a checked build ---------- */
static long error_counts[256];

static void on_error(int err, void* arg) {
  (void)arg;
  if (err >= 0 && err < 256) __atomic_fetch_add(&error_counts[err], 1, __ATOMIC_RELAXED);
}

static long errors(int err) { return __atomic_load_n(&error_counts[err], __ATOMIC_RELAXED); }

/* ---- output capture for mi_options_print_out ------------------------------------------ */
static char printed[64 * 1024];
static size_t printed_len;

static void capture(const char* msg, void* arg) {
  (void)arg;
  const size_t n = strlen(msg);
  if (printed_len + n < sizeof(printed)) { memcpy(printed + printed_len, msg, n + 1); printed_len += n; }
}

/* the value the library prints for the option called `name` (-12345: not printed) */
static long printed_value(const char* name) {
  printed_len = 0; printed[0] = 0;
  mi_options_print_out(&capture, NULL);
  char key[96];
  snprintf(key, sizeof(key), "option '%s': ", name);
  const char* at = strstr(printed, key);
  return (at == NULL ? -12345 : strtol(at + strlen(key), NULL, 10));
}

/* ---- options: v3's numbers ------------------------------------------------------------- */
static void test_options(void) {
  /* an option both versions have, under a number v3 moved: the library sees the same option */
  mi_option_set(mi_option_generic_collect, 4321);
  CHECK_EQ(mi_option_get(mi_option_generic_collect), 4321);
  CHECK_EQ(printed_value("generic_collect"), 4321);
  mi_option_set(mi_option_arena_purge_mult, 7);          /* a number v3 kept */
  CHECK_EQ(mi_option_get(mi_option_arena_purge_mult), 7);
  CHECK_EQ(printed_value("arena_purge_mult"), 7);
  mi_option_set(mi_option_retry_on_oom, 123);            /* 27 in v3, 28 in v2 */
  CHECK_EQ(printed_value("retry_on_oom"), 123);
  CHECK_EQ(mi_option_get_clamp(mi_option_retry_on_oom, 0, 100), 100);
  CHECK_EQ(mi_option_get_clamp(mi_option_retry_on_oom, 200, 300), 200);
  CHECK_EQ(mi_option_get(mi_option_allow_thp), printed_value("allow_thp"));   /* 43 in v3, 37 in v2 */
  CHECK_EQ(mi_option_get(mi_option_guarded_sample_seed), printed_value("guarded_sample_seed"));

  /* enable / disable / set_enabled / set_enabled_default / is_enabled */
  mi_option_disable(mi_option_visit_abandoned);
  CHECK(!mi_option_is_enabled(mi_option_visit_abandoned));
  CHECK_EQ(printed_value("visit_abandoned"), 0);
  mi_option_enable(mi_option_visit_abandoned);
  CHECK(mi_option_is_enabled(mi_option_visit_abandoned));
  CHECK_EQ(printed_value("visit_abandoned"), 1);
  mi_option_set_enabled(mi_option_guarded_precise, true);
  CHECK_EQ(printed_value("guarded_precise"), 1);
  mi_option_set_enabled(mi_option_guarded_precise, false);
  CHECK(!mi_option_is_enabled(mi_option_guarded_precise));
  mi_option_set_enabled_default(mi_option_guarded_precise, true);   /* set explicitly above: stays */
  CHECK(!mi_option_is_enabled(mi_option_guarded_precise));

  /* a deprecated_ name of v3 is the option of that number */
  CHECK_EQ(mi_option_get(mi_option_deprecated_eager_commit), printed_value("eager_commit"));
  CHECK_EQ(mi_option_get(mi_option_deprecated_max_segment_reclaim), printed_value("max_segment_reclaim"));
  /* legacy names */
  CHECK_EQ(mi_option_reset_delay, mi_option_purge_delay);
  CHECK_EQ(mi_option_get(mi_option_reset_delay), printed_value("purge_delay"));

  /* KiB options in bytes */
  CHECK_EQ(mi_option_get_size(mi_option_arena_reserve), (size_t)mi_option_get(mi_option_arena_reserve) * 1024);

  /* options of v3 alone: v3's defaults, read back as set, set_default after set leaves them */
  CHECK_EQ(mi_option_get(mi_option_page_full_retain), 2);
  CHECK_EQ(mi_option_get(mi_option_page_max_candidates), 4);
  CHECK_EQ(mi_option_get(mi_option_page_max_reclaim), -1);
  CHECK_EQ(mi_option_get_size(mi_option_page_max_reclaim), 0);       /* negative: 0 */
  CHECK_EQ(mi_option_get(mi_option_page_cross_thread_max_reclaim), 16);
  CHECK(!mi_option_is_enabled(mi_option_page_reclaim_on_free));
  mi_option_set_default(mi_option_page_full_retain, 5);              /* not set yet: taken */
  CHECK_EQ(mi_option_get(mi_option_page_full_retain), 5);
  mi_option_set(mi_option_page_full_retain, 9);
  mi_option_set_default(mi_option_page_full_retain, 3);              /* set: left */
  CHECK_EQ(mi_option_get(mi_option_page_full_retain), 9);
  mi_option_enable(mi_option_arena_is_numa_local);
  CHECK(mi_option_is_enabled(mi_option_arena_is_numa_local));
  mi_option_disable(mi_option_arena_is_numa_local);
  CHECK(!mi_option_is_enabled(mi_option_arena_is_numa_local));
  mi_option_set(mi_option_minimal_purge_size, 64);                   /* KiB */
  CHECK_EQ(mi_option_get_size(mi_option_minimal_purge_size), 64 * 1024);
  CHECK_EQ(mi_option_get_size(mi_option_arena_max_object_size), (size_t)mi_option_get(mi_option_arena_max_object_size) * 1024);
  CHECK_EQ(mi_option_get_clamp(mi_option_page_cross_thread_max_reclaim, 0, 10), 10);
  CHECK_EQ(printed_value("page_full_retain"), -12345);               /* not an option of ours */

  /* numbers that are no option: 0, and set is ignored */
  mi_option_set((mi_option_t)_mi_option_last, 5);
  CHECK_EQ(mi_option_get((mi_option_t)_mi_option_last), 0);
  CHECK_EQ(mi_option_get((mi_option_t)500), 0);
  CHECK_EQ(mi_option_get_size((mi_option_t)-1), 0);
  CHECK(!mi_option_is_enabled((mi_option_t)999));
}

/* ---- typed macros: v3's argument order (the type first) -------------------------------- */
typedef struct pair_s { long a; long b; } pair_t;

/* counts too large for memory, hidden from the compiler (it warns of the constant sizes) */
static volatile size_t huge_count = SIZE_MAX / 8;
static volatile size_t odd_alignment = 3;

static void test_typed(void) {
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  if (h == NULL) return;
  pair_t* p = mi_malloc_tp(pair_t);
  pair_t* z = mi_zalloc_tp(pair_t);
  pair_t* c = mi_calloc_tp(pair_t, 10);
  pair_t* n = mi_mallocn_tp(pair_t, 10);
  CHECK(p != NULL && z != NULL && c != NULL && n != NULL);
  CHECK(z->a == 0 && z->b == 0);
  CHECK(c[9].a == 0 && c[9].b == 0);
  CHECK_GE(mi_usable_size(n), 10 * sizeof(pair_t));
  c[0].a = 77;
  c = mi_recalloc_tp(pair_t, c, 20);                                 /* grown bytes are zero */
  CHECK(c != NULL && c[0].a == 77 && c[19].a == 0 && c[19].b == 0);
  n[0].b = 5;
  n = mi_reallocn_tp(pair_t, n, 30);
  CHECK(n != NULL && n[0].b == 5);
  CHECK(mi_reallocn_tp(pair_t, n, huge_count) == NULL);            /* overflow: n untouched */
  CHECK(mi_mallocn_tp(pair_t, huge_count) == NULL);
  mi_free(p); mi_free(z); mi_free(c); mi_free(n);

  pair_t* hp = mi_heap_malloc_tp(pair_t, h);
  pair_t* hz = mi_heap_zalloc_tp(pair_t, h);
  pair_t* hc = mi_heap_calloc_tp(pair_t, h, 8);
  pair_t* hn = mi_heap_mallocn_tp(pair_t, h, 8);
  CHECK(hp != NULL && hz != NULL && hc != NULL && hn != NULL);
  CHECK(hz->a == 0 && hc[7].b == 0);
  CHECK(mi_heap_contains(h, hp) && mi_heap_contains(h, hz) && mi_heap_contains(h, hc) && mi_heap_contains(h, hn));
  hc[0].a = 3;
  hc = mi_heap_recalloc_tp(pair_t, h, hc, 16);
  CHECK(hc != NULL && hc[0].a == 3 && hc[15].a == 0);
  hn[1].a = 4;
  hn = mi_heap_reallocn_tp(pair_t, h, hn, 64);
  CHECK(hn != NULL && hn[1].a == 4);
  CHECK(mi_heap_contains(h, hc) && mi_heap_contains(h, hn));
  CHECK(mi_heap_mallocn_tp(pair_t, h, huge_count) == NULL);
  mi_free(hp); mi_free(hz); mi_free(hc); mi_free(hn);
  mi_heap_delete(h);
}

/* ---- heaps any thread allocates in --------------------------------------------------- */
#define SHARE_THREADS 4
#define SHARE_BLOCKS  500

typedef struct share_arg_s {
  mi_heap_t* heap;
  void*      arena;           /* non-NULL: each block must lie in this arena */
  void*      blocks[SHARE_BLOCKS];
  int        index;
} share_arg_t;

/* Allocates in the one heap from its own thread, frees half itself and leaves the rest to the
   main thread (frees from another thread). */
static void* share_thread(void* varg) {
  share_arg_t* arg = (share_arg_t*)varg;
  mi_heap_t* h = arg->heap;
  for (int i = 0; i < SHARE_BLOCKS; i++) {
    const size_t size = 16 + (size_t)((i * 37 + arg->index * 101) % 2000);
    uint8_t* p = (uint8_t*)(i % 3 == 0 ? mi_heap_zalloc(h, size) : mi_heap_malloc(h, size));
    CHECK(p != NULL);
    if (p == NULL) { arg->blocks[i] = NULL; continue; }
    CHECK(mi_heap_of(p) == h);
    CHECK(mi_heap_contains(h, p));
    CHECK(!mi_heap_contains(NULL, p));                  /* not the main heap's */
    if (arg->arena != NULL) CHECK(mi_arena_contains(arg->arena, p));
    memset(p, arg->index + 1, size);
    arg->blocks[i] = p;
  }
  char* s = mi_heap_strdup(h, "shared");
  CHECK(s != NULL && strcmp(s, "shared") == 0 && mi_heap_contains(h, s));
  mi_free(s);
  void* a = mi_heap_malloc_aligned(h, 100, 4096);
  CHECK(a != NULL);
  CHECK_ALIGNED(a, 4096);
  CHECK(mi_heap_contains(h, a));
  mi_free(a);
  for (int i = 0; i < SHARE_BLOCKS; i += 2) { mi_free(arg->blocks[i]); arg->blocks[i] = NULL; }
  mi_heap_collect(h, true);
  return NULL;
}

static void share_round(mi_heap_t* h, void* arena) {
  pthread_t threads[SHARE_THREADS];
  static share_arg_t args[SHARE_THREADS];
  for (int t = 0; t < SHARE_THREADS; t++) {
    args[t].heap = h; args[t].arena = arena; args[t].index = t;
    CHECK_EQ(pthread_create(&threads[t], NULL, &share_thread, &args[t]), 0);
  }
  for (int t = 0; t < SHARE_THREADS; t++) pthread_join(threads[t], NULL);
  for (int t = 0; t < SHARE_THREADS; t++) {
    for (int i = 1; i < SHARE_BLOCKS; i += 2) {
      const uint8_t* p = (const uint8_t*)args[t].blocks[i];
      if (p == NULL) continue;
      CHECK_EQ(p[0], t + 1);                               /* intact */
      CHECK(mi_any_heap_contains(p));
      mi_free(args[t].blocks[i]);
    }
  }
}

typedef struct visit_count_s { size_t blocks; size_t areas; size_t bytes; } visit_count_t;

static bool count_blocks(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)area->reserved1;                      /* v3's field name */
  visit_count_t* c = (visit_count_t*)arg;
  if (block == NULL) { c->areas++; return true; }
  c->blocks++;
  c->bytes += block_size;
  return true;
}

static void test_shared_heaps(void) {
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  if (h == NULL) return;
  CHECK(h != mi_heap_main());

  /* the calling thread allocates too, before and after the other threads */
  void* mine[10];
  for (int i = 0; i < 10; i++) { mine[i] = mi_heap_malloc(h, 64); CHECK(mine[i] != NULL && mi_heap_of(mine[i]) == h); }
  share_round(h, NULL);
  share_round(h, NULL);                                    /* new threads, the same heap */

  /* visit: the calling thread's blocks of the heap are among those visited */
  visit_count_t count = { 0, 0, 0 };
  CHECK(mi_heap_visit_blocks(h, true, &count_blocks, &count));
  CHECK_GE(count.blocks, 10);
  CHECK_GE(count.areas, 1);
  mi_heap_collect(h, false);
  for (int i = 0; i < 10; i++) mi_free(mine[i]);

  /* destroy after other threads used it: the caller's live blocks go with it */
  void* live = mi_heap_malloc(h, 100000);
  CHECK(live != NULL);
  mi_heap_destroy(h);

  /* delete: live blocks stay valid and go back to the main heap; freed later from any thread */
  mi_heap_t* h2 = mi_heap_new();
  CHECK(h2 != NULL);
  if (h2 == NULL) return;
  char* keep = (char*)mi_heap_malloc(h2, 200);
  CHECK(keep != NULL);
  if (keep == NULL) return;
  strcpy(keep, "still here");
  share_round(h2, NULL);
  mi_heap_delete(h2);
  CHECK(strcmp(keep, "still here") == 0);
  CHECK(mi_any_heap_contains(keep));
  CHECK(mi_heap_of(keep) != h2);
  mi_free(keep);

  /* two heaps are separate */
  mi_heap_t* a = mi_heap_new();
  mi_heap_t* b = mi_heap_new();
  CHECK(a != NULL && b != NULL && a != b);
  if (a == NULL || b == NULL) return;
  void* pa = mi_heap_malloc(a, 32);
  void* pb = mi_heap_malloc(b, 32);
  CHECK(mi_heap_contains(a, pa) && !mi_heap_contains(b, pa));
  CHECK(mi_heap_contains(b, pb) && !mi_heap_contains(a, pb));
  mi_free(pa); mi_free(pb);
  mi_heap_destroy(a);
  mi_heap_delete(b);
}

/* ---- arenas: ids are pointers --------------------------------------------------------- */
/* ---- a block of another thread's part names the shared heap ---------------------------- */
#define PART_BLOCKS 300

typedef struct part_arg_s {
  mi_heap_t*   heap;
  mi_heap_t*   other;          /* a second shared heap the thread allocates in too */
  void*        blocks[PART_BLOCKS];
  void*        others[PART_BLOCKS];
  _Atomic(int) step;           /* 1: allocated; 2: told to end */
} part_arg_t;

static void* part_thread(void* varg) {
  part_arg_t* t = (part_arg_t*)varg;
  for (int i = 0; i < PART_BLOCKS; i++) {
    const size_t size = 8 + (size_t)(i * 53 % 3000) + (i % 50 == 0 ? 200000 : 0);   /* small to huge */
    t->blocks[i] = mi_heap_malloc(t->heap, size);
    t->others[i] = mi_heap_malloc(t->other, size);
  }
  atomic_store(&t->step, 1);
  while (atomic_load(&t->step) != 2) sched_yield();
  return NULL;
}

/* the thread keeps its parts alive while the main thread asks: every block names its heap, not
   the thread's part of it; then the thread ends and the blocks stay named */
static void test_other_part(void) {
  mi_heap_t* h = mi_heap_new();
  mi_heap_t* g = mi_heap_new();
  CHECK(h != NULL && g != NULL);
  if (h == NULL || g == NULL) return;
  static part_arg_t t;
  t.heap = h; t.other = g;
  atomic_store(&t.step, 0);
  pthread_t thread;
  CHECK_EQ(pthread_create(&thread, NULL, &part_thread, &t), 0);
  while (atomic_load(&t.step) != 1) sched_yield();
  for (int pass = 0; pass < 2; pass++) {   /* 0: the thread is live; 1: it has ended */
    for (int i = 0; i < PART_BLOCKS; i++) {
      CHECK(t.blocks[i] != NULL && t.others[i] != NULL);
      if (t.blocks[i] == NULL || t.others[i] == NULL) continue;
      CHECK(mi_heap_of(t.blocks[i]) == h);
      CHECK(mi_heap_contains(h, t.blocks[i]));
      CHECK(!mi_heap_contains(g, t.blocks[i]));
      CHECK(!mi_heap_contains(NULL, t.blocks[i]));           /* not the main heap's */
      CHECK(mi_heap_of(t.others[i]) == g);
      CHECK(!mi_heap_contains(h, t.others[i]));
    }
    if (pass == 0) {
      for (int i = 0; i < PART_BLOCKS; i += 3) { mi_free(t.blocks[i]); t.blocks[i] = NULL; mi_free(t.others[i]); t.others[i] = NULL; }
      for (int i = 0; i < PART_BLOCKS; i += 3) {             /* refilled by the main thread's part */
        t.blocks[i] = mi_heap_malloc(h, 100);
        t.others[i] = mi_heap_malloc(g, 100);
      }
      atomic_store(&t.step, 2);
      pthread_join(thread, NULL);
    }
  }
  for (int i = 0; i < PART_BLOCKS; i++) mi_free(t.others[i]);
  mi_heap_destroy(h);   /* the ended part's blocks go with it */
  mi_heap_delete(g);
}

static void test_arenas(void) {
  mi_arena_id_t none = (mi_arena_id_t)(uintptr_t)0x5a5a0000;   /* never an id of ours */
  size_t size = 1;
  CHECK(mi_arena_area(none, &size) == NULL);
  CHECK_EQ(size, 0);
  CHECK(!mi_arena_contains(none, &size));
  CHECK(mi_arena_area(NULL, NULL) == NULL);
  CHECK(!mi_arena_contains((mi_arena_id_t)(intptr_t)-1, &size));
  long einval = errors(EINVAL);
  CHECK(mi_heap_new_in_arena(none) == NULL);                  /* unknown arena: refused */
  CHECK_GE(errors(EINVAL), einval + 1);

  /* an exclusive arena, then a heap in it that two threads use */
  mi_arena_id_t arena = (mi_arena_id_t)(uintptr_t)1;          /* overwritten on every return */
  const int err = mi_reserve_os_memory_ex(64u << 20, false, false, true, &arena);
  CHECK_EQ(err, 0);
  CHECK(arena != NULL);
  if (err != 0 || arena == NULL) return;
  void* start = mi_arena_area(arena, &size);
  CHECK(start != NULL);
  CHECK_GE(size, 32u << 20);
  CHECK(mi_arena_contains(arena, start));
  CHECK(mi_arena_contains(arena, (uint8_t*)start + size - 1));
  CHECK(!mi_arena_contains(arena, (uint8_t*)start + size));
  mi_heap_t* h = mi_heap_new_in_arena(arena);
  CHECK(h != NULL);
  if (h == NULL) return;
  void* p = mi_heap_malloc(h, 1000);
  CHECK(p != NULL && mi_arena_contains(arena, p) && mi_heap_of(p) == h);
  void* q = mi_malloc(1000);                                  /* the main heap never uses it */
  CHECK(!mi_arena_contains(arena, q));
  mi_free(q);
  share_round(h, arena);
  mi_free(p);
  mi_heap_delete(h);

  /* an exclusive arena of memory we hand over */
#if !defined(_WIN32)
  const size_t msize = 2 * mi_arena_min_size() + mi_arena_min_alignment();
  void* mem = mmap(NULL, msize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(mem != MAP_FAILED);
  if (mem == MAP_FAILED) return;
  mi_arena_id_t managed = NULL;
  CHECK(mi_manage_os_memory_ex(mem, msize, true, false, true, -1, true, &managed));
  CHECK(managed != NULL && managed != arena);
  size_t msz = 0;
  uint8_t* mstart = (uint8_t*)mi_arena_area(managed, &msz);   /* the whole blocks inside mem */
  CHECK(mstart >= (uint8_t*)mem && mstart + msz <= (uint8_t*)mem + msize);
  CHECK_GE(msz, mi_arena_min_size());
  CHECK(mi_arena_contains(managed, mstart) && mi_arena_contains(managed, mstart + msz - 1));
  CHECK(!mi_arena_contains(managed, mstart + msz) && !mi_arena_contains(arena, mstart));
  mi_heap_t* hm = mi_heap_new_in_arena(managed);
  CHECK(hm != NULL);
  if (hm != NULL) {
    void* m = mi_heap_malloc(hm, 5000);
    CHECK(m != NULL && mi_arena_contains(managed, m) && !mi_arena_contains(arena, m));
    mi_free(m);
    mi_heap_delete(hm);
  }
  /* too small to make an arena: false, and the id is cleared */
  mi_arena_id_t small = (mi_arena_id_t)(uintptr_t)1;
  static uint8_t too_small[4096];
  CHECK(!mi_manage_os_memory_ex(too_small, sizeof(too_small), true, false, false, -1, true, &small));
  CHECK(small == NULL);
#endif

  /* no huge pages asked for: no arena */
  mi_arena_id_t huge = (mi_arena_id_t)(uintptr_t)1;
  (void)mi_reserve_huge_os_pages_at_ex(0, -1, 0, true, &huge);
  CHECK(huge == NULL || mi_arena_area(huge, NULL) != NULL);
}

/* ---- arenas whose memory the program commits (mi_manage_memory) ----------------------- */
#if !defined(_WIN32)
/* The program's side: memory is PROT_NONE until committed, so a byte the allocator touched
   without a commit faults (the test dies); pages[] says which OS pages are committed now. */
typedef struct commit_state_s {
  uint8_t* base; size_t size; size_t page;
  uint8_t* pages;            /* one byte per OS page of [base, base+size) */
  size_t   commits, decommits, committed;   /* calls, and bytes committed now */
  size_t   peak_committed;   /* the most committed at once (a purge delay of 0 purges inside a fill) */
  size_t   commits_before_decommit;   /* commits while nothing was ever decommitted */
  bool     refuse;           /* fail every commit */
  long     bad_calls;        /* a range outside the memory, unaligned, or is_zero misused */
  atomic_int  inside;        /* calls in progress */
  atomic_long overlaps;      /* calls that began while another was in progress (the allocator
                                serialises them: docs/v3-api.md) */
} commit_state_t;

static bool commit_fun_body(bool commit, void* start, size_t size, bool* is_zero, commit_state_t* st);

static bool commit_fun(bool commit, void* start, size_t size, bool* is_zero, void* arg) {
  commit_state_t* st = (commit_state_t*)arg;
  if (atomic_fetch_add(&st->inside, 1) != 0) atomic_fetch_add(&st->overlaps, 1);
  /* a window of 20 us for a second call to show: a spin, not yields, whose length on a busy
     machine is the scheduler's (20 yields beside busy loops took 60-120 ms a call, calls are
     serialised, and the test ran past its 180 s timeout in the loaded round) */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do { clock_gettime(CLOCK_MONOTONIC, &t1); } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 20000);
  const bool ok = commit_fun_body(commit, start, size, is_zero, st);
  atomic_fetch_sub(&st->inside, 1);
  return ok;
}

static bool commit_fun_body(bool commit, void* start, size_t size, bool* is_zero, commit_state_t* st) {
  uint8_t* p = (uint8_t*)start;
  if (p < st->base || size == 0 || p + size > st->base + st->size ||
      (uintptr_t)p % st->page != 0 || size % st->page != 0 || (commit != (is_zero != NULL))) {
    st->bad_calls++;
    return false;
  }
  if (commit && st->refuse) return false;
  if (mprotect(p, size, commit ? (PROT_READ | PROT_WRITE) : PROT_NONE) != 0) return false;
  if (!commit) (void)madvise(p, size, MADV_DONTNEED);
  for (size_t i = (size_t)(p - st->base) / st->page; i < (size_t)(p + size - st->base) / st->page; i++) {
    if (st->pages[i] != commit) st->committed += (commit ? st->page : (size_t)0 - st->page);
    st->pages[i] = commit;
  }
  if (commit) { st->commits++; *is_zero = false; if (st->decommits == 0) st->commits_before_decommit++; }
  else st->decommits++;
  if (st->committed > st->peak_committed) st->peak_committed = st->committed;
  return true;
}

static bool range_committed(const commit_state_t* st, const void* p, size_t n) {
  const size_t lo = (size_t)((const uint8_t*)p - st->base) / st->page;
  const size_t hi = (size_t)((const uint8_t*)p + n - 1 - st->base) / st->page;
  for (size_t i = lo; i <= hi; i++) if (!st->pages[i]) return false;
  return true;
}

/* Allocate in a heap of the arena, write every byte, check each block lies in committed memory
   of the arena; frees them all and deletes the heap unless `keep`. True if all succeeded. */
static bool fill_arena_heap(commit_state_t* st, mi_arena_id_t arena) {
  static const size_t sizes[] = { 16, 100, 1000, 8000, 40000, 300000, 1u << 20 };
  enum { N = 24 };
  void* blocks[N];
  mi_heap_t* h = mi_heap_new_in_arena(arena);
  CHECK(h != NULL);
  if (h == NULL) return false;
  bool all = true;
  for (int i = 0; i < N; i++) {
    const size_t n = sizes[i % (int)(sizeof(sizes) / sizeof(sizes[0]))];
    blocks[i] = mi_heap_malloc(h, n);
    if (blocks[i] == NULL) { all = false; continue; }
    CHECK(mi_arena_contains(arena, blocks[i]));
    CHECK(range_committed(st, blocks[i], n));
    memset(blocks[i], 0x5a, n);   /* faults if any byte was not committed */
  }
  for (int i = 0; i < N; i++) mi_free(blocks[i]);
  mi_heap_delete(h);
  return all;
}

/* A thread that fills the arena's heaps again and again (its commits beside others' purges). */
static mi_arena_id_t manage_churn_arena;
static commit_state_t* manage_churn_state;
static void* manage_churn(void* arg) {
  (void)arg;
  for (int r = 0; r < 40; r++) {
    CHECK(fill_arena_heap(manage_churn_state, manage_churn_arena));
    mi_collect(false);
  }
  return NULL;
}

static void test_manage_memory(void) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  /* 6 arena blocks: room for every size of fill_arena_heap also in secure builds (guard pages
     give each large page a segment of its own). The churn's arena (3) has room for two fills
     at once in the worst case: each of a fill's six large pages in a segment of its own, and
     a small and a medium segment per thread, 16 blocks. With 6 blocks shared by two fills, how
     the two threads' large pages happen to interleave decided whether an allocation found 9
     contiguous free slots; CI once saw both threads fail at the same moment. */
  enum { NARENA = 4 };
  static const size_t blocks[NARENA] = { 6, 6, 6, 18 };
  static uint8_t pages[NARENA][(18 * 4 + 4) * 1024 * 1024 / 4096];   /* 76 MiB of 4 KiB pages, each */
  size_t msizes[NARENA];
  static commit_state_t st[NARENA];   /* (the arenas outlive this function: later purges call in) */
  for (int k = 0; k < NARENA; k++) {
    const size_t msize = msizes[k] = blocks[k] * mi_arena_min_size() + mi_arena_min_alignment();
    CHECK(msize <= sizeof(pages[0]) * page);
    if (msize > sizeof(pages[0]) * page) return;
    memset(&st[k], 0, sizeof(st[k]));
    /* 0, 3: reserved, committed by the function; 1: committed at the start; 2: pinned */
    const bool reserved = (k == 0 || k == 3);
    void* mem = mmap(NULL, msize, (reserved ? PROT_NONE : PROT_READ | PROT_WRITE), MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(mem != MAP_FAILED);
    if (mem == MAP_FAILED) return;
    st[k].base = (uint8_t*)mem; st[k].size = msize; st[k].page = page; st[k].pages = pages[k];
    if (!reserved) { memset(pages[k], 1, msize / page); st[k].committed = msize; }
  }
  const size_t msize = msizes[0];
  long ebefore = errors(ENOMEM);

  /* 0: every byte the allocator uses is committed through the function first */
  mi_arena_id_t a0 = (mi_arena_id_t)(uintptr_t)1;
  CHECK(mi_manage_memory(st[0].base, msize, false, false, false, -1, true, &commit_fun, &st[0], &a0));
  size_t asize = 0;
  uint8_t* const astart = (uint8_t*)mi_arena_area(a0, &asize);   /* the whole blocks inside */
  CHECK(a0 != NULL && astart >= st[0].base && astart + asize <= st[0].base + msize);
  CHECK(asize >= 6 * mi_arena_min_size() && mi_arena_contains(a0, astart + asize - 1));
  CHECK_EQ(st[0].commits, 0);                                   /* nothing before use */
  CHECK(fill_arena_heap(&st[0], a0));
  CHECK_GE(st[0].commits, 1);
  const size_t peak = st[0].peak_committed;
  CHECK_GE(peak, 2u << 20);
  mi_collect(true);                                             /* purges: through the function */
  CHECK_GE(st[0].decommits, 1);
  CHECK_LE(st[0].committed, peak - (1u << 20));
  const size_t commits = st[0].commits;
  CHECK(fill_arena_heap(&st[0], a0));                           /* committed again before use */
  CHECK_GE(st[0].commits, commits + 1);
  mi_collect(true);

  /* a refused commit: the allocation fails with ENOMEM, nothing is touched; then it works */
  st[0].refuse = true;
  mi_heap_t* h = mi_heap_new_in_arena(a0);
  CHECK(h != NULL);
  if (h != NULL) {
    /* what is still committed may serve a few; the arena cannot serve all without a commit */
    enum { M = 16 };
    void* big[M];
    int failed = 0;
    for (int i = 0; i < M; i++) {
      errno = 0;
      big[i] = mi_heap_malloc(h, 1u << 20);
      if (big[i] == NULL) { failed++; CHECK_EQ(errno, ENOMEM); }
      else CHECK(range_committed(&st[0], big[i], 1u << 20));
    }
    CHECK_GE(failed, 1);
    CHECK_GE(errors(ENOMEM), ebefore + 1);
    for (int i = 0; i < M; i++) mi_free(big[i]);
    st[0].refuse = false;
    void* p = mi_heap_malloc(h, 1u << 20);
    CHECK(p != NULL && mi_arena_contains(a0, p) && range_committed(&st[0], p, 1u << 20));
    mi_free(p);
    mi_heap_delete(h);
  }
  st[0].refuse = false;

  /* 1: committed at the start: no commit until a purge decommitted memory */
  mi_arena_id_t a1 = NULL;
  CHECK(mi_manage_memory(st[1].base, msize, true, false, true, -1, true, &commit_fun, &st[1], &a1));
  CHECK(a1 != NULL && a1 != a0);
  CHECK(fill_arena_heap(&st[1], a1));
  CHECK_EQ(st[1].commits_before_decommit, 0);                   /* (with a purge delay of 0 the fill purges) */
  mi_collect(true);
  CHECK_GE(st[1].decommits, 1);
  CHECK(fill_arena_heap(&st[1], a1));
  CHECK_GE(st[1].commits, 1);                                   /* recommitted what was purged */
  mi_collect(true);

  /* 2: pinned: the function is never called */
  mi_arena_id_t a2 = NULL;
  CHECK(mi_manage_memory(st[2].base, msize, true, true, false, -1, true, &commit_fun, &st[2], &a2));
  CHECK(a2 != NULL);
  CHECK(fill_arena_heap(&st[2], a2));
  mi_collect(true);
  CHECK_EQ(st[2].commits + st[2].decommits, 0);

  /* no function: the OS commits, as mi_manage_os_memory_ex */
  static uint8_t too_small[4096];
  mi_arena_id_t none = (mi_arena_id_t)(uintptr_t)1;
  CHECK(!mi_manage_memory(too_small, sizeof(too_small), true, false, false, -1, true, NULL, NULL, &none));
  CHECK(none == NULL);
  /* calls never overlap: two threads commit while collects purge (a purge delay of 0 purges at
     every free; the purger thread purges too) */
  const long delay = mi_option_get(mi_option_purge_delay);
  mi_option_set(mi_option_purge_delay, 0);
  mi_arena_id_t a3 = NULL;
  CHECK(mi_manage_memory(st[3].base, msizes[3], false, false, false, -1, true, &commit_fun, &st[3], &a3));
  CHECK(a3 != NULL);
  manage_churn_arena = a3;
  manage_churn_state = &st[3];
  pthread_t churn[2];
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_create(&churn[i], NULL, &manage_churn, NULL), 0);
  for (int r = 0; r < 200; r++) { mi_collect(true); sched_yield(); }
  for (int i = 0; i < 2; i++) CHECK_EQ(pthread_join(churn[i], NULL), 0);
  mi_option_set(mi_option_purge_delay, delay);
  CHECK_GE(st[3].commits, 10);
  for (int k = 0; k < NARENA; k++) CHECK_EQ(st[k].bad_calls, 0);
  for (int k = 0; k < NARENA; k++) { const long overlaps = atomic_load(&st[k].overlaps); CHECK_EQ(overlaps, 0); }
}
#endif

/* ---- theaps ---------------------------------------------------------------------------- */
static bool theap_visit_count(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)area; (void)block_size;
  if (block != NULL) (*(size_t*)arg)++;
  return true;
}

typedef struct theap_thread_s { mi_heap_t* heap; mi_theap_t* main_part; mi_theap_t* part; void* block; } theap_thread_t;

static void* theap_thread(void* varg) {
  theap_thread_t* t = (theap_thread_t*)varg;
  t->part = mi_heap_theap(t->heap);
  CHECK(t->part != NULL && t->part != t->main_part);         /* each thread its own part */
  CHECK(mi_heap_theap(t->heap) == t->part);
  t->block = mi_theap_malloc(t->part, 50);
  CHECK(t->block != NULL && mi_heap_of(t->block) == t->heap);
  CHECK(mi_heap_theap(NULL) == mi_theap_get_default());
  return NULL;
}

static void test_theaps(void) {
  /* the main heap's part for this thread is the default theap */
  mi_theap_t* dflt = mi_theap_get_default();
  CHECK(dflt != NULL);
  CHECK(mi_heap_theap(NULL) == dflt);
  CHECK(mi_heap_theap(mi_heap_main()) == dflt);
  CHECK(mi_theap_set_default(dflt) == dflt);                  /* returns the previous one */
  void* d = mi_theap_malloc(dflt, 24);
  CHECK(d != NULL && mi_heap_of(d) == mi_heap_main());
  mi_free(d);

  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  if (h == NULL) return;
  mi_theap_t* th = mi_heap_theap(h);
  CHECK(th != NULL);
  if (th == NULL) return;
  CHECK(mi_heap_theap(h) == th);                              /* stable */
  CHECK((void*)th != (void*)dflt);

  uint8_t* m = (uint8_t*)mi_theap_malloc(th, 100);
  uint8_t* z = (uint8_t*)mi_theap_zalloc(th, 300);
  uint8_t* c = (uint8_t*)mi_theap_calloc(th, 10, 30);
  uint8_t* s = (uint8_t*)mi_theap_malloc_small(th, MI_SMALL_SIZE_MAX);
  uint8_t* zs = (uint8_t*)mi_theap_zalloc_small(th, MI_SMALL_SIZE_MAX);
  uint8_t* al = (uint8_t*)mi_theap_malloc_aligned(th, 100, 1 << 16);
  uint8_t* const blocks[] = { m, z, c, s, zs, al };
  for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
    CHECK(blocks[i] != NULL);
    CHECK(mi_heap_of(blocks[i]) == h);                        /* a theap's blocks are its heap's */
    CHECK(mi_heap_contains(h, blocks[i]));
  }
  CHECK(z[299] == 0 && c[299] == 0 && zs[MI_SMALL_SIZE_MAX - 1] == 0);
  CHECK_GE(mi_usable_size(s), MI_SMALL_SIZE_MAX);
  CHECK_ALIGNED(al, 1 << 16);
  CHECK(mi_theap_calloc(th, huge_count, 16) == NULL);       /* overflow */
  CHECK(mi_theap_malloc_aligned(th, 100, odd_alignment) == NULL);         /* not a power of two */
  memset(m, 0xab, 100);
  m = (uint8_t*)mi_theap_realloc(th, m, 100000);
  CHECK(m != NULL && m[99] == 0xab && mi_heap_of(m) == h);
  uint8_t* r = (uint8_t*)mi_theap_realloc(th, NULL, 10);     /* NULL acts as malloc */
  CHECK(r != NULL && mi_heap_of(r) == h);

  size_t n = 0;
  CHECK(mi_theap_visit_blocks(th, true, &theap_visit_count, &n));
  CHECK_EQ(n, 7);                                             /* exactly the live blocks */
  CHECK(!mi_theap_visit_blocks(th, true, NULL, NULL));       /* no visitor */
  mi_theap_collect(th, true);
  mi_theap_guarded_set_sample_rate(th, 0, 0);                 /* guarded builds only: no guards */
  mi_theap_guarded_set_size_bound(th, 0, 0);
  void* g = mi_theap_malloc(th, 64);
  CHECK(g != NULL);
  mi_free(g);

  /* another thread gets its own part of the same heap */
  theap_thread_t t = { h, th, NULL, NULL };
  pthread_t thread;
  CHECK_EQ(pthread_create(&thread, NULL, &theap_thread, &t), 0);
  pthread_join(thread, NULL);
  CHECK(t.block != NULL);
  mi_free(t.block);                                           /* from another thread */

  /* the part of a heap from mi_heap_new as the default theap: plain malloc allocates in the heap */
  CHECK(mi_theap_set_default(th) == dflt);
  CHECK(mi_theap_get_default() == th);
  void* md = mi_malloc(72);
  CHECK(md != NULL && mi_heap_of(md) == h && mi_heap_contains(h, md));
  CHECK(mi_theap_set_default(dflt) == th);                   /* back to the main heap's part */
  CHECK(mi_theap_get_default() == dflt);
  void* mm = mi_malloc(72);
  CHECK(mm != NULL && mi_heap_of(mm) == mi_heap_main());
  mi_free(mm);
  mi_free(md);

  for (size_t i = 1; i < sizeof(blocks) / sizeof(blocks[0]); i++) mi_free(blocks[i]);   /* blocks[0]: realloc'ed */
  mi_free(m);
  mi_free(r);
  n = 0;
  CHECK(mi_theap_visit_blocks(th, true, &theap_visit_count, &n));
  CHECK_EQ(n, 0);
  mi_heap_destroy(h);
}

/* ---- a shared heap's part as the thread's default theap -------------------------------- */
/* A block of `size` by plain malloc, and whether it is in `heap` (NULL: the main heap). */
static bool malloc_in(mi_heap_t* heap, size_t size, void** out) {
  void* p = mi_malloc(size);
  *out = p;
  if (p == NULL) return false;
  memset(p, 0x5a, size);
  return (mi_heap_of(p) == (heap == NULL ? mi_heap_main() : heap) && mi_heap_contains(heap, p));
}

static bool all_bytes(const void* p, size_t size, uint8_t v) {
  for (size_t i = 0; i < size; i++) if (((const uint8_t*)p)[i] != v) return false;
  return true;
}

typedef struct dflt_thread_s {
  mi_heap_t* heap;            /* the shared heap whose part the thread makes its default */
  bool destroy;               /* end_thread: destroy (else delete) `heap` */
  int rounds;
  void* kept;                 /* a block the thread leaves behind (in `heap`) */
  _Atomic(int) step;          /* the handshake of other_part_thread */
  mi_theap_t* part;
  bool ok;
} dflt_thread_t;

/* several threads, each with its own part of the same heap as its default */
static void* dflt_thread(void* varg) {
  dflt_thread_t* t = (dflt_thread_t*)varg;
  mi_theap_t* const mine = mi_theap_get_default();
  mi_theap_t* const part = mi_heap_theap(t->heap);
  bool ok = (part != NULL && part != mine && mi_theap_set_default(part) == mine && mi_theap_get_default() == part);
  void* blocks[64];
  for (int r = 0; r < t->rounds && ok; r++) {
    for (size_t i = 0; i < 64; i++) ok = malloc_in(t->heap, 8 + 61 * i, &blocks[i]) && ok;
    for (size_t i = 0; i < 64; i++) { if (blocks[i] != NULL && !all_bytes(blocks[i], 8 + 61 * i, 0x5a)) ok = false; mi_free(blocks[i]); }
  }
  ok = malloc_in(t->heap, 200, &t->kept) && ok;             /* left behind: the thread ends with the part as its default */
  t->ok = ok;
  return NULL;
}

/* another thread ends the heap whose part is the main thread's default */
static void* end_thread(void* varg) {
  dflt_thread_t* t = (dflt_thread_t*)varg;
  if (t->destroy) mi_heap_destroy(t->heap);
  else mi_heap_delete(t->heap);
  return NULL;
}

/* a thread that keeps its part of a heap until told to end */
static void* other_part_thread(void* varg) {
  dflt_thread_t* t = (dflt_thread_t*)varg;
  t->part = mi_heap_theap(t->heap);
  atomic_store(&t->step, 1);
  while (atomic_load(&t->step) != 2) sched_yield();
  return NULL;
}

static void test_theap_default(void) {
  mi_theap_t* const dflt = mi_theap_get_default();
  CHECK(dflt == mi_heap_theap(NULL));
  void* p = NULL;
  void* q = NULL;

  /* this thread deletes, then destroys, the heap whose part is its default */
  for (int destroy = 0; destroy <= 1; destroy++) {
    mi_heap_t* h = mi_heap_new();
    CHECK(h != NULL);
    if (h == NULL) return;
    CHECK(mi_theap_set_default(mi_heap_theap(h)) == dflt);
    CHECK(malloc_in(h, 100, &p));
    if (destroy) mi_heap_destroy(h);
    else mi_heap_delete(h);
    CHECK(mi_theap_get_default() == dflt);                    /* back to the backing heap */
    CHECK(malloc_in(NULL, 100, &q));
    if (!destroy) { CHECK(all_bytes(p, 100, 0x5a)); mi_free(p); }   /* a deleted heap's blocks stay */
    mi_free(q);
  }

  /* another thread deletes, then destroys, it: the default goes back at this thread's next
     allocation off the fast path (a size class its part has no page for), at mi_collect, or
     when asked for */
  for (int how = 0; how < 6; how++) {
    const bool destroy = (how & 1) != 0, by_collect = (how / 2 == 1), by_get = (how / 2 == 2);
    mi_heap_t* h = mi_heap_new();
    CHECK(h != NULL);
    if (h == NULL) return;
    CHECK(mi_theap_set_default(mi_heap_theap(h)) == dflt);
    CHECK(malloc_in(h, 100, &p));
    dflt_thread_t t = { .heap = h, .destroy = destroy };
    pthread_t thread;
    CHECK_EQ(pthread_create(&thread, NULL, &end_thread, &t), 0);
    pthread_join(thread, NULL);
    if (by_collect) mi_collect(false);                       /* the sweep ends the part */
    if (by_get) CHECK(mi_theap_get_default() == dflt);
    CHECK(malloc_in(NULL, 3000, &q));                        /* in the main heap */
    CHECK(mi_theap_get_default() == dflt);
    if (!destroy) CHECK(all_bytes(p, 100, 0x5a));
    mi_collect(false);                                       /* (the part ends here if not yet) */
    CHECK(mi_theap_get_default() == dflt);
    if (!destroy) { CHECK(all_bytes(p, 100, 0x5a)); CHECK(mi_heap_of(p) == mi_heap_main()); mi_free(p); }
    mi_free(q);
    CHECK(malloc_in(NULL, 100, &q));
    mi_free(q);
  }

  /* several threads, each with its part as its default, end with it as their default */
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  if (h == NULL) return;
  enum { THREADS = 4 };
  dflt_thread_t ts[THREADS];
  pthread_t threads[THREADS];
  for (int i = 0; i < THREADS; i++) {
    memset(&ts[i], 0, sizeof(ts[i]));
    ts[i].heap = h;
    ts[i].rounds = 20;
    CHECK_EQ(pthread_create(&threads[i], NULL, &dflt_thread, &ts[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < THREADS; i++) {
    CHECK(ts[i].ok);
    CHECK(ts[i].kept != NULL && mi_heap_of(ts[i].kept) == h && all_bytes(ts[i].kept, 200, 0x5a));   /* the ended part's block is still the heap's */
    mi_free(ts[i].kept);
  }

  /* only the calling thread's own part may be its default */
  dflt_thread_t o = { .heap = h };
  atomic_store(&o.step, 0);
  pthread_t other;
  CHECK_EQ(pthread_create(&other, NULL, &other_part_thread, &o), 0);
  while (atomic_load(&o.step) != 1) sched_yield();
  long einval = errors(EINVAL);
  CHECK(o.part != NULL && mi_theap_set_default(o.part) == NULL);
  CHECK_GE(errors(EINVAL), einval + 1);
  CHECK(mi_theap_get_default() == dflt);
  atomic_store(&o.step, 2);
  pthread_join(other, NULL);
  mi_heap_delete(h);
  CHECK(malloc_in(NULL, 100, &q));
  mi_free(q);
}

/* ---- the main heap: one for all threads ------------------------------------------------ */
typedef struct main_thread_s {
  mi_heap_t* main; void* block; void* heap_block; bool same;
  mi_heap_t* shared; void* shared_block; pthread_barrier_t* barrier;
} main_thread_t;

static void* main_heap_thread(void* varg) {
  main_thread_t* t = (main_thread_t*)varg;
  t->same = (mi_heap_main() == t->main);
  t->block = mi_malloc(40);                                  /* the default: the main heap */
  t->heap_block = mi_heap_malloc(t->main, 4000);             /* the main heap from here too */
  CHECK(t->block != NULL && t->heap_block != NULL);
  CHECK(mi_heap_of(t->block) == t->main && mi_heap_of(t->heap_block) == t->main);
  CHECK(mi_heap_contains(NULL, t->heap_block));
  t->shared_block = mi_heap_malloc(t->shared, 100);          /* this thread's part of a heap */
  pthread_barrier_wait(t->barrier);                          /* the main thread asks of them */
  pthread_barrier_wait(t->barrier);
  return NULL;                                               /* ends with the blocks alive */
}

typedef struct main_visit_s { const mi_heap_t* main; size_t blocks; bool heap_ok; } main_visit_t;

static bool visit_main(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)area; (void)block_size;
  main_visit_t* v = (main_visit_t*)arg;
  if (heap != v->main) v->heap_ok = false;
  if (block != NULL) v->blocks++;
  return true;
}

static void test_main_heap(void) {
  mi_heap_t* const main_heap = mi_heap_main();
  CHECK(main_heap != NULL);
  if (main_heap == NULL) return;
  CHECK(mi_heap_main() == main_heap);
  int local = 0;
  CHECK(mi_heap_of(&local) == NULL && !mi_heap_contains(main_heap, &local) && !mi_heap_contains(NULL, NULL));

  void* p = mi_malloc(100);
  void* q = mi_heap_malloc(main_heap, 100);
  void* big = mi_heap_zalloc(main_heap, 3 << 20);
  CHECK(p != NULL && q != NULL && big != NULL);
  CHECK(mi_heap_of(p) == main_heap && mi_heap_of(q) == main_heap && mi_heap_of(big) == main_heap);
  CHECK(mi_heap_contains(NULL, p) && mi_heap_contains(main_heap, q) && mi_heap_contains(main_heap, (char*)big + 100));
  CHECK(mi_check_owned(p) && !mi_check_owned(&local));

  /* other threads: the same main heap */
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, 2);
  mi_heap_t* shared = mi_heap_new();
  main_thread_t t = { main_heap, NULL, NULL, false, shared, NULL, &barrier };
  pthread_t thread;
  CHECK_EQ(pthread_create(&thread, NULL, &main_heap_thread, &t), 0);
  pthread_barrier_wait(&barrier);
  /* another thread's default blocks are the main heap's from here too; its part's are not */
  CHECK(mi_heap_of(t.block) == main_heap && mi_heap_of(t.heap_block) == main_heap);
  CHECK(mi_heap_contains(main_heap, t.block) && mi_heap_contains(NULL, t.heap_block));
  CHECK(mi_heap_of(t.shared_block) != NULL && mi_heap_of(t.shared_block) != main_heap);
  CHECK(!mi_heap_contains(main_heap, t.shared_block));
  pthread_barrier_wait(&barrier);
  pthread_join(thread, NULL);
  pthread_barrier_destroy(&barrier);
  CHECK(t.same);
  /* its thread ended: still the main heap's, and the part's still the heap's */
  CHECK(mi_heap_of(t.block) == main_heap && mi_heap_contains(main_heap, t.heap_block));
  CHECK(mi_heap_of(t.shared_block) == shared && !mi_heap_contains(main_heap, t.shared_block));
  mi_free(t.block);
  mi_free(t.heap_block);
  mi_free(t.shared_block);
  mi_heap_delete(shared);

  /* collect and visit: the calling thread's part, told as the main heap */
  mi_heap_collect(main_heap, true);
  main_visit_t v = { main_heap, 0, true };
  CHECK(mi_heap_visit_blocks(main_heap, true, &visit_main, &v));
  CHECK_GE(v.blocks, 3);
  CHECK(v.heap_ok);

  /* a heap of our own is not the main heap; its blocks are checked as owned too */
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL && h != main_heap);
  void* hp = mi_heap_malloc(h, 10);
  CHECK(!mi_heap_contains(main_heap, hp) && mi_check_owned(hp));
  mi_free(hp);
  mi_heap_delete(h);

  /* the main heap is never deleted or destroyed: refused, and it keeps working */
  long einval = errors(EINVAL);
  mi_heap_delete(main_heap);
  mi_heap_destroy(main_heap);
  CHECK_GE(errors(EINVAL), einval + 2);
  CHECK(mi_heap_of(p) == main_heap && mi_usable_size(q) >= 100);
  void* r = mi_heap_malloc(main_heap, 10);
  CHECK(r != NULL && mi_heap_of(r) == main_heap);
  mi_free(r);
  mi_free(p);
  mi_free(q);
  mi_free(big);
}

/* ---- subprocesses: v3's struct id ---------------------------------------------------- */
static bool same_subproc(mi_subproc_id_t a, mi_subproc_id_t b) {
  return (memcmp(&a, &b, sizeof(a)) == 0);
}

/* mi_subproc_visit_heaps: which of `want` it shows, how often, and whether it shows the main
   heap; stops after `stop_after` heaps (0: never) */
typedef struct visit_s { mi_heap_t* want[3]; int seen[3]; int count; int main_seen; int stop_after; } visit_t;
static bool visit_heap(mi_heap_t* heap, void* arg) {
  visit_t* v = (visit_t*)arg;
  v->count++;
  if (heap == mi_heap_main()) v->main_seen++;
  for (int i = 0; i < 3; i++) if (heap != NULL && heap == v->want[i]) v->seen[i]++;
  return (v->stop_after == 0 || v->count < v->stop_after);
}

typedef struct subproc_thread_s { mi_subproc_id_t subproc; bool joined; mi_heap_t* other; } subproc_thread_t;

static void* subproc_thread(void* varg) {
  subproc_thread_t* t = (subproc_thread_t*)varg;
  mi_subproc_add_current_thread(t->subproc);                  /* first, before any allocation */
  t->joined = same_subproc(mi_subproc_current(), t->subproc);
  void* blocks[100];
  for (int i = 0; i < 100; i++) blocks[i] = mi_malloc(16 + (size_t)i * 8);
  for (int i = 0; i < 100; i++) mi_free(blocks[i]);
  mi_heap_t* h = mi_heap_new();                               /* a heap in the subprocess */
  void* p = mi_heap_malloc(h, 100);
  CHECK(p != NULL);
  mi_free(p);
  /* its subprocess' heaps: the main heap and h, not the main subprocess' heap t->other */
  visit_t v = { { h, t->other, NULL }, { 0, 0, 0 }, 0, 0, 0 };
  CHECK(mi_subproc_visit_heaps(t->subproc, &visit_heap, &v));
  CHECK_EQ(v.count, 2);
  CHECK_EQ(v.main_seen, 1);
  CHECK_EQ(v.seen[0], 1);
  CHECK_EQ(v.seen[1], 0);
  mi_heap_delete(h);
  return NULL;
}

static void test_subprocs(void) {
  const mi_subproc_id_t main_sp = mi_subproc_main();
  CHECK(same_subproc(main_sp, mi_subproc_main()));
  CHECK(same_subproc(mi_subproc_current(), main_sp));
  /* the heaps of the main subprocess: the main heap and those of mi_heap_new not deleted */
  mi_heap_t* hs[3] = { mi_heap_new(), mi_heap_new(), mi_heap_new() };
  visit_t v = { { hs[0], hs[1], hs[2] }, { 0, 0, 0 }, 0, 0, 0 };
  CHECK(mi_subproc_visit_heaps(main_sp, &visit_heap, &v));
  CHECK_EQ(v.main_seen, 1);
  CHECK(v.count >= 4);
  for (int i = 0; i < 3; i++) CHECK_EQ(v.seen[i], 1);
  mi_heap_delete(hs[1]);
  visit_t v2 = { { hs[0], hs[1], hs[2] }, { 0, 0, 0 }, 0, 0, 0 };
  CHECK(mi_subproc_visit_heaps(mi_subproc_current(), &visit_heap, &v2));
  CHECK_EQ(v2.count, v.count - 1);
  CHECK_EQ(v2.seen[0], 1);
  CHECK_EQ(v2.seen[1], 0);                                    /* deleted: not a heap any more */
  CHECK_EQ(v2.seen[2], 1);
  visit_t v3 = { { NULL, NULL, NULL }, { 0, 0, 0 }, 0, 0, 2 };  /* the visitor stops after two */
  CHECK(!mi_subproc_visit_heaps(main_sp, &visit_heap, &v3));
  CHECK_EQ(v3.count, 2);
  CHECK(!mi_subproc_visit_heaps(main_sp, NULL, NULL));

  mi_subproc_id_t sp = mi_subproc_new();
  CHECK(!same_subproc(sp, main_sp));
  subproc_thread_t t = { sp, false, hs[0] };
  pthread_t thread;
  CHECK_EQ(pthread_create(&thread, NULL, &subproc_thread, &t), 0);
  pthread_join(thread, NULL);
  CHECK(t.joined);
  mi_heap_delete(hs[0]);
  mi_heap_delete(hs[2]);
  CHECK(same_subproc(mi_subproc_current(), main_sp));        /* the main thread stays */
  mi_subproc_destroy(sp);
  mi_subproc_destroy(main_sp);                                /* ignored */
  mi_subproc_add_current_thread(main_sp);                     /* already there: nothing */
  void* p = mi_malloc(10);
  CHECK(p != NULL);
  mi_free(p);
}

/* A visitor of the heaps may allocate, free and collect, also when the collect would end the
   last part of a heap another thread deleted (ending it frees the heap, which takes the list's
   lock the visit holds: ours waits for the next sweep) */
typedef struct visit_collect_s { int count; void* kept; } visit_collect_t;

static bool visit_and_collect(mi_heap_t* heap, void* arg) {
  (void)heap;
  visit_collect_t* v = (visit_collect_t*)arg;
  v->count++;
  if (heap == mi_heap_main()) return true;                     /* (ours: visited before the list's lock) */
  void* p = mi_malloc(100);
  CHECK(p != NULL);
  mi_free(p);
  mi_collect(false);
  return true;
}

static void* delete_heap_thread(void* h) {
  mi_heap_delete((mi_heap_t*)h);
  return NULL;
}

static void test_visit_collects(void) {
  mi_heap_t* h = mi_heap_new();
  mi_heap_t* live = mi_heap_new();                             /* visited: its visitor collects */
  CHECK(h != NULL && live != NULL);
  if (h == NULL || live == NULL) return;
  visit_collect_t v = { 0, mi_heap_malloc(h, 64) };          /* this thread's part of h */
  CHECK(v.kept != NULL);
  pthread_t thread;
  CHECK_EQ(pthread_create(&thread, NULL, &delete_heap_thread, h), 0);
  pthread_join(thread, NULL);                                  /* h deleted; our part is its last */
  CHECK(mi_heap_of(v.kept) == h);                             /* (ours: the part lives until this thread sweeps) */
  CHECK(mi_subproc_visit_heaps(mi_subproc_current(), &visit_and_collect, &v));
  CHECK_GE(v.count, 2);
  mi_heap_delete(live);
  mi_collect(false);                                           /* the part ends now */
  CHECK(mi_any_heap_contains(v.kept) && mi_heap_of(v.kept) == mi_heap_main());   /* deleted: kept valid */
  mi_free(v.kept);
}

/* ---- abandoned blocks -------------------------------------------------------------------- */
#define LEFT_BLOCKS 40
#define LEFT_SIZE   3000
static void* left_behind[LEFT_BLOCKS];

static void* leave_thread(void* arg) {
  (void)arg;
  for (int i = 0; i < LEFT_BLOCKS; i++) left_behind[i] = mi_malloc(LEFT_SIZE);   /* the main heap */
  return NULL;                                                 /* ends with them allocated */
}

typedef struct left_count_s { size_t found; size_t blocks; } left_count_t;

static bool find_left(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)area; (void)block_size;
  left_count_t* c = (left_count_t*)arg;
  if (block == NULL) return true;
  c->blocks++;
  for (int i = 0; i < LEFT_BLOCKS; i++) if (left_behind[i] == block) c->found++;
  return true;
}

static void* left_in_heap[LEFT_BLOCKS];

static void* leave_in_heap_thread(void* arg) {
  for (int i = 0; i < LEFT_BLOCKS; i++) left_in_heap[i] = mi_heap_malloc((mi_heap_t*)arg, LEFT_SIZE + 100);
  return NULL;                                                 /* ends with them in the heap */
}

typedef struct in_heap_count_s { const mi_heap_t* heap; size_t found; size_t blocks; size_t told; } in_heap_count_t;

static bool find_in_heap(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)area; (void)block_size;
  in_heap_count_t* c = (in_heap_count_t*)arg;
  if (heap == c->heap) c->told++;
  if (block == NULL) return true;
  c->blocks++;
  for (int i = 0; i < LEFT_BLOCKS; i++) if (left_in_heap[i] == block) c->found++;
  return true;
}

static bool stop_at_first(const mi_heap_t* heap, const mi_heap_area_t* area, void* block, size_t block_size, void* arg) {
  (void)heap; (void)area; (void)block; (void)block_size;
  (*(size_t*)arg)++;
  return false;
}

static void test_abandoned(void) {
  mi_option_enable(mi_option_visit_abandoned);
  pthread_t thread;
  CHECK_EQ(pthread_create(&thread, NULL, &leave_thread, NULL), 0);
  pthread_join(thread, NULL);
  left_count_t count = { 0, 0 };
  CHECK(mi_heap_visit_abandoned_blocks(NULL, true, &find_left, &count));     /* the main heap */
  CHECK_EQ(count.found, LEFT_BLOCKS);
  left_count_t again = { 0, 0 };
  CHECK(mi_heap_visit_abandoned_blocks(mi_heap_main(), true, &find_left, &again));
  CHECK_EQ(again.found, LEFT_BLOCKS);
  size_t calls = 0;
  CHECK(!mi_heap_visit_abandoned_blocks(NULL, true, &stop_at_first, &calls));   /* stopped */
  CHECK_EQ(calls, 1);
  CHECK(!mi_heap_visit_abandoned_blocks(NULL, true, NULL, NULL));              /* no visitor */
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  left_count_t shared = { 0, 0 };
  CHECK(mi_heap_visit_abandoned_blocks(h, false, &find_left, &shared));        /* areas only */
  CHECK_EQ(shared.blocks, 0);
  /* a thread that ended left blocks in h: they are h's abandoned blocks, and only h's */
  CHECK_EQ(pthread_create(&thread, NULL, &leave_in_heap_thread, h), 0);
  pthread_join(thread, NULL);
  in_heap_count_t in_h = { h, 0, 0, 0 };
  CHECK(mi_heap_visit_abandoned_blocks(h, true, &find_in_heap, &in_h));
  CHECK_EQ(in_h.found, LEFT_BLOCKS);
  CHECK_EQ(in_h.blocks, LEFT_BLOCKS);                                           /* no other heap's */
  CHECK_GE(in_h.told, LEFT_BLOCKS);                                             /* told of h */
  in_heap_count_t in_main = { NULL, 0, 0, 0 };
  CHECK(mi_heap_visit_abandoned_blocks(NULL, true, &find_in_heap, &in_main));
  CHECK_EQ(in_main.found, 0);                                                   /* not the main heap's */
  in_heap_count_t all = { h, 0, 0, 0 };
  CHECK(mi_heap_visit_blocks(h, true, &find_in_heap, &all));                    /* every part, ended too */
  CHECK_EQ(all.found, LEFT_BLOCKS);
  size_t stops = 0;
  CHECK(!mi_heap_visit_blocks(h, true, &stop_at_first, &stops));                /* stopped */
  CHECK_EQ(stops, 1);
  mi_heap_delete(h);
  for (int i = 0; i < LEFT_BLOCKS; i++) mi_free(left_in_heap[i]);

  /* ours: with the option off the visit is refused (an error, EFAULT) */
  mi_option_disable(mi_option_visit_abandoned);
  long efault = errors(EFAULT);
  left_count_t off = { 0, 0 };
  CHECK(!mi_heap_visit_abandoned_blocks(NULL, true, &find_left, &off));
  CHECK_EQ(off.blocks, 0);
  CHECK_GE(errors(EFAULT), efault + 1);
  mi_option_enable(mi_option_visit_abandoned);
  for (int i = 0; i < LEFT_BLOCKS; i++) mi_free(left_behind[i]);
}

int main(void) {
  /* The RSS bound (rss-guard.h): 64 MiB above the start (more under the sanitizers), live bytes
     not counted: the test holds a few MiB at most (its arenas are reserved, mostly untouched;
     measured: 6-10 MiB above the start at its peak in the plain builds and ASan, 106-123
     under TSan). */
  test_rss_guard_start("api-v3-mode", 0.0, 64);
  mi_register_error(&on_error, NULL);
  mi_option_set(mi_option_max_errors, -1);   /* every refusal printed and counted */
  mi_free(mi_malloc(1));
  CHECK(mi_version() > 0);
  test_options();
  test_typed();
  test_shared_heaps();
  test_other_part();
  test_arenas();
#if !defined(_WIN32)
  test_manage_memory();
#endif
  test_theaps();
  test_theap_default();
  test_main_heap();
  test_subprocs();
  test_visit_collects();
  test_abandoned();
  mi_collect(true);
  return test_summary("api-v3-mode", "%s", "a program written for mimalloc 3.x, with MI_V3_API");
}
