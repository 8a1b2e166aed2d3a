/* SPDX-License-Identifier: MIT */
/* test-api-v3.c -- the functions of mimalloc v3's API that this library has (docs/v3-api.md):
   mi_heap_main, mi_heap_of, mi_heap_contains, mi_any_heap_contains, mi_arena_contains,
   mi_arena_min_size, mi_arena_min_alignment, mi_subproc_current, mi_options_print_out,
   mi_process_info_print(_out) and the mi_theap_zalloc_small spelling, each with its edge cases:
   pointers that are not ours, interior pointers, large, huge and over-aligned blocks, another
   thread's heap (alive and after it ended), arenas at their limits, and blocks the sampling
   profiler took (release builds on Linux with glibc, where mi_profile_start works). */
#define _GNU_SOURCE   /* MAP_ANONYMOUS */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#if !defined(_WIN32)
#include <sys/mman.h>
#endif

#include "mimalloc.h"
#include "testing.h"

static int global_var = 42;                     /* a global: not ours */
static uint8_t global_array[1 << 16];           /* static memory: not ours */

static bool is_pow2(size_t x) { return (x != 0 && (x & (x - 1)) == 0); }

/* ---- mi_heap_main, mi_heap_of, mi_heap_contains, mi_any_heap_contains ------------------ */
static void check_not_ours(const void* p) {
  CHECK(mi_heap_of(p) == NULL);
  CHECK(!mi_heap_contains(NULL, p));
  CHECK(!mi_any_heap_contains(p));
}

static void test_heap_queries(void) {
  int local = 1;
  check_not_ours(NULL);
  check_not_ours(&local);
  check_not_ours(&global_var);
  check_not_ours(&global_array[1000]);

  mi_heap_t* main_heap = mi_heap_main();
  CHECK(main_heap != NULL);
  CHECK_PTR_EQ(main_heap, mi_heap_get_backing());
  CHECK_PTR_EQ(mi_heap_main(), main_heap);      /* stable */

  /* blocks of the default heap, of every kind */
  const size_t sizes[] = { 0, 1, 8, 100, 1024, 8 * 1024, 100 * 1024, 1024 * 1024, 64 * 1024 * 1024 };
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    uint8_t* p = (uint8_t*)mi_malloc(sizes[i]);
    CHECK(p != NULL);
    if (p == NULL) continue;
    CHECK_PTR_EQ(mi_heap_of(p), main_heap);
    CHECK(mi_heap_contains(NULL, p));
    CHECK(mi_heap_contains(main_heap, p));
    CHECK(mi_any_heap_contains(p));
    const size_t usable = mi_usable_size(p);
    if (usable > 1) {
      CHECK_PTR_EQ(mi_heap_of(p + usable - 1), main_heap);   /* interior pointers */
      CHECK(mi_any_heap_contains(p + usable / 2));
    }
    mi_free(p);
  }

  /* a heap of our own: its blocks are its, not the main heap's */
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  if (h == NULL) return;
  CHECK(h != main_heap);
  void* small = mi_heap_malloc(h, 48);
  void* large = mi_heap_malloc(h, 300 * 1024);
  void* huge = mi_heap_malloc(h, 40 * 1024 * 1024);
  void* aligned = mi_heap_malloc_aligned(h, 100, (size_t)1 << 20);
  void* strongly = mi_heap_malloc_aligned(h, 100, (size_t)64 << 20);
  void* const blocks[] = { small, large, huge, aligned, strongly };
  for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
    CHECK(blocks[i] != NULL);
    CHECK_PTR_EQ(mi_heap_of(blocks[i]), h);
    CHECK(mi_heap_contains(h, blocks[i]));
    CHECK(!mi_heap_contains(main_heap, blocks[i]));
    CHECK(!mi_heap_contains(NULL, blocks[i]));
    CHECK(mi_any_heap_contains(blocks[i]));
    CHECK(mi_heap_contains_block(h, blocks[i]));     /* the v2 query agrees */
  }
  CHECK(!mi_heap_contains(h, &local));
  CHECK(!mi_heap_contains(h, NULL));
  void* m = mi_malloc(16);
  CHECK(!mi_heap_contains(h, m));
  CHECK_PTR_EQ(mi_heap_of(m), main_heap);
  mi_free(m);

  /* the default heap set to h: mi_heap_main stays the backing heap */
  mi_heap_t* old = mi_heap_set_default(h);
  CHECK_PTR_EQ(old, main_heap);
  CHECK_PTR_EQ(mi_heap_main(), main_heap);
  void* d = mi_malloc(32);
  CHECK_PTR_EQ(mi_heap_of(d), h);
  CHECK(!mi_heap_contains(NULL, d));
  mi_free(d);
  CHECK_PTR_EQ(mi_heap_set_default(old), h);

  /* mi_heap_delete hands live blocks to the main heap, as in v3 */
  mi_heap_delete(h);
  for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
    mi_heap_t* now = mi_heap_of(blocks[i]);
    CHECK_MSG(now == main_heap || now == NULL, "block %zu: heap %p after delete", i, (void*)now);
    CHECK(mi_any_heap_contains(blocks[i]));
    mi_free(blocks[i]);
  }

  /* the v3 spelling of a theap allocation */
  uint8_t* z = (uint8_t*)mi_theap_zalloc_small(mi_theap_get_default(), 40);
  CHECK(z != NULL);
  if (z != NULL) {
    size_t nonzero = 0;
    for (size_t i = 0; i < 40; i++) nonzero += (z[i] != 0);
    CHECK_EQ(nonzero, 0);
    CHECK_PTR_EQ(mi_heap_of(z), main_heap);
  }
  mi_free(z);
}

