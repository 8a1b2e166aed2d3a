/* SPDX-License-Identifier: MIT */
/* dlopen-alloc.c -- dlopen/dlclose of a library that allocates (libov-plugin.so): in its
   constructor (freed in its destructor) and in functions the program's threads call. Threads
   started before the dlopen wait for it, threads started after it join them; they trade
   blocks through shared slots, so blocks the library allocated are freed by other threads,
   with the program's free or the library's, and reallocated across threads. Blocks the
   library allocated outlive its dlclose. Five dlopen/dlclose cycles, RTLD_LOCAL and
   RTLD_GLOBAL alternately.

   Usage: ov-dlopen-alloc <path of libov-plugin.so> [cycles (5)].
   Built linked (override-dlopen-alloc) and plain under LD_PRELOAD (override-dlopen-alloc-preload). */
#define _GNU_SOURCE
#include <pthread.h>

#include "ov.h"

#define NSLOTS 512
#define NTHREADS 2   /* of each kind: before and after the dlopen */

typedef struct plugin_s {
  void  (*set_dtor_counter)(_Atomic(int)*);
  size_t (*table_check)(void (*each)(void*));
  void* (*alloc)(size_t, uint64_t);
  void  (*free)(void*);
  void* (*realloc)(void*, size_t, uint64_t);
  char* (*strdup)(const char*);
} plugin_t;

static _Atomic(plugin_t*) plugin;   /* published after the dlopen */
static _Atomic(int) stop;
static _Atomic(int) dtor_count;
static _Atomic(void*) slots[NSLOTS];
static _Atomic(long) ops;

static void check_ours(void* p) {
  CHECK_MSG(p != NULL && mi_is_in_heap_region(p), "the library's constructor allocated %p outside our heap", p);
}

static void* user(void* arg) {
  test_rng_t rng = { (uint64_t)(uintptr_t)arg };
  plugin_t* pl;
  while ((pl = atomic_load(&plugin)) == NULL) {
    if (atomic_load(&stop)) return NULL;
    sched_yield();
  }
  long n = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    const size_t i = (size_t)test_rand_below(&rng, NSLOTS);
    const size_t size = (size_t)(test_rand_below(&rng, 100) < 95 ? test_rand_range(&rng, OV_HDR, 3000) : test_rand_range(&rng, 3000, 300000));
    void* p = atomic_exchange(&slots[i], NULL);
    switch (test_rand_below(&rng, 4)) {
      case 0:   /* the library frees (maybe another thread's block) and allocates anew */
        if (p != NULL) { CHECK(ov_verify(p)); pl->free(p); }
        p = pl->alloc(size, test_rand(&rng));
        break;
      case 1:   /* the library reallocates another thread's block */
        p = pl->realloc(p, size, test_rand(&rng));
        CHECK_MSG(p != NULL, "plugin_realloc failed or found the block damaged");
        break;
      case 2:   /* the program frees what the library allocated */
        if (p != NULL) { CHECK(ov_verify(p)); free(p); }
        p = pl->alloc(size, test_rand(&rng));
        break;
      default: {
        char* s = pl->strdup("a string from the library");
        CHECK(s != NULL && mi_is_in_heap_region(s) && strcmp(s, "a string from the library") == 0);
        free(s);
        if (p != NULL) CHECK(ov_verify(p));
      }
    }
    CHECK_MSG(p == NULL || mi_is_in_heap_region(p), "the library's block %p is not in our heap", p);
    p = atomic_exchange(&slots[i], p);
    if (p != NULL) { CHECK(ov_verify(p)); free(p); }
    n++;
  }
  atomic_fetch_add(&ops, n);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s <libov-plugin.so> [cycles]\n", argv[0]); return 2; }
  const int cycles = (int)test_arg(argc, argv, 2, 5);
  ov_require_override("dlopen-alloc");

  uint64_t seed = 1;
  for (int c = 0; c < cycles; c++) {
    atomic_store(&stop, 0);
    pthread_t before[NTHREADS], after[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) pthread_create(&before[i], NULL, &user, (void*)(uintptr_t)(seed++));
    usleep(2000);   /* they wait for the library */

    const int mode = RTLD_NOW | (c % 2 == 0 ? RTLD_LOCAL : RTLD_GLOBAL);
    void* h = dlopen(argv[1], mode);
    CHECK_MSG(h != NULL, "dlopen(%s): %s", argv[1], dlerror());
    if (h == NULL) { atomic_store(&stop, 1); for (int i = 0; i < NTHREADS; i++) pthread_join(before[i], NULL); break; }
    plugin_t* pl = (plugin_t*)malloc(sizeof(plugin_t));
    *(void**)&pl->set_dtor_counter = dlsym(h, "plugin_set_dtor_counter");
    *(void**)&pl->table_check = dlsym(h, "plugin_table_check");
    *(void**)&pl->alloc = dlsym(h, "plugin_alloc");
    *(void**)&pl->free = dlsym(h, "plugin_free");
    *(void**)&pl->realloc = dlsym(h, "plugin_realloc");
    *(void**)&pl->strdup = dlsym(h, "plugin_strdup");
    CHECK(pl->set_dtor_counter && pl->table_check && pl->alloc && pl->free && pl->realloc && pl->strdup);
    pl->set_dtor_counter(&dtor_count);
    CHECK_EQ(pl->table_check(&check_ours), 100);   /* the constructor's blocks: intact, ours */
    atomic_store(&plugin, pl);

    for (int i = 0; i < NTHREADS; i++) pthread_create(&after[i], NULL, &user, (void*)(uintptr_t)(seed++));
    usleep(40000);
    atomic_store(&stop, 1);
    for (int i = 0; i < NTHREADS; i++) { pthread_join(before[i], NULL); pthread_join(after[i], NULL); }
    CHECK_EQ(pl->table_check(&check_ours), 100);
    atomic_store(&plugin, NULL);

    const int dtors = atomic_load(&dtor_count);
    CHECK_EQ(dlclose(h), 0);
    CHECK_MSG(atomic_load(&dtor_count) == dtors + 1, "the library's destructor did not run at dlclose (cycle %d)", c);
    free(pl);

    /* the blocks the library allocated outlive it; free half now, the rest next cycle */
    size_t live = 0;
    for (size_t i = 0; i < NSLOTS; i++) {
      void* p = atomic_load(&slots[i]);
      if (p == NULL) continue;
      live++;
      CHECK_MSG(ov_verify(p), "a block was damaged after dlclose");
      if (i % 2 == 0) { free(atomic_exchange(&slots[i], NULL)); }
    }
    CHECK(live > 0);
  }
  for (size_t i = 0; i < NSLOTS; i++) {
    void* p = atomic_exchange(&slots[i], NULL);
    if (p != NULL) { CHECK(ov_verify(p)); free(p); }
  }
  CHECK_MSG(atomic_load(&ops) > 1000, "only %ld operations", atomic_load(&ops));
  CHECK_EQ(atomic_load(&dtor_count), cycles);
  return test_summary("override-dlopen-alloc" OV_SUFFIX, "%d dlopen/dlclose cycles, %ld operations by %d threads per cycle",
                      cycles, atomic_load(&ops), 2 * NTHREADS);
}