/* ---- another thread's heap ----------------------------------------------------------------- */
typedef struct other_s {
  _Atomic(int) stage;        /* 1: blocks ready; 2: checked, may exit */
  void* block;               /* from the thread's default heap, left behind at exit */
  void* own;                 /* from a heap the thread made, freed before exit */
  mi_heap_t* its_main;
  mi_heap_t* its_heap;
  mi_subproc_id_t subproc_before;
  mi_subproc_id_t subproc_after;
  mi_subproc_id_t subproc_to_join;
} other_t;

static void* other_thread(void* arg) {
  other_t* o = (other_t*)arg;
  o->subproc_before = mi_subproc_current();     /* before the thread's first allocation */
  if (o->subproc_to_join != NULL) mi_subproc_add_current_thread(o->subproc_to_join);
  o->subproc_after = mi_subproc_current();
  o->its_main = mi_heap_main();
  o->block = mi_malloc(200);
  o->its_heap = mi_heap_new();
  o->own = (o->its_heap == NULL ? NULL : mi_heap_malloc(o->its_heap, 64));
  CHECK_PTR_EQ(mi_heap_of(o->block), o->its_main);
  CHECK_PTR_EQ(mi_heap_of(o->own), o->its_heap);
  atomic_store(&o->stage, 1);
  while (atomic_load(&o->stage) != 2) { /* wait for the main thread's checks */ }
  mi_free(o->own);
  if (o->its_heap != NULL) mi_heap_delete(o->its_heap);
  return NULL;
}

static void test_other_thread(void) {
  other_t o;
  memset(&o, 0, sizeof(o));
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, &other_thread, &o), 0);
  while (atomic_load(&o.stage) != 1) { }
  /* the thread's heaps are its own (heaps are not shared yet): each is what mi_heap_of says */
  CHECK(o.its_main != NULL && o.its_main != mi_heap_main());
  CHECK_PTR_EQ(mi_heap_of(o.block), o.its_main);
  CHECK_PTR_EQ(mi_heap_of(o.own), o.its_heap);
  CHECK(mi_heap_contains(o.its_main, o.block));
  CHECK(!mi_heap_contains(NULL, o.block));
  CHECK(mi_any_heap_contains(o.block));
  CHECK(mi_any_heap_contains(o.own));
  CHECK(mi_subproc_current() == mi_subproc_main());
  CHECK(o.subproc_before == mi_subproc_main());
  CHECK(o.subproc_after == mi_subproc_main());
  atomic_store(&o.stage, 2);
  CHECK_EQ(pthread_join(t, NULL), 0);
  /* the thread ended: its page is abandoned (no heap) or already taken over by this thread */
  mi_heap_t* now = mi_heap_of(o.block);
  CHECK_MSG(now == NULL || now == mi_heap_main(), "heap %p of an ended thread's block", (void*)now);
  CHECK(mi_any_heap_contains(o.block));
  mi_free(o.block);
}

/* ---- mi_subproc_current -------------------------------------------------------------------- */
static void test_subproc_current(void) {
  CHECK(mi_subproc_current() == mi_subproc_main());
  mi_subproc_id_t sp = mi_subproc_new();
  CHECK(sp != NULL);
  if (sp == NULL) return;
  other_t o;
  memset(&o, 0, sizeof(o));
  o.subproc_to_join = sp;
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, &other_thread, &o), 0);
  while (atomic_load(&o.stage) != 1) { }
  CHECK(o.subproc_before == mi_subproc_main());
  CHECK(o.subproc_after == sp);
  CHECK(mi_subproc_current() == mi_subproc_main());    /* this thread did not move */
  CHECK_PTR_EQ(mi_heap_of(o.block), o.its_main);
  atomic_store(&o.stage, 2);
  CHECK_EQ(pthread_join(t, NULL), 0);
  mi_free(o.block);
  mi_collect(true);
  mi_subproc_delete(sp);
}

/* ---- arenas -------------------------------------------------------------------------------- */
static void test_arenas(void) {
  const size_t min_size = mi_arena_min_size();
  const size_t min_align = mi_arena_min_alignment();
  CHECK(is_pow2(min_size));
  CHECK(is_pow2(min_align));
  CHECK_GE(min_size, (size_t)64 * 1024);

  CHECK(!mi_arena_contains(0, &global_var));
  CHECK(!mi_arena_contains(12345, &global_var));
  CHECK(!mi_arena_contains(-1, &global_var));

  mi_arena_id_t id = 0;
  CHECK_EQ(mi_reserve_os_memory_ex(4 * min_size, false, false, true, &id), 0);
  size_t size = 0;
  uint8_t* start = (uint8_t*)mi_arena_area(id, &size);
  CHECK(start != NULL);
  if (start == NULL) return;
  CHECK_GE(size, 4 * min_size);
  CHECK_ALIGNED(start, min_align);
  CHECK(mi_arena_contains(id, start));
  CHECK(mi_arena_contains(id, start + size - 1));
  CHECK(!mi_arena_contains(id, start + size));
  CHECK(!mi_arena_contains(id, start - 1));
  CHECK(!mi_arena_contains(id, NULL));
  CHECK(!mi_arena_contains(id, &global_var));
  mi_heap_t* h = mi_heap_new_in_arena(id);
  CHECK(h != NULL);
  if (h != NULL) {
    void* p = mi_heap_malloc(h, 1000);
    CHECK(p != NULL);
    CHECK(mi_arena_contains(id, p));
    CHECK_PTR_EQ(mi_heap_of(p), h);
    void* q = mi_malloc(1000);                   /* the arena is exclusive: not from it */
    CHECK(!mi_arena_contains(id, q));
    mi_free(q);
    mi_free(p);
    mi_heap_delete(h);
  }

#if !defined(_WIN32)
  /* memory we hand over: an arena from min_size bytes at min_align, none from fewer */
  const size_t map_size = 3 * min_size + min_align;
  uint8_t* map = (uint8_t*)mmap(NULL, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(map != MAP_FAILED);
  if (map == MAP_FAILED) return;
  uint8_t* base = (uint8_t*)(((uintptr_t)map + min_align - 1) & ~(uintptr_t)(min_align - 1));
  mi_arena_id_t small_id = 0;
  CHECK(!mi_manage_os_memory_ex(base, min_size - 1, true, false, true, -1, true, &small_id));
  CHECK_EQ(small_id, 0);
  mi_arena_id_t exact_id = 0;
  CHECK(mi_manage_os_memory_ex(base, min_size, true, false, true, -1, true, &exact_id));
  CHECK(exact_id != 0);
  size_t exact_size = 0;
  CHECK_PTR_EQ(mi_arena_area(exact_id, &exact_size), base);
  CHECK_EQ(exact_size, min_size);
  CHECK(mi_arena_contains(exact_id, base));
  CHECK(mi_arena_contains(exact_id, base + min_size - 1));
  CHECK(!mi_arena_contains(exact_id, base + min_size));
  CHECK(!mi_arena_contains(id, base));
  /* (the arena stays registered: the memory is not unmapped) */
#endif
}

/* ---- mi_options_print_out, mi_process_info_print(_out) ------------------------------------- */
typedef struct capture_s {
  char text[64 * 1024];
  size_t len;
  size_t calls;
} capture_t;

static void capture_out(const char* msg, void* arg) {
  capture_t* c = (capture_t*)arg;
  c->calls++;
  const size_t n = strlen(msg);
  if (c->len + n < sizeof(c->text)) {
    memcpy(c->text + c->len, msg, n + 1);
    c->len += n;
  }
}

static size_t count_of(const char* text, const char* needle) {
  size_t n = 0;
  for (const char* s = strstr(text, needle); s != NULL; s = strstr(s + 1, needle)) n++;
  return n;
}

static capture_t cap;

static void test_printers(void) {
  memset(&cap, 0, sizeof(cap));
  mi_options_print_out(&capture_out, &cap);
  CHECK_GE(cap.calls, 10);
  CHECK_EQ(cap.calls, count_of(cap.text, "\n"));                  /* one call per line */
  CHECK_EQ(cap.calls, count_of(cap.text, "mimalloc: "));
  CHECK(strstr(cap.text, "option 'show_errors': ") != NULL);
  CHECK(strstr(cap.text, "option 'arena_reserve': ") != NULL);
  CHECK(strstr(cap.text, " KiB\n") != NULL);                      /* sizes in KiB */
  CHECK(strstr(cap.text, "debug level : ") != NULL);
  CHECK(strstr(cap.text, "mimalloc: memory limit: ") != NULL);    /* the limit in force (docs/memory.md) */
  CHECK_EQ(count_of(cap.text, "option '") + 5, cap.calls);         /* version, options, limit, 3 build lines */

  /* the same lines through the registered output, for mi_options_print and a NULL out */
  capture_t* reg = (capture_t*)mi_zalloc(sizeof(capture_t));
  CHECK(reg != NULL);
  if (reg == NULL) return;
  mi_register_output(&capture_out, reg);
  /* (the first function registered also receives the output buffered until then: texts are
     counted, not calls) */
  mi_options_print();
  mi_options_print_out(NULL, NULL);
  mi_register_output(NULL, NULL);
  CHECK_EQ(count_of(reg->text, "option '"), 2 * count_of(cap.text, "option '"));
  CHECK_EQ(count_of(reg->text, "option 'show_errors': "), 2);
  CHECK_EQ(count_of(reg->text, "mimalloc: debug level : "), 2);

  memset(&cap, 0, sizeof(cap));
  mi_process_info_print_out(&capture_out, &cap);
  CHECK_EQ(cap.calls, 2);
  CHECK(strstr(cap.text, "   elapsed: ") == cap.text);
  CHECK(strstr(cap.text, "   process: user: ") != NULL);
  CHECK(strstr(cap.text, "peak rss: ") != NULL);

  memset(reg, 0, sizeof(*reg));
  mi_register_output(&capture_out, reg);
  mi_process_info_print();
  mi_process_info_print_out(NULL, NULL);
  mi_register_output(NULL, NULL);
  CHECK_EQ(count_of(reg->text, "   elapsed: "), 2);
  CHECK_EQ(count_of(reg->text, "   process: user: "), 2);
  mi_free(reg);
}

/* ---- blocks the sampling profiler took lie in a sample heap; they are still their heap's ---- */
static void test_profiled(void) {
  const bool on = mi_profile_start(64);   /* false where the profiler is not built in */
  mi_heap_t* h = mi_heap_new();
  CHECK(h != NULL);
  if (h == NULL) return;
  enum { N = 2000 };
  static void* hb[N];
  static void* db[N];
  size_t wrong_h = 0, wrong_d = 0;
  for (size_t i = 0; i < N; i++) {
    hb[i] = mi_heap_malloc(h, 16 + (i % 64) * 8);
    db[i] = mi_malloc(16 + (i % 64) * 8);
    wrong_h += (mi_heap_of(hb[i]) != h || !mi_heap_contains(h, hb[i]) || !mi_any_heap_contains(hb[i]));
    wrong_d += (mi_heap_of(db[i]) != mi_heap_main() || !mi_heap_contains(NULL, db[i]));
  }
  CHECK_MSG(wrong_h == 0, "%zu of %d blocks of a heap misplaced (profiler %s)", wrong_h, (int)N, on ? "on" : "off");
  CHECK_MSG(wrong_d == 0, "%zu of %d default blocks misplaced (profiler %s)", wrong_d, (int)N, on ? "on" : "off");
  for (size_t i = 0; i < N; i++) { mi_free(hb[i]); mi_free(db[i]); }
  mi_heap_destroy(h);
}

int main(void) {
  mi_free(mi_malloc(1));
  test_heap_queries();
  test_other_thread();
  test_subproc_current();
  test_arenas();
  test_printers();
  test_profiled();     /* last: once on, the profiler stays on */
  return test_summary("api-v3", "%s", "v3 functions without shared heaps");
}
